//! The backend's one GEMM: on a single thread, [`super::gemm_avx512`]'s kernel for `f32` on
//! CPUs with AVX-512F and the `gemm` crate's kernels otherwise; and a split of one product
//! across rayon's threads.
//!
//! The `gemm` crate replaced `matrixmultiply` in the 20th session: its AVX2 `f32` tiles are
//! 6 rows × 16 columns (two vectors of `B`, six broadcasts of `A` and twelve multiply-adds per
//! step of the inner dimension) against `matrixmultiply`'s 8 × 8, and the MNIST MLP step ran
//! 8–9% faster with it (docs/tensors.md).
//!
//! All parallelism of the CPU backend is rayon's, in one pool of one thread per core.
//! `matrixmultiply`'s own `threading` feature would have started a second pool: on two cores
//! its worker and rayon's (spinning between the parallel passes of a step) took turns on the
//! same cores, and the MNIST CNN step spent about a quarter of its samples in `sched_yield` and
//! the scheduler. So products run serially where the caller is already parallel (the
//! convolution, one image per task), and [`gemm_parallel`] splits a lone product itself, into
//! chunks that the threads take as they become free (the
//! `gemm` crate's own rayon split was no faster on the MLP step: 2.66–2.70 against 2.59–2.61
//! ms in alternating runs).

use super::elementwise::{binary_slice, unary_slice};
use super::math::Elementary;
use adjoint_backend::{BinaryOp, Real, UnaryOp};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A matrix operand: its first element and its (row, column) strides in elements.
pub(crate) type Operand<T> = (*const T, [isize; 2]);
/// A matrix result: its first element and its (row, column) strides in elements.
pub(crate) type Output<T> = (*mut T, [isize; 2]);

/// What a product does with each sum of `C` as it writes it: `C[i, j] = grad(y[i, j],
/// act(α·(A·B)[i, j] + β·C[i, j] + bias[j]))` (each part optional: α = 1, no bias, no
/// activation, no derivative), then `sums[j] += C[i, j]` if asked. The bias's sum, the
/// activation and the derivative are the elementwise ops' own kernels (`binary_slice`,
/// `unary_slice`), so a product with an epilogue gives the values of the product followed by
/// those ops, to the last bit; the sums are those of a reduction over the rows (each column
/// added up in row order from zero) when the rows of each column are written in order, by
/// one thread: [`gemm_parallel`] then splits such a product by columns only.
#[derive(Clone, Copy)]
pub(crate) struct Epilogue<T> {
    /// The factor α of the product (`None`: 1), applied to every partial sum of the inner
    /// dimension as it is added to `C` (by a fused multiply-add in a type's own kernel).
    pub scale: Option<T>,
    /// The bias row: `n` elements, one per column of `C`.
    pub bias: Option<*const T>,
    /// The activation.
    pub act: Option<UnaryOp>,
    /// An activation's derivative `grad(y, ·)` (a `BinaryOp` of `(y, ȳ)`, the product being
    /// `ȳ`) and `y` at `C`'s first element, laid out with `C`'s strides.
    pub grad: Option<(BinaryOp, *const T)>,
    /// The column sums `Σᵢ C[i, j]` (a bias's tangent, where `C` is the tangent of the layer's
    /// pre-activation): `n` elements at `C`'s first column, zeros before the product, to which
    /// each element of `C` is added as it is written, rows in order.
    pub sums: Option<*mut T>,
}

impl<T: Gemm> Epilogue<T> {
    /// No epilogue: `C` is the product.
    pub const NONE: Self = Epilogue {
        scale: None,
        bias: None,
        act: None,
        grad: None,
        sums: None,
    };

    /// `C` is `α` times the product (plus `β·C`).
    pub(crate) fn scaled(alpha: T) -> Self {
        Epilogue {
            scale: Some(alpha),
            ..Self::NONE
        }
    }

    /// What the sums of a block of the inner dimension other than the last get: the factor
    /// only (the bias and the activation wait for the complete sums).
    pub(crate) fn partial(self) -> Self {
        Epilogue {
            scale: self.scale,
            ..Self::NONE
        }
    }

