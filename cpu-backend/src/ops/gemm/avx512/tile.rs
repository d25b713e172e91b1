//! The register tiles: `R × 16·V` sums of `C` in registers, the epilogue applied as they are
//! written.

use std::arch::x86_64::{
    __m512, __mmask16, _CMP_GT_OQ, _MM_HINT_T0, _mm_prefetch, _mm512_add_ps, _mm512_cmp_ps_mask,
    _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_mask_blend_ps, _mm512_mask_storeu_ps,
    _mm512_maskz_loadu_ps, _mm512_max_ps, _mm512_mul_ps, _mm512_set1_ps, _mm512_setzero_ps,
    _mm512_storeu_ps,
};

use super::super::product::{Epilogue, Wrap};
use super::blocking::{NR, PREFETCH_ROWS};
use adjoint_backend::{BinaryOp, UnaryOp};

/// The masks of a tile's two vectors of columns when `cols` (≤ `NR`) of them are in `C`.
#[inline(always)]
pub(super) fn column_masks(cols: usize) -> [__mmask16; 2] {
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
/// Each instance is a function of its own: inlined into `block` with the packing variants
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
pub(super) unsafe fn tiles(
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
