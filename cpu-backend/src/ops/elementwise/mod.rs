//! Elementwise primitives: unary maps, broadcasting binary ops and `select`.
//!
//! Each op gets its own monomorphic loop (the op enum is matched once, outside the loop, to
//! pick the op's kernel type of [`kernels`], constants converted once), so that LLVM
//! vectorises it, in the widest build the CPU runs ([`loops::widest`]); the transcendental
//! ops and their derivatives run the branch-free `f32` kernels of [`math`](super::math)
//! ([`Elementary`]), so that those loops vectorize too. Buffers of at least [`PAR_MIN`]
//! elements are split across the cores with rayon.

mod kernels;
mod loops;
mod strided;

use super::math::Elementary;
use super::{into_vec, view};
use crate::storage::float_match;
use crate::{BinaryOp, CpuStorage, UnaryOp};
use adjoint_backend::Real;
use kernels::{Map, Zip, binary, unary};
use loops::{Overwrite1, Overwrite2, Write1, Write2, widest};
use ndarray::{ArrayD, IxDyn};
use rayon::prelude::*;
use std::mem::MaybeUninit;
use strided::Strided;

/// Buffers at least this long are processed in parallel. The MNIST MLP's activations
/// (`128 × 512`, 2¹⁶ elements) are: with the pool's workers polling during a step
/// (`Backend::install`), handing them a share costs less than it saves (the step 1–2% faster
/// than with 2¹⁸ in alternating runs on a 2-vCPU Xeon, 21st session; no change in the 14th,
/// when every hand-over woke a sleeping worker).
pub const PAR_MIN: usize = 1 << 15;
/// The smallest piece of work handed to one thread.
pub(crate) const PAR_CHUNK: usize = 1 << 14;

fn cst<T: Real>(v: f64) -> T {
    T::from(v).expect("constant fits the float type")
}

/// A vector of `n` elements written by `fill`, which is given them uninitialized.
///
/// # Safety
/// `fill` must write every element of the slice it is given.
pub(crate) unsafe fn filled<T>(n: usize, fill: impl FnOnce(&mut [MaybeUninit<T>])) -> Vec<T> {
    let mut out = Vec::with_capacity(n);
    fill(&mut out.spare_capacity_mut()[..n]);
    // SAFETY: the capacity is `n`, and the caller's `fill` wrote all `n` elements.
    unsafe { out.set_len(n) };
    out
}

/// `f` on every element, in parallel for long buffers.
fn map1<T: Real + Send + Sync>(v: &[T], k: &impl Map<T>) -> Vec<T> {
    let write = |out: &mut [MaybeUninit<T>], a: &[T]| widest(Write1 { out, a, k });
    // SAFETY: `out` and `v` are equally long, and both branches write each element of `out`
    // (in chunks that pair up exactly).
    unsafe {
        filled(v.len(), |out| {
            if v.len() >= PAR_MIN {
                out.par_chunks_mut(PAR_CHUNK)
                    .zip(v.par_chunks(PAR_CHUNK))
                    .for_each(|(out, v)| write(out, v));
            } else {
                write(out, v);
            }
        })
    }
}

/// `f` on every element, written back into `v`, in parallel for long buffers.
fn map1_in_place<T: Real + Send + Sync>(v: &mut [T], k: &impl Map<T>) {
    let run = |v: &mut [T]| widest(Overwrite1 { v, k });
    if v.len() >= PAR_MIN {
        v.par_chunks_mut(PAR_CHUNK).for_each(run);
    } else {
        run(v);
    }
}

/// Where a unary op's results go: a new buffer ([`Fresh`]) or the input's own
/// ([`Overwrite`]); [`unary_typed`] picks the op's loop once for either.
trait Map1<T> {
    /// A new buffer, or nothing when the input is overwritten.
    type Out;
    fn map<K: Map<T>>(self, k: K) -> Self::Out;
}

/// The results in a new buffer.
struct Fresh<'a, T>(&'a [T]);

