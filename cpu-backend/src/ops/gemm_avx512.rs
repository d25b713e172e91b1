//! The `f32` GEMM for CPUs with AVX-512F: `C = act(A·B + β·C + bias)` for β ∈ {0, 1}.
//!
//! A register tile holds `MR × NR` = 8 × 32 elements of `C` (sixteen 512-bit accumulators;
//! eight, of 8 × 16, for a last panel of at most 16 columns).
//! Each step of the inner dimension loads one row of the tile's `B` panel (two vectors) and
//! broadcasts one element of each of the tile's eight rows of `A`. `B` is packed, a block of
//! `KC × NC` at a time, into contiguous panels of `NR` columns (a row-major `B` by the first
//! tile that reads each panel, which stores the rows it loads; one whose rows are contiguous
//! beforehand, by `16 × 16` transposes in registers), the last panel padded with zeros so
//! that every load of `B` is a full vector; a row-major `B` of a short product, or one at
//! most a vector wide with adjacent rows, is read in place instead ([`IN_PLACE_ROWS`],
//! [`narrow`]). A transposed `A` (adjacent rows) is packed, a block of
//! `MC` rows at a time, into runs of `MR` rows, so that the broadcasts take constant offsets
//! from one pointer; any other `A` is read in place under its strides (a broadcast reads one
//! element wherever it lies; a row-major `A`'s lines each serve sixteen steps), its rows'
//! runs broken where [`sgemm_shared_b`]'s caller says (an image read as its unfolding).
//!
//! `matrixmultiply`, the backend's GEMM when this kernel was written, packs both operands for
//! every product into its own layouts, with no choice by shape: in the MNIST MLP step (batch
//! 128) its packing was 16% of all samples, its kernel 61%. Here the packing of both operands was about 11% of the step's samples, and the
//! columns of `C` beyond the last full panel are handled by masked loads and stores, the rows
//! beyond the last full tile by narrower tiles (`R < MR`).
//!
//! A product split between threads ([`sgemm_chunks`]) is handed out in chunks of rows or of
//! columns; each thread packs the operand its chunks share once for all of them.
//!
//! Loop order, outermost first: blocks of `NC` columns (one when `B` is read in place),
//! blocks of at most `KC` of the inner dimension (`B`'s block packed into this thread's
//! buffer; a block's partial sums are added to `C`), blocks of `MC` rows (their `A`, packed or
//! not, stays in L2 while it is reused for every panel), panels of `NR` columns (the panel's
//! `KC × NR` elements stay in L1 while every tile of the row block reads them), tiles of `MR`
//! rows.

use std::arch::x86_64::{
    __m512, __mmask16, _CMP_GT_OQ, _MM_HINT_T0, _mm_prefetch, _mm512_add_ps, _mm512_cmp_ps_mask,
    _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_mask_blend_ps, _mm512_mask_storeu_ps,
    _mm512_maskz_loadu_ps, _mm512_max_ps, _mm512_mul_ps, _mm512_set1_ps, _mm512_setzero_ps,
    _mm512_shuffle_f32x4, _mm512_shuffle_ps, _mm512_storeu_ps, _mm512_unpackhi_ps,
    _mm512_unpacklo_ps,
};
use std::cell::RefCell;
use std::ops::Range;

use super::gemm::{Epilogue, Operand, Output, Wrap};
use adjoint_backend::{BinaryOp, UnaryOp};

/// Rows of `C` per register tile.
const MR: usize = 8;
/// Columns of `C` per register tile: two 16-lane vectors.
const NR: usize = 32;
/// Inner-dimension block: a panel of `B` is `KC × NR` elements (32 KiB).
const KC: usize = 256;
/// Rows of `C` per row block: the block's `A` is `MC × KC` elements (64 KiB).
const MC: usize = 64;
/// Columns of `B` packed into the buffer at a time.
const NC: usize = 512;
/// A row-major `B` is read in place, not packed, by a product of at most this many rows: its
/// panels are each read by at most `MC / MR` tiles, and packing them (a read and a write of
/// `B`) cost more than it saved (the CNN step 21.5–21.8 ms in place against 22.1–22.3, its
/// convolutions' `64 × 288 × 576` products reading the unfolded columns; with 128, the
/// `128 × 512 × 512` product fell from 183 to 166 GFLOP/s, its rows of `B` 2 KiB apart).
const IN_PLACE_ROWS: usize = 64;

/// Whether `B` (row and column strides) is read in place by a product of any size: a
/// row-major `B` at most one vector wide whose rows are at most a vector apart, so that all
/// of it lies in `k × 16` adjacent elements, which stay in L1 while every tile reads them.
/// Packed, its one panel was padded to `NR` columns of zeros (a write of three times its
/// size): in the MNIST MLP step, in place, `h₂·W₃` (`128 × 512 × 10`) took 16.7 µs against
/// 20.5 and `W₃ += h₂ᵀ·z̄₃` (`512 × 128 × 10`) 21.8 against 22.9 (medians of ~2400 steps
/// each, alternated in one process, 24th session).
fn narrow([br, bc]: [isize; 2]) -> bool {
    bc == 1 && (0..=16).contains(&br)
}
/// How many rows ahead of its loads a tile that packs a row-major `B` (rows `n` apart, each a
/// line or two of a panel) prefetches: the lines of a block of `B` that no other tile has read
/// are fetched from L2 or another core's cache (a product's weight, written by the other
/// thread's last update). 8, 16 and 32 rows were equal; with 8, the MNIST MLP step took
/// 1735–1768 µs against 1761–1796 without (three in-process alternations, 22nd session),
/// and on two threads `x·W₁` ran at 291–301 GFLOP/s against 284–294.
const PREFETCH_ROWS: isize = 8;

thread_local! {
    /// Each thread's buffer for packed blocks of `B`: at most `KC × NC` elements.
    static PACKED: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
    /// Each thread's buffer for a packed block of `A`: at most `MC × KC` elements.
    static PACKED_A: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Whether this CPU runs [`sgemm`] (`std` caches the answer after the first query).
#[inline]
pub(crate) fn available() -> bool {
    std::is_x86_feature_detected!("avx512f")
}

/// `C = act(A·B + β·C + bias)` as [`super::gemm::Gemm::gemm_epilogue`], by this module's
/// kernel when it handles the product; returns whether it ran. It does when [`available`], β
/// is 0 or 1, `C`'s columns are contiguous and `B`'s columns or rows are (`false`: use another
/// GEMM). The bias and a ReLU are applied in the register tiles as they are written; another
/// activation to each block of rows after its product.
///
/// # Safety
/// As [`super::gemm::Gemm::gemm_epilogue`]: the pointers address matrices of these sizes under
/// their strides, `C` overlaps neither operand, and the bias addresses `n` elements.
pub(crate) unsafe fn sgemm(
    mkn: [usize; 3],
    a: Operand<f32>,
    b: Operand<f32>,
    beta: f32,
    c: Output<f32>,
    epilogue: Epilogue<f32>,
) -> bool {
    let mut whole = Some(0..mkn[0]);
    // SAFETY: the caller's contract; the one chunk is every row, and shares nothing.
    unsafe {
        chunks(mkn, a, b, beta, c, epilogue, (true, false), &mut || {
            whole.take()
        })
    }
}

/// Whether [`sgemm`] and [`sgemm_chunks`] run a product with this `B`, β and `C` (and
/// [`sgemm_chunks`] packs what its chunks share once): on a CPU with AVX-512F, for β 0 or 1,
/// `C`'s columns contiguous and `B`'s columns or rows.
pub(crate) fn handles((_, [br, bc]): Operand<f32>, beta: f32, (_, [_, cc]): Output<f32>) -> bool {
    available() && (beta == 0.0 || beta == 1.0) && cc == 1 && (bc == 1 || br == 1)
}

/// The largest operand, in elements, that [`sgemm_chunks`] packs once for all the chunks a
/// thread runs (1 MiB; the MNIST MLP's largest activation, `x`, is 0.4 MiB).
const SHARED_MAX: usize = 1 << 18;

/// `C = act(A·B + β·C + bias)` as [`sgemm`], over the chunks of rows (`rows`) or of columns of
/// `C` that `next` hands out, until it hands out none; returns whether it ran (the conditions
/// of [`sgemm`]). Chunks of columns share all of `A`, chunks of rows all of `B`: this thread
/// packs that operand once, before its first chunk (a transposed `A`; a row-major one is
/// read in place) or as its first chunk reads it (`B`), when it has at most [`SHARED_MAX`]
/// elements, so that a product handed out in many chunks (for balance between threads)
/// packs it no more often than in one.
///
/// # Safety
/// As [`sgemm`]; every chunk lies inside `C`'s rows (`rows`) or columns.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sgemm_chunks(
    mkn: [usize; 3],
    a: Operand<f32>,
    b: Operand<f32>,
    beta: f32,
    c: Output<f32>,
    epilogue: Epilogue<f32>,
    rows: bool,
    next: &mut dyn FnMut() -> Option<Range<usize>>,
) -> bool {
    // SAFETY: the caller's contract.
    unsafe { chunks(mkn, a, b, beta, c, epilogue, (rows, true), next) }
}

