//! A binary op on two buffers broadcast to the output's shape.

use super::kernels::Zip;
use super::loops::widest;
use super::{Apply, PAR_CHUNK, PAR_MIN};
use crate::ops::simd::Kernel;
use adjoint_backend::Real;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Two buffers broadcast to `out` (shapes rank-aligned): a row-major walk over the output with
/// the operands' strides (0 on broadcast axes), one tight loop per innermost row.
pub(super) struct Strided<'a, T> {
    pub a: (&'a [T], &'a [usize]),
    pub b: (&'a [T], &'a [usize]),
    pub out: &'a [usize],
}

/// Row-major strides of `shape` read as `out` (0 where `shape` broadcasts).
fn broadcast_strides(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut step = 1;
    for d in (0..shape.len()).rev() {
        strides[d] = if shape[d] == 1 && out[d] != 1 {
            0
        } else {
            step
        };
        step *= shape[d];
    }
    strides
}

impl<T: Real + Send + Sync> Apply<T> for Strided<'_, T> {
    type Out = Vec<T>;
    fn apply<K: Zip<T>>(self, k: K) -> Vec<T> {
        let n: usize = self.out.iter().product();
        let mut result = Vec::with_capacity(n);
        if n == 0 {
            return result;
        }
        let inner = self.out.last().copied().unwrap_or(1);
        let strides = (
            &broadcast_strides(self.a.1, self.out)[..],
            &broadcast_strides(self.b.1, self.out)[..],
        );
        let (op, k) = (&self, &k);
        let rows = |first, out| {
            widest(Rows {
                op,
                first,
                out,
                strides,
                k,
            })
        };
        // Written through the spare capacity: every element is written once, none read, so
        // the output is not zeroed first.
        let out = &mut result.spare_capacity_mut()[..n];
        if n >= PAR_MIN {
            let per_chunk = PAR_CHUNK.div_ceil(inner);
            out.par_chunks_mut(per_chunk * inner)
                .enumerate()
                .for_each(|(i, out)| rows(i * per_chunk, out));
        } else {
            rows(0, out);
        }
        // SAFETY: `rows` wrote all `n` elements: `out` is whole rows of `inner` elements, and
        // each row is zipped with operand slices of exactly `inner` elements (an index out of
        // range panics before `set_len`) or filled.
        unsafe { result.set_len(n) };
        result
    }
}

impl<T: Real> Strided<'_, T> {
    /// Writes the innermost rows `first..` of the output into `out` (whole rows), walking the
    /// operands with strides `sa`, `sb`; every element of `out` is written. Inlined into
    /// [`Rows`]' builds.
    #[inline(always)]
    fn rows(
        &self,
        first: usize,
        out: &mut [MaybeUninit<T>],
        (sa, sb): (&[usize], &[usize]),
        k: &impl Zip<T>,
    ) {
        let ((a, _), (b, _), shape) = (self.a, self.b, self.out);
        let rank = shape.len();
        let inner = shape.last().copied().unwrap_or(1);
        let (ia, ib) = match rank {
            0 => (0, 0),
            _ => (sa[rank - 1], sb[rank - 1]),
        };
        // The odometer over the outer axes, started at row `first`.
        let outer = rank.saturating_sub(1);
        let mut index = vec![0; outer];
        let (mut oa, mut ob, mut rest) = (0, 0, first);
        for d in (0..outer).rev() {
            index[d] = rest % shape[d];
            rest /= shape[d];
            oa += index[d] * sa[d];
            ob += index[d] * sb[d];
        }
        for row in out.chunks_mut(inner) {
            match (ia, ib) {
                (1, 1) => {
                    for ((o, &x), &y) in row
                        .iter_mut()
                        .zip(&a[oa..oa + inner])
                        .zip(&b[ob..ob + inner])
                    {
                        o.write(k.eval(x, y));
                    }
                }
                (1, 0) => {
                    for (o, &x) in row.iter_mut().zip(&a[oa..oa + inner]) {
                        o.write(k.eval(x, b[ob]));
                    }
                }
                (0, 1) => {
                    for (o, &y) in row.iter_mut().zip(&b[ob..ob + inner]) {
                        o.write(k.eval(a[oa], y));
                    }
                }
                _ => row.fill(MaybeUninit::new(k.eval(a[oa], b[ob]))),
            }
            for d in (0..outer).rev() {
                index[d] += 1;
                oa += sa[d];
                ob += sb[d];
                if index[d] < shape[d] {
                    break;
                }
                oa -= sa[d] * shape[d];
                ob -= sb[d] * shape[d];
                index[d] = 0;
            }
        }
    }
}

/// [`Strided::rows`] as a kernel: the innermost rows `first..` of the output into `out`.
struct Rows<'a, T, K> {
    op: &'a Strided<'a, T>,
    first: usize,
    out: &'a mut [MaybeUninit<T>],
    strides: (&'a [usize], &'a [usize]),
    k: &'a K,
}

impl<T: Real, K: Zip<T>> Kernel for Rows<'_, T, K> {
    type Output = ();
    #[inline(always)]
    unsafe fn run<const FMA: bool>(self) {
        self.op.rows(self.first, self.out, self.strides, self.k)
    }
}