    /// The epilogue of the columns from `start` on (`C`'s columns contiguous).
    pub(crate) fn at_column(self, start: usize) -> Self {
        Epilogue {
            bias: self.bias.map(|b| b.wrapping_add(start)),
            grad: self.grad.map(|(op, y)| (op, y.wrapping_add(start))),
            sums: self.sums.map(|s| s.wrapping_add(start)),
            ..self
        }
    }

    /// The epilogue of the rows from `start` on, `row` elements apart.
    pub(crate) fn at_row(self, start: usize, row: isize) -> Self {
        Epilogue {
            grad: self
                .grad
                .map(|(op, y)| (op, y.wrapping_offset(start as isize * row))),
            ..self
        }
    }

    /// Applies the bias, the activation and the derivative to the `m × n` block `C` (row
    /// stride `cr`, columns contiguous), after a product that applied the factor, and adds
    /// its rows, in order, to the sums.
    ///
    /// # Safety
    /// `C` addresses `m` rows of `n` initialized elements, `bias` and `sums` (if any) `n`
    /// elements each.
    pub(crate) unsafe fn apply(self, [m, n]: [usize; 2], c: *mut T, cr: isize) {
        if self.bias.is_none() && self.act.is_none() && self.grad.is_none() && self.sums.is_none() {
            return;
        }
        for i in 0..m {
            // SAFETY: row `i < m` of `C` holds `n` elements (the caller's contract) that no
            // other reference reaches while this one lives.
            let row = unsafe { std::slice::from_raw_parts_mut(c.offset(i as isize * cr), n) };
            if let Some(bias) = self.bias {
                // SAFETY: the bias row holds `n` elements.
                let bias = unsafe { std::slice::from_raw_parts(bias, n) };
                binary_slice(BinaryOp::Add, row, bias, true);
            }
            if let Some(op) = self.act {
                unary_slice(op, row);
            }
            if let Some((op, y)) = self.grad {
                // SAFETY: `y` has `C`'s layout (the caller's contract): row `i` holds `n`
                // elements.
                let y = unsafe { std::slice::from_raw_parts(y.offset(i as isize * cr), n) };
                binary_slice(op, row, y, false);
            }
            if let Some(sums) = self.sums {
                // SAFETY: the sums hold `n` elements that nothing else reaches meanwhile.
                let sums = unsafe { std::slice::from_raw_parts_mut(sums, n) };
                for (s, &x) in sums.iter_mut().zip(row.iter()) {
                    *s = *s + x;
                }
            }
        }
    }
}

/// Where the runs of a row-major `A`'s rows break: element `(r, p)` lies at
/// `r·ar + p·ac + ⌊p / every⌋·skip`. An image's unfolding at stride 1 has such rows without
/// being copied out: row `(c, kᵢ, kⱼ)` restricted to output row `y` is `ow` adjacent
/// elements of the image, and the next output row's start `W − ow` elements after its end
/// (`W` the image's width), so the image itself, `every = ow` and `skip = W − ow`, is that
/// row ([`Gemm::gemm_shared_b`]).
#[derive(Clone, Copy)]
pub(crate) struct Wrap {
    /// Elements of a run (`usize::MAX`: one run).
    pub(crate) every: usize,
    /// How much further on than adjacent the next run starts.
    pub(crate) skip: isize,
    /// Steps before the first break, from where a block of the inner dimension starts.
    pub(crate) first: usize,
}

impl Wrap {
    /// Rows without breaks.
    pub(crate) const NONE: Wrap = Wrap {
        every: usize::MAX,
        skip: 0,
        first: usize::MAX,
    };

    /// A break after every `every` elements (at least 1), the next `skip` elements on.
    pub(crate) fn every(every: usize, skip: isize) -> Wrap {
        assert!(every > 0, "Wrap::every: runs of at least one element");
        Wrap {
            every,
            skip,
            first: every,
        }
    }