impl<T: Real + Send + Sync> Map1<T> for Fresh<'_, T> {
    type Out = Vec<T>;
    #[inline(always)]
    fn map<K: Map<T>>(self, k: K) -> Vec<T> {
        map1(self.0, &k)
    }
}

/// The results written over the input.
struct Overwrite<'a, T>(&'a mut [T]);

impl<T: Real + Send + Sync> Map1<T> for Overwrite<'_, T> {
    type Out = ();
    #[inline(always)]
    fn map<K: Map<T>>(self, k: K) {
        map1_in_place(self.0, &k)
    }
}

/// `f` on every pair of elements of two equally long buffers.
fn map2<T: Real + Send + Sync>(a: &[T], b: &[T], k: &impl Zip<T>) -> Vec<T> {
    let write = |out: &mut [MaybeUninit<T>], a: &[T], b: &[T]| widest(Write2 { out, a, b, k });
    assert_eq!(
        a.len(),
        b.len(),
        "elementwise op on buffers of different lengths"
    );
    // SAFETY: `out`, `a` and `b` are equally long, and both branches write each element of
    // `out` (in chunks that pair up exactly).
    unsafe {
        filled(a.len(), |out| {
            if a.len() >= PAR_MIN {
                out.par_chunks_mut(PAR_CHUNK)
                    .zip(a.par_chunks(PAR_CHUNK).zip(b.par_chunks(PAR_CHUNK)))
                    .for_each(|(out, (a, b))| write(out, a, b));
            } else {
                write(out, a, b);
            }
        })
    }
}

/// Expands to a `match` on `$op` that evaluates `$run` with `$k` the kernel type of each
/// variant listed (the unit type of the same name in module `$kernels`), and the given arms
/// for the others.
macro_rules! by_kernel {
    (
        $enum:ident, $op:expr, |$k:ident| $run:expr, $kernels:ident, [$($v:ident),*],
        { $($rest:tt)* }
    ) => {
        match $op {
            $( $enum::$v => {
                let $k = $kernels::$v;
                $run
            } )*
            $($rest)*
        }
    };
}

/// `op` on every element.
pub fn unary(op: UnaryOp, x: &CpuStorage) -> CpuStorage {
    float_match!(x, |v, Wrap| Wrap(unary_typed(op, Fresh(v))))
}

/// `op` on every element, written into `x`.
pub fn unary_assign(op: UnaryOp, x: &mut CpuStorage) {
    float_match!(x, |v, _Wrap| unary_typed(op, Overwrite(v)))
}

/// [`unary_assign`] on a slice of a buffer (the same loop, so the same values).
pub(crate) fn unary_slice<T: Real + Send + Sync + Elementary>(op: UnaryOp, v: &mut [T]) {
    unary_typed(op, Overwrite(v))
}

fn unary_typed<T: Real + Send + Sync + Elementary, M: Map1<T>>(op: UnaryOp, v: M) -> M::Out {
    let c = cst::<T>;
    by_kernel!(UnaryOp, op, |k| v.map(k), unary, [
        Neg, Sqrt, Rsqrt, Recip, Abs, Sign, Relu, Sin, Cos,
        Tanh, Exp, Ln, Sigmoid, Silu, Gelu, GeluErf
    ], {
        UnaryOp::AddScalar(s) => v.map(unary::AddScalar(c(s))),
        UnaryOp::MulScalar(s) => v.map(unary::MulScalar(c(s))),
        UnaryOp::DivScalarBy(s) => v.map(unary::DivScalarBy(c(s))),
        UnaryOp::LeakyRelu(a) => v.map(unary::LeakyRelu(c(a))),
        UnaryOp::Clamp(lo, hi) => v.map(unary::Clamp(c(lo), c(hi))),
        UnaryOp::Powf(p) => v.map(unary::Powf(c(p))),
    })
}

/// A loop over buffers that runs a kernel `f(x, y)`; [`dispatch`] calls it with the
/// kernel of one [`BinaryOp`], monomorphised per op.
trait Apply<T> {
    /// What the loop produces: a new buffer, or nothing when it writes into an operand.
    type Out;
    fn apply<K: Zip<T>>(self, k: K) -> Self::Out;
}

