//! The `f32` GEMM for CPUs with AVX-512F: `C = A·B + β·C` for β ∈ {0, 1}, with no packing of
//! `A`, and no packing of `B` when its rows are contiguous.
//!
//! A register tile holds `MR × NR` = 8 × 32 elements of `C` (sixteen 512-bit accumulators).
//! Each step of the inner dimension loads one row of the tile's `B` panel (two vectors) and
//! broadcasts one element of each of the tile's eight rows of `A`, straight from the
//! operands under their strides: a broadcast reads one element wherever it lies, so `A` may
//! be row-major, column-major or strided and is never copied. `B` is read in place when its
//! columns are contiguous (row-major); a transposed `B` (contiguous rows of `Bᵀ`) is first
//! transposed, `16 × 16` blocks in registers, into a row-major buffer of `KC × NC` elements
//! per thread.
//!
//! `matrixmultiply` packs both operands for every product: in the MNIST MLP step (batch 128)
//! its packing was 16% of all samples, its kernel 61%, because with 128 rows each packed
//! element of `B` feeds only 128 multiply-adds. Reading in place keeps that 16% for the
//! multiply-adds; the columns of `C` beyond the last full panel are handled by masked loads
//! and stores, the rows beyond the last full tile by narrower tiles (`R < MR`).
//!
//! Loop order, outermost first: blocks of `KC` of the inner dimension (a block's partial sums
//! are added to `C`), blocks of `MC` rows (their `A` stays in L2 while it is reused for every
//! panel), panels of `NR` columns (the panel's `KC × NR` elements of `B` stay in L1 while
//! every tile of the row block reads them), tiles of `MR` rows.

use std::arch::x86_64::{
    __m512, __mmask16, _MM_HINT_T0, _mm_prefetch, _mm512_add_ps, _mm512_fmadd_ps, _mm512_loadu_ps,
    _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps, _mm512_max_ps, _mm512_set1_ps, _mm512_setzero_ps,
    _mm512_shuffle_f32x4, _mm512_shuffle_ps, _mm512_storeu_ps, _mm512_unpackhi_ps,
    _mm512_unpacklo_ps,
};
use std::cell::RefCell;

use super::gemm::{Epilogue, Operand, Output};
use adjoint_backend::UnaryOp;

/// Rows of `C` per register tile.
const MR: usize = 8;
/// Columns of `C` per register tile: two 16-lane vectors.
const NR: usize = 32;
/// Inner-dimension block: a panel of `B` is `KC × NR` elements (32 KiB).
const KC: usize = 256;
/// Rows of `C` per row block: the block's `A` is `MC × KC` elements (64 KiB).
const MC: usize = 64;
/// How many steps of the inner dimension ahead a tile prefetches its rows of `B` and `A`
/// (a strided panel of `B` crosses a page every row or two, which the hardware prefetcher
/// does not follow). In a replay of the MNIST MLP step's eight products, `L2` evicted before
/// each step, 8 ran at 72–82 GFLOP/s on one core against 67–80 with no prefetch and 65–79
/// with 32 (noisy host; not a large effect).
const PREFETCH: isize = 8;
/// Columns of a transposed `B` transposed into the buffer at a time.
const NC: usize = 512;

thread_local! {
    /// Each thread's buffer for blocks of a transposed `B`, at most `KC × NC` elements.
    static TRANSPOSED: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
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
    (b, [br, bc]): Operand<f32>,
    beta: f32,
    (c, [cr, cc]): Output<f32>,
    epilogue: Epilogue<f32>,
) -> bool {
    let add = beta == 1.0;
    if !(available() && (add || beta == 0.0) && cc == 1 && (bc == 1 || br == 1)) {
        return false;
    }
    let relu = epilogue.act == Some(UnaryOp::Relu);
    let finish = Finish {
        bias: epilogue.bias.unwrap_or(std::ptr::null()),
        relu,
    };
    // SAFETY: the CPU has AVX-512F (checked above), and the pointers are the caller's; the
    // product initializes `C` before the remaining activation reads it.
    unsafe {
        if bc == 1 {
            in_place(mkn, a, (b, br), (c, cr), add, finish);
        } else {
            transposed(mkn, a, (b, bc), (c, cr), add, finish);
        }
        if !relu {
            let act = Epilogue {
                bias: None,
                ..epilogue
            };
            act.apply([mkn[0], mkn[2]], c, cr);
        }
    }
    true
}

