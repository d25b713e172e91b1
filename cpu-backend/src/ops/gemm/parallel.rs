//! [`gemm_parallel`]: one product split across rayon's threads, in chunks that the threads
//! take as they become free.

use super::dispatch::Gemm;
use super::product::{Epilogue, Operand, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Products of fewer multiply-adds than this run on one thread (a round number, not tuned:
/// handing a product to a second thread has a fixed cost that a small one does not repay).
const PARALLEL_MIN: usize = 1 << 18;

/// Chunk boundaries of a split are multiples of this, so that every chunk but the last keeps
/// the kernels' register tiles full where they split columns (16 wide in the AVX2 tiles of
/// [`super::packed`] and of the `gemm` crate, 32 in the AVX-512 ones); a chunk of rows ends in
/// a partial tile of the 6-row AVX2 tiles, a cost of at most one tile row per chunk.
const ALIGN: usize = 32;

/// Raw pointers moved into rayon tasks.
#[derive(Clone, Copy)]
struct Shared<T>(T);
// SAFETY: the tasks of `gemm_parallel` read `A` and `B` and write disjoint blocks of `C`.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Shared<T> {}

/// Chunks per thread that [`gemm_parallel`] cuts a product into when the type packs what its
/// chunks share once ([`Gemm::shares_packing`]). One block per thread leaves a thread idle
/// whenever the other runs slower: in the MNIST MLP step on a 2-vCPU Xeon, the two halves of
/// each product took median times 1.25–1.48× apart, the slower half by turns on either
/// thread (docs/tensors.md, 21st session). Eight against four: the MNIST MLP step 8.9 µs
/// faster (median of 40 paired in-process rounds, 32 of 40 faster), the CNN step equal
/// (26.63 against 26.58 ms, 7 of 16), 26th session; six against four: equal.
const CHUNKS_PER_THREAD: usize = 8;

/// `C = act(A·B + β·C + bias)` as [`Gemm::gemm_epilogue`], split along rows (or columns, when
/// `C` is wider than tall, so that only the smaller operand's packing is repeated, or when the
/// epilogue takes column sums, which need each column's rows in order on one thread) into one
/// chunk per rayon thread, or [`CHUNKS_PER_THREAD`] when the type shares packing between
/// chunks, which each thread takes as it becomes free.
///
/// # Safety
/// As [`Gemm::gemm_epilogue`].
pub(crate) unsafe fn gemm_parallel<T: Gemm>(
    mkn @ [m, k, n]: [usize; 3],
    a: Operand<T>,
    b: Operand<T>,
    beta: T,
    c: Output<T>,
    epilogue: Epilogue<T>,
) {
    // Column sums need each column's rows written in order by one thread: chunks of columns.
    let rows = m >= n && epilogue.sums.is_none();
    let long = if rows { m } else { n };
    let parts = rayon::current_num_threads()
        .min(long / ALIGN)
        .min(m * k * n / PARALLEL_MIN);
    if parts <= 1 {
        // SAFETY: the caller's contract.
        return unsafe { T::gemm_epilogue(mkn, a, b, beta, c, epilogue) };
    }
    let per_part = if T::shares_packing(mkn, a, b, beta, c, rows) {
        CHUNKS_PER_THREAD
            .min(m * k * n / (parts * PARALLEL_MIN))
            .max(1)
    } else {
        1
    };
    let chunk = long.div_ceil(parts * per_part).next_multiple_of(ALIGN);
    let chunks = long.div_ceil(chunk);
    let queues = Queues::new(parts, chunks);
    let job = Shared((a, b, c, epilogue));
    let (job, queues) = (&job, &queues);
    let work = move |part: usize| {
        let Shared((a, b, c, epilogue)) = *job;
        let mut next = || {
            let i = queues.take(part)?;
            Some(i * chunk..long.min((i + 1) * chunk))
        };
        // SAFETY: the chunks are disjoint ranges of `C`'s rows (columns) inside
        // what the caller described, each handed out once.
        unsafe { T::gemm_chunks(mkn, a, b, beta, c, epilogue, rows, &mut next) }
    };
    // The calling thread runs the first part itself and then waits for the others by polling
    // (running pending jobs meanwhile), not in `rayon::scope`'s wait, which puts a thread to
    // sleep after a few dozen rounds and costs a futex wake-up to leave: the MNIST MLP step
    // 1837–1894 → 1780–1804 µs (medians of three alternating pairs, 21st session).
    let done = AtomicUsize::new(0);
    let done = &done;
    rayon::scope(|scope| {
        for part in 1..parts {
            scope.spawn(move |_| {
                // Counted when the part ends or panics (the scope then re-raises the panic).
                let _done = Finished(done);
                work(part);
            });
        }
        work(0);
        while done.load(Ordering::Acquire) < parts - 1 {
            if rayon::yield_now() != Some(rayon::Yield::Executed) {
                std::hint::spin_loop();
            }
        }
    });
}

/// Counts one finished part of [`gemm_parallel`] when dropped.
struct Finished<'a>(&'a AtomicUsize);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

/// The chunks `0..chunks` of a product dealt into one run of consecutive chunks per part:
/// each part's task takes its own run from the front, and once it is empty, the others'
/// from the back. A thread thus works on the same part of `C` as it would with one block
/// each (and of `C`'s weight, in a training step, where the previous products left it in
/// that thread's cache), and only the end of a slower thread's run moves.
struct Queues(Vec<AtomicUsize>);

impl Queues {
    fn new(parts: usize, chunks: usize) -> Queues {
        Queues(
            (0..parts)
                .map(|p| {
                    let (front, back) = (chunks * p / parts, chunks * (p + 1) / parts);
                    AtomicUsize::new(Self::pack(front, back))
                })
                .collect(),
        )
    }

    /// A run `front..back` in one word: front in the high half, back in the low half.
    fn pack(front: usize, back: usize) -> usize {
        (front << (usize::BITS / 2)) | back
    }

    fn unpack(run: usize) -> (usize, usize) {
        (
            run >> (usize::BITS / 2),
            run & (usize::MAX >> (usize::BITS / 2)),
        )
    }

    /// The next chunk for `part`: the front of its own run, else the back of the first other
    /// run that has one; `None` when all are empty.
    fn take(&self, part: usize) -> Option<usize> {
        let parts = self.0.len();
        (0..parts).find_map(|offset| {
            let queue = &self.0[(part + offset) % parts];
            let own = offset == 0;
            let mut run = queue.load(Ordering::Relaxed);
            loop {
                let (front, back) = Self::unpack(run);
                if front >= back {
                    return None;
                }
                let (taken, rest) = if own {
                    (front, Self::pack(front + 1, back))
                } else {
                    (back - 1, Self::pack(front, back - 1))
                };
                match queue.compare_exchange_weak(run, rest, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => return Some(taken),
                    Err(now) => run = now,
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Queues;

    /// Every chunk is handed out once: each part's own run in order from its front, then the
    /// others' from their backs, taken one at a time in turn or by threads at once.
    #[test]
    fn queues_hand_out_every_chunk_once() {
        for parts in 1..=4 {
            for chunks in parts..=13 {
                let queues = Queues::new(parts, chunks);
                let runs: Vec<_> = (0..parts)
                    .map(|p| chunks * p / parts..chunks * (p + 1) / parts)
                    .collect();
                // Part 0 alone: its run from the front, then part 1's from the back, ….
                let mut seen = Vec::new();
                while let Some(i) = queues.take(0) {
                    seen.push(i);
                }
                let mut want: Vec<usize> = runs[0].clone().collect();
                for run in &runs[1..] {
                    want.extend(run.clone().rev());
                }
                assert_eq!(seen, want, "{parts} parts, {chunks} chunks");
            }
        }
        let (parts, chunks) = (3, 1000);
        let queues = Queues::new(parts, chunks);
        let mut taken: Vec<usize> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..parts)
                .map(|part| {
                    let queues = &queues;
                    scope
                        .spawn(move || std::iter::from_fn(|| queues.take(part)).collect::<Vec<_>>())
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        taken.sort_unstable();
        assert_eq!(taken, (0..chunks).collect::<Vec<_>>());
    }
}
