//! AVX2 with FMA: eight lanes, sixteen registers, masks as vectors (the sign bit of each
//! 32-bit lane).

use std::arch::x86_64::{
    __m256, __m256i, _CMP_GT_OQ, _MM_HINT_T0, _mm_prefetch, _mm256_add_ps, _mm256_blendv_ps,
    _mm256_cmp_ps, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_maskload_ps, _mm256_maskstore_ps,
    _mm256_max_ps, _mm256_mul_ps, _mm256_set1_ps, _mm256_setzero_ps, _mm256_storeu_ps,
};

use super::{Body, ForRows, Isa};

/// AVX2 with FMA: a register tile of 6 × 16, twelve accumulators, two vectors of `B` and a
/// broadcast of `A` in the sixteen registers (the layout of BLIS's and the `gemm` crate's
/// Haswell kernels).
#[derive(Clone, Copy)]
pub(in super::super) struct Avx2;

/// The AVX2 + FMA build of a body.
///
/// # Safety
/// Only on a CPU with AVX2 and FMA; the body's own contract.
#[target_feature(enable = "avx2,fma")]
unsafe fn build<B: Body>(body: B) -> B::Output {
    // SAFETY: forwarded from the caller, who checked the features.
    unsafe { body.run() }
}

impl Isa for Avx2 {
    type V = __m256;
    type Mask = __m256i;
    type Square = [__m256; 8];

    const LANES: usize = 8;
    const MR: usize = 6;
    /// 256: a panel of `B` is 16 KiB, half of L1.
    const KC: usize = 256;
    /// 72, twelve tiles: the block's `A` is 72 KiB.
    const MC: usize = 72;
    const NC: usize = 512;
    const IN_PLACE_ROWS: usize = 64;
    const PREFETCH_ROWS: isize = 8;
    const PREFETCH_C: bool = true;
    /// On: `1024²` cut into 64-row chunks had each chunk read `B` in place, its rows 4 KiB
    /// apart (106 GFLOP/s on two threads; 135 and 143 in one chunk per thread, two runs; 36th
    /// session).
    const CHUNKS_BY_SHAPE: bool = true;
    const PACK_ROW_MAJOR_A: bool = true;
    #[cfg(test)]
    const NAME: &'static str = "AVX2+FMA";

    #[inline]
    fn available() -> bool {
        crate::ops::simd::has_avx2_fma()
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
                6.. => body.rows::<6>(),
                5 => body.rows::<5>(),
                4 => body.rows::<4>(),
                3 => body.rows::<3>(),
                2 => body.rows::<2>(),
                _ => body.rows::<1>(),
            }
        }
    }

    #[inline(always)]
    fn mask(lanes: usize) -> __m256i {
        let lanes: [i32; 8] = std::array::from_fn(|i| if i < lanes { -1 } else { 0 });
        // SAFETY: eight `i32` are the 256 bits of a `__m256i`, and every bit pattern is one.
        unsafe { std::mem::transmute::<[i32; 8], __m256i>(lanes) }
    }
    #[inline(always)]
    unsafe fn zero() -> __m256 {
        // SAFETY: the caller's contract (AVX).
        unsafe { _mm256_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> __m256 {
        // SAFETY: the caller's contract (AVX).
        unsafe { _mm256_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m256 {
        // SAFETY: the caller's contract.
        unsafe { _mm256_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn load_masked(mask: __m256i, p: *const f32) -> __m256 {
        // SAFETY: the caller's contract; masked-off lanes are not read (and never fault).
        unsafe { _mm256_maskload_ps(p, mask) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m256) {
        // SAFETY: the caller's contract.
        unsafe { _mm256_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn store_masked(p: *mut f32, mask: __m256i, v: __m256) {
        // SAFETY: the caller's contract; masked-off lanes are not written.
        unsafe { _mm256_maskstore_ps(p, mask, v) }
    }
    #[inline(always)]
    unsafe fn fmadd(a: __m256, b: __m256, c: __m256) -> __m256 {
        // SAFETY: the caller's contract (FMA).
        unsafe { _mm256_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn add(a: __m256, b: __m256) -> __m256 {
        // SAFETY: the caller's contract (AVX).
        unsafe { _mm256_add_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn mul(a: __m256, b: __m256) -> __m256 {
        // SAFETY: the caller's contract (AVX).
        unsafe { _mm256_mul_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn max(a: __m256, b: __m256) -> __m256 {
        // SAFETY: the caller's contract (AVX).
        unsafe { _mm256_max_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn where_positive(y: __m256, positive: __m256, other: __m256) -> __m256 {
        // SAFETY: the caller's contract (AVX). `blendv` takes its second operand where the
        // mask's sign bit is set.
        unsafe {
            let mask = _mm256_cmp_ps::<_CMP_GT_OQ>(y, _mm256_setzero_ps());
            _mm256_blendv_ps(other, positive, mask)
        }
    }
    #[inline(always)]
    unsafe fn prefetch(p: *const f32) {
        // SAFETY: a prefetch never faults.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) }
    }
    #[inline(always)]
    fn square(row: impl FnMut(usize) -> __m256) -> [__m256; 8] {
        std::array::from_fn(row)
    }
    #[inline(always)]
    unsafe fn transpose(square: [__m256; 8]) -> [__m256; 8] {
        // SAFETY: register-only shuffles, on a CPU with AVX (the caller's contract).
        unsafe { crate::ops::simd::transpose8x8(square) }
    }
}