/// What the register tiles do as they write their last sums: add the bias row (null: none),
/// then apply a ReLU.
#[derive(Clone, Copy)]
struct Finish {
    bias: *const f32,
    relu: bool,
}

impl Finish {
    /// Nothing: for the blocks of the inner dimension before the last.
    const NONE: Finish = Finish {
        bias: std::ptr::null(),
        relu: false,
    };

    /// The same epilogue for the columns from `start` on.
    fn at_column(self, start: usize) -> Finish {
        Finish {
            bias: if self.bias.is_null() {
                self.bias
            } else {
                self.bias.wrapping_add(start)
            },
            ..self
        }
    }
}

/// The masks of a tile's two vectors of columns when `cols` (≤ `NR`) of them are in `C`.
#[inline(always)]
fn column_masks(cols: usize) -> [__mmask16; 2] {
    let mask = |c: usize| if c >= 16 { !0 } else { (1u16 << c) - 1 };
    [mask(cols), mask(cols.saturating_sub(16))]
}

/// One register tile: `C[r, j] (+)= Σₚ A[r, p]·B[p, j]` for `r < R`, `p < kc` and the columns
/// `j` of `masks`; adds to `C` when `add`, else overwrites it; then `finish` (the bias at the
/// tile's first column).
///
/// # Safety
/// AVX-512F; `a` addresses `R × kc` elements under `(ar, ac)`, `b` `kc` rows (stride `br`) of
/// the masked columns, `c` `R` rows (stride `cr`) of them, a bias the masked columns.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn tile<const R: usize>(
    kc: usize,
    (a, ar, ac): (*const f32, isize, isize),
    (b, br): (*const f32, isize),
    masks: [__mmask16; 2],
    (c, cr): (*mut f32, isize),
    add: bool,
    finish: Finish,
) {
    // SAFETY: every access is inside the blocks the caller describes; masked-off lanes of
    // the loads and stores are not accessed.
    unsafe {
        let bias = if finish.bias.is_null() {
            None
        } else {
            Some([
                _mm512_maskz_loadu_ps(masks[0], finish.bias),
                _mm512_maskz_loadu_ps(masks[1], finish.bias.add(16)),
            ])
        };
        let mut acc = [[_mm512_setzero_ps(); 2]; R];
        let (mut a, mut b) = (a, b);
        for _ in 0..kc {
            let ahead = b.wrapping_offset(PREFETCH * br).cast::<i8>();
            _mm_prefetch::<_MM_HINT_T0>(ahead);
            _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(64));
            _mm_prefetch::<_MM_HINT_T0>(a.wrapping_offset(PREFETCH * ac).cast::<i8>());
            let b0 = _mm512_maskz_loadu_ps(masks[0], b);
            let b1 = _mm512_maskz_loadu_ps(masks[1], b.add(16));
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = _mm512_set1_ps(*a.offset(r as isize * ar));
                acc[0] = _mm512_fmadd_ps(x, b0, acc[0]);
                acc[1] = _mm512_fmadd_ps(x, b1, acc[1]);
            }
            a = a.offset(ac);
            b = b.offset(br);
        }
        for (r, acc) in acc.iter().enumerate() {
            let row = c.offset(r as isize * cr);
            for (h, (&sum, &mask)) in acc.iter().zip(&masks).enumerate() {
                let out = row.add(16 * h);
                let mut sum = if add {
                    _mm512_add_ps(sum, _mm512_maskz_loadu_ps(mask, out))
                } else {
                    sum
                };
                if let Some(bias) = bias {
                    sum = _mm512_add_ps(sum, bias[h]);
                }
                if finish.relu {
                    // `max(z, +0)` gives the second operand for a NaN or a zero of either
                    // sign: `z > 0 ? z : 0`, ReLU's scalar kernel, bit for bit.
                    sum = _mm512_max_ps(sum, _mm512_setzero_ps());
                }
                _mm512_mask_storeu_ps(out, mask, sum);
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
    b: (*const f32, isize),
    masks: [__mmask16; 2],
    c: (*mut f32, isize),
    add: bool,
    finish: Finish,
) {
    // SAFETY: the caller's contract, for a tile of `rows` rows.
    unsafe {
        match rows {
            8 => tile::<8>(kc, a, b, masks, c, add, finish),
            7 => tile::<7>(kc, a, b, masks, c, add, finish),
            6 => tile::<6>(kc, a, b, masks, c, add, finish),
            5 => tile::<5>(kc, a, b, masks, c, add, finish),
            4 => tile::<4>(kc, a, b, masks, c, add, finish),
            3 => tile::<3>(kc, a, b, masks, c, add, finish),
            2 => tile::<2>(kc, a, b, masks, c, add, finish),
            _ => tile::<1>(kc, a, b, masks, c, add, finish),
        }
    }
}

/// `C (+)= A·B` with `B`'s columns contiguous (row stride `br`), read in place, then `finish`.
///
/// # Safety
/// AVX-512F, and the pointers as for [`sgemm`].
#[target_feature(enable = "avx512f")]
unsafe fn in_place(
    [m, k, n]: [usize; 3],
    (a, [ar, ac]): Operand<f32>,
    (b, br): (*const f32, isize),
    (c, cr): (*mut f32, isize),
    add: bool,
    finish: Finish,
) {
    // SAFETY: every pointer formed below addresses an element of the caller's matrices
    // (rows `< m`, inner indices `< k`, columns `< n`), and each tile's accesses are too.
    unsafe {
        if k == 0 {
            // No sums: `C` is `β·C` (zeros or itself), then the epilogue, by the same tiles
            // with no steps.
            let empty = std::ptr::NonNull::<f32>::dangling().as_ptr();
            for i in (0..m).step_by(MR) {
                for j in (0..n).step_by(NR) {
                    let (rows, masks) = (MR.min(m - i), column_masks(NR.min(n - j)));
                    let c = (c.offset(i as isize * cr).add(j), cr);
                    tiles(
                        rows,
                        0,
                        (empty, 0, 0),
                        (empty, 0),
                        masks,
                        c,
                        add,
                        finish.at_column(j),
                    );
                }
            }
            return;
        }
        for p0 in (0..k).step_by(KC) {
            let kc = KC.min(k - p0);
            let last = p0 + kc == k;
            let add = add || p0 > 0;
            for i0 in (0..m).step_by(MC) {
                let rows_end = m.min(i0 + MC);
                for j in (0..n).step_by(NR) {
                    let masks = column_masks(NR.min(n - j));
                    let panel = (b.offset(p0 as isize * br).add(j), br);
                    let finish = if last {
                        finish.at_column(j)
                    } else {
                        Finish::NONE
                    };
                    let mut i = i0;
                    while i < rows_end {
                        let rows = MR.min(rows_end - i);
                        let a = (a.offset(i as isize * ar + p0 as isize * ac), ar, ac);
                        let c = (c.offset(i as isize * cr).add(j), cr);
                        tiles(rows, kc, a, panel, masks, c, add, finish);
                        i += rows;
                    }
                }
            }
        }
    }
}

/// `C (+)= A·B` with `B`'s rows contiguous (column stride `bc`): each `KC × NC` block of `B`
/// is transposed into this thread's buffer, then multiplied in place; then `finish`.
///
/// # Safety
/// AVX-512F, and the pointers as for [`sgemm`].
#[target_feature(enable = "avx512f")]
unsafe fn transposed(
    [m, k, n]: [usize; 3],
    (a, [ar, ac]): Operand<f32>,
    (b, bc): (*const f32, isize),
    (c, cr): (*mut f32, isize),
    add: bool,
    finish: Finish,
) {
    if k == 0 {
        // SAFETY: no element of `B` is read; `C` is the caller's.
        return unsafe { in_place([m, 0, n], (a, [ar, ac]), (b, 1), (c, cr), add, finish) };
    }
    TRANSPOSED.with_borrow_mut(|buffer| {
        let ld = NC.min(n);
        buffer.resize(KC.min(k) * ld, 0.0);
        for j0 in (0..n).step_by(NC) {
            let nc = NC.min(n - j0);
            for p0 in (0..k).step_by(KC) {
                let kc = KC.min(k - p0);
                // SAFETY: columns `j0..j0 + nc` and inner indices `p0..p0 + kc` of `B` are
                // the caller's; the buffer holds `kc × ld ≥ kc × nc` elements; the product
                // then reads the buffer as a row-major `kc × nc` block.
                unsafe {
                    transpose_into(
                        [kc, nc],
                        b.offset(j0 as isize * bc).add(p0),
                        bc,
                        buffer.as_mut_ptr(),
                        ld,
                    );
                    let finish = if p0 + kc == k {
                        finish.at_column(j0)
                    } else {
                        Finish::NONE
                    };
                    in_place(
                        [m, kc, nc],
                        (a.offset(p0 as isize * ac), [ar, ac]),
                        (buffer.as_ptr(), ld as isize),
                        (c.add(j0), cr),
                        add || p0 > 0,
                        finish,
                    );
                }
            }
        }
    });
}

/// `dst[p·ld + j] = src[p + j·bc]` for `p < kc`, `j < nc`: a block of `B` whose rows are
/// contiguous copied row-major, by `16 × 16` transposes in registers (the edges elementwise).
///
/// # Safety
/// AVX-512F; `src` addresses `nc` runs of `kc` elements `bc` apart, `dst` `kc` rows of
/// `nc ≤ ld` elements.
#[target_feature(enable = "avx512f")]
unsafe fn transpose_into(
    [kc, nc]: [usize; 2],
    src: *const f32,
    bc: isize,
    dst: *mut f32,
    ld: usize,
) {
    let (kb, nb) = (kc - kc % 16, nc - nc % 16);
    // SAFETY: every read is `src[p + j·bc]` and every write `dst[p·ld + j]` with `p < kc`,
    // `j < nc`.
    unsafe {
        for j in (0..nb).step_by(16) {
            for p in (0..kb).step_by(16) {
                let mut rows = [_mm512_setzero_ps(); 16];
                for (t, row) in rows.iter_mut().enumerate() {
                    *row = _mm512_loadu_ps(src.offset((j + t) as isize * bc).add(p));
                }
                transpose16(&mut rows);
                for (q, row) in rows.iter().enumerate() {
                    _mm512_storeu_ps(dst.add((p + q) * ld + j), *row);
                }
            }
        }
        for j in 0..nc {
            let from = if j < nb { kb } else { 0 };
            let column = src.offset(j as isize * bc);
            for p in from..kc {
                *dst.add(p * ld + j) = *column.add(p);
            }
        }
    }
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
    use super::super::gemm::Epilogue;
    use super::{available, sgemm};
    use adjoint_backend::UnaryOp;

    /// Entries in [-1, 1) from a fixed sequence.
    fn values(len: usize, seed: usize) -> Vec<f32> {
        (0..len)
            .map(|i| ((i * 7919 + seed * 104_729) % 2001) as f32 / 1000.0 - 1.0)
            .collect()
    }

    /// A product's operands under the given layouts: `A` strided (every other column, or
    /// row when transposed, of a wider matrix: a gap that no fast path covers), `B`
    /// row-major or transposed, `C` with a row stride of `n + 3` and known values (which
    /// β = 0 must ignore and no store may touch past column `n`).
    struct Case {
        mkn: [usize; 3],
        a: (Vec<f32>, [isize; 2]),
        b: (Vec<f32>, [isize; 2]),
        c_row: usize,
        start: Vec<f32>,
        bias: Vec<f32>,
    }

    impl Case {
        fn new([m, k, n]: [usize; 3], a_transposed: bool, b_transposed: bool) -> Case {
            let (a_len, a_strides) = if a_transposed {
                (k * m * 2, [1, 2 * m as isize])
            } else {
                (m * k * 2, [2 * k as isize, 1])
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

        /// `C` after the kernel ran with `beta` and `epilogue` (the bias, if any, this case's).
        fn run(&self, beta: f32, bias: bool, act: Option<UnaryOp>) -> Vec<f32> {
            let mut c = self.start.clone();
            let epilogue = Epilogue {
                bias: bias.then_some(self.bias.as_ptr()),
                act,
            };
            // SAFETY: the buffers hold the matrices under these strides and the bias `n`
            // elements; `C` is separate.
            let ran = unsafe {
                sgemm(
                    self.mkn,
                    (self.a.0.as_ptr(), self.a.1),
                    (self.b.0.as_ptr(), self.b.1),
                    beta,
                    (c.as_mut_ptr(), [self.c_row as isize, 1]),
                    epilogue,
                )
            };
            assert!(ran, "the kernel declined a product it handles");
            c
        }

        /// `β·C + A·B` at `(i, j)`, summed in `f64`.
        fn want(&self, beta: f32, i: usize, j: usize) -> f64 {
            let ([ar, ac], [br, bc]) = (self.a.1, self.b.1);
            let mut want = beta as f64 * self.start[i * self.c_row + j] as f64;
            for p in 0..self.mkn[1] {
                let x = self.a.0[(i as isize * ar + p as isize * ac) as usize] as f64;
                let y = self.b.0[(p as isize * br + j as isize * bc) as usize] as f64;
                want += x * y;
            }
            want
        }
    }

    #[test]
    fn products_match_f64_sums_for_every_layout_and_edge() {
        if !available() {
            eprintln!("skipped: this CPU has no AVX-512F, the kernel never runs here");
            return;
        }
        // Rows around the tile (8) and block (64) sizes, columns around the vector (16),
        // tile (32) and transposed-block (512) sizes, inner sizes around the transposes'
        // 16 and the block's 256, and k = 0.
        let shapes = [
            [1, 1, 1],
            [7, 5, 15],
            [8, 16, 16],
            [9, 17, 17],
            [65, 257, 33],
            [64, 0, 31],
            [13, 300, 530],
            [70, 32, 64],
        ];
        for mkn @ [m, k, n] in shapes {
            for (a_t, b_t) in [(false, false), (true, false), (false, true), (true, true)] {
                let case = Case::new(mkn, a_t, b_t);
                for beta in [0.0, 1.0] {
                    // The product, with the bias and a ReLU applied in the tiles.
                    for (bias, act) in [(false, None), (true, Some(UnaryOp::Relu))] {
                        let c = case.run(beta, bias, act);
                        for i in 0..m {
                            for j in 0..case.c_row {
                                let got = c[i * case.c_row + j] as f64;
                                if j >= n {
                                    let was = case.start[i * case.c_row + j] as f64;
                                    assert_eq!(got, was, "wrote outside C at ({i}, {j})");
                                    continue;
                                }
                                let mut want = case.want(beta, i, j);
                                if bias {
                                    want = (want + case.bias[j] as f64).max(0.0);
                                }
                                let tol = 1e-6 * (k as f64 + 2.0);
                                assert!(
                                    (got - want).abs() <= tol,
                                    "{mkn:?} a_t={a_t} b_t={b_t} β={beta} bias={bias}: \
                                     C[{i}, {j}] = {got}, want {want}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// The epilogue gives the bits of the product followed by the elementwise ops (the
    /// contract of `Backend::matmul_epilogue`), for the in-tile bias and ReLU and for the
    /// activations applied after the product.
    #[test]
    fn epilogues_give_the_bits_of_the_separate_ops() {
        if !available() {
            eprintln!("skipped: this CPU has no AVX-512F, the kernel never runs here");
            return;
        }
        let acts = [
            None,
            Some(UnaryOp::Relu),
            Some(UnaryOp::Tanh),
            Some(UnaryOp::Sigmoid),
        ];
        for mkn @ [m, _, n] in [[9, 17, 33], [64, 0, 31], [13, 300, 530]] {
            for (a_t, b_t) in [(false, false), (true, true)] {
                let case = Case::new(mkn, a_t, b_t);
                for beta in [0.0, 1.0] {
                    let product = case.run(beta, false, None);
                    for bias in [false, true] {
                        for act in acts {
                            let mut want = product.clone();
                            let separate = Epilogue {
                                bias: bias.then_some(case.bias.as_ptr()),
                                act,
                            };
                            // SAFETY: `want` holds `m` initialized rows of `c_row ≥ n`.
                            unsafe {
                                separate.apply([m, n], want.as_mut_ptr(), case.c_row as isize)
                            };
                            let got = case.run(beta, bias, act);
                            let bits =
                                |c: &[f32]| c.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                            assert_eq!(
                                bits(&got),
                                bits(&want),
                                "{mkn:?} a_t={a_t} b_t={b_t} β={beta} bias={bias} act={act:?}"
                            );
                        }
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