/// [`sgemm_chunks`], packing the shared operand once only when `share`.
///
/// # Safety
/// As [`sgemm_chunks`].
#[allow(clippy::too_many_arguments)]
unsafe fn chunks(
    [m, k, n]: [usize; 3],
    (a, [ar, ac]): Operand<f32>,
    (b, [br, bc]): Operand<f32>,
    beta: f32,
    (c, [cr, cc]): Output<f32>,
    epilogue: Epilogue<f32>,
    (rows, share): (bool, bool),
    next: &mut dyn FnMut() -> Option<Range<usize>>,
) -> bool {
    if !handles((b, [br, bc]), beta, (c, [cr, cc])) {
        return false;
    }
    let add = beta == 1.0;
    // The tiles add the bias, apply a ReLU and a ReLU's derivative as they write their last
    // sums; another activation or derivative runs over each chunk after its product.
    let relu = epilogue.act == Some(UnaryOp::Relu);
    let later = epilogue.act.is_some() && !relu;
    let grad_in_tiles = !later && matches!(epilogue.grad, Some((BinaryOp::LeakyReluGrad(_), _)));
    let mut after = Epilogue {
        act: epilogue.act.filter(|_| !relu),
        grad: epilogue.grad.filter(|_| !grad_in_tiles),
        ..Epilogue::NONE
    };
    // The column sums are taken by whichever writes the final values.
    let sums_after = after.act.is_some() || after.grad.is_some();
    after.sums = epilogue.sums.filter(|_| sums_after);
    let in_tiles = Epilogue {
        act: epilogue.act.filter(|_| relu),
        grad: epilogue.grad.filter(|_| grad_in_tiles),
        sums: epilogue.sums.filter(|_| !sums_after),
        ..epilogue
    };
    let m_tiles = m.next_multiple_of(MR);
    let share_a = share && !rows && k > 0 && ar == 1 && m_tiles * k <= SHARED_MAX;
    let share_b =
        share && rows && k > 0 && k * n.next_multiple_of(NR) <= SHARED_MAX && !narrow([br, bc]);
    // The shared operand's buffer is taken out of its cell for the chunks, whose blocks
    // borrow the other cell.
    let cell = if share_a {
        Some(&PACKED_A)
    } else if share_b {
        Some(&PACKED)
    } else {
        None
    };
    let mut buffer = cell.map(|cell| cell.take()).unwrap_or_default();
    // Where the shared operand is packed (nothing is, without one).
    let base = if share_a {
        grow_to(&mut buffer, m_tiles * k)
    } else if share_b {
        grow_to(&mut buffer, k * n.next_multiple_of(NR))
    } else {
        std::ptr::null_mut()
    };
    if share_a {
        // SAFETY: the CPU has AVX-512F; each block of `A` (rows `i0..`, inner indices
        // `p0..`) is the caller's, and its tiles go to `p0·m_tiles + i0·kc..` of the buffer,
        // inside its `m_tiles · k` elements.
        unsafe {
            let step = inner_step(k);
            for p0 in (0..k).step_by(step) {
                let kc = step.min(k - p0);
                for i0 in (0..m).step_by(MC) {
                    let from = a.offset(p0 as isize * ac).add(i0);
                    let to = base.add(p0 * m_tiles + i0 * kc);
                    pack_a([MC.min(m - i0), kc], (from, ac), to);
                }
            }
        }
    }
    let mut fill = true;
    while let Some(chunk) = next() {
        let share = if share_a {
            Share::A {
                ptr: base.cast_const(),
                rows: m_tiles,
            }
        } else if share_b {
            Share::B { ptr: base, fill }
        } else {
            Share::None
        };
        fill = false;
        let (start, len) = (chunk.start as isize, chunk.len());
        // SAFETY: the CPU has AVX-512F (checked above); the chunk's rows (columns) of `A`
        // (of `B`), of `C` and of the bias lie inside what the caller described, and the
        // shared buffer holds what `share` says. The product initializes the chunk of `C`
        // before the remaining activation reads it.
        unsafe {
            if rows {
                let c = c.offset(start * cr);
                let a = (a.offset(start * ar), [ar, ac]);
                let finish = in_tiles.at_row(chunk.start, cr);
                product(
                    [len, k, n],
                    a,
                    Wrap::NONE,
                    (b, [br, bc]),
                    (c, cr),
                    add,
                    finish,
                    share,
                );
                after.at_row(chunk.start, cr).apply([len, n], c, cr);
            } else {
                let (b, c) = ((b.offset(start * bc), [br, bc]), c.offset(start));
                let finish = in_tiles.at_column(chunk.start);
                let a = (a, [ar, ac]);
                product([m, k, len], a, Wrap::NONE, b, (c, cr), add, finish, share);
                after.at_column(chunk.start).apply([m, len], c, cr);
            }
        }
    }
    if let Some(cell) = cell {
        cell.set(buffer);
    }
    true
}

/// Makes a packing buffer hold at least `len` elements from its [`line_start`] on, and returns
/// that address. Its contents are not kept between products (everything read is written
/// first), so it only grows: shrinking it to each product's size, `Vec::resize` zeroed the
/// difference at the next larger one, 1% of the MNIST MLP step's samples.
fn grow_to(buffer: &mut Vec<f32>, len: usize) -> *mut f32 {
    if buffer.len() < len + LINE {
        buffer.resize(len + LINE, 0.0);
    }
    line_start(buffer)
}

/// Elements of a cache line (64 bytes), which a packing buffer holds beyond what it packs so
/// that its packed data can start on a line ([`line_start`]).
const LINE: usize = 16;

