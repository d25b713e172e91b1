//! [`Cached`]: the values of a recomputed loop's expensive calls, kept for its pullback.

use smallvec::SmallVec;

/// The values one call site (`s.tanh()`, `x.exp()`, …) of a loop took in each iteration, in
/// order. A loop that its pullback runs again (see `docs/design.md`, "Accumulation loops are
/// recomputed") records them in the forward pass, and the pullback's run reads them back
/// instead of calling again: a `tanh` costs tens of multiply-adds, a copy of its value one
/// load. Its rule needs only the value (`1 − y²`) or recomputes the cheap argument.
///
/// Up to 8 values are held inline (a loop over a short range allocates nothing); the site is
/// one that runs exactly once per iteration (not under a branch or in a nested loop), so the
/// `k`-th value read is the `k`-th iteration's.
pub struct Cached<T> {
    values: SmallVec<[T; 8]>,
    read: usize,
}

impl<T: Clone> Cached<T> {
    /// Room for `n` values (the loop's length).
    #[inline(always)]
    pub fn with_capacity(n: usize) -> Self {
        Cached {
            values: SmallVec::with_capacity(n),
            read: 0,
        }
    }

    /// Keeps `value` (this iteration's) and returns it.
    #[inline(always)]
    pub fn record(&mut self, value: T) -> T {
        self.values.push(value.clone());
        value
    }

    /// The value of the next iteration, first to last.
    ///
    /// # Panics
    /// If more values are read than were recorded (a bug of the generated code).
    #[inline(always)]
    pub fn next_value(&mut self) -> T {
        let value = self.values[self.read].clone();
        self.read += 1;
        value
    }

    /// The value of the last iteration not read yet, last to first.
    ///
    /// # Panics
    /// If more values are read than were recorded (a bug of the generated code).
    #[inline(always)]
    pub fn last_value(&mut self) -> T {
        self.values
            .pop()
            .expect("a recomputed loop reads no more values than it recorded")
    }
}