    /// Whether the runs break at all.
    pub(crate) fn breaks(self) -> bool {
        self.every != usize::MAX
    }

    /// The offset of inner index `p` along a row (columns `ac` apart), and the breaks of a
    /// block of the inner dimension that starts there.
    pub(crate) fn at(self, p: usize, ac: isize) -> (isize, Wrap) {
        let offset = p as isize * ac + (p / self.every) as isize * self.skip;
        let first = self.every - p % self.every;
        (offset, Wrap { first, ..self })
    }
}

/// A float type with a GEMM kernel (the `gemm` crate's, or one of its own).
pub(crate) trait Gemm: Real + Send + Sync + Elementary {
    /// `C = act(A·B + β·C + bias)` on the calling thread, `A` being `m × k`, `B` `k × n`, `C`
    /// `m × n`: the product, then `epilogue` (which a type's own kernel applies as it writes
    /// `C`).
    ///
    /// # Safety
    /// The pointers must address matrices of these sizes under their strides, `C` must not
    /// overlap `A` or `B`, and the epilogue's bias must address `n` elements.
    unsafe fn gemm_epilogue(
        mkn: [usize; 3],
        a: Operand<Self>,
        b: Operand<Self>,
        beta: Self,
        c: Output<Self>,
        epilogue: Epilogue<Self>,
    );

    /// `C = A·B + β·C`: [`Gemm::gemm_epilogue`] with no epilogue.
    ///
    /// # Safety
    /// As [`Gemm::gemm_epilogue`].
    #[inline]
    unsafe fn gemm(
        mkn: [usize; 3],
        a: Operand<Self>,
        b: Operand<Self>,
        beta: Self,
        c: Output<Self>,
    ) {
        // SAFETY: the caller's contract.
        unsafe { Self::gemm_epilogue(mkn, a, b, beta, c, Epilogue::NONE) }
    }

    /// `C = act(A·B + β·C + bias)` over the chunks of rows (`rows`) or of columns of `C` that
    /// `next` hands out, on this thread, until it hands out none: one
    /// [`Gemm::gemm_epilogue`] per chunk, or a type's own loop that packs what the chunks
    /// share (all of `A` for chunks of columns, all of `B` for chunks of rows) once.
    ///
    /// # Safety
    /// As [`Gemm::gemm_epilogue`]; every chunk lies inside `C`'s rows (or columns).
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_chunks(
        mkn: [usize; 3],
        a: Operand<Self>,
        b: Operand<Self>,
        beta: Self,
        c: Output<Self>,
        epilogue: Epilogue<Self>,
        rows: bool,
        next: &mut dyn FnMut() -> Option<Range<usize>>,
    );

    /// Whether [`Gemm::gemm_chunks`] packs the chunks' shared operand once for a product with
    /// these `B` and `C` and this β on this CPU, so that [`gemm_parallel`] can hand it out in
    /// chunks finer than one per thread without packing it again for each.
    fn shares_packing(b: Operand<Self>, beta: Self, c: Output<Self>) -> bool;

    /// `C = A·Bᵀ` by a kernel of this type for CPUs with AVX2 and FMA, when `A` (`m × k`,
    /// row stride `ar`) and `B` (`n × k`, row stride `bc`) have contiguous rows; returns
    /// whether it ran (`false`: no such kernel, use the generic loops).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA, and the pointers are as for [`Gemm::gemm`].
    unsafe fn dots_avx2(
        _mkn: [usize; 3],
        _a: (*const Self, isize),
        _b: (*const Self, isize),
        _c: *mut Self,
    ) -> bool {
        false
    }