/// Runs `app` with the kernel of `op` (constants converted once).
fn dispatch<T: Real + Send + Sync + Elementary, A: Apply<T>>(op: BinaryOp, app: A) -> A::Out {
    let c = cst::<T>;
    by_kernel!(BinaryOp, op, |k| app.apply(k), binary, [
        Add, Sub, Mul, Div, Max, Min, Pow, Eq, Lt, Le, Gt, Ge, TanhGrad, SigmoidGrad,
        GeluGrad, GeluErfGrad, SiluGrad
    ], {
        BinaryOp::LeakyReluGrad(s) => app.apply(binary::LeakyReluGrad(c(s))),
        BinaryOp::ClampGrad(lo, hi) => app.apply(binary::ClampGrad(c(lo), c(hi))),
    })
}

/// Two equally long buffers.
struct SameShape<'a, T>(&'a [T], &'a [T]);

impl<T: Real + Send + Sync> Apply<T> for SameShape<'_, T> {
    type Out = Vec<T>;
    fn apply<K: Zip<T>>(self, k: K) -> Vec<T> {
        map2(self.0, self.1, &k)
    }
}

/// A buffer and one element broadcast over it, as the right (`Right`) or the left operand: a
/// tangent times a rank-0 seed, a tensor times a scalar tensor. One loop over the buffer, as
/// a unary op's, where [`Strided`] would run a loop per innermost row (`[128, 10] × []`: 1.9
/// µs strided, 0.22 as one loop).
enum WithScalar<'a, T> {
    Right(&'a [T], T),
    Left(T, &'a [T]),
}

impl<T: Real + Send + Sync> Apply<T> for WithScalar<'_, T> {
    type Out = Vec<T>;
    fn apply<K: Zip<T>>(self, k: K) -> Vec<T> {
        match self {
            WithScalar::Right(a, s) => map1(a, &unary::Right(&k, s)),
            WithScalar::Left(s, b) => map1(b, &unary::Left(&k, s)),
        }
    }
}

/// Two equally long buffers, the result written over the first (`out_is_lhs`: it is the
/// left operand, else the right one).
struct InPlace<'a, T> {
    out: &'a mut [T],
    other: &'a [T],
    out_is_lhs: bool,
}

impl<T: Real + Send + Sync> Apply<T> for InPlace<'_, T> {
    type Out = ();
    fn apply<K: Zip<T>>(self, k: K) {
        let InPlace {
            out,
            other,
            out_is_lhs,
        } = self;
        assert_eq!(
            out.len(),
            other.len(),
            "in-place elementwise op on buffers of different lengths"
        );
        let k = &k;
        let run = |out, other| {
            widest(Overwrite2 {
                out,
                other,
                out_is_lhs,
                k,
            })
        };
        if out.len() >= PAR_MIN {
            out.par_chunks_mut(PAR_CHUNK)
                .zip(other.par_chunks(PAR_CHUNK))
                .for_each(|(out, other)| run(out, other));
        } else {
            run(out, other);
        }
    }
}

/// `op` with NumPy broadcasting (shapes rank-aligned by the caller).
pub fn binary(
    op: BinaryOp,
    (lhs, lhs_shape): (&CpuStorage, &[usize]),
    (rhs, rhs_shape): (&CpuStorage, &[usize]),
    out_shape: &[usize],
) -> CpuStorage {
    match (lhs, rhs) {
        (CpuStorage::F32(a), CpuStorage::F32(b)) => {
            CpuStorage::F32(zip2(op, (a, lhs_shape), (b, rhs_shape), out_shape))
        }
        (CpuStorage::F64(a), CpuStorage::F64(b)) => {
            CpuStorage::F64(zip2(op, (a, lhs_shape), (b, rhs_shape), out_shape))
        }
        (a, b) => panic!(
            "binary {op:?}: dtypes {:?} and {:?} differ or are not float",
            a.dtype(),
            b.dtype()
        ),
    }
}

