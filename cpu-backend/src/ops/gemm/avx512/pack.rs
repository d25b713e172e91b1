//! The packed layouts: `B` in panels of `NR` columns ([`Panels`]), `A` in runs of `MR` rows,
//! and the copies and transposes that write them.

use std::arch::x86_64::{
    __m512, __mmask16, _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps, _mm512_setzero_ps,
    _mm512_shuffle_f32x4, _mm512_shuffle_ps, _mm512_storeu_ps, _mm512_unpackhi_ps,
    _mm512_unpacklo_ps,
};

use super::super::product::Operand;
use super::blocking::{MR, NR};

/// Where the panels of one block of `B` lie: panel `q` (columns `q·NR..`) starts at
/// `ptr + q·panel`, its rows `row` apart. Packed, `row` is `NR` and `panel` `kc·NR`, and the
/// last panel is padded with zeros; in place (a row-major `B`), `row` is `B`'s row stride
/// and `panel` `NR`, and the last panel's loads are masked.
#[derive(Clone, Copy)]
pub(super) struct Panels {
    pub(super) ptr: *const f32,
    pub(super) row: isize,
    pub(super) panel: isize,
    pub(super) packed: bool,
    /// Packed on the fly: the row-major block of `B` (its first element and row stride) that
    /// the first tile of each panel reads in place while it writes the panel at `ptr` (then
    /// a writable buffer), for the tiles after it.
    pub(super) source: Option<(*const f32, isize)>,
}

impl Panels {
    /// The panels of a packed `kc`-row block at `ptr`.
    pub(super) fn packed(ptr: *const f32, kc: usize) -> Panels {
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
    pub(super) fn packed_from(dst: *mut f32, kc: usize, src: *const f32, br: isize) -> Panels {
        Panels {
            source: Some((src, br)),
            ..Panels::packed(dst, kc)
        }
    }

    /// The panels of a row-major `B` in place, from its row `ptr` (row stride `row`).
    pub(super) fn in_place(ptr: *const f32, row: isize) -> Panels {
        Panels {
            ptr,
            row,
            panel: NR as isize,
            packed: false,
            source: None,
        }
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
pub(super) unsafe fn pack_a([rows, kc]: [usize; 2], (a, ac): (*const f32, isize), dst: *mut f32) {
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

/// The `kc × nc` block of `B` at `src` as panels of `rows ≥ kc` rows at `dst`: packed by the
/// tiles that first read them when `B` is row-major, by [`pack_transposed`] now otherwise.
///
/// # Safety
/// AVX-512F; `src` addresses the block under its strides (one of them 1), `dst` `rows × nc`
/// rounded up to panels.
pub(super) unsafe fn packing(
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