    /// `C[cₜ..] += A[aₜ..]·B` for each pair of element offsets `(aₜ, cₜ)` of `at`, on this
    /// thread, by a kernel of this type that packs `B` once for all of them and reads each
    /// `A[aₜ..]` (`m × k`, row-major, rows `ar` apart) in place with its runs broken by
    /// `wrap`; each `C[cₜ..]` is `m × n` with rows `cr` apart and contiguous columns. Returns
    /// whether it ran (`false`: no such kernel).
    ///
    /// # Safety
    /// As [`Gemm::gemm`] for every pair; no pair's `C` overlaps another's or an operand.
    unsafe fn gemm_shared_b(
        _mkn: [usize; 3],
        _a: (*const Self, isize, Wrap),
        _b: Operand<Self>,
        _c: (*mut Self, isize),
        _at: &[(usize, usize)],
    ) -> bool {
        false
    }
}

/// [`Gemm::gemm_chunks`] by one [`Gemm::gemm_epilogue`] per chunk.
///
/// # Safety
/// As [`Gemm::gemm_chunks`].
#[allow(clippy::too_many_arguments)]
unsafe fn chunk_by_chunk<T: Gemm>(
    [m, k, n]: [usize; 3],
    (ap, [ar, ac]): Operand<T>,
    (bp, [br, bc]): Operand<T>,
    beta: T,
    (cp, [cr, cc]): Output<T>,
    epilogue: Epilogue<T>,
    rows: bool,
    next: &mut dyn FnMut() -> Option<Range<usize>>,
) {
    while let Some(chunk) = next() {
        let (start, len) = (chunk.start as isize, chunk.len());
        // SAFETY: the chunk's rows (columns) of `A` (of `B`), of `C` and of the bias lie
        // inside what the caller described.
        unsafe {
            if rows {
                T::gemm_epilogue(
                    [len, k, n],
                    (ap.offset(start * ar), [ar, ac]),
                    (bp, [br, bc]),
                    beta,
                    (cp.offset(start * cr), [cr, cc]),
                    epilogue.at_row(chunk.start, cr),
                );
            } else {
                T::gemm_epilogue(
                    [m, k, len],
                    (ap, [ar, ac]),
                    (bp.offset(start * bc), [br, bc]),
                    beta,
                    (cp.offset(start * cc), [cr, cc]),
                    epilogue.at_column(chunk.start),
                );
            }
        }
    }
}

/// `C = α·A·B + β·C` on this thread by the `gemm` crate (which detects the CPU's vector
/// extensions at run time: on AVX2 its `f32` tiles are 6 rows × 16 columns of `C`, two
/// vectors of `B` and six broadcasts of `A` per step of the inner dimension).
///
/// # Safety
/// As [`Gemm::gemm`].
unsafe fn library<T: Real + 'static>(
    [m, k, n]: [usize; 3],
    (a, [ar, ac]): Operand<T>,
    (b, [br, bc]): Operand<T>,
    (alpha, beta): (T, T),
    (c, [cr, cc]): Output<T>,
) {
    // SAFETY: the caller's contract. The crate computes `dst ← α·dst + β·lhs·rhs` with column
    // strides before row strides, reading `dst` only if told to: our `β` is its `α`, and our
    // `α` its `β`.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c,
            cc,
            cr,
            beta != T::zero(),
            a,
            ac,
            ar,
            b,
            bc,
            br,
            beta,
            alpha,
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    }
}

/// No kernel of its own for this type (or this CPU architecture): the `gemm` crate runs
/// every product.
unsafe fn none<T>(
    _: [usize; 3],
    _: Operand<T>,
    _: Operand<T>,
    _: T,
    _: Output<T>,
    _: Epilogue<T>,
) -> bool {
    false
}

#[cfg(target_arch = "x86_64")]
use super::gemm_avx512::sgemm as own_f32;
#[cfg(not(target_arch = "x86_64"))]
use none as own_f32;

/// No chunk loop of its own for this type (or this CPU architecture).
#[allow(clippy::too_many_arguments)]
unsafe fn no_chunks<T>(
    _: [usize; 3],
    _: Operand<T>,
    _: Operand<T>,
    _: T,
    _: Output<T>,
    _: Epilogue<T>,
    _: bool,
    _: &mut dyn FnMut() -> Option<Range<usize>>,
) -> bool {
    false
}