/// `out ← op(out, other)` (`out_is_lhs`) or `out ← op(other, out)`, elementwise over two
/// equally long buffers of one float dtype.
pub fn binary_assign(op: BinaryOp, out: &mut CpuStorage, other: &CpuStorage, out_is_lhs: bool) {
    match (out, other) {
        (CpuStorage::F32(out), CpuStorage::F32(other)) => binary_slice(op, out, other, out_is_lhs),
        (CpuStorage::F64(out), CpuStorage::F64(other)) => binary_slice(op, out, other, out_is_lhs),
        (a, b) => panic!(
            "binary {op:?} in place: dtypes {:?} and {:?} differ or are not float",
            a.dtype(),
            b.dtype()
        ),
    }
}

/// [`binary_assign`] on equally long slices: `out ← op(out, other)` if `out_is_lhs`, else
/// `out ← op(other, out)`.
pub(crate) fn binary_slice<T: Real + Send + Sync + Elementary>(
    op: BinaryOp,
    out: &mut [T],
    other: &[T],
    out_is_lhs: bool,
) {
    dispatch(
        op,
        InPlace {
            out,
            other,
            out_is_lhs,
        },
    )
}

fn zip2<T: Real + Send + Sync + Elementary>(
    op: BinaryOp,
    (a, ash): (&[T], &[usize]),
    (b, bsh): (&[T], &[usize]),
    out: &[usize],
) -> Vec<T> {
    // Callers without broadcasting pass one slice for all three shapes: comparing addresses
    // first skips two `memcmp` calls on the per-op path of small tensors.
    let same = |s: &[usize]| std::ptr::eq(s, out) || s == out;
    if same(ash) && same(bsh) {
        return dispatch(op, SameShape(a, b));
    }
    if b.len() == 1 && same(ash) {
        return dispatch(op, WithScalar::Right(a, b[0]));
    }
    if a.len() == 1 && same(bsh) {
        return dispatch(op, WithScalar::Left(a[0], b));
    }
    dispatch(
        op,
        Strided {
            a: (a, ash),
            b: (b, bsh),
            out,
        },
    )
}

/// `mask != 0 ? on_true : on_false` with broadcasting.
pub fn select(
    (mask, msh): (&CpuStorage, &[usize]),
    (t, tsh): (&CpuStorage, &[usize]),
    (f, fsh): (&CpuStorage, &[usize]),
    out: &[usize],
) -> CpuStorage {
    let mask = mask.to_f64();
    match (t, f) {
        (CpuStorage::F32(a), CpuStorage::F32(b)) => {
            CpuStorage::F32(zip3(&mask, msh, (a, tsh), (b, fsh), out))
        }
        (CpuStorage::F64(a), CpuStorage::F64(b)) => {
            CpuStorage::F64(zip3(&mask, msh, (a, tsh), (b, fsh), out))
        }
        (a, b) => panic!(
            "select: dtypes {:?} and {:?} differ or are not float",
            a.dtype(),
            b.dtype()
        ),
    }
}

fn zip3<T: Real>(
    mask: &[f64],
    msh: &[usize],
    (a, ash): (&[T], &[usize]),
    (b, bsh): (&[T], &[usize]),
    out: &[usize],
) -> Vec<T> {
    let shape = IxDyn(out);
    let mv = view(mask, msh);
    let av = view(a, ash);
    let bv = view(b, bsh);
    let mv = mv
        .broadcast(shape.clone())
        .expect("mask broadcasts to the output");
    let av = av
        .broadcast(shape.clone())
        .expect("on_true broadcasts to the output");
    let bv = bv
        .broadcast(shape)
        .expect("on_false broadcasts to the output");
    let mut result = ArrayD::<T>::zeros(av.raw_dim());
    ndarray::Zip::from(&mut result)
        .and(&mv)
        .and(&av)
        .and(&bv)
        .for_each(|o, &m, &x, &y| *o = if m != 0.0 { x } else { y });
    into_vec(result)
}
