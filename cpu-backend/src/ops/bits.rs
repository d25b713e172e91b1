//! The `relu` rule's residual: the signs of its output packed 32 to a word, and the pullback
//! that masks an adjoint by them.
//!
//! Bit `i % 32` of word `i / 32` says whether `y[i] > 0` (false for NaN; the unused bits of the
//! last word clear). Kept instead of `y`, the residual is a thirty-second of the output's size
//! (a ReLU before a max-pool, whose rule keeps only its argmax, holds nothing else).

use super::elementwise::{PAR_CHUNK, PAR_MIN, filled};
use super::simd::{Kernel, dispatch};
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

    /// `out[k] = d[k]` where bit `k` of `m` is set, else `+0.0`, with AVX2 lane masks.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[cfg(target_arch = "x86_64")]
    unsafe fn mask_word_avx2(d: &[Self; 32], m: u32, out: &mut [MaybeUninit<Self>; 32]);
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        _CMP_GT_OQ, _mm256_and_pd, _mm256_and_ps, _mm256_and_si256, _mm256_castsi256_pd,
        _mm256_castsi256_ps, _mm256_cmp_pd, _mm256_cmp_ps, _mm256_cmpeq_epi32, _mm256_cmpeq_epi64,
        _mm256_loadu_pd, _mm256_loadu_ps, _mm256_movemask_pd, _mm256_movemask_ps,
        _mm256_set1_epi32, _mm256_set1_epi64x, _mm256_setr_epi32, _mm256_setr_epi64x,
        _mm256_setzero_pd, _mm256_setzero_ps, _mm256_storeu_pd, _mm256_storeu_ps,
    };
    use std::mem::MaybeUninit;

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

        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn mask_word_avx2(d: &[f32; 32], m: u32, out: &mut [MaybeUninit<f32>; 32]) {
            let lane_bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
            for q in 0..4 {
                // Bits 8q..8q+8 of `m`, one per lane: all ones where set, zeros elsewhere.
                let word = _mm256_set1_epi32((m >> (8 * q)) as i32);
                let on = _mm256_cmpeq_epi32(_mm256_and_si256(word, lane_bits), lane_bits);
                // SAFETY: elements 8q..8q+8 of `d` and `out` are in bounds (q < 4); the
                // caller checked AVX2.
                unsafe {
                    let v = _mm256_loadu_ps(d.as_ptr().add(8 * q));
                    let kept = _mm256_and_ps(v, _mm256_castsi256_ps(on));
                    _mm256_storeu_ps(out.as_mut_ptr().add(8 * q).cast(), kept);
                }
            }
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

        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn mask_word_avx2(d: &[f64; 32], m: u32, out: &mut [MaybeUninit<f64>; 32]) {
            let lane_bits = _mm256_setr_epi64x(1, 2, 4, 8);
            for q in 0..8 {
                let word = _mm256_set1_epi64x(i64::from((m >> (4 * q)) & 0xf));
                let on = _mm256_cmpeq_epi64(_mm256_and_si256(word, lane_bits), lane_bits);
                // SAFETY: elements 4q..4q+4 of `d` and `out` are in bounds (q < 8); the
                // caller checked AVX2.
                unsafe {
                    let v = _mm256_loadu_pd(d.as_ptr().add(4 * q));
                    let kept = _mm256_and_pd(v, _mm256_castsi256_pd(on));
                    _mm256_storeu_pd(out.as_mut_ptr().add(4 * q).cast(), kept);
                }
            }
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
        // Blocks of 4096 elements: the outputs, then the words while the block is in cache.
        let blocks = x
            .chunks(4096)
            .zip(y.chunks_mut(4096))
            .zip(bits.chunks_mut(128));
        for ((x, y), bits) in blocks {
            for (y, &x) in y.iter_mut().zip(x) {
                y.write(if x > T::zero() { x } else { T::zero() });
            }
            for (bits, x) in bits.iter_mut().zip(x.chunks(32)) {
                *bits = match <&[T; 32]>::try_from(x) {
                    // SAFETY: `FMA` is the AVX2 + FMA build, which only runs on a CPU with
                    // both.
                    #[cfg(target_arch = "x86_64")]
                    Ok(x) if FMA => unsafe { T::word_avx2(x) },
                    _ => word(x),
                };
            }
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

/// `d[i]` where bit `i` of `bits` is set, else 0.
///
/// # Panics
/// If `bits` does not have a word per 32 elements of `d`.
pub fn mask_by_bits(d: &CpuStorage, bits: &CpuStorage) -> CpuStorage {
    let bits = bits.as_u32();
    float_match!(d, |v, Wrap| Wrap(mask_typed(v, bits)))
}

fn mask_typed<T: SignBits>(d: &[T], bits: &[u32]) -> Vec<T> {
    assert_eq!(
        bits.len(),
        d.len().div_ceil(32),
        "mask_by_bits: {} words of bits for {} elements",
        bits.len(),
        d.len()
    );
    fn run<T: SignBits>(d: &[T], bits: &[u32], out: &mut [MaybeUninit<T>]) {
        // SAFETY: the kernel needs nothing of its build but what `dispatch` checks.
        unsafe { dispatch(Masked { d, bits, out }) }
    }
    // SAFETY: `run` writes every element of `out`: its chunks pair up with chunks of `d` of
    // the same lengths, and their words.
    unsafe {
        filled(d.len(), |out| {
            if d.len() >= PAR_MIN {
                (d.par_chunks(PAR_CHUNK).zip(out.par_chunks_mut(PAR_CHUNK)))
                    .zip(bits.par_chunks(PAR_CHUNK / 32))
                    .for_each(|((d, out), bits)| run(d, bits, out));
            } else {
                run(d, bits, out);
            }
        })
    }
}

/// `out = d` where the bits are set, else 0, for one stretch of `d`.
struct Masked<'a, T> {
    d: &'a [T],
    bits: &'a [u32],
    out: &'a mut [MaybeUninit<T>],
}

impl<T: SignBits> Kernel for Masked<'_, T> {
    type Output = ();

    #[inline(always)]
    unsafe fn run<const FMA: bool>(self) {
        let Masked { d, bits, out } = self;
        for ((d, out), &m) in d.chunks(32).zip(out.chunks_mut(32)).zip(bits) {
            #[cfg(target_arch = "x86_64")]
            if FMA && let (Ok(d), Ok(out)) = (<&[T; 32]>::try_from(d), out.try_into()) {
                // SAFETY: `FMA` is the AVX2 + FMA build, which only runs on a CPU with both.
                unsafe { T::mask_word_avx2(d, m, out) };
                continue;
            }
            for (k, (o, &v)) in out.iter_mut().zip(d).enumerate() {
                o.write(if m & (1 << k) != 0 { v } else { T::zero() });
            }
        }
    }
}
