//! Running a loop compiled for the CPU's wider vectors.
//!
//! The crate is built for baseline x86-64, whose vector loops are 128-bit SSE2. Most CPUs
//! training models have AVX2 and FMA (256-bit lanes, fused multiply-add); [`wide`] runs a
//! kernel inlined into a function compiled for them when the CPU has both, and as built
//! otherwise. The result is the same either way: plain `a * b + c` is never contracted into
//! a fused multiply-add, only `mul_add` asks for one.

/// Whether the CPU has AVX2 and FMA (`std` caches the answer after the first query).
#[inline(always)]
pub(crate) fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `kernel()`, compiled for AVX2 + FMA when the CPU has them.
///
/// The kernel is a closure so that it is inlined, with the generic code it calls that is
/// marked `#[inline]` or small enough, into the wide build; code behind a call that is not
/// inlined runs as built.
#[inline(always)]
pub(crate) fn wide<R>(kernel: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        /// The AVX2 + FMA build of `kernel`.
        ///
        /// # Safety
        /// Only on a CPU with AVX2 and FMA.
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<R>(kernel: impl FnOnce() -> R) -> R {
            kernel()
        }
        // SAFETY: the CPU has both features (checked just above).
        return unsafe { avx2(kernel) };
    }
    kernel()
}
