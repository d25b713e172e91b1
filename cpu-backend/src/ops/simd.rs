//! Running a loop compiled for the CPU's wider vectors.
//!
//! The crate is built for baseline x86-64, whose vector loops are 128-bit SSE2. Most CPUs
//! training models have AVX2 and FMA (256-bit lanes, fused multiply-add); [`wide`] runs a
//! kernel inlined into a function compiled for them when the CPU has both, and as built
//! otherwise; [`dispatch`] does the same for a [`Kernel`] that also knows which build it is in
//! (to use fused multiply-adds or AVX2 intrinsics); [`dispatch_widest`] adds an AVX-512
//! build. The result is the same either way: plain `a * b + c` is never contracted into a
//! fused multiply-add, only `mul_add` asks for one.

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

/// Code that [`dispatch`] compiles twice: `run::<true>` inlined into a function built for
/// AVX2 + FMA, `run::<false>` into one built for the baseline.
pub(crate) trait Kernel {
    /// What the kernel returns.
    type Output;

    /// Runs the kernel; `FMA` says whether it is the AVX2 + FMA build (where `mul_add` is
    /// one instruction and AVX2 intrinsics may be called).
    ///
    /// # Safety
    /// `FMA` only on a CPU with AVX2 and FMA, and whatever the kernel's type requires.
    unsafe fn run<const FMA: bool>(self) -> Self::Output;
}

/// A closure as a [`Kernel`] that does not depend on the build.
struct Closure<F>(F);

impl<R, F: FnOnce() -> R> Kernel for Closure<F> {
    type Output = R;
    #[inline(always)]
    unsafe fn run<const FMA: bool>(self) -> R {
        (self.0)()
    }
}

/// `kernel.run::<true>()` in an AVX2 + FMA build when the CPU has them, else
/// `kernel.run::<false>()` in the baseline build. Both builds are functions of their own: the
/// baseline inlined into the caller had its loop setup scheduled ahead of the feature test,
/// and paid for it on every call (about a fifth of the instructions of a tiny product).
///
/// # Safety
/// What `K::run` requires besides the features.
#[inline(always)]
pub(crate) unsafe fn dispatch<K: Kernel>(kernel: K) -> K::Output {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        /// The AVX2 + FMA build.
        ///
        /// # Safety
        /// Only on a CPU with AVX2 and FMA; the kernel's own contract.
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<K: Kernel>(kernel: K) -> K::Output {
            // SAFETY: forwarded from the caller, who checked the features.
            unsafe { kernel.run::<true>() }
        }
        // SAFETY: the CPU has both features (checked just above); the rest is the caller's.
        return unsafe { avx2(kernel) };
    }
    /// The baseline build, out of line.
    ///
    /// # Safety
    /// The kernel's own contract.
    #[inline(never)]
    unsafe fn baseline<K: Kernel>(kernel: K) -> K::Output {
        // SAFETY: forwarded from the caller; `FMA` is false.
        unsafe { kernel.run::<false>() }
    }
    // SAFETY: forwarded from the caller.
    unsafe { baseline(kernel) }
}

/// `kernel()`, compiled for AVX2 + FMA when the CPU has them.
///
/// The kernel is a closure so that it is inlined, with the generic code it calls that is
/// marked `#[inline]` or small enough, into the wide build; code behind a call that is not
/// inlined runs as built.
#[inline(always)]
pub(crate) fn wide<R>(kernel: impl FnOnce() -> R) -> R {
    // SAFETY: a closure's kernel needs nothing of the build it runs in.
    unsafe { dispatch(Closure(kernel)) }
}

/// Whether the CPU has AVX-512 (F, VL, DQ, BW) besides AVX2 and FMA.
#[inline(always)]
pub(crate) fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        has_avx2_fma()
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("avx512bw")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `kernel.run::<true>()` in a build for AVX-512 (512-bit lanes) when the CPU has it, else
/// as [`dispatch`] (AVX2 + FMA, else the baseline). What the elementwise loops run: those of
/// transcendental functions do twice the work per instruction in 512-bit lanes, and the
/// values are the same in every build, as for [`wide`].
///
/// The kernel is a type whose `run` is `#[inline(always)]`, so that its loop is compiled into
/// each build whatever its size. A closure cannot be marked so: `widest(|| loop)` left the
/// loop (with an exact GELU inlined, 1.5 KiB of code) out of line in the baseline build, which
/// the AVX-512 and AVX2 builds only jumped to (28th session).
///
/// # Safety
/// What `K::run` requires besides the features.
#[inline(always)]
pub(crate) unsafe fn dispatch_widest<K: Kernel>(kernel: K) -> K::Output {
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: the CPU has the features (checked just above); the rest is the caller's.
        return unsafe { avx512_build(kernel) };
    }
    // SAFETY: forwarded from the caller.
    unsafe { dispatch(kernel) }
}