/// The first element of `buffer` on a cache line: where its packed data starts (at most
/// [`LINE`] − 1 elements in, inside a buffer [`grow_to`] made).
///
/// A tile loads its panel of `B` as whole vectors of 64 bytes; from the allocator's 16-byte
/// alignment, every such load spanned two lines (a split load: two accesses of L1 each, at
/// two loads per cycle, against sixteen multiply-adds per step). Started on a line, the MNIST
/// MLP step took 94 µs less (median of 30 paired in-process rounds, 30 of 30 faster: 1772 →
/// 1690 µs, 26th session). Aligning the tensors' own buffers as well (the output rows of
/// `C`, a row-major `A` read by broadcasts) changed nothing measurable (+8 µs, 8 of 30).
fn line_start(buffer: &mut [f32]) -> *mut f32 {
    let p = buffer.as_mut_ptr();
    p.wrapping_add(p.align_offset(64).min(LINE))
}

/// What the chunks of a product that one thread runs share ([`sgemm_chunks`]): an operand the
/// thread packed once for all of them.
#[derive(Clone, Copy)]
enum Share {
    /// Nothing: each block packs what it reads.
    None,
    /// All of `A`, packed one block of the inner dimension after the other: the `kc` columns
    /// from `p0` at `ptr + p0·rows` (`rows`: `m` rounded up to `MR`), in [`pack_a`]'s layout
    /// (its block of `MC` rows from `i0` at `i0·kc`).
    A { ptr: *const f32, rows: usize },
    /// All of `B`, in panels of all `k` rows (panel `q` at `ptr + q·k·NR`): written by this
    /// chunk when `fill` (the thread's first), read by the others.
    B { ptr: *mut f32, fill: bool },
}

/// [`Gemm::gemm_shared_b`](super::gemm::Gemm::gemm_shared_b) for `f32`: `C[cₜ..] +=
/// A[aₜ..]·B` for each pair of offsets of `at` in order, on this thread, `B` packed once for
/// all of them (by the first product). Returns whether it ran: it does under the conditions
/// of [`sgemm`] for this `B` and β = 1 and, where the runs break inside the `k` steps, for
/// rows of `A` that are not adjacent and a `B` whose columns are not (the tiles that read
/// broken runs read neither a transposed `A` nor a row-major `B` that they pack). The sums
/// of each product are those of [`sgemm`] on the same `A` laid out without breaks, to the
/// bit (the same blocks of the inner dimension, in the same order).
///
/// # Safety
/// As [`sgemm`] for every pair: each `A[aₜ..]` addresses its `m × k` elements under `ar` and
/// `wrap`, `B` its `k × n` under its strides, each `C[cₜ..]` `m × n` elements that no operand
/// and no other pair's `C` overlaps.
pub(crate) unsafe fn sgemm_shared_b(
    [m, k, n]: [usize; 3],
    (a, ar, wrap): (*const f32, isize, Wrap),
    b: Operand<f32>,
    (c, cr): (*mut f32, isize),
    at: &[(usize, usize)],
) -> bool {
    let wrap = if wrap.every >= k { Wrap::NONE } else { wrap };
    let [_, bc] = b.1;
    let declined = wrap.breaks() && (ar == 1 || bc == 1);
    if declined || !handles(b, 1.0, (c, [cr, 1])) {
        return false;
    }
    if k == 0 {
        // Nothing to add to any `C`.
        return true;
    }
    let mut buffer = PACKED.take();
    let base = grow_to(&mut buffer, k * n.next_multiple_of(NR));
    for (t, &(a_at, c_at)) in at.iter().enumerate() {
        let share = Share::B {
            ptr: base,
            fill: t == 0,
        };
        // SAFETY: the CPU has AVX-512F (`handles`); the pair's operands are the caller's, and
        // the buffer holds all `k` rows of `B`'s panels, packed by the first product.
        unsafe {
            let (a, c) = ((a.add(a_at), [ar, 1]), (c.add(c_at), cr));
            product([m, k, n], a, wrap, b, c, true, Epilogue::NONE, share);
        }
    }
    PACKED.set(buffer);
    true
}

/// The masks of a tile's two vectors of columns when `cols` (≤ `NR`) of them are in `C`.
#[inline(always)]
fn column_masks(cols: usize) -> [__mmask16; 2] {
    let mask = |c: usize| if c >= 16 { !0 } else { (1u16 << c) - 1 };
    [mask(cols), mask(cols.saturating_sub(16))]
}

/// One register tile: `C[r, j] (+)= Σₚ A[r, p]·B[p, j]` for `r < R`, `p < kc` and the columns
/// `j` of `masks` among the first `16·V` (`V` vectors per row; `masks[1]` is 0 when `V` is
/// 1); adds to `C` when `add`, else overwrites it; then `finish`'s bias (at the
/// tile's first column) and ReLU, its only activation here. With `PACK`, each row of `B` it
/// loads is also stored at `fill` (rows `NR` apart, the masked-off lanes and a one-vector
/// tile's second vector as zeros): the tile
/// packs the panel that the tiles after it read, prefetching the rows [`PREFETCH_ROWS`] ahead.
///
/// # Safety
/// AVX-512F; `a` addresses `R × kc` elements under `(ar, ac)` (`ar` is 1 when `UNIT`), `b`
/// `kc` rows (stride `br`) of `NR` columns (of the masked columns when `MASKED`), `c` `R` rows
/// (stride `cr`) of the masked columns, a bias the masked columns; with `PACK`, `fill`
/// addresses `kc × NR` writable elements that nothing else reads or writes meanwhile.
///
/// Each instance is a function of its own: inlined into [`block`] with the packing variants
/// beside it, LLVM kept the accumulators in memory (a store after every multiply-add, the
/// products at a third of their speed).
#[inline(never)]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn tile<
    const R: usize,
    const V: usize,
    const UNIT: bool,
    const MASKED: bool,
    const PACK: bool,
    const WRAP: bool,
