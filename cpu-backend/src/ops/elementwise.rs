//! Elementwise primitives: unary maps, broadcasting binary ops and `select`.
//!
//! Each op gets its own monomorphic loop (the op enum is matched once, outside the loop, and
//! constants are converted once), so that LLVM vectorises it, in the widest build the CPU
//! runs ([`widest`]); the transcendental ops and their derivatives run the branch-free `f32`
//! kernels of [`math`](super::math) ([`Elementary`]), so that those loops vectorize too.
//! Buffers of at least [`PAR_MIN`] elements are split across the cores with rayon.

use super::math::Elementary;
use super::simd::widest;
use super::{into_vec, view};
use crate::storage::float_match;
use crate::{BinaryOp, CpuStorage, UnaryOp};
use adjoint_backend::Real;
use ndarray::{ArrayD, IxDyn, Zip};
use rayon::prelude::*;
use std::mem::MaybeUninit;

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

/// `out[i] = f(a[i])`, in the widest-vector build (`out` and `a` equally long).
#[inline(always)]
fn write1<T: Copy>(out: &mut [MaybeUninit<T>], a: &[T], f: &impl Fn(T) -> T) {
    widest(|| {
        for (o, &x) in out.iter_mut().zip(a) {
            o.write(f(x));
        }
    })
}

/// `out[i] = f(a[i], b[i])`, in the widest-vector build (all three equally long).
#[inline(always)]
fn write2<T: Copy>(out: &mut [MaybeUninit<T>], a: &[T], b: &[T], f: &impl Fn(T, T) -> T) {
    widest(|| {
        for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
            o.write(f(x, y));
        }
    })
}

/// `f` on every element, in parallel for long buffers.
pub(crate) fn map1<T: Real + Send + Sync>(v: &[T], f: impl Fn(T) -> T + Sync + Send) -> Vec<T> {
    // SAFETY: `out` and `v` are equally long, and both branches write each element of `out`
    // (in chunks that pair up exactly).
    unsafe {
        filled(v.len(), |out| {
            if v.len() >= PAR_MIN {
                out.par_chunks_mut(PAR_CHUNK)
                    .zip(v.par_chunks(PAR_CHUNK))
                    .for_each(|(out, v)| write1(out, v, &f));
            } else {
                write1(out, v, &f);
            }
        })
    }
}

/// `f` on every element, written back into `v`, in parallel for long buffers.
fn map1_in_place<T: Real + Send + Sync>(v: &mut [T], f: impl Fn(T) -> T + Sync + Send) {
    let run = |v: &mut [T]| {
        widest(|| {
            for x in v.iter_mut() {
                *x = f(*x);
            }
        })
    };
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
    fn map<F: Fn(T) -> T + Sync + Send>(self, f: F) -> Self::Out;
}

/// The results in a new buffer.
struct Fresh<'a, T>(&'a [T]);

impl<T: Real + Send + Sync> Map1<T> for Fresh<'_, T> {
    type Out = Vec<T>;
    #[inline(always)]
    fn map<F: Fn(T) -> T + Sync + Send>(self, f: F) -> Vec<T> {
        map1(self.0, f)
    }
}

/// The results written over the input.
struct Overwrite<'a, T>(&'a mut [T]);

impl<T: Real + Send + Sync> Map1<T> for Overwrite<'_, T> {
    type Out = ();
    #[inline(always)]
    fn map<F: Fn(T) -> T + Sync + Send>(self, f: F) {
        map1_in_place(self.0, f)
    }
}

/// `f` on every pair of elements of two equally long buffers.
fn map2<T: Real + Send + Sync>(a: &[T], b: &[T], f: impl Fn(T, T) -> T + Sync + Send) -> Vec<T> {
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
                    .for_each(|(out, (a, b))| write2(out, a, b, &f));
            } else {
                write2(out, a, b, &f);
            }
        })
    }
}

