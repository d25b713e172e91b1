//! [`Cached`]: the values of a recomputed loop's expensive calls, kept for its pullback.

use std::mem::MaybeUninit;

/// How many values a [`Cached`] holds without allocating.
const INLINE: usize = 8;

/// The values one call site (`s.tanh()`, `x.exp()`, …) of a loop took in each iteration, in
/// order. A loop that its pullback runs again (see `docs/design.md`, "Accumulation loops are
/// recomputed") records them in the forward pass, and the pullback's run reads them back
/// instead of calling again: a `tanh` costs tens of multiply-adds, a copy of its value one
/// load. Its rule needs only the value (`1 − y²`) or recomputes the cheap argument.
///
/// The first 8 values are held inline (a loop over a short range allocates nothing), the rest
/// in a vector allocated up front for a longer loop. Each record and read is one compare, one
/// copy and one counter update: `SmallVec`, used before, also tested its inline/heap state and
/// its capacity on every push and pop (more instructions under callgrind, and a slower
/// Elman RNN gradient in `benches/control_flow.rs`). The site is one that runs exactly once per
/// iteration (not under a branch or in a nested loop), so the `k`-th value read is the `k`-th
/// iteration's.
pub struct Cached<T> {
    /// Values `0 .. min(len, 8)`; those below `len` are initialized.
    inline: [MaybeUninit<T>; INLINE],
    /// How many values are held (recorded and not taken back by `last_value`).
    len: usize,
    /// The index `next_value` reads next.
    read: usize,
    /// Values `8 .. len`.
    rest: Vec<T>,
}

impl<T: Clone> Cached<T> {
    /// Room for `n` values (the loop's length): those past the 8th get a vector at once.
    #[inline(always)]
    pub fn with_capacity(n: usize) -> Self {
        Cached {
            inline: [const { MaybeUninit::uninit() }; INLINE],
            len: 0,
            read: 0,
            rest: Vec::with_capacity(n.saturating_sub(INLINE)),
        }
    }

    /// Keeps `value` (this iteration's) and returns it.
    #[inline(always)]
    pub fn record(&mut self, value: T) -> T {
        let i = self.len;
        if i < INLINE {
            self.inline[i].write(value.clone());
        } else {
            self.rest.push(value.clone());
        }
        self.len = i + 1;
        value
    }

    /// The value of the next iteration, first to last.
    ///
    /// # Panics
    /// If more values are read than were recorded (a bug of the generated code).
    #[inline(always)]
    pub fn next_value(&mut self) -> T {
        let i = self.read;
        assert!(
            i < self.len,
            "a recomputed loop reads no more values than it recorded"
        );
        self.read = i + 1;
        if i < INLINE {
            // SAFETY: `i < len` and `i < 8`: the `i`-th value was written by `record` and
            // is only moved out by `last_value`, which lowers `len` first.
            unsafe { self.inline[i].assume_init_ref().clone() }
        } else {
            self.rest[i - INLINE].clone()
        }
    }

    /// The value of the last iteration not read yet, last to first.
    ///
    /// # Panics
    /// If more values are read than were recorded (a bug of the generated code).
    #[inline(always)]
    pub fn last_value(&mut self) -> T {
        let i = self
            .len
            .checked_sub(1)
            .expect("a recomputed loop reads no more values than it recorded");
        self.len = i;
        if i < INLINE {
            // SAFETY: `i` was below `len`, so the value is initialized; lowering `len` to
            // `i` hands it over (neither `Drop` nor a later read touches it again).
            unsafe { self.inline[i].assume_init_read() }
        } else {
            self.rest
                .pop()
                .expect("values past the 8th are in `rest`, one per index")
        }
    }
}

impl<T> Drop for Cached<T> {
    fn drop(&mut self) {
        if std::mem::needs_drop::<T>() {
            for value in &mut self.inline[..self.len.min(INLINE)] {
                // SAFETY: the values below `len` (and below 8) are initialized and were not
                // moved out (`last_value` lowers `len` when it moves one).
                unsafe { value.assume_init_drop() };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cached;
    use std::rc::Rc;

    /// 20 values (8 inline, 12 in `rest`): read back in both orders, and every value not
    /// taken back is dropped exactly once (counted through an `Rc`).
    #[test]
    fn reads_back_both_ways_and_drops_the_rest() {
        let counter = Rc::new(());
        let mut forward = Cached::with_capacity(20);
        let mut backward = Cached::with_capacity(20);
        for k in 0..20 {
            forward.record((k, Rc::clone(&counter)));
            backward.record((k, Rc::clone(&counter)));
        }
        // Each cache holds one clone per value; `record` returned (and dropped) the other.
        assert_eq!(Rc::strong_count(&counter), 1 + 40);
        for k in 0..20 {
            assert_eq!(forward.next_value().0, k);
        }
        for k in (5..20).rev() {
            assert_eq!(backward.last_value().0, k);
        }
        assert_eq!(Rc::strong_count(&counter), 1 + 20 + 5);
        drop(forward);
        drop(backward);
        assert_eq!(Rc::strong_count(&counter), 1);
    }

    #[test]
    #[should_panic(expected = "reads no more values than it recorded")]
    fn reading_past_the_records_panics() {
        let mut cache = Cached::with_capacity(1);
        cache.record(1.0);
        cache.last_value();
        cache.last_value();
    }
}
