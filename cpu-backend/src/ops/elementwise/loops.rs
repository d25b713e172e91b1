//! The elementwise loops, as [`Kernel`] types run by [`widest`] in the widest build the CPU
//! has: each `run` is `#[inline(always)]` and calls its op's `#[inline(always)]` `eval`
//! ([`kernels`](super::kernels)), so that the loop, op included, is compiled (and vectorised)
//! inside each `#[target_feature]` build.

use super::kernels::{Map, Zip};
use crate::ops::simd::{Kernel, dispatch_widest};
use adjoint_backend::Real;
use std::mem::MaybeUninit;

/// `kernel` run in the widest build the CPU has.
#[inline(always)]
pub(super) fn widest<K: Kernel>(kernel: K) -> K::Output {
    // SAFETY: the loops of this module use no intrinsics and no `mul_add`: they need nothing
    // of the build they run in.
    unsafe { dispatch_widest(kernel) }
}

/// `out[i] = k(a[i])` (`out` and `a` equally long).
pub(super) struct Write1<'a, T, K> {
    pub out: &'a mut [MaybeUninit<T>],
    pub a: &'a [T],
    pub k: &'a K,
}

impl<T: Copy, K: Map<T>> Kernel for Write1<'_, T, K> {
    type Output = ();
    #[inline(always)]
    unsafe fn run<const FMA: bool>(self) {
        for (o, &x) in self.out.iter_mut().zip(self.a) {
            o.write(self.k.eval(x));
        }
    }
}

/// `v[i] = k(v[i])`.
pub(super) struct Overwrite1<'a, T, K> {
    pub v: &'a mut [T],
    pub k: &'a K,
}

impl<T: Copy, K: Map<T>> Kernel for Overwrite1<'_, T, K> {
    type Output = ();
    #[inline(always)]
    unsafe fn run<const FMA: bool>(self) {
        for x in self.v.iter_mut() {
            *x = self.k.eval(*x);
        }
    }
}

/// `out[i] = k(a[i], b[i])` (all three equally long).
pub(super) struct Write2<'a, T, K> {
    pub out: &'a mut [MaybeUninit<T>],
    pub a: &'a [T],
    pub b: &'a [T],
    pub k: &'a K,
}

impl<T: Copy, K: Zip<T>> Kernel for Write2<'_, T, K> {
    type Output = ();
    #[inline(always)]
    unsafe fn run<const FMA: bool>(self) {
        for ((o, &x), &y) in self.out.iter_mut().zip(self.a).zip(self.b) {
            o.write(self.k.eval(x, y));
        }
    }
}

/// Elements per block of an in-place binary op ([`Overwrite2`]). Each block is computed into
/// a stack buffer and then copied over the operand: written directly, an op that keeps some
/// elements as they are (clamp's tangent `ȳ·𝟙(lo ≤ x ≤ hi)` keeps `ȳ` inside the range)
/// compiles to AVX2 masked stores, which AMD's cores run several times slower than a plain
/// loop. The copy is a call to `memmove`: with blocks of 64 elements those calls were 0.87%
/// of the MNIST MLP step's samples, with 512 (2 KiB of `f32`, still in L1) 0.26%.
const BLOCK: usize = 512;

/// `out[i] = k(out[i], other[i])` (`out_is_lhs`) or `k(other[i], out[i])`, equally long.
pub(super) struct Overwrite2<'a, T, K> {
    pub out: &'a mut [T],
    pub other: &'a [T],
    pub out_is_lhs: bool,
    pub k: &'a K,
}

impl<T: Real, K: Zip<T>> Kernel for Overwrite2<'_, T, K> {
    type Output = ();
    #[inline(always)]
    unsafe fn run<const FMA: bool>(self) {
        let Overwrite2 {
            out,
            other,
            out_is_lhs,
            k,
        } = self;
        for (out, other) in out.chunks_mut(BLOCK).zip(other.chunks(BLOCK)) {
            let mut block = [T::zero(); BLOCK];
            let block = &mut block[..out.len()];
            for ((b, &o), &y) in block.iter_mut().zip(&*out).zip(other) {
                *b = if out_is_lhs {
                    k.eval(o, y)
                } else {
                    k.eval(y, o)
                };
            }
            out.copy_from_slice(block);
        }
    }
}