>(
    kc: usize,
    (a, ar, ac, wrap): (*const f32, isize, isize, Wrap),
    (b, br): (*const f32, isize),
    fill: *mut f32,
    masks: [__mmask16; 2],
    (c, cr): (*mut f32, isize),
    add: bool,
    finish: Epilogue<f32>,
) {
    // SAFETY: every access is inside the blocks the caller describes; masked-off lanes of
    // the loads and stores of `C` and the bias are not accessed.
    unsafe {
        let bias = finish.bias.map(|bias| {
            std::array::from_fn::<_, V, _>(|h| _mm512_maskz_loadu_ps(masks[h], bias.add(16 * h)))
        });
        let relu = finish.act == Some(UnaryOp::Relu);
        let scale = finish.scale.map(|s| _mm512_set1_ps(s));
        // A leaky ReLU's derivative `y > 0 ? ȳ : ȳ·slope` (`BinaryOp::eval`'s, bit for bit:
        // a NaN `y` is not > 0).
        let grad = match finish.grad {
            Some((BinaryOp::LeakyReluGrad(slope), y)) => Some((_mm512_set1_ps(slope as f32), y)),
            _ => None,
        };
        let mut acc = [[_mm512_setzero_ps(); V]; R];
        // With the rows of `A` adjacent (`ar = 1`, a transposed `A`) the broadcasts take
        // constant offsets from one pointer instead of a chain of additions of `ar`.
        let ar = if UNIT { 1 } else { ar };
        let rows: [*const f32; R] = std::array::from_fn(|r| a.wrapping_offset(r as isize * ar));
        let (mut off, mut b, mut fill) = (0isize, b, fill);
        // With `WRAP`, the steps to the next break of `A`'s runs, counted down in the one
        // loop. With the loop split at the breaks instead, the MNIST MLP step took 2.5–3.0
        // ms against 0.93–1.17 (four alternations, 27th session); counted down in every
        // tile, not only in this variant, 0.7–4.1% longer (median 1.6%, 9 of 10 slower).
        let mut run = wrap.first;
        for _ in 0..kc {
            // Unmasked for a full panel, and for a packed one (its columns beyond `C`'s are
            // zeros).
            let row: [__m512; V] = std::array::from_fn(|h| {
                if MASKED {
                    _mm512_maskz_loadu_ps(masks[h], b.add(16 * h))
                } else {
                    _mm512_loadu_ps(b.add(16 * h))
                }
            });
            if PACK {
                // Prefetching never faults: rows beyond the block are not read.
                let ahead = b.wrapping_offset(PREFETCH_ROWS * br);
                for (h, &v) in row.iter().enumerate() {
                    _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(16 * h).cast());
                    _mm512_storeu_ps(fill.add(16 * h), v);
                }
                // A one-vector tile packs its panel's second vector as zeros.
                if V == 1 {
                    _mm512_storeu_ps(fill.add(16), _mm512_setzero_ps());
                }
                fill = fill.add(NR);
            }
            for (a, acc) in rows.iter().zip(acc.iter_mut()) {
                let x = _mm512_set1_ps(*a.offset(off));
                for (acc, &row) in acc.iter_mut().zip(&row) {
                    *acc = _mm512_fmadd_ps(x, row, *acc);
                }
            }
            off += ac;
            b = b.offset(br);
            if WRAP {
                run -= 1;
                if run == 0 {
                    off += wrap.skip;
                    run = wrap.every;
                }
            }
        }
        // The column sums, added to in row order as the rows are written.
        let mut sums = finish.sums.map(|sums| {
            std::array::from_fn::<_, V, _>(|h| _mm512_maskz_loadu_ps(masks[h], sums.add(16 * h)))
        });
        for (r, acc) in acc.iter().enumerate() {
            let row = c.offset(r as isize * cr);
            for (h, (&sum, &mask)) in acc.iter().zip(&masks).enumerate() {
                let out = row.add(16 * h);
                let mut sum = match (add, scale) {
                    (true, None) => _mm512_add_ps(sum, _mm512_maskz_loadu_ps(mask, out)),
                    (true, Some(s)) => _mm512_fmadd_ps(sum, s, _mm512_maskz_loadu_ps(mask, out)),
                    (false, None) => sum,
                    (false, Some(s)) => _mm512_mul_ps(sum, s),
                };
                if let Some(bias) = bias {
                    sum = _mm512_add_ps(sum, bias[h]);
                }
                if relu {
                    // `max(z, +0)` gives the second operand for a NaN or a zero of either
                    // sign: `z > 0 ? z : 0`, ReLU's scalar kernel, bit for bit.
                    sum = _mm512_max_ps(sum, _mm512_setzero_ps());
                }
                if let Some((slope, y)) = grad {
                    let y = _mm512_maskz_loadu_ps(mask, y.offset(r as isize * cr).add(16 * h));
                    let positive = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(y, _mm512_setzero_ps());
                    sum = _mm512_mask_blend_ps(positive, _mm512_mul_ps(sum, slope), sum);
                }
                if let Some(sums) = &mut sums {
                    sums[h] = _mm512_add_ps(sums[h], sum);
                }
                _mm512_mask_storeu_ps(out, mask, sum);
            }
        }
        if let (Some(sums), Some(to)) = (sums, finish.sums) {
            for (h, (&v, &mask)) in sums.iter().zip(&masks).enumerate() {
                _mm512_mask_storeu_ps(to.add(16 * h), mask, v);
            }
        }
    }
}

/// The register tile of `rows` (1 to `MR`) rows.
///
/// # Safety
/// As [`tile`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn tiles(
    rows: usize,
    kc: usize,
    a: (*const f32, isize, isize),
    wrap: Wrap,
    (b, br, masked): (*const f32, isize, bool),
    fill: Option<*mut f32>,
    masks: [__mmask16; 2],
    c: (*mut f32, isize),
    add: bool,
    finish: Epilogue<f32>,
) {
    // SAFETY: the caller's contract, for a tile of `rows` rows.
    unsafe {
        let b = (b, br);
        let to = fill.unwrap_or(std::ptr::null_mut());
        // `A` with its breaks, as the tile takes it.
        let a = (a.0, a.1, a.2, wrap);
        // The tile of `rows` rows with `$v` vectors per row and the layout flags `UNIT`,
        // `MASKED`, `PACK` and `WRAP` (`$u`, `$m`, `$p`, `$w`).
        macro_rules! by_rows {
            ($v:literal, $u:literal, $m:literal, $p:literal, $w:literal) => {
                match rows {
                    8 => tile::<8, $v, $u, $m, $p, $w>(kc, a, b, to, masks, c, add, finish),
                    7 => tile::<7, $v, $u, $m, $p, $w>(kc, a, b, to, masks, c, add, finish),
                    6 => tile::<6, $v, $u, $m, $p, $w>(kc, a, b, to, masks, c, add, finish),
                    5 => tile::<5, $v, $u, $m, $p, $w>(kc, a, b, to, masks, c, add, finish),
                    4 => tile::<4, $v, $u, $m, $p, $w>(kc, a, b, to, masks, c, add, finish),
                    3 => tile::<3, $v, $u, $m, $p, $w>(kc, a, b, to, masks, c, add, finish),
                    2 => tile::<2, $v, $u, $m, $p, $w>(kc, a, b, to, masks, c, add, finish),
                    _ => tile::<1, $v, $u, $m, $p, $w>(kc, a, b, to, masks, c, add, finish),
                }
            };
        }
        macro_rules! by_layout {
            ($v:literal) => {
                match (a.1 == 1, masked, fill.is_some(), wrap.breaks()) {
                    (true, false, false, false) => by_rows!($v, true, false, false, false),
                    (true, true, false, false) => by_rows!($v, true, true, false, false),
                    (false, false, false, false) => by_rows!($v, false, false, false, false),
                    (false, true, false, false) => by_rows!($v, false, true, false, false),
                    (true, false, true, false) => by_rows!($v, true, false, true, false),
                    (true, true, true, false) => by_rows!($v, true, true, true, false),
                    (false, false, true, false) => by_rows!($v, false, false, true, false),
                    (false, true, true, false) => by_rows!($v, false, true, true, false),
                    // Breaks only in an `A` whose rows are not adjacent, read in place, with a
                    // `B` packed beforehand ([`sgemm_shared_b`] declines the others).
                    (false, false, false, true) => by_rows!($v, false, false, false, true),
                    (false, true, false, true) => by_rows!($v, false, true, false, true),
                    _ => unreachable!("breaks in the runs of a transposed A or a packing tile"),
                }
            };
        }
        // A panel of at most 16 columns of `C` (the last, in a product whose `n` is not a
        // multiple of `NR`) multiplies only its first vector: the MNIST MLP's products with
        // `W₃` (10 columns), `128 × 512 × 10` and `512 × 128 × 10`, went from 14.4 and 22.6
        // to 11.0 and 16.5 µs on two threads, the step by 0.6% (three in-process
        // alternations, 22nd session).
        if masks[1] == 0 {
            by_layout!(1)
        } else {
            by_layout!(2)
        }
    }
}

/// Where the panels of one block of `B` lie: panel `q` (columns `q·NR..`) starts at
/// `ptr + q·panel`, its rows `row` apart. Packed, `row` is `NR` and `panel` `kc·NR`, and the
/// last panel is padded with zeros; in place (a row-major `B`), `row` is `B`'s row stride
/// and `panel` `NR`, and the last panel's loads are masked.
#[derive(Clone, Copy)]
struct Panels {
    ptr: *const f32,
    row: isize,
    panel: isize,
    packed: bool,
    /// Packed on the fly: the row-major block of `B` (its first element and row stride) that
    /// the first tile of each panel reads in place while it writes the panel at `ptr` (then
    /// a writable buffer), for the tiles after it.
    source: Option<(*const f32, isize)>,
}

