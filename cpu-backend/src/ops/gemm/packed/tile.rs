//! The register tiles: `R × V·LANES` sums of `C` in registers, the epilogue applied as they
//! are written.

use super::super::product::{Epilogue, Wrap};
use super::isa::{Body, ForRows, Isa};
use adjoint_backend::{BinaryOp, UnaryOp};

/// The columns of `C` a tile writes: the masks of its two vectors, which of them are full
/// (read and written without a mask: AMD's AVX2 masked stores are slow, and its masked loads
/// no faster than plain ones), and how many of them hold columns of `C` (one when at most
/// `LANES` do).
#[derive(Clone, Copy)]
pub(super) struct Columns<S: Isa> {
    masks: [S::Mask; 2],
    full: [bool; 2],
    one_vector: bool,
}

impl<S: Isa> Columns<S> {
    /// The first `cols` (at most `NR`) columns of a tile.
    #[inline(always)]
    pub(super) fn first(cols: usize) -> Self {
        Columns {
            masks: [
                S::mask(cols.min(S::LANES)),
                S::mask(cols.saturating_sub(S::LANES).min(S::LANES)),
            ],
            full: [cols >= S::LANES, cols >= 2 * S::LANES],
            one_vector: cols <= S::LANES,
        }
    }
}

/// One register tile: `C[r, j] (+)= Σₚ A[r, p]·B[p, j]` for `r < R`, `p < kc` and the columns
/// `j` of `masks` among the first `LANES·V` (`V` vectors per row; `masks[1]` is unused when
/// `V` is 1); adds to `C` when `add`, else overwrites it; then `finish`'s bias (at the
/// tile's first column) and ReLU, its only activation here. With `PACK`, each row of `B` it
/// loads is also stored at `fill` (rows `NR` apart, the masked-off lanes and a one-vector
/// tile's second vector as zeros): the tile packs the panel that the tiles after it read,
/// prefetching the rows [`PREFETCH_ROWS`](Isa::PREFETCH_ROWS) ahead.
///
/// # Safety (of `run`)
/// In `S`'s build; `a` addresses `R × kc` elements under `(ar, ac)` (`ar` is 1 when `UNIT`),
/// `b` `kc` rows (stride `br`) of `NR` columns (of the masked columns when `MASKED`), `c` `R`
/// rows (stride `cr`) of the masked columns, a bias the masked columns; with `PACK`, `fill`
/// addresses `kc × NR` writable elements that nothing else reads or writes meanwhile.
///
/// Each instance runs in a function of its own (`S`'s build of it): inlined into `block` with
/// the packing variants beside it, LLVM kept the accumulators in memory (a store after every
/// multiply-add, the products at a third of their speed).
struct Tile<
    S: Isa,
    const V: usize,
    const UNIT: bool,
    const MASKED: bool,
    const PACK: bool,
    const WRAP: bool,
> {
    kc: usize,
    a: (*const f32, isize, isize, Wrap),
    b: (*const f32, isize),
    fill: *mut f32,
    cols: Columns<S>,
    c: (*mut f32, isize),
    add: bool,
    finish: Epilogue<f32>,
}

/// A tile of `R` rows: the [`Body`] that `S`'s build runs.
struct Rows<T, const R: usize>(T);

impl<
    S: Isa,
    const R: usize,
    const V: usize,
    const UNIT: bool,
    const MASKED: bool,
    const PACK: bool,
    const WRAP: bool,
