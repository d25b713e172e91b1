//! The `relu` rule's residual: the signs of its output packed 32 to a word, and the pullback
//! that masks an adjoint by them.
//!
//! Bit `i % 32` of word `i / 32` says whether `y[i] > 0` (false for NaN; the unused bits of the
//! last word clear). Kept instead of `y`, the residual is a thirty-second of the output's size
//! (a ReLU before a max-pool, whose rule keeps only its argmax, holds nothing else).

use super::elementwise::{PAR_CHUNK, PAR_MIN, filled};
use super::simd::{Kernel, dispatch, wide};
use crate::CpuStorage;
use crate::storage::float_match;
use adjoint_backend::Real;
use rayon::prelude::*;
use std::mem::MaybeUninit;

// The threaded chunks of elements and of words pair up.
const _: () = assert!(PAR_CHUNK.is_multiple_of(32));

/// Float types whose signs pack into words.
trait SignBits: Real + Send + Sync {
    /// The word of `x > 0` over 32 elements with AVX2 compares and `movemask`.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[cfg(target_arch = "x86_64")]
    unsafe fn word_avx2(x: &[Self; 32]) -> u32;
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        _CMP_GT_OQ, _mm256_cmp_pd, _mm256_cmp_ps, _mm256_loadu_pd, _mm256_loadu_ps,
        _mm256_movemask_pd, _mm256_movemask_ps, _mm256_setzero_pd, _mm256_setzero_ps,
    };

    impl super::SignBits for f32 {
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn word_avx2(x: &[f32; 32]) -> u32 {
            let mut m = 0;
            for (q, eight) in x.chunks_exact(8).enumerate() {
                // SAFETY: `eight` holds 8 readable `f32`s; the caller checked AVX2.
                let lanes = unsafe {
                    let v = _mm256_loadu_ps(eight.as_ptr());
                    _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(v, _mm256_setzero_ps()))
                };
                m |= (lanes as u32) << (8 * q);
            }
            m
        }
    }

    impl super::SignBits for f64 {
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn word_avx2(x: &[f64; 32]) -> u32 {
            let mut m = 0;
            for (q, four) in x.chunks_exact(4).enumerate() {
                // SAFETY: `four` holds 4 readable `f64`s; the caller checked AVX2.
                let lanes = unsafe {
                    let v = _mm256_loadu_pd(four.as_ptr());
                    _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_GT_OQ>(v, _mm256_setzero_pd()))
                };
                m |= (lanes as u32) << (4 * q);
            }
            m
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
impl SignBits for f32 {}
#[cfg(not(target_arch = "x86_64"))]
impl SignBits for f64 {}

/// The word of `x > 0` over up to 32 elements, portably.
#[inline(always)]
fn word<T: Real>(x: &[T]) -> u32 {
    (x.iter().enumerate()).fold(0, |m, (k, &v)| m | (u32::from(v > T::zero()) << k))
}

/// `y = max(x, 0)` and the words of `x > 0` (the same as `y > 0`) for one stretch of `x`.
struct ReluBits<'a, T> {
    x: &'a [T],
    y: &'a mut [MaybeUninit<T>],
    bits: &'a mut [u32],
}

impl<T: SignBits> Kernel for ReluBits<'_, T> {
    type Output = ();

    #[inline(always)]
    unsafe fn run<const FMA: bool>(self) {
        let ReluBits { x, y, bits } = self;
        for (y, &x) in y.iter_mut().zip(x) {
            y.write(if x > T::zero() { x } else { T::zero() });
        }
        for (bits, x) in bits.iter_mut().zip(x.chunks(32)) {
            *bits = match <&[T; 32]>::try_from(x) {
                // SAFETY: `FMA` is the AVX2 + FMA build, which only runs on a CPU with both.
                #[cfg(target_arch = "x86_64")]
                Ok(x) if FMA => unsafe { T::word_avx2(x) },
                _ => word(x),
            };
        }
    }
}

/// `max(x, 0)`, and bit `i % 32` of word `i / 32` set where `x[i] > 0`.
pub fn relu_with_bits(x: &CpuStorage) -> (CpuStorage, CpuStorage) {
    float_match!(x, |v, Wrap| {
        let (y, bits) = relu_bits_typed(v);
        (Wrap(y), CpuStorage::U32(bits))
    })
}

fn relu_bits_typed<T: SignBits>(x: &[T]) -> (Vec<T>, Vec<u32>) {
    let mut bits = vec![0u32; x.len().div_ceil(32)];
    fn run<T: SignBits>(x: &[T], y: &mut [MaybeUninit<T>], bits: &mut [u32]) {
        // SAFETY: the kernel needs nothing of its build but what `dispatch` checks.
        unsafe { dispatch(ReluBits { x, y, bits }) }
    }
    // SAFETY: `run` writes every element of `y`: the chunks of `y` pair up with chunks of `x`
    // of the same lengths (`PAR_CHUNK` is a multiple of 32, so the words pair up too).
    let y = unsafe {
        filled(x.len(), |y| {
            if x.len() >= PAR_MIN {
                (x.par_chunks(PAR_CHUNK).zip(y.par_chunks_mut(PAR_CHUNK)))
                    .zip(bits.par_chunks_mut(PAR_CHUNK / 32))
                    .for_each(|((x, y), bits)| run(x, y, bits));
            } else {
                run(x, y, &mut bits);
            }
        })
    };
    (y, bits)
}

/// `d[i] ← d[i]` where bit `i` of `bits` is set, else 0.
///
/// # Panics
/// If `bits` does not have a word per 32 elements of `d`.
pub fn mask_by_bits(d: &mut CpuStorage, bits: &CpuStorage) {
    let bits = bits.as_u32();
    float_match!(d, |v, _Wrap| mask_typed(v, bits))
}

fn mask_typed<T: Real + Send + Sync>(d: &mut [T], bits: &[u32]) {
    assert_eq!(
        bits.len(),
        d.len().div_ceil(32),
        "mask_by_bits: {} words of bits for {} elements",
        bits.len(),
        d.len()
    );
    /// Through a stack block per word (see [`BLOCK`](super::elementwise::BLOCK)): written
    /// directly, the kept elements compile to AVX2 masked stores.
    fn apply<T: Real>(d: &mut [T], bits: &[u32]) {
        wide(|| {
            for (chunk, &m) in d.chunks_mut(32).zip(bits) {
                let mut block = [T::zero(); 32];
                let block = &mut block[..chunk.len()];
                for (k, (b, &v)) in block.iter_mut().zip(&*chunk).enumerate() {
                    *b = if m & (1 << k) != 0 { v } else { T::zero() };
                }
                chunk.copy_from_slice(block);
            }
        })
    }
    if d.len() >= PAR_MIN {
        d.par_chunks_mut(PAR_CHUNK)
            .zip(bits.par_chunks(PAR_CHUNK / 32))
            .for_each(|(d, bits)| apply(d, bits));
    } else {
        apply(d, bits);
    }
}
