//! AVX-512F: sixteen lanes, thirty-two registers, masks in mask registers.

use std::arch::x86_64::{
    __m512, __mmask16, _CMP_GT_OQ, _MM_HINT_T0, _mm_prefetch, _mm512_add_ps, _mm512_cmp_ps_mask,
    _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_mask_blend_ps, _mm512_mask_storeu_ps,
    _mm512_maskz_loadu_ps, _mm512_max_ps, _mm512_mul_ps, _mm512_set1_ps, _mm512_setzero_ps,
    _mm512_shuffle_f32x4, _mm512_shuffle_ps, _mm512_storeu_ps, _mm512_unpackhi_ps,
    _mm512_unpacklo_ps,
};

use super::{Body, ForRows, Isa};

/// AVX-512F: a register tile of 8 × 32 (sixteen accumulators of the thirty-two registers).
#[derive(Clone, Copy)]
pub(in super::super) struct Avx512;

/// The AVX-512F build of a body.
///
/// # Safety
/// Only on a CPU with AVX-512F; the body's own contract.
#[target_feature(enable = "avx512f")]
unsafe fn build<B: Body>(body: B) -> B::Output {
    // SAFETY: forwarded from the caller, who checked the feature.
    unsafe { body.run() }
}

impl Isa for Avx512 {
    type V = __m512;
    type Mask = __mmask16;
    type Square = [__m512; 16];

    const LANES: usize = 16;
    const MR: usize = 8;
    /// 256: a panel of `B` is 32 KiB.
    const KC: usize = 256;
    /// 64: the block's `A` is 64 KiB.
    const MC: usize = 64;
    const NC: usize = 512;
    /// 64: its panels are each read by at most `MC / MR` tiles, and packing them (a read and
    /// a write of `B`) cost more than it saved (the CNN step 21.5–21.8 ms in place against
    /// 22.1–22.3, its convolutions' `64 × 288 × 576` products reading the unfolded columns;
    /// with 128, the `128 × 512 × 512` product fell from 183 to 166 GFLOP/s, its rows of `B`
    /// 2 KiB apart).
    const IN_PLACE_ROWS: usize = 64;
    /// 8: the lines of a block of `B` that no other tile has read are fetched from L2 or
    /// another core's cache (a product's weight, written by the other thread's last update).
    /// 8, 16 and 32 rows were equal; with 8, the MNIST MLP step took 1735–1768 µs against
    /// 1761–1796 without (three in-process alternations, 22nd session), and on two threads
    /// `x·W₁` ran at 291–301 GFLOP/s against 284–294.
    const PREFETCH_ROWS: isize = 8;
    const PREFETCH_C: bool = false;
    /// Off, as the AVX-512 kernel was measured (eight chunks per thread for every product,
    /// 26th session); the shape rule of the AVX2 one is untried on AVX-512 hosts.
    const CHUNKS_BY_SHAPE: bool = false;
    const PACK_ROW_MAJOR_A: bool = false;
    #[cfg(test)]
    const NAME: &'static str = "AVX-512F";

    #[inline]
    fn available() -> bool {
        std::is_x86_feature_detected!("avx512f")
    }

    #[inline(always)]
    unsafe fn build<B: Body>(body: B) -> B::Output {
        // SAFETY: the caller's contract.
        unsafe { build(body) }
    }

    #[inline(always)]
    unsafe fn by_rows(rows: usize, body: impl ForRows) {
        // SAFETY: the caller's contract; each arm's `R` is `rows`, at most `MR`.
        unsafe {
            match rows {
                8.. => body.rows::<8>(),
                7 => body.rows::<7>(),
                6 => body.rows::<6>(),
                5 => body.rows::<5>(),
                4 => body.rows::<4>(),
                3 => body.rows::<3>(),
                2 => body.rows::<2>(),
                _ => body.rows::<1>(),
            }
        }
    }

    #[inline(always)]
    fn mask(lanes: usize) -> __mmask16 {
        if lanes >= 16 { !0 } else { (1u16 << lanes) - 1 }
    }
    #[inline(always)]
    unsafe fn zero() -> __m512 {
        // SAFETY: the caller's contract (AVX-512F).
        unsafe { _mm512_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> __m512 {
        // SAFETY: the caller's contract (AVX-512F).
        unsafe { _mm512_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m512 {
        // SAFETY: the caller's contract.
        unsafe { _mm512_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn load_masked(mask: __mmask16, p: *const f32) -> __m512 {
        // SAFETY: the caller's contract.
        unsafe { _mm512_maskz_loadu_ps(mask, p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m512) {
        // SAFETY: the caller's contract.
        unsafe { _mm512_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn store_masked(p: *mut f32, mask: __mmask16, v: __m512) {
        // SAFETY: the caller's contract.
        unsafe { _mm512_mask_storeu_ps(p, mask, v) }
    }
    #[inline(always)]
    unsafe fn fmadd(a: __m512, b: __m512, c: __m512) -> __m512 {
        // SAFETY: the caller's contract (AVX-512F).
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn add(a: __m512, b: __m512) -> __m512 {
        // SAFETY: the caller's contract (AVX-512F).
        unsafe { _mm512_add_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn mul(a: __m512, b: __m512) -> __m512 {
        // SAFETY: the caller's contract (AVX-512F).
        unsafe { _mm512_mul_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn max(a: __m512, b: __m512) -> __m512 {
        // SAFETY: the caller's contract (AVX-512F).
        unsafe { _mm512_max_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn where_positive(y: __m512, positive: __m512, other: __m512) -> __m512 {
        // SAFETY: the caller's contract (AVX-512F).
        unsafe {
            let mask = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(y, _mm512_setzero_ps());
            _mm512_mask_blend_ps(mask, other, positive)
        }
    }
    #[inline(always)]
    unsafe fn prefetch(p: *const f32) {
        // SAFETY: a prefetch never faults.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) }
    }
    #[inline(always)]
    fn square(row: impl FnMut(usize) -> __m512) -> [__m512; 16] {
        std::array::from_fn(row)
    }
    #[inline(always)]
    unsafe fn transpose(mut square: [__m512; 16]) -> [__m512; 16] {
        // SAFETY: register-only shuffles, on a CPU with AVX-512F (the caller's contract).
        unsafe { transpose16(&mut square) };
        square
    }
}

/// Transposes the `16 × 16` matrix whose rows are the vectors of `rows`: interleaving pairs
/// of rows, then pairs of pairs (64-bit lanes), then 128-bit and 256-bit blocks.
///
/// # Safety
/// AVX-512F.
#[inline(always)]
unsafe fn transpose16(rows: &mut [__m512; 16]) {
    // SAFETY: register-only AVX-512F shuffles, on a CPU with it (the caller's contract).
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