/// No packing shared between chunks: each chunk is a product of its own.
fn no_sharing<T>(_: Operand<T>, _: T, _: Output<T>) -> bool {
    false
}

#[cfg(target_arch = "x86_64")]
use super::gemm_avx512::{handles as own_f32_shares, sgemm_chunks as own_f32_chunks};
#[cfg(not(target_arch = "x86_64"))]
use {no_chunks as own_f32_chunks, no_sharing as own_f32_shares};

macro_rules! gemm_impl {
    ($t:ty, $own:path, $own_chunks:path, $shares:path $(, $extra:item)*) => {
        impl Gemm for $t {
            $($extra)*

            #[allow(clippy::too_many_arguments)]
            unsafe fn gemm_chunks(
                mkn: [usize; 3],
                a: Operand<Self>,
                b: Operand<Self>,
                beta: Self,
                c: Output<Self>,
                epilogue: Epilogue<Self>,
                rows: bool,
                next: &mut dyn FnMut() -> Option<Range<usize>>,
            ) {
                // SAFETY: forwarded from the caller, whose contract is both loops'.
                unsafe {
                    if !$own_chunks(mkn, a, b, beta, c, epilogue, rows, next) {
                        chunk_by_chunk(mkn, a, b, beta, c, epilogue, rows, next);
                    }
                }
            }

            fn shares_packing(b: Operand<Self>, beta: Self, c: Output<Self>) -> bool {
                $shares(b, beta, c)
            }

            #[inline]
            unsafe fn gemm_epilogue(
                [m, k, n]: [usize; 3],
                (a, [ar, ac]): Operand<Self>,
                (b, [br, bc]): Operand<Self>,
                beta: Self,
                (c, [cr, cc]): Output<Self>,
                epilogue: Epilogue<Self>,
            ) {
                let (a, b, c) = ((a, [ar, ac]), (b, [br, bc]), (c, [cr, cc]));
                // SAFETY: forwarded from the caller, whose contract is both kernels' and the
                // epilogue's (the kernel initializes `C` first).
                unsafe {
                    if !$own([m, k, n], a, b, beta, c, epilogue) {
                        let alpha = epilogue.scale.unwrap_or(1.0);
                        library([m, k, n], a, b, (alpha, beta), c);
                        epilogue.apply([m, n], c.0, cr);
                    }
                }
            }
        }
    };
}
gemm_impl!(
    f32,
    own_f32,
    own_f32_chunks,
    own_f32_shares,
    #[inline]
    unsafe fn dots_avx2(
        [m, k, n]: [usize; 3],
        (a, ar): (*const Self, isize),
        (b, bc): (*const Self, isize),
        c: *mut Self,
    ) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: forwarded from the caller, whose contract is the kernel's.
            unsafe { super::dots::dots_f32(m, k, n, a, ar, b, bc, c) };
            true
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (m, k, n, a, ar, b, bc, c);
            false
        }
    },
    #[inline]
    unsafe fn gemm_shared_b(
        mkn: [usize; 3],
        a: (*const Self, isize, Wrap),
        b: Operand<Self>,
        c: (*mut Self, isize),
        at: &[(usize, usize)],
    ) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: forwarded from the caller, whose contract is the kernel's.
            unsafe { super::gemm_avx512::sgemm_shared_b(mkn, a, b, c, at) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (mkn, a, b, c, at);
            false
        }
    }
);
gemm_impl!(f64, none, no_chunks, no_sharing);

/// Products of fewer multiply-adds than this run on one thread (a round number, not tuned:
/// handing a product to a second thread has a fixed cost that a small one does not repay).
const PARALLEL_MIN: usize = 1 << 18;

/// Chunk boundaries of a split are multiples of this, so that every chunk but the last keeps
/// the kernels' register tiles full where they split columns (16 wide in the `gemm` crate's
/// AVX2 tiles, 32 in [`super::gemm_avx512`]'s); a chunk of rows ends in a partial tile of the
/// crate's 6-row tiles, a cost of at most one tile row per chunk.
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
    let per_part = if T::shares_packing(b, beta, c) {
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