impl Panels {
    /// The panels of a packed `kc`-row block at `ptr`.
    fn packed(ptr: *const f32, kc: usize) -> Panels {
        Panels {
            ptr,
            row: NR as isize,
            panel: (kc * NR) as isize,
            packed: true,
            source: None,
        }
    }

    /// The panels of a `kc`-row block at `dst`, packed by the tiles from the row-major block
    /// at `src` (row stride `br`) as they first read it.
    fn packed_from(dst: *mut f32, kc: usize, src: *const f32, br: isize) -> Panels {
        Panels {
            source: Some((src, br)),
            ..Panels::packed(dst, kc)
        }
    }

    /// The panels of a row-major `B` in place, from its row `ptr` (row stride `row`).
    fn in_place(ptr: *const f32, row: isize) -> Panels {
        Panels {
            ptr,
            row,
            panel: NR as isize,
            packed: false,
            source: None,
        }
    }
}

/// `C (+)= A·B` for one block of the inner dimension: `A` is `m × kc` under `(ar, ac)`, `B`
/// `kc × nc` as `panels`, `C` `m × nc` (row stride `cr`); `finish` (at the block's first
/// column) as the tiles write their sums.
///
/// # Safety
/// AVX-512F; the pointers address matrices of these sizes, `C` overlaps neither operand.
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn block(
    [m, kc, nc]: [usize; 3],
    (a, ar, ac): (*const f32, isize, isize),
    wrap: Wrap,
    a_packed: Option<*const f32>,
    panels: Panels,
    (c, cr): (*mut f32, isize),
    add: bool,
    finish: Epilogue<f32>,
) {
    // A transposed `A` (adjacent rows) that more than one panel reads is packed: each tile's
    // `MR × kc` elements become one contiguous run, which the broadcasts read at constant
    // offsets from one pointer. Read in place, it touches a line per step for 32 of its 64
    // bytes: 171 and 136 GFLOP/s for `784 × 128 × 512` and 1024³, 198 and 181 packed, on one
    // core of a Xeon whose FMA peak is 246. A row-major `A` is read in place: each tile's eight rows are eight pointers
    // and one offset, and each line it loads serves sixteen steps. Packed by `16 × 16`
    // transposes instead, one core of a Xeon (FMA peak 176) ran `128 × 784 × 512` at 145–148
    // GFLOP/s against 154–155 in place, `64 × 9216 × 128` at 74–109 against 124–125 and
    // 256³ at 148–152 against 166, and the MNIST MLP step took 1793–1809 µs against
    // 1741–1754 (three alternating pairs, 22nd session).
    // Already packed (`a_packed`, by [`sgemm_chunks`]), tile `i` of `MR` rows is at
    // `a_packed + i·kc`.
    // A block of one panel reads each tile's `A` once, in place: packing it would add a copy
    // (the MNIST MLP's `W₃` tangent, `512 × 128 × 10`: 23.5 µs packed, 18.2 in place,
    // medians of ~2000 steps alternated in one process, 26th session).
    let pack = a_packed.is_none() && kc > 0 && ar == 1 && nc > NR && !wrap.breaks();
    let run = |packed: *mut f32| {
        // SAFETY: every pointer formed below addresses an element of the caller's matrices
        // (rows `< m`, columns `< nc`, panels `< nc / NR` rounded up) or of the buffer (tiles
        // `< MC / MR` of `kc × MR`) or of the caller's packed `A`, and each tile's accesses
        // are too.
        unsafe {
            for i0 in (0..m).step_by(MC) {
                let rows_end = m.min(i0 + MC);
                if pack {
                    pack_a([rows_end - i0, kc], (a.add(i0), ac), packed);
                }
                for (q, j) in (0..nc).step_by(NR).enumerate() {
                    let masks = column_masks(NR.min(nc - j));
                    let masked = nc - j < NR && !panels.packed;
                    let at = panels.ptr.wrapping_offset(q as isize * panels.panel);
                    let panel = (at, panels.row, masked);
                    // Packed on the fly: the first tile reads the panel in place (its last
                    // one masked) and writes it for the others.
                    let mut first = panels
                        .source
                        .filter(|_| i0 == 0)
                        .map(|(src, br)| ((src.add(j), br, nc - j < NR), at.cast_mut()));
                    let finish = finish.at_column(j);
                    let mut i = i0;
                    while i < rows_end {
                        let (panel, fill) = match first.take() {
                            Some((source, fill)) => (source, Some(fill)),
                            None => (panel, None),
                        };
                        let rows = MR.min(rows_end - i);
                        let a = if let Some(packed) = a_packed {
                            (packed.add(i * kc), 1, MR as isize)
                        } else if pack {
                            (packed.add((i - i0) * kc).cast_const(), 1, MR as isize)
                        } else {
                            (a.wrapping_offset(i as isize * ar), ar, ac)
                        };
                        let c = (c.offset(i as isize * cr).add(j), cr);
                        let finish = finish.at_row(i, cr);
                        tiles(rows, kc, a, wrap, panel, fill, masks, c, add, finish);
                        i += rows;
                    }
                }
            }
        }
    };
    if pack {
        PACKED_A.with_borrow_mut(|buffer| {
            run(grow_to(buffer, MC * kc));
        });
    } else {
        run(std::ptr::null_mut());
    }
}

/// Where element `(r, p)` of a packed block of `A` lies: tile `r / MR` (of `kc × MR`
/// elements), step `p`, lane `r mod MR`.
#[inline(always)]
fn packed_a_at(kc: usize, r: usize, p: usize) -> usize {
    (r / MR) * MR * kc + p * MR + r % MR
}

/// Packs the `rows × kc` block of a transposed `A` at `a` (adjacent rows, columns `ac`
/// apart) into tiles of `MR` rows ([`packed_a_at`]; the last tile's missing rows are not
/// written, nor read), by copies of up to `MR` elements per step.
///
/// # Safety
/// AVX-512F; `a` addresses the block under its strides, `dst` `rows` rounded up to `MR`
/// times `kc` elements.
#[target_feature(enable = "avx512f")]
unsafe fn pack_a([rows, kc]: [usize; 2], (a, ac): (*const f32, isize), dst: *mut f32) {
    // SAFETY: every read is `a[r + p·ac]` with `r < rows`, `p < kc`, every write
    // `dst[packed_a_at(kc, r, p)]` for such `(r, p)`; masked-off lanes are not accessed.
    unsafe {
        for t in (0..rows).step_by(MR) {
            let mask: __mmask16 = (1 << MR.min(rows - t)) - 1;
            for p in 0..kc {
                let v = _mm512_maskz_loadu_ps(mask, a.offset(t as isize + p as isize * ac));
                _mm512_mask_storeu_ps(dst.add(packed_a_at(kc, t, p)), mask, v);
            }
        }
    }
}