> Body for Rows<Tile<S, V, UNIT, MASKED, PACK, WRAP>, R>
{
    type Output = ();

    #[inline(always)]
    unsafe fn run(self) {
        let Tile {
            kc,
            a: (a, ar, ac, wrap),
            b: (b, br),
            fill,
            cols,
            c: (c, cr),
            add,
            finish,
            ..
        } = self.0;
        let masks = cols.masks;
        // SAFETY: every access is inside the blocks the caller describes; masked-off lanes
        // of the loads and stores of `C` and the bias are not accessed; the operations are
        // `S`'s, in its build.
        unsafe {
            let l = S::LANES;
            let bias = finish.bias.map(|bias| {
                std::array::from_fn::<_, V, _>(|h| S::load_masked(masks[h], bias.add(l * h)))
            });
            let relu = finish.act == Some(UnaryOp::Relu);
            let scale = finish.scale.map(|s| S::splat(s));
            // A leaky ReLU's derivative `y > 0 ? ȳ : ȳ·slope` (`BinaryOp::eval`'s, bit for
            // bit: a NaN `y` is not > 0).
            let grad = match finish.grad {
                Some((BinaryOp::LeakyReluGrad(slope), y)) => Some((S::splat(slope as f32), y)),
                _ => None,
            };
            if S::PREFETCH_C {
                // The tile's rows of `C`, which its epilogue reads or writes after the loop.
                for r in 0..R {
                    let row = c.wrapping_offset(r as isize * cr);
                    S::prefetch(row);
                    S::prefetch(row.wrapping_add(V * l - 1));
                }
            }
            let mut acc = [[S::zero(); V]; R];
            // With the rows of `A` adjacent (`ar = 1`, a transposed `A`) the broadcasts take
            // constant offsets from one pointer instead of a chain of additions of `ar`.
            let ar = if UNIT { 1 } else { ar };
            let rows: [*const f32; R] = std::array::from_fn(|r| a.wrapping_offset(r as isize * ar));
            let (mut off, mut b, mut fill) = (0isize, b, fill);
            // With `WRAP`, the steps to the next break of `A`'s runs, counted down in the one
            // loop. With the loop split at the breaks instead, the MNIST MLP step took
            // 2.5–3.0 ms against 0.93–1.17 (four alternations, 27th session, AVX-512);
            // counted down in every tile, not only in this variant, 0.7–4.1% longer (median
            // 1.6%, 9 of 10 slower).
            let mut run = wrap.first;
            for _ in 0..kc {
                // Unmasked for a full panel, and for a packed one (its columns beyond `C`'s
                // are zeros).
                let row: [S::V; V] = std::array::from_fn(|h| {
                    if MASKED {
                        S::load_masked(masks[h], b.add(l * h))
                    } else {
                        S::load(b.add(l * h))
                    }
                });
                if PACK {
                    // Prefetching never faults: rows beyond the block are not read.
                    let ahead = b.wrapping_offset(S::PREFETCH_ROWS * br);
                    for (h, &v) in row.iter().enumerate() {
                        S::prefetch(ahead.wrapping_add(l * h));
                        S::store(fill.add(l * h), v);
                    }
                    // A one-vector tile packs its panel's second vector as zeros.
                    if V == 1 {
                        S::store(fill.add(l), S::zero());
                    }
                    fill = fill.add(S::NR);
                }
                for (a, acc) in rows.iter().zip(acc.iter_mut()) {
                    let x = S::splat(*a.offset(off));
                    for (acc, &row) in acc.iter_mut().zip(&row) {
                        *acc = S::fmadd(x, row, *acc);
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
                std::array::from_fn::<_, V, _>(|h| S::load_masked(masks[h], sums.add(l * h)))
            });
            for (r, acc) in acc.iter().enumerate() {
                let row = c.offset(r as isize * cr);
                for (h, (&sum, &mask)) in acc.iter().zip(&masks).enumerate() {
                    let out = row.add(l * h);
                    let full = cols.full[h];
                    let old = || {
                        if full {
                            S::load(out)
                        } else {
                            S::load_masked(mask, out)
                        }
                    };
                    let mut sum = match (add, scale) {
                        (true, None) => S::add(sum, old()),
                        (true, Some(s)) => S::fmadd(sum, s, old()),
                        (false, None) => sum,
                        (false, Some(s)) => S::mul(sum, s),
                    };
                    if let Some(bias) = bias {
                        sum = S::add(sum, bias[h]);
                    }
                    if relu {
                        // `max(z, +0)` gives the second operand for a NaN or a zero of either
                        // sign: `z > 0 ? z : 0`, ReLU's scalar kernel, bit for bit.
                        sum = S::max(sum, S::zero());
                    }
                    if let Some((slope, y)) = grad {
                        let y = S::load_masked(mask, y.offset(r as isize * cr).add(l * h));
                        sum = S::where_positive(y, sum, S::mul(sum, slope));
                    }
                    if let Some(sums) = &mut sums {
                        sums[h] = S::add(sums[h], sum);
                    }
                    if full {
                        S::store(out, sum);
                    } else {
                        S::store_masked(out, mask, sum);
                    }
                }
            }
            if let (Some(sums), Some(to)) = (sums, finish.sums) {
                for (h, (&v, &mask)) in sums.iter().zip(&masks).enumerate() {
                    S::store_masked(to.add(l * h), mask, v);
                }
            }
        }
    }
}

impl<
    S: Isa,
    const V: usize,
    const UNIT: bool,
    const MASKED: bool,
    const PACK: bool,
    const WRAP: bool,
> ForRows for Tile<S, V, UNIT, MASKED, PACK, WRAP>
{
    #[inline(always)]
    unsafe fn rows<const R: usize>(self) {
        // SAFETY: the caller's contract, for a tile of `R` rows, on a CPU with `S` (which
        // the kernel's entry points checked).
        unsafe { S::build(Rows::<_, R>(self)) }
    }
}

/// The register tile of `rows` (1 to `MR`) rows for the columns `cols`.
///
/// # Safety
/// As [`Tile`]'s `run`, on a CPU with `S`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn tiles<S: Isa>(
    rows: usize,
    kc: usize,
    a: (*const f32, isize, isize),
    wrap: Wrap,
    (b, br, masked): (*const f32, isize, bool),
    fill: Option<*mut f32>,
    cols: Columns<S>,
    c: (*mut f32, isize),
    add: bool,
    finish: Epilogue<f32>,
) {
    // SAFETY: the caller's contract, for a tile of `rows` rows.
    unsafe {
        let b = (b, br);
        let fill = fill.unwrap_or(std::ptr::null_mut());
        // `A` with its breaks, as the tile takes it.
        let unit = a.1 == 1;
        let a = (a.0, a.1, a.2, wrap);
        // The tile of `rows` rows with `$v` vectors per row and the layout flags `UNIT`,
        // `MASKED`, `PACK` and `WRAP` (`$u`, `$m`, `$p`, `$w`).
        macro_rules! by_rows {
            ($v:literal, $u:literal, $m:literal, $p:literal, $w:literal) => {{
                let tile = Tile::<S, $v, $u, $m, $p, $w> {
                    kc,
                    a,
                    b,
                    fill,
                    cols,
                    c,
                    add,
                    finish,
                };
                S::by_rows(rows, tile)
            }};
        }
        macro_rules! by_layout {
            ($v:literal) => {
                match (unit, masked, !fill.is_null(), wrap.breaks()) {
                    (true, false, false, false) => by_rows!($v, true, false, false, false),
                    (true, true, false, false) => by_rows!($v, true, true, false, false),
                    (false, false, false, false) => by_rows!($v, false, false, false, false),
                    (false, true, false, false) => by_rows!($v, false, true, false, false),
                    (true, false, true, false) => by_rows!($v, true, false, true, false),
                    (true, true, true, false) => by_rows!($v, true, true, true, false),
                    (false, false, true, false) => by_rows!($v, false, false, true, false),
                    (false, true, true, false) => by_rows!($v, false, true, true, false),
                    // Breaks only in an `A` whose rows are not adjacent, read in place, with a
                    // `B` packed beforehand ([`sgemm_shared_b`](super::sgemm_shared_b)
                    // declines the others).
                    (false, false, false, true) => by_rows!($v, false, false, false, true),
                    (false, true, false, true) => by_rows!($v, false, true, false, true),
                    _ => unreachable!("breaks in the runs of a transposed A or a packing tile"),
                }
            };
        }
        // A panel of at most `LANES` columns of `C` (the last, in a product whose `n` is not
        // a multiple of `NR`) multiplies only its first vector: the MNIST MLP's products with
        // `W₃` (10 columns), `128 × 512 × 10` and `512 × 128 × 10`, went from 14.4 and 22.6
        // to 11.0 and 16.5 µs on two threads, the step by 0.6% (three in-process
        // alternations, 22nd session, AVX-512).
        if cols.one_vector {
            by_layout!(1)
        } else {
            by_layout!(2)
        }
    }
}
