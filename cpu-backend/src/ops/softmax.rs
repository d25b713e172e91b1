//! The softmax and the log-softmax along one axis in one pass per slice
//! ([`Backend::softmax`](adjoint_backend::Backend::softmax)).
//!
//! Composed from the generic ops, a softmax is six kernel calls and five buffers (the
//! maximum, `x − m`, its exponential, their sum, its logarithm, the result): for the MNIST
//! MLP's `[128, 10]` scores, most of each call is fixed cost, and the cross-entropy's forward
//! pass took 15 µs of a 1.7 ms step (an uncommitted timeline probe, 23rd session). The
//! exponential is [`exp_f32`](super::math::exp_f32) for `f32`, which vectorizes.

use super::elementwise::{PAR_CHUNK, PAR_MIN};
use super::math::Elementary;
use super::simd::{Kernel, dispatch_widest};
use crate::CpuStorage;
use crate::storage::float_match;
use adjoint_backend::Real;
use rayon::prelude::*;

/// `softmax(x)` (or `log_softmax(x)` when `log`) along `axis` of `x` (of `shape`): with `m`
/// the maximum of each slice, `e^(x − m) / Σ e^(x − m)`, or `(x − m) − ln Σ e^(x − m)`.
///
/// Derivative (taken by the caller's rules): `x̄ = y ⊙ (ȳ − Σ ȳ ⊙ y)` for the softmax
/// `y`, `x̄ = ȳ − e^y Σ ȳ` for the log-softmax.
pub fn softmax(x: &CpuStorage, shape: &[usize], axis: usize, log: bool) -> CpuStorage {
    float_match!(x, |v, Wrap| Wrap(softmax_typed(v, shape, axis, log)))
}

fn softmax_typed<T: Real + Send + Sync + Elementary>(
    x: &[T],
    shape: &[usize],
    axis: usize,
    log: bool,
) -> Vec<T> {
    let (len, inner) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
    let block = len * inner;
    let mut out = x.to_vec();
    if block == 0 {
        return out;
    }
    let run = |blocks: &mut [T]| {
        let kernel = Chunks {
            blocks,
            shape: [len, inner],
            log,
        };
        // SAFETY: `chunk` uses no intrinsics and no `mul_add`: it needs nothing of its build.
        unsafe { dispatch_widest(kernel) }
    };
    if out.len() >= PAR_MIN {
        let per = PAR_CHUNK.div_ceil(block) * block;
        out.par_chunks_mut(per).for_each(run);
    } else {
        run(&mut out);
    }
    out
}

/// [`chunk`] on whole blocks, as a kernel: a type whose `run` is `#[inline(always)]`, so that
/// the loops are compiled into each build (`wide(|| chunk(..))`, a closure, was compiled
/// once out of line in the baseline build, which the AVX2 build only jumped to: 8.6% of the
/// tiny GPT step's samples, 28th session).
struct Chunks<'a, T> {
    blocks: &'a mut [T],
    shape: [usize; 2],
    log: bool,
}

impl<T: Real + Elementary> Kernel for Chunks<'_, T> {
    type Output = ();
    #[inline(always)]
    unsafe fn run<const FMA: bool>(self) {
        chunk(self.blocks, self.shape, self.log)
    }
}

/// The larger of `m` and `x`, passing a NaN `x` over: the maximum that [`shift_row`] and
/// [`shift_slices`] subtract. `ReduceOp::Max`'s combine returns a NaN instead, and its check
/// took about a third of the fused loss's forward pass at `[128, 10]` (3.7 against 2.4 µs);
/// the NaN makes the slice's sum, and so every output of the slice, NaN all the same, as in
/// the composed softmax.
#[inline(always)]
fn max<T: Real>(m: T, x: T) -> T {
    if x > m { x } else { m }
}

/// Subtracts from `row` its largest element (−∞ for none): what the softmax and the fused
/// cross-entropy ([`super::cross_entropy`]) take before their exponentials.
#[inline(always)]
pub(super) fn shift_row<T: Real>(row: &mut [T]) {
    let m = row.iter().copied().fold(T::neg_infinity(), max);
    for x in row.iter_mut() {
        *x = *x - m;
    }
}

/// [`shift_row`] for each slice of `len` elements `inner` apart, in each block of
/// `len · inner` elements of `b`.
#[inline(always)]
fn shift_slices<T: Real>(b: &mut [T], [len, inner]: [usize; 2]) {
    if inner == 1 {
        return b.chunks_exact_mut(len).for_each(shift_row);
    }
    for blk in b.chunks_exact_mut(len * inner) {
        for j in 0..inner {
            let m = (0..len).fold(T::neg_infinity(), |m, i| max(m, blk[i * inner + j]));
            for i in 0..len {
                blk[i * inner + j] = blk[i * inner + j] - m;
            }
        }
    }
}

/// The softmax over the `len` elements `inner` apart of each slice of the blocks of `len ·
/// inner` elements in `b`, in place. The slices' maxima, differences and sums are short
/// strided loops; the exponentials, the expensive part, are one loop over the whole chunk,
/// which vectorizes (rows of ten scores would not, one at a time): in place for the softmax,
/// whose result they are once divided by their sums, beside the differences for the
/// log-softmax, which only sums them.
#[inline(always)]
fn chunk<T: Real + Elementary>(b: &mut [T], [len, inner]: [usize; 2], log: bool) {
    let block = len * inner;
    shift_slices(b, [len, inner]);
    // The sum of slice `j` of a block.
    let sum = |e: &[T], j: usize| (0..len).fold(T::zero(), |sum, i| sum + e[i * inner + j]);
    if log {
        let e: Vec<T> = b.iter().map(|&x| x.exp_elementwise()).collect();
        for (blk, e) in b.chunks_exact_mut(block).zip(e.chunks_exact(block)) {
            for j in 0..inner {
                let ln = sum(e, j).ln();
                for i in 0..len {
                    blk[i * inner + j] = blk[i * inner + j] - ln;
                }
            }
        }
    } else {
        for x in b.iter_mut() {
            *x = x.exp_elementwise();
        }
        for blk in b.chunks_exact_mut(block) {
            for j in 0..inner {
                let sum = sum(blk, j);
                for i in 0..len {
                    blk[i * inner + j] = blk[i * inner + j] / sum;
                }
            }
        }
    }
}