/// `C (+)= A·B`, then `finish`, with each `KC × NC` block of `B` packed into this thread's
/// buffer as contiguous panels (copied by the tiles that first read them when `B` is
/// row-major, `br` apart: the copy's loads are the tile's own, and its stores overlap the
/// multiply-adds, which a separate copy, 12% of a `128 × 784 × 512` product on one core of
/// a Xeon, did not; transposed beforehand by `16 × 16` register blocks when its rows are
/// contiguous, `bc` apart), except a row-major `B` in a product of at most [`IN_PLACE_ROWS`]
/// rows or a [`narrow`] one, read in place; or, for a chunk of a split product (`share`), the `A` or `B` its
/// thread packed once for all its chunks. Every tile
/// of a block of rows reads a packed panel from L1 with unmasked loads; read in place, the
/// rows of a panel are `n` elements apart (the 1024³ product: 130 GFLOP/s in place, 165
/// packed, on one core of a Xeon whose FMA peak is 246; presumably because rows 4 KiB apart
/// map to the same few sets of L1, which this VM's lack of cache counters leaves unchecked).
///
/// The inner dimension is split into equal blocks of at most `KC` (784 = 4 × 196, not
/// 3 × 256 + 16, whose last block would pay a tile's setup and stores for 16 steps).
///
/// # Safety
/// AVX-512F, and the pointers as for [`sgemm`].
#[allow(clippy::too_many_arguments)]
unsafe fn product(
    [m, k, n]: [usize; 3],
    (a, [ar, ac]): Operand<f32>,
    wrap: Wrap,
    (b, [br, bc]): Operand<f32>,
    (c, cr): (*mut f32, isize),
    add: bool,
    finish: Epilogue<f32>,
    share: Share,
) {
    if k == 0 {
        // No sums: `C` is `β·C` (zeros or itself), then the epilogue, by the same tiles
        // with no steps (they read no operand).
        let empty = std::ptr::NonNull::<f32>::dangling().as_ptr();
        // SAFETY: no element of `A` or `B` is read; `C` is the caller's.
        let panels = Panels::packed(empty, 0);
        let a = (empty.cast_const(), 0, 0);
        return unsafe { block([m, 0, n], a, Wrap::NONE, None, panels, (c, cr), add, finish) };
    }
    let step = inner_step(k);
    // A shared `B` is never read in place, nor packed into this call's buffer.
    let in_place =
        bc == 1 && (m <= IN_PLACE_ROWS || narrow([br, bc])) && !matches!(share, Share::B { .. });
    let own_buffer = !in_place && !matches!(share, Share::B { .. });
    // In place, one block of columns: nothing is copied that a narrower block would keep in
    // cache.
    let width = if in_place { n.max(1) } else { NC };
    PACKED.with_borrow_mut(|buffer| {
        // Read only by the blocks that pack into this call's buffer.
        let dst = if own_buffer {
            grow_to(buffer, step * NC.min(n).next_multiple_of(NR))
        } else {
            std::ptr::null_mut()
        };
        for j0 in (0..n).step_by(width) {
            let nc = width.min(n - j0);
            for p0 in (0..k).step_by(step) {
                let kc = step.min(k - p0);
                let finish = if p0 + kc == k {
                    finish.at_column(j0)
                } else {
                    finish.partial()
                };
                // SAFETY: columns `j0..j0 + nc` and inner indices `p0..p0 + kc` of `B` are
                // the caller's; this call's buffer holds `kc` rows of `nc` rounded up to
                // panels, a shared one all `k` rows of every panel; the block then reads them
                // (or `B` in place), rows `< m` of `A` and the block of `C`.
                unsafe {
                    let src = b.offset(p0 as isize * br + j0 as isize * bc);
                    let panels = match share {
                        // Panels of all `k` rows: this block's from column `j0`, row `p0`.
                        Share::B { ptr, fill } => {
                            let at = ptr.add(j0 * k + p0 * NR);
                            if fill {
                                packing([kc, nc], (src, [br, bc]), at, k)
                            } else {
                                Panels::packed(at, k)
                            }
                        }
                        _ if in_place => Panels::in_place(src, br),
                        _ => packing([kc, nc], (src, [br, bc]), dst, kc),
                    };
                    let (at, wrap) = wrap.at(p0, ac);
                    let a = (a.offset(at), ar, ac);
                    let a_packed = match share {
                        Share::A { ptr, rows } => Some(ptr.add(p0 * rows)),
                        _ => None,
                    };
                    block(
                        [m, kc, nc],
                        a,
                        wrap,
                        a_packed,
                        panels,
                        (c.add(j0), cr),
                        add || p0 > 0,
                        finish,
                    );
                }
            }
        }
    });
}

/// The length of the blocks of the inner dimension: `k` split into equal blocks of at most
/// `KC` (784 = 4 × 196). The blocks of a shared `A` ([`Share::A`]) are laid out by it too.
fn inner_step(k: usize) -> usize {
    k.div_ceil(k.div_ceil(KC))
}

/// The `kc × nc` block of `B` at `src` as panels of `rows ≥ kc` rows at `dst`: packed by the
/// tiles that first read them when `B` is row-major, by [`pack_transposed`] now otherwise.
///
/// # Safety
/// AVX-512F; `src` addresses the block under its strides (one of them 1), `dst` `rows × nc`
/// rounded up to panels.
unsafe fn packing(
    [kc, nc]: [usize; 2],
    (src, [br, bc]): Operand<f32>,
    dst: *mut f32,
    rows: usize,
) -> Panels {
    if bc == 1 {
        Panels::packed_from(dst, rows, src, br)
    } else {
        // SAFETY: the caller's contract.
        unsafe { pack_transposed([kc, nc], src, bc, dst, rows) };
        Panels::packed(dst, rows)
    }
}

/// Where element `(p, j)` of `B` packed in panels of `rows` rows lies: panel `j / NR`, row
/// `p`, lane `j mod NR`.
#[inline(always)]
fn packed_at(rows: usize, p: usize, j: usize) -> usize {
    (j / NR) * rows * NR + p * NR + j % NR
}

/// Packs the `kc × nc` block of `B` at `src` whose rows are contiguous (`B[p, j] =
/// src[p + j·bc]`) into panels of `panel ≥ kc` rows (their first `kc` written), by `16 × 16`
/// transposes in registers (the edges elementwise), the last panel's columns beyond `nc`
/// zeros.
///
/// # Safety
/// AVX-512F; `src` addresses `nc` runs of `kc` elements `bc` apart, `dst` `panel × nc`
/// rounded up to panels.
#[target_feature(enable = "avx512f")]
unsafe fn pack_transposed(
    [kc, nc]: [usize; 2],
    src: *const f32,
    bc: isize,
    dst: *mut f32,
    panel: usize,
) {
    let nb = nc - nc % 16;
    // SAFETY: every read is `src[p + j·bc]` with `p < kc`, `j < nc` (masked-off lanes are not
    // read), and every write `dst[packed_at(panel, p, j)]` with `p < kc`, `j < nc` rounded up
    // to `NR`; 16 columns from a multiple of 16 stay in one panel.
    unsafe {
        for j in (0..nb).step_by(16) {
            for p in (0..kc).step_by(16) {
                // The last block of the inner dimension may be short (`W₃ᵀ` of the MNIST MLP
                // has 10 rows): its loads are masked, and only its rows are stored.
                let steps = 16.min(kc - p);
                let mask = ((1u32 << steps) - 1) as __mmask16;
                let rows = load_transposed(src.offset(j as isize * bc).add(p), bc, mask);
                for (q, row) in rows.iter().take(steps).enumerate() {
                    _mm512_storeu_ps(dst.add(packed_at(panel, p + q, j)), *row);
                }
            }
        }
        for j in nb..nc.next_multiple_of(NR) {
            for p in 0..kc {
                let v = if j < nc {
                    *src.offset(j as isize * bc).add(p)
                } else {
                    0.0
                };
                *dst.add(packed_at(panel, p, j)) = v;
            }
        }
    }
}