/// The AVX-512 build of a kernel (`FMA`: it has AVX2 and FMA too).
///
/// # Safety
/// Only on a CPU with the features of [`has_avx512`]; the kernel's own contract.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
unsafe fn avx512_build<K: Kernel>(kernel: K) -> K::Output {
    // SAFETY: forwarded from the caller, who checked the features.
    unsafe { kernel.run::<true>() }
}

/// The kernel in each build this CPU can run, named: the baseline always, then AVX2 + FMA and
/// AVX-512 where present. For tests that the builds agree.
///
/// # Safety
/// What `K::run` requires besides the features.
#[cfg(test)]
pub(crate) unsafe fn each_build<K: Kernel + Clone>(kernel: K) -> Vec<(&'static str, K::Output)> {
    /// The baseline build, out of line.
    ///
    /// # Safety
    /// The kernel's own contract.
    #[inline(never)]
    unsafe fn baseline<K: Kernel>(kernel: K) -> K::Output {
        // SAFETY: forwarded from the caller; `FMA` is false.
        unsafe { kernel.run::<false>() }
    }
    // SAFETY: forwarded from the caller.
    let mut builds = vec![("baseline", unsafe { baseline(kernel.clone()) })];
    if has_avx2_fma() {
        // SAFETY: forwarded from the caller; `dispatch` picks the AVX2 build on this CPU.
        builds.push(("avx2+fma", unsafe { dispatch(kernel.clone()) }));
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: the CPU has the features (checked just above); the rest is the caller's.
        builds.push(("avx512", unsafe { avx512_build(kernel) }));
    }
    builds
}

/// The transpose of the `8 × 8` matrix whose rows are `r`: pairs of rows interleaved, then
/// pairs of pairs (64-bit lanes: columns `q` and `q + 4` of four rows), then the 128-bit halves
/// of the two groups of four rows; the standard transpose in 24 shuffles. Vector `q` of the
/// result holds element `q` of every row.
///
/// # Safety
/// AVX (register-only shuffles).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn transpose8x8(
    r: [std::arch::x86_64::__m256; 8],
) -> [std::arch::x86_64::__m256; 8] {
    use std::arch::x86_64::{
        _mm256_permute2f128_ps, _mm256_shuffle_ps, _mm256_unpackhi_ps, _mm256_unpacklo_ps,
    };
    // SAFETY: the caller's contract (AVX).
    unsafe {
        let t0 = _mm256_unpacklo_ps(r[0], r[1]);
        let t1 = _mm256_unpackhi_ps(r[0], r[1]);
        let t2 = _mm256_unpacklo_ps(r[2], r[3]);
        let t3 = _mm256_unpackhi_ps(r[2], r[3]);
        let t4 = _mm256_unpacklo_ps(r[4], r[5]);
        let t5 = _mm256_unpackhi_ps(r[4], r[5]);
        let t6 = _mm256_unpacklo_ps(r[6], r[7]);
        let t7 = _mm256_unpackhi_ps(r[6], r[7]);
        let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
        let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
        let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
        let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
        let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
        let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
        let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
        let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
        [
            _mm256_permute2f128_ps::<0x20>(s0, s4),
            _mm256_permute2f128_ps::<0x20>(s1, s5),
            _mm256_permute2f128_ps::<0x20>(s2, s6),
            _mm256_permute2f128_ps::<0x20>(s3, s7),
            _mm256_permute2f128_ps::<0x31>(s0, s4),
            _mm256_permute2f128_ps::<0x31>(s1, s5),
            _mm256_permute2f128_ps::<0x31>(s2, s6),
            _mm256_permute2f128_ps::<0x31>(s3, s7),
        ]
    }
}