/// Expands to a `match` with one loop per parameterless variant (`$op.eval` on a constant
/// variant folds to straight-line code), and the given arms for the others.
macro_rules! fixed_ops {
    ($enum:ident, $op:expr, $run:ident, [$($v:ident),*], { $($rest:tt)* }) => {
        match $op {
            $( $enum::$v => $run!(|x, y| $enum::$v.eval2(x, y)), )*
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

trait Eval2 {
    fn eval2<T: Real>(self, x: T, y: T) -> T;
}

impl Eval2 for UnaryOp {
    #[inline(always)]
    fn eval2<T: Real>(self, x: T, _: T) -> T {
        self.eval(x)
    }
}

impl Eval2 for BinaryOp {
    #[inline(always)]
    fn eval2<T: Real>(self, x: T, y: T) -> T {
        self.eval(x, y)
    }
}

fn unary_typed<T: Real + Send + Sync + Elementary, M: Map1<T>>(op: UnaryOp, v: M) -> M::Out {
    macro_rules! run {
        (|$x:ident, $y:ident| $e:expr) => {
            v.map(|$x| {
                let $y = $x;
                $e
            })
        };
    }
    fixed_ops!(UnaryOp, op, run, [Neg, Sqrt, Rsqrt, Recip, Abs, Sign, Relu, Sin, Cos], {
        UnaryOp::Tanh => v.map(T::tanh_elementwise),
        UnaryOp::Exp => v.map(T::exp_elementwise),
        UnaryOp::Ln => v.map(T::ln_elementwise),
        UnaryOp::Sigmoid => v.map(T::sigmoid_elementwise),
        UnaryOp::Silu => v.map(T::silu_elementwise),
        UnaryOp::Gelu => v.map(T::gelu_elementwise),
        UnaryOp::GeluErf => v.map(|x| x.gelu_erf_elementwise()),
        UnaryOp::AddScalar(c) => {
            let c = cst::<T>(c);
            v.map(move |x| x + c)
        }
        UnaryOp::MulScalar(c) => {
            let c = cst::<T>(c);
            v.map(move |x| x * c)
        }
        UnaryOp::DivScalarBy(c) => {
            let c = cst::<T>(c);
            v.map(move |x| c / x)
        }
        UnaryOp::LeakyRelu(a) => {
            let a = cst::<T>(a);
            v.map(move |x| if x > T::zero() { x } else { x * a })
        }
        UnaryOp::Clamp(lo, hi) => {
            let (lo, hi) = (cst::<T>(lo), cst::<T>(hi));
            v.map(move |x| x.max(lo).min(hi))
        }
        UnaryOp::Powf(p) => {
            let p = cst::<T>(p);
            v.map(move |x| x.powf(p))
        }
    })
}

/// A loop over buffers that runs a kernel `f(x, y)`; [`dispatch`] calls it with the
/// kernel of one [`BinaryOp`], monomorphised per op.
trait Apply<T> {
    /// What the loop produces: a new buffer, or nothing when it writes into an operand.
    type Out;
    fn apply<F: Fn(T, T) -> T + Sync + Send>(self, f: F) -> Self::Out;
}

/// Runs `app` with the kernel of `op` (constants converted once).
fn dispatch<T: Real + Send + Sync + Elementary, A: Apply<T>>(op: BinaryOp, app: A) -> A::Out {
    macro_rules! run {
        (|$x:ident, $y:ident| $e:expr) => {
            app.apply(|$x, $y| $e)
        };
    }
    fixed_ops!(BinaryOp, op, run, [Add, Sub, Mul, Div, Max, Min, Pow, Eq, Lt, Le, Gt, Ge, TanhGrad, SigmoidGrad], {
        BinaryOp::GeluGrad => app.apply(T::gelu_grad),
        BinaryOp::GeluErfGrad => app.apply(|x, d| x.gelu_erf_grad(d)),
        BinaryOp::SiluGrad => app.apply(T::silu_grad),
        BinaryOp::LeakyReluGrad(s) => {
            let s = cst::<T>(s);
            app.apply(move |x, d| if x > T::zero() { d } else { d * s })
        }
        BinaryOp::ClampGrad(lo, hi) => {
            let (lo, hi) = (cst::<T>(lo), cst::<T>(hi));
            app.apply(move |x, d| if x >= lo && x <= hi { d } else { T::zero() })
        }
    })
}

/// Two equally long buffers.
struct SameShape<'a, T>(&'a [T], &'a [T]);

impl<T: Real + Send + Sync> Apply<T> for SameShape<'_, T> {
    type Out = Vec<T>;
    fn apply<F: Fn(T, T) -> T + Sync + Send>(self, f: F) -> Vec<T> {
        map2(self.0, self.1, f)
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
    fn apply<F: Fn(T, T) -> T + Sync + Send>(self, f: F) -> Vec<T> {
        match self {
            WithScalar::Right(a, s) => map1(a, move |x| f(x, s)),
            WithScalar::Left(s, b) => map1(b, move |y| f(s, y)),
        }
    }
}

/// Elements per block of an in-place op. Each block is computed into a stack buffer and then
/// copied over the operand: written directly, an op that keeps some elements as they are
/// (clamp's tangent `ȳ·𝟙(lo ≤ x ≤ hi)` keeps `ȳ` inside the range) compiles to AVX2 masked stores, which AMD's cores
/// run several times slower than a plain loop. The copy is a call to `memmove`: with blocks of
/// 64 elements those calls were 0.87% of the MNIST MLP step's samples, with 512 (2 KiB of
/// `f32`, still in L1) 0.26%.
const BLOCK: usize = 512;

/// Two equally long buffers, the result written over the first (`out_is_lhs`: it is the
/// left operand, else the right one).
struct InPlace<'a, T> {
    out: &'a mut [T],
    other: &'a [T],
    out_is_lhs: bool,
}

impl<T: Real + Send + Sync> Apply<T> for InPlace<'_, T> {
    type Out = ();
    fn apply<F: Fn(T, T) -> T + Sync + Send>(self, f: F) {
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
        let run = |out: &mut [T], other: &[T]| {
            widest(|| {
                for (out, other) in out.chunks_mut(BLOCK).zip(other.chunks(BLOCK)) {
                    let mut block = [T::zero(); BLOCK];
                    let block = &mut block[..out.len()];
                    for ((b, &o), &y) in block.iter_mut().zip(&*out).zip(other) {
                        *b = if out_is_lhs { f(o, y) } else { f(y, o) };
                    }
                    out.copy_from_slice(block);
                }
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

/// Two buffers broadcast to `out` (shapes rank-aligned): a row-major walk over the output with
/// the operands' strides (0 on broadcast axes), one tight loop per innermost row.
struct Strided<'a, T> {
    a: (&'a [T], &'a [usize]),
    b: (&'a [T], &'a [usize]),
    out: &'a [usize],
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
    fn apply<F: Fn(T, T) -> T + Sync + Send>(self, f: F) -> Vec<T> {
        let n: usize = self.out.iter().product();
        let mut result = Vec::with_capacity(n);
        if n == 0 {
            return result;
        }
        let inner = self.out.last().copied().unwrap_or(1);
        let (sa, sb) = (
            broadcast_strides(self.a.1, self.out),
            broadcast_strides(self.b.1, self.out),
        );
        // Written through the spare capacity: every element is written once, none read, so
        // the output is not zeroed first.
        let out = &mut result.spare_capacity_mut()[..n];
        if n >= PAR_MIN {
            let rows = PAR_CHUNK.div_ceil(inner);
            out.par_chunks_mut(rows * inner)
                .enumerate()
                .for_each(|(i, out)| widest(|| self.rows(i * rows, out, (&sa, &sb), &f)));
        } else {
            widest(|| self.rows(0, out, (&sa, &sb), &f));
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
    /// operands with strides `sa`, `sb`; every element of `out` is written. Inlined into the
    /// callers' wide-vector builds.
    #[inline(always)]
    fn rows(
        &self,
        first: usize,
        out: &mut [MaybeUninit<T>],
        (sa, sb): (&[usize], &[usize]),
        f: &impl Fn(T, T) -> T,
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
                        o.write(f(x, y));
                    }
                }
                (1, 0) => {
                    for (o, &x) in row.iter_mut().zip(&a[oa..oa + inner]) {
                        o.write(f(x, b[ob]));
                    }
                }
                (0, 1) => {
                    for (o, &y) in row.iter_mut().zip(&b[ob..ob + inner]) {
                        o.write(f(a[oa], y));
                    }
                }
                _ => row.fill(MaybeUninit::new(f(a[oa], b[ob]))),
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
    Zip::from(&mut result)
        .and(&mv)
        .and(&av)
        .and(&bv)
        .for_each(|o, &m, &x, &y| *o = if m != 0.0 { x } else { y });
    into_vec(result)
}