/// The `16 × 16` block whose row `t` is the 16 contiguous elements at `src + t·stride` (the
/// lanes of `mask`, zeros elsewhere), transposed: vector `q` holds element `q` of every row.
///
/// # Safety
/// AVX-512F; `src` addresses 16 runs of the lanes of `mask`, `stride` apart.
#[inline(always)]
unsafe fn load_transposed(src: *const f32, stride: isize, mask: __mmask16) -> [__m512; 16] {
    // SAFETY: the caller's contract; masked-off lanes are not read.
    let mut rows: [__m512; 16] = std::array::from_fn(|t| unsafe {
        _mm512_maskz_loadu_ps(mask, src.offset(t as isize * stride))
    });
    transpose16(&mut rows);
    rows
}

/// Transposes the `16 × 16` matrix whose rows are the vectors of `rows`: interleaving pairs
/// of rows, then pairs of pairs (64-bit lanes), then 128-bit and 256-bit blocks.
#[inline(always)]
fn transpose16(rows: &mut [__m512; 16]) {
    // SAFETY: register-only AVX-512F shuffles; the callers are compiled with AVX-512F.
    unsafe {
        let r = rows;
        let mut t = [_mm512_setzero_ps(); 16];
        for i in 0..8 {
            t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
        }
        for i in 0..4 {
            let [lo0, hi0, lo1, hi1] = [t[4 * i], t[4 * i + 1], t[4 * i + 2], t[4 * i + 3]];
            r[4 * i] = _mm512_shuffle_ps::<0x44>(lo0, lo1);
            r[4 * i + 1] = _mm512_shuffle_ps::<0xee>(lo0, lo1);
            r[4 * i + 2] = _mm512_shuffle_ps::<0x44>(hi0, hi1);
            r[4 * i + 3] = _mm512_shuffle_ps::<0xee>(hi0, hi1);
        }
        for i in 0..2 {
            for j in 0..4 {
                let (x, y) = (r[8 * i + j], r[8 * i + 4 + j]);
                t[8 * i + j] = _mm512_shuffle_f32x4::<0x88>(x, y);
                t[8 * i + 4 + j] = _mm512_shuffle_f32x4::<0xdd>(x, y);
            }
        }
        for j in 0..8 {
            r[j] = _mm512_shuffle_f32x4::<0x88>(t[j], t[8 + j]);
            r[8 + j] = _mm512_shuffle_f32x4::<0xdd>(t[j], t[8 + j]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::gemm::{Epilogue, Operand, Output};
    use super::{available, sgemm, sgemm_chunks};
    use adjoint_backend::UnaryOp;

    /// Entries in [-1, 1) from a fixed sequence.
    fn values(len: usize, seed: usize) -> Vec<f32> {
        (0..len)
            .map(|i| ((i * 7919 + seed * 104_729) % 2001) as f32 / 1000.0 - 1.0)
            .collect()
    }

    /// How `A` lies: row-major with a row stride of `2k` (packed by transposes), transposed
    /// with a column stride of `2m` (packed by copies), or every other element of every row
    /// (neither stride 1: read in place).
    #[derive(Clone, Copy, Debug)]
    enum ALayout {
        Rows,
        Transposed,
        Strided,
    }

    /// How a case runs: β, the factor α (`None`: 1), whether with the bias, the activation.
    type Run = (f32, Option<f32>, bool, Option<UnaryOp>);

    /// A product's operands under the given layouts: `A` as [`ALayout`] says, in a wider
    /// matrix, `B` row-major or transposed, `C` with a row stride of `n + 3` and known values
    /// (which β = 0 must ignore and no store may touch past column `n`).
    struct Case {
        mkn: [usize; 3],
        a: (Vec<f32>, [isize; 2]),
        b: (Vec<f32>, [isize; 2]),
        c_row: usize,
        start: Vec<f32>,
        bias: Vec<f32>,
    }

    impl Case {
        fn new([m, k, n]: [usize; 3], a_layout: ALayout, b_transposed: bool) -> Case {
            let (a_len, a_strides) = match a_layout {
                ALayout::Rows => (m * k * 2, [2 * k as isize, 1]),
                ALayout::Transposed => (k * m * 2, [1, 2 * m as isize]),
                ALayout::Strided => (m * k * 2, [2 * k as isize, 2]),
            };
            let (b_len, b_strides) = if b_transposed {
                (n * k, [1, k as isize])
            } else {
                (k * n, [n as isize, 1])
            };
            let c_row = n + 3;
            Case {
                mkn: [m, k, n],
                a: (values(a_len.max(1), 1), a_strides),
                b: (values(b_len.max(1), 2), b_strides),
                c_row,
                start: values(m * c_row, 3),
                bias: {
                    // A NaN, where ReLU's kernel gives 0 (as `max(z, +0)` does, not
                    // `max(+0, z)`).
                    let mut bias = values(n.max(2), 4);
                    bias[1] = f32::NAN;
                    bias
                },
            }
        }

        /// `C` after `kernel` ran on this case's operands with `beta` and the epilogue (the
        /// factor `scale`, the bias, if any, this case's); `kernel` says whether it ran.
        fn with(
            &self,
            (beta, scale, bias, act): Run,
            kernel: impl FnOnce(Operand<f32>, Operand<f32>, Output<f32>, Epilogue<f32>) -> bool,
        ) -> Vec<f32> {
            let mut c = self.start.clone();
            let epilogue = Epilogue {
                scale,
                bias: bias.then_some(self.bias.as_ptr()),
                act,
                grad: None,
                sums: None,
            };
            let ran = kernel(
                (self.a.0.as_ptr(), self.a.1),
                (self.b.0.as_ptr(), self.b.1),
                (c.as_mut_ptr(), [self.c_row as isize, 1]),
                epilogue,
            );
            assert!(ran, "the kernel declined a product it handles (β = {beta})");
            c
        }

        /// `C` after [`sgemm`] ran with `beta` and `epilogue`.
        fn run(&self, run @ (beta, ..): Run) -> Vec<f32> {
            self.with(run, |a, b, c, epilogue| {
                // SAFETY: the buffers hold the matrices under these strides and the bias `n`
                // elements; `C` is separate.
                unsafe { sgemm(self.mkn, a, b, beta, c, epilogue) }
            })
        }

        /// `C` after [`sgemm_chunks`] ran over chunks of `len` rows (`rows`) or columns,
        /// handed out in the order `order` gives the chunk indices.
        fn run_chunks(
            &self,
            run @ (beta, ..): Run,
            (rows, len): (bool, usize),
            order: impl Fn(usize) -> Vec<usize>,
        ) -> Vec<f32> {
            let [m, _, n] = self.mkn;
            let long = if rows { m } else { n };
            let mut chunks = order(long.div_ceil(len))
                .into_iter()
                .map(|i| i * len..long.min((i + 1) * len));
            self.with(run, |a, b, c, epilogue| {
                let mut next = || chunks.next();
                // SAFETY: as in `run`; the chunks are disjoint ranges of `C`'s rows or
                // columns.
                unsafe { sgemm_chunks(self.mkn, a, b, beta, c, epilogue, rows, &mut next) }
            })
        }

        /// `β·C + α·A·B` at `(i, j)`, summed in `f64`.
        fn want(&self, beta: f32, alpha: f32, i: usize, j: usize) -> f64 {
            let ([ar, ac], [br, bc]) = (self.a.1, self.b.1);
            let mut sum = 0.0;
            for p in 0..self.mkn[1] {
                let x = self.a.0[(i as isize * ar + p as isize * ac) as usize] as f64;
                let y = self.b.0[(p as isize * br + j as isize * bc) as usize] as f64;
                sum += x * y;
            }
            beta as f64 * self.start[i * self.c_row + j] as f64 + alpha as f64 * sum
        }
    }

    #[test]
    fn products_match_f64_sums_for_every_layout_and_edge() {
        if !available() {
            eprintln!("skipped: this CPU has no AVX-512F, the kernel never runs here");
            return;
        }
        // Rows around the tile (8) and the block (64) sizes, columns around the vector (16:
        // one-vector tiles below it), tile (32) and packed-block (512) sizes, a packed `B` of
        // one narrow panel (10 columns), inner sizes around the transposes' 16 and the block's
        // 256 (and 513, three equal blocks), and k = 0.
        let shapes = [
            [1, 1, 1],
            [7, 5, 15],
            [8, 16, 16],
            [9, 17, 17],
            [65, 257, 33],
            [64, 0, 31],
            [13, 300, 530],
            [70, 32, 64],
            [33, 47, 97],
            [16, 513, 65],
            [72, 40, 10],
        ];
        let layouts = [ALayout::Rows, ALayout::Transposed, ALayout::Strided];
        for mkn @ [m, k, n] in shapes {
            for (a_t, b_t) in layouts.iter().flat_map(|&a| [(a, false), (a, true)]) {
                let case = Case::new(mkn, a_t, b_t);
                for beta in [0.0, 1.0] {
                    // The product, scaled, and with the bias and a ReLU applied in the tiles.
                    let ends = [
                        (None, false, None),
                        (Some(-0.75), false, None),
                        (None, true, Some(UnaryOp::Relu)),
                    ];
                    for (scale, bias, act) in ends {
                        let c = case.run((beta, scale, bias, act));
                        for i in 0..m {
                            for j in 0..case.c_row {
                                let got = c[i * case.c_row + j] as f64;
                                if j >= n {
                                    let was = case.start[i * case.c_row + j] as f64;
                                    assert_eq!(got, was, "wrote outside C at ({i}, {j})");
                                    continue;
                                }
                                let mut want = case.want(beta, scale.unwrap_or(1.0), i, j);
                                if bias {
                                    want = (want + case.bias[j] as f64).max(0.0);
                                }
                                let tol = 1e-6 * (k as f64 + 2.0);
                                assert!(
                                    (got - want).abs() <= tol,
                                    "{mkn:?} a={a_t:?} b_t={b_t} β={beta} α={scale:?} \
                                     bias={bias}: C[{i}, {j}] = {got}, want {want}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// A product run in chunks of rows or of columns, handed out in any order, with the
    /// operand they share packed once (by the first chunk, for `B`), gives the bits of the
    /// product in one piece, for every layout, factor and epilogue.
    #[test]
    fn chunks_give_the_bits_of_one_product() {
        if !available() {
            eprintln!("skipped: this CPU has no AVX-512F, the kernel never runs here");
            return;
        }
        let orders: [fn(usize) -> Vec<usize>; 2] = [
            |count| (0..count).collect(),
            // The last first, then the others from the middle on: the chunk that packs `B`
            // is not the first one in `C`.
            |count| {
                let mut order: Vec<usize> = (0..count).rev().collect();
                order.rotate_left(count / 2);
                order
            },
        ];
        let layouts = [ALayout::Rows, ALayout::Transposed, ALayout::Strided];
        // Sizes around the tiles (8 × 32), blocks (64 rows, 256 inner) and a ragged last
        // chunk; inner sizes of one block and of three; a row-major `B` of 10 columns, read
        // in place by every chunk of rows.
        for mkn @ [m, k, n] in [
            [130, 40, 97],
            [70, 513, 65],
            [200, 300, 33],
            [9, 17, 530],
            [130, 300, 10],
        ] {
            for (a_t, b_t) in layouts.iter().flat_map(|&a| [(a, false), (a, true)]) {
                let case = Case::new(mkn, a_t, b_t);
                let runs: [Run; 4] = [
                    (0.0, None, false, None),
                    (1.0, Some(-0.75), false, None),
                    (1.0, None, true, Some(UnaryOp::Relu)),
                    (0.0, None, true, Some(UnaryOp::Tanh)),
                ];
                for run @ (beta, ..) in runs {
                    let whole = case.run(run);
                    for (rows, len) in [(true, 32), (true, 64), (false, 32), (false, 96)] {
                        if (if rows { m } else { n }) <= len {
                            continue;
                        }
                        for order in orders {
                            let got = case.run_chunks(run, (rows, len), order);
                            let bits =
                                |c: &[f32]| c.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                            assert_eq!(
                                bits(&got),
                                bits(&whole),
                                "{mkn:?} a={a_t:?} b_t={b_t} β={beta} rows={rows} len={len} \
                                 k={k}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// The epilogue gives the bits of the product followed by the elementwise ops (the
    /// contract of `Backend::matmul_epilogue`): the in-tile bias and ReLU, and the bias in the
    /// tiles followed by another activation. (Another activation without a bias runs
    /// `Epilogue::apply` after the product, this test's reference itself; `tests.rs` checks it
    /// against the backend's separate ops.)
    #[test]
    fn epilogues_give_the_bits_of_the_separate_ops() {
        if !available() {
            eprintln!("skipped: this CPU has no AVX-512F, the kernel never runs here");
            return;
        }
        let (relu, tanh, sigmoid) = (
            Some(UnaryOp::Relu),
            Some(UnaryOp::Tanh),
            Some(UnaryOp::Sigmoid),
        );
        let epilogues = [
            (false, None),
            (true, None),
            (false, relu),
            (true, relu),
            (true, tanh),
            (true, sigmoid),
        ];
        for mkn @ [m, _, n] in [[9, 17, 33], [64, 0, 31], [13, 300, 530]] {
            for (a_t, b_t) in [(ALayout::Rows, false), (ALayout::Transposed, true)] {
                let case = Case::new(mkn, a_t, b_t);
                for beta in [0.0, 1.0] {
                    let product = case.run((beta, None, false, None));
                    for (bias, act) in epilogues {
                        let mut want = product.clone();
                        let separate = Epilogue {
                            bias: bias.then_some(case.bias.as_ptr()),
                            act,
                            ..Epilogue::NONE
                        };
                        // SAFETY: `want` holds `m` initialized rows of `c_row ≥ n`.
                        unsafe { separate.apply([m, n], want.as_mut_ptr(), case.c_row as isize) };
                        let got = case.run((beta, None, bias, act));
                        let bits = |c: &[f32]| c.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(
                            bits(&got),
                            bits(&want),
                            "{mkn:?} a={a_t:?} b_t={b_t} β={beta} bias={bias} act={act:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn other_layouts_and_factors_are_declined() {
        let (a, b, mut c) = ([1.0f32; 4], [1.0f32; 4], [0.0f32; 4]);
        let case = |b_strides: [isize; 2], beta: f32, c_strides: [isize; 2], c: &mut [f32]| {
            // SAFETY: 2 × 2 matrices in 4-element buffers under each of these strides.
            unsafe {
                sgemm(
                    [2, 2, 2],
                    (a.as_ptr(), [2, 1]),
                    (b.as_ptr(), b_strides),
                    beta,
                    (c.as_mut_ptr(), c_strides),
                    Epilogue::NONE,
                )
            }
        };
        assert!(!case([2, 1], 0.5, [2, 1], &mut c), "β = 0.5");
        assert!(!case([2, 1], 0.0, [1, 2], &mut c), "column-major C");
        assert!(!case([4, 2], 0.0, [2, 1], &mut c), "strided B");
        assert_eq!(c, [0.0; 4], "a declined product wrote C");
    }
}
