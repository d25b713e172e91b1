//! Elementwise arithmetic between tensors, with NumPy broadcasting.
//!
//! | op | value `y` | `ā` | `b̄` |
//! |---|---|---|---|
//! | `a + b` | a + b | Σ↓ ȳ | Σ↓ ȳ |
//! | `a - b` | a − b | Σ↓ ȳ | −Σ↓ ȳ |
//! | `a * b` | a · b | Σ↓ ȳ·b | Σ↓ ȳ·a |
//! | `a / b` | a / b | Σ↓ ȳ/b | −Σ↓ ȳ·y/b |
//! | `a.maximum(b)` | max(a, b) | Σ↓ ȳ·𝟙(a > b) + ½𝟙(a = b) | symmetric |
//! | `a.minimum(b)` | min(a, b) | Σ↓ ȳ·𝟙(a < b) + ½𝟙(a = b) | symmetric |
//!
//! `Σ↓` sums the tangent over the axes along which the operand was broadcast
//! ([`Tensor::sum_to`]), so each tangent has its operand's shape.
//!
//! The operators take each operand by value or by reference; `+`, `-`, `*` and `/` write into
//! an operand given by value when no other tensor shares its buffer and the result has its
//! element count ([`Backend::binary_assign`]).

mod forward;

use super::slot;
use crate::rules::operators::{AddRule, DivRule, MulRule, NegRule, SubRule};
use crate::tensor::error::{TensorError, ensure, or_panic};
use crate::tensor::shape::{aligned, broadcast_shape, reduced_axes};
use crate::tensor::{Backend, Tensor, TensorTangent};
use adjoint_backend::{BinaryOp, ReduceOp, UnaryOp};

impl<B: Backend> Tensor<B> {
    /// Checks that `self` is a float tensor, for op `op`.
    pub(crate) fn check_float(&self, op: &'static str) -> Result<(), TensorError> {
        ensure(self.dtype().is_float(), op, || {
            format!(
                "needs a float tensor, got {:?} of shape {:?}",
                self.dtype(),
                self.shape()
            )
        })
    }

    /// `op` elementwise with broadcasting; errors name `name`.
    pub(crate) fn try_binary(
        &self,
        rhs: &Self,
        op: BinaryOp,
        name: &'static str,
    ) -> Result<Self, TensorError> {
        self.check_float(name)?;
        ensure(self.dtype() == rhs.dtype(), name, || {
            format!(
                "dtypes differ: {:?} {:?} and {:?} {:?}",
                self.dtype(),
                self.shape(),
                rhs.dtype(),
                rhs.shape()
            )
        })?;
        if self.shape() == rhs.shape() {
            // No broadcasting: the shapes are already aligned.
            let shape = self.shape();
            let s = B::binary(op, (self.storage(), shape), (rhs.storage(), shape), shape);
            return Ok(Tensor::from_storage(s, shape));
        }
        let out = broadcast_shape(name, self.shape(), rhs.shape())?;
        let (ls, rs) = (
            aligned(self.shape(), out.len()),
            aligned(rhs.shape(), out.len()),
        );
        let s = B::binary(op, (self.storage(), &ls), (rhs.storage(), &rs), &out);
        Ok(Tensor::from_storage(s, out))
    }

    /// `op` elementwise, panicking on bad input.
    #[track_caller]
    pub(crate) fn binary(&self, rhs: &Self, op: BinaryOp, name: &'static str) -> Self {
        or_panic(self.try_binary(rhs, op, name))
    }

    /// `op` on every element of a float tensor.
    #[track_caller]
    pub(crate) fn unary(&self, op: UnaryOp, name: &'static str) -> Self {
        or_panic(self.check_float(name));
        Tensor::from_storage(B::unary(op, self.storage()), self.shape_owned())
    }

    /// The sum of `self` over the axes broadcast from `shape`, with result shape `shape`: the
    /// adjoint of broadcasting a `shape` tensor to `self.shape()`,
    /// `y[j] = Σ_{i ↦ j} x[i]` over the elements `i` that broadcasting copies from `j`. It is
    /// linear, with derivative `x̄ = ȳ` broadcast back to `self.shape()`. It has no rule of its
    /// own (the rules call it on tangents): on an active value in `#[differentiable]` code,
    /// write it as [`sum`](Tensor::sum) over the broadcast axes (`keepdim` for those that stay
    /// with size 1).
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    /// assert_eq!(x.sum_to(&[3]).to_vec_f64(), [5.0, 7.0, 9.0]); // a row broadcast over 2
    /// assert_eq!(x.sum_to(&[2, 1]).to_vec_f64(), [6.0, 15.0]); // a column broadcast over 3
    /// assert_eq!(x.sum_to(&[]).to_scalar(), 21.0);
    /// ```
    ///
    /// # Panics
    /// If `shape` does not broadcast to `self.shape()`.
    #[track_caller]
    pub fn sum_to(&self, shape: &[usize]) -> Self {
        if self.shape() == shape {
            return self.clone();
        }
        // `shape` broadcasts to ours: aligned at the last axis, each of its sizes is ours or 1.
        let lead = self.rank().checked_sub(shape.len());
        assert!(
            lead.is_some_and(|lead| {
                (shape.iter().zip(&self.shape()[lead..])).all(|(&s, &d)| s == d || s == 1)
            }),
            "sum_to: shape {shape:?} does not broadcast to {:?}",
            self.shape()
        );
        if self.len() == shape.iter().product::<usize>() {
            // Only axes of size 1 are summed: the elements are already the sums, in order.
            return self.with_shape(shape);
        }
        let axes = reduced_axes(self.shape(), shape);
        let s = B::reduce(ReduceOp::Sum, self.storage(), self.shape(), &axes);
        Tensor::from_storage(s, shape)
    }
}

macro_rules! binary_ops {
    ($(
        $(#[$doc:meta])*
        $name:ident $try_name:ident $op:ident;
    )*) => {
        impl<B: Backend> Tensor<B> {$(
            $(#[$doc])*
            ///
            /// # Panics
            /// If the shapes do not broadcast or the dtypes differ.
            #[track_caller]
            pub fn $name(&self, rhs: &Self) -> Self {
                self.binary(rhs, BinaryOp::$op, stringify!($name))
            }

            #[doc = concat!("[`", stringify!($name), "`](Tensor::", stringify!($name), ") returning an error on bad input")]
            #[doc = "(shapes that do not broadcast, dtypes that differ, a tensor not of a float dtype)"]
            #[doc = "instead of panicking; the example of [`add`](Tensor::add) shows the `Err` case."]
            pub fn $try_name(&self, rhs: &Self) -> Result<Self, TensorError> {
                self.try_binary(rhs, BinaryOp::$op, stringify!($name))
            }
        )*}
    };
}

binary_ops! {
    /// `a + b` elementwise with broadcasting (the operator `&a + &b` computes the same).
    /// Derivative: `ā = Σ↓ ȳ`, `b̄ = Σ↓ ȳ`, each summed over the axes along which its operand
    /// was broadcast.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// let b = Tensor::from_vec(vec![10.0, 20.0], &[2]);
    /// assert_eq!(a.add(&b).to_vec_f64(), [11.0, 22.0, 13.0, 24.0]);
    ///
    /// #[differentiable]
    /// fn f(a: &Tensor, b: &Tensor) -> Tensor {
    ///     a.add(b).sum_all()
    /// }
    /// let (da, db) = gradient(f_vjp(&a, &b));
    /// assert_eq!(da.unwrap().to_vec_f64(), [1.0; 4]);
    /// assert_eq!(db.unwrap().to_vec_f64(), [2.0, 2.0]); // b is broadcast over 2 rows
    ///
    /// // `try_add`, like every `try_` op, returns the error instead of panicking.
    /// let e = a.try_add(&Tensor::from_vec(vec![0.0; 3], &[3])).unwrap_err();
    /// assert!(e.to_string().starts_with("add: shapes [2, 2] and [3] do not broadcast"));
    /// ```
    add try_add Add;
    /// `a − b` elementwise with broadcasting (the operator `&a - &b`). Derivative: `ā = Σ↓ ȳ`,
    /// `b̄ = −Σ↓ ȳ`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// let b = Tensor::from_vec(vec![10.0, 20.0], &[2]);
    /// assert_eq!(a.sub(&b).to_vec_f64(), [-9.0, -18.0, -7.0, -16.0]);
    ///
    /// #[differentiable]
    /// fn f(a: &Tensor, b: &Tensor) -> Tensor {
    ///     a.sub(b).sum_all()
    /// }
    /// let (da, db) = gradient(f_vjp(&a, &b));
    /// assert_eq!(da.unwrap().to_vec_f64(), [1.0; 4]);
    /// assert_eq!(db.unwrap().to_vec_f64(), [-2.0, -2.0]);
    /// ```
    sub try_sub Sub;
    /// `a · b` elementwise with broadcasting (the operator `&a * &b`). Derivative:
    /// `ā = Σ↓ ȳ·b`, `b̄ = Σ↓ ȳ·a`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// let b = Tensor::from_vec(vec![10.0, 20.0], &[2]);
    /// assert_eq!(a.mul(&b).to_vec_f64(), [10.0, 40.0, 30.0, 80.0]);
    ///
    /// #[differentiable]
    /// fn f(a: &Tensor, b: &Tensor) -> Tensor {
    ///     a.mul(b).sum_all()
    /// }
    /// let (da, db) = gradient(f_vjp(&a, &b));
    /// assert_eq!(da.unwrap().to_vec_f64(), [10.0, 20.0, 10.0, 20.0]);
    /// assert_eq!(db.unwrap().to_vec_f64(), [4.0, 6.0]); // the column sums of a
    /// ```
    mul try_mul Mul;
    /// `a / b` elementwise with broadcasting (the operator `&a / &b`). Derivative:
    /// `ā = Σ↓ ȳ/b`, `b̄ = −Σ↓ ȳ·a/b²`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// let b = Tensor::from_vec(vec![2.0, 4.0], &[2]);
    /// assert_eq!(a.div(&b).to_vec_f64(), [0.5, 0.5, 1.5, 1.0]);
    ///
    /// #[differentiable]
    /// fn f(a: &Tensor, b: &Tensor) -> Tensor {
    ///     a.div(b).sum_all()
    /// }
    /// let (da, db) = gradient(f_vjp(&a, &b));
    /// assert_eq!(da.unwrap().to_vec_f64(), [0.5, 0.25, 0.5, 0.25]);
    /// assert_eq!(db.unwrap().to_vec_f64(), [-1.0, -0.375]); // −(1 + 3)/2², −(2 + 4)/4²
    /// ```
    div try_div Div;
    /// `max(a, b)` elementwise with broadcasting. Derivative: the larger input gets `ȳ`, half
    /// each on a tie: `ā = Σ↓ ȳ·(𝟙(a > b) + ½𝟙(a = b))`, and `b̄` likewise.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let a = Tensor::from_vec(vec![1.0, 5.0, 3.0], &[3]);
    /// let b = Tensor::from_vec(vec![2.0, 2.0, 3.0], &[3]);
    /// assert_eq!(a.maximum(&b).to_vec_f64(), [2.0, 5.0, 3.0]);
    ///
    /// #[differentiable]
    /// fn f(a: &Tensor, b: &Tensor) -> Tensor {
    ///     a.maximum(b).sum_all()
    /// }
    /// let (da, db) = gradient(f_vjp(&a, &b));
    /// assert_eq!(da.unwrap().to_vec_f64(), [0.0, 1.0, 0.5]);
    /// assert_eq!(db.unwrap().to_vec_f64(), [1.0, 0.0, 0.5]);
    /// ```
    maximum try_maximum Max;
    /// `min(a, b)` elementwise with broadcasting. Derivative: the smaller input gets `ȳ`, half
    /// each on a tie: `ā = Σ↓ ȳ·(𝟙(a < b) + ½𝟙(a = b))`, and `b̄` likewise.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let a = Tensor::from_vec(vec![1.0, 5.0, 3.0], &[3]);
    /// let b = Tensor::from_vec(vec![2.0, 2.0, 3.0], &[3]);
    /// assert_eq!(a.minimum(&b).to_vec_f64(), [1.0, 2.0, 3.0]);
    ///
    /// #[differentiable]
    /// fn f(a: &Tensor, b: &Tensor) -> Tensor {
    ///     a.minimum(b).sum_all()
    /// }
    /// let (da, db) = gradient(f_vjp(&a, &b));
    /// assert_eq!(da.unwrap().to_vec_f64(), [1.0, 0.0, 0.5]);
    /// assert_eq!(db.unwrap().to_vec_f64(), [0.0, 1.0, 0.5]);
    /// ```
    minimum try_minimum Min;
}

/// Pullback type of a binary rule.
pub(crate) type Pair<B> = (TensorTangent<B>, TensorTangent<B>);

/// An operand of an operator, given by value (its buffer may be reused for the result) or by
/// reference.
pub(crate) enum Given<'a, B: Backend> {
    Owned(Tensor<B>),
    Borrowed(&'a Tensor<B>),
}

impl<B: Backend> Given<'_, B> {
    fn tensor(&self) -> &Tensor<B> {
        match self {
            Given::Owned(t) => t,
            Given::Borrowed(t) => t,
        }
    }
}

impl<B: Backend> From<Tensor<B>> for Given<'_, B> {
    fn from(t: Tensor<B>) -> Self {
        Given::Owned(t)
    }
}

impl<'a, B: Backend> From<&'a Tensor<B>> for Given<'a, B> {
    fn from(t: &'a Tensor<B>) -> Self {
        Given::Borrowed(t)
    }
}

/// `op(a, b)` elementwise, written into the buffer of an operand given by value when no other
/// tensor shares that buffer and the result has as many elements as both operands (only axes
/// of size 1 broadcast, so the elements line up): `h.matmul(w) + x.matmul(u) + b` in an RNN
/// step allocates for its products only, and the pullbacks of elementwise functions write
/// into the incoming adjoint. Otherwise (and for every error) the op into a new tensor. The
/// values are the same either way (one kernel per op).
#[track_caller]
pub(crate) fn binary_given<B: Backend>(
    mut a: Given<'_, B>,
    mut b: Given<'_, B>,
    op: BinaryOp,
    name: &'static str,
) -> Tensor<B> {
    let (ta, tb) = (a.tensor(), b.tensor());
    if matches!((&a, &b), (Given::Borrowed(_), Given::Borrowed(_))) {
        // Nothing to reuse: `&x + &y` goes straight to the op, checking its shapes once.
        return ta.binary(tb, op, name);
    }
    let fits = ta.len() == tb.len() && ta.dtype() == tb.dtype() && ta.dtype().is_float();
    // Equal shapes are the common case (a pullback's adjoint and the value it is combined
    // with); equally long operands can still broadcast to more elements ([1, 3] and [3, 1]).
    let same = fits && ta.shape() == tb.shape();
    let out = (fits && !same)
        .then(|| broadcast_shape(name, ta.shape(), tb.shape()).ok())
        .flatten()
        .filter(|out| out.iter().product::<usize>() == ta.len());
    if same || out.is_some() {
        // The result has the operand's shape, or `out` where only axes of size 1 broadcast.
        let shaped = |t: Tensor<B>| match &out {
            Some(out) if out.as_slice() != t.shape() => t.with_shape(out),
            _ => t,
        };
        if let Given::Owned(mut x) = a {
            if let Some(buf) = x.unique_storage_mut() {
                B::binary_assign(op, buf, b.tensor().storage(), true);
                return shaped(x);
            }
            a = Given::Owned(x);
        }
        if let Given::Owned(mut y) = b {
            if let Some(buf) = y.unique_storage_mut() {
                B::binary_assign(op, buf, a.tensor().storage(), false);
                return shaped(y);
            }
            b = Given::Owned(y);
        }
    }
    a.tensor().binary(b.tensor(), op, name)
}

/// The operators' values, from operands given either way ([`binary_given`]).
macro_rules! given {
    ($($given:ident $op:ident $name:literal;)*) => {$(
        #[track_caller]
        fn $given<B: Backend>(a: Given<'_, B>, b: Given<'_, B>) -> Tensor<B> {
            binary_given(a, b, BinaryOp::$op, $name)
        }
    )*};
}

given! {
    add_given Add "add";
    sub_given Sub "sub";
    mul_given Mul "mul";
    div_given Div "div";
}

/// Rule of `a + b`.
#[track_caller]
pub(crate) fn add_rule<B: Backend>(
    a: Given<'_, B>,
    b: Given<'_, B>,
    needs: [bool; 2],
) -> (Tensor<B>, impl FnOnce(TensorTangent<B>) -> Pair<B> + use<B>) {
    let (sa, sb) = (a.tensor().shape_owned(), b.tensor().shape_owned());
    (add_given(a, b), move |d| {
        (
            slot(needs[0], &d, |d| d.sum_to(&sa)),
            slot(needs[1], &d, |d| d.sum_to(&sb)),
        )
    })
}

/// Rule of `a - b`.
#[track_caller]
pub(crate) fn sub_rule<B: Backend>(
    a: Given<'_, B>,
    b: Given<'_, B>,
    needs: [bool; 2],
) -> (Tensor<B>, impl FnOnce(TensorTangent<B>) -> Pair<B> + use<B>) {
    let (sa, sb) = (a.tensor().shape_owned(), b.tensor().shape_owned());
    (sub_given(a, b), move |d| {
        (
            slot(needs[0], &d, |d| d.sum_to(&sa)),
            slot(needs[1], &d, |d| d.sum_to(&sb).neg()),
        )
    })
}

/// Rule of `a * b`: keeps `b` only if `ā` is needed and `a` only if `b̄` is.
#[track_caller]
pub(crate) fn mul_rule<B: Backend>(
    a: Given<'_, B>,
    b: Given<'_, B>,
    needs: [bool; 2],
) -> (Tensor<B>, impl FnOnce(TensorTangent<B>) -> Pair<B> + use<B>) {
    // Kept before the product, so that an operand the pullback needs is never overwritten.
    let keep_a = needs[1].then(|| a.tensor().clone());
    let keep_b = needs[0].then(|| b.tensor().clone());
    let (sa, sb) = (a.tensor().shape_owned(), b.tensor().shape_owned());
    let y = mul_given(a, b);
    (y, move |d| {
        let da = slot(needs[0], &d, |d| {
            d.mul(keep_b.as_ref().expect("kept")).sum_to(&sa)
        });
        let db = slot(needs[1], &d, |d| {
            d.mul(keep_a.as_ref().expect("kept")).sum_to(&sb)
        });
        (da, db)
    })
}

/// Rule of `a / b`: `ā = ȳ/b`, `b̄ = −ȳ·y/b`.
#[track_caller]
pub(crate) fn div_rule<B: Backend>(
    a: Given<'_, B>,
    b: Given<'_, B>,
    needs: [bool; 2],
) -> (Tensor<B>, impl FnOnce(TensorTangent<B>) -> Pair<B> + use<B>) {
    let sa = a.tensor().shape_owned();
    // `b` is kept before the quotient, so that the quotient never overwrites it.
    let kept_b = b.tensor().clone();
    let y = div_given(a, b);
    let keep_y = needs[1].then(|| y.clone());
    let b = kept_b;
    (y, move |d| {
        let da = slot(needs[0], &d, |d| d.div(&b).sum_to(&sa));
        let db = slot(needs[1], &d, |d| {
            d.mul(keep_y.as_ref().expect("kept"))
                .div(&b)
                .sum_to(b.shape())
                .neg()
        });
        (da, db)
    })
}

/// Rule of `maximum`/`minimum`: the selected input gets `ȳ`, ties split evenly.
#[track_caller]
fn extremum_rule<B: Backend>(
    a: &Tensor<B>,
    b: &Tensor<B>,
    needs: [bool; 2],
    max: bool,
) -> (Tensor<B>, impl FnOnce(TensorTangent<B>) -> Pair<B> + use<B>) {
    let y = if max { a.maximum(b) } else { a.minimum(b) };
    let (a, b) = (a.clone(), b.clone());
    (y, move |d| {
        let wins = |x: &Tensor<B>, o: &Tensor<B>| {
            let strict = x.binary(o, if max { BinaryOp::Gt } else { BinaryOp::Lt }, "maximum");
            strict.add(&x.binary(o, BinaryOp::Eq, "maximum").mul_scalar(0.5))
        };
        let da = slot(needs[0], &d, |d| d.mul(&wins(&a, &b)).sum_to(a.shape()));
        let db = slot(needs[1], &d, |d| d.mul(&wins(&b, &a)).sum_to(b.shape()));
        (da, db)
    })
}

impl<B: Backend> Tensor<B> {
    /// Derivative rule of [`maximum`](Tensor::maximum).
    #[track_caller]
    pub fn maximum_vjp_full(
        &self,
        rhs: &Self,
        needs: [bool; 2],
    ) -> (Self, impl FnOnce(TensorTangent<B>) -> Pair<B> + use<B>) {
        extremum_rule(self, rhs, needs, true)
    }

    /// Derivative rule of [`minimum`](Tensor::minimum).
    #[track_caller]
    pub fn minimum_vjp_full(
        &self,
        rhs: &Self,
        needs: [bool; 2],
    ) -> (Self, impl FnOnce(TensorTangent<B>) -> Pair<B> + use<B>) {
        extremum_rule(self, rhs, needs, false)
    }

    /// `−x` elementwise (the operator `-&x` computes the same); derivative `x̄ = −ȳ`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, -2.0], &[2]);
    /// assert_eq!(x.neg().to_vec_f64(), [-1.0, 2.0]);
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     (x.neg() * x).sum_all() // −Σ x², x̄ = −2x
    /// }
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [-2.0, 4.0]);
    /// ```
    ///
    /// # Panics
    /// If the tensor is not of a float dtype.
    #[track_caller]
    pub fn neg(&self) -> Self {
        self.unary(UnaryOp::Neg, "neg")
    }

    /// Derivative rule of [`neg`](Tensor::neg).
    #[track_caller]
    pub fn neg_vjp_full(
        &self,
        needs: [bool; 1],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>,) + use<B>,
    ) {
        (self.neg(), move |d: TensorTangent<B>| {
            (slot(needs[0], &d, |d| d.neg()),)
        })
    }
}

/// The method forms' rules (`a.add(&b)` in `#[differentiable]` code), the same as the
/// operators'. Unlike an operator on `&local`, a method call's pullback borrows nothing.
macro_rules! method_rules {
    ($($(#[$doc:meta])* $vjp:ident $rule:ident;)*) => {
        impl<B: Backend> Tensor<B> {$(
            $(#[$doc])*
            #[track_caller]
            pub fn $vjp(&self, rhs: &Self, needs: [bool; 2]) -> (Self, impl FnOnce(TensorTangent<B>) -> Pair<B> + use<B>) {
                $rule(self.into(), rhs.into(), needs)
            }
        )*}
    };
}

method_rules! {
    /// Derivative rule of [`add`](Tensor::add): `ā = Σ↓ ȳ`, `b̄ = Σ↓ ȳ`.
    add_vjp_full add_rule;
    /// Derivative rule of [`sub`](Tensor::sub): `ā = Σ↓ ȳ`, `b̄ = −Σ↓ ȳ`.
    sub_vjp_full sub_rule;
    /// Derivative rule of [`mul`](Tensor::mul): `ā = Σ↓ ȳ·b`, `b̄ = Σ↓ ȳ·a`.
    mul_vjp_full mul_rule;
    /// Derivative rule of [`div`](Tensor::div): `ā = Σ↓ ȳ/b`, `b̄ = −Σ↓ ȳ·y/b`.
    div_vjp_full div_rule;
}

/// Implements `std::ops::$Op` and the rule trait for the four owned/borrowed combinations.
macro_rules! tensor_operator {
    ($Op:ident $op:ident $Rule:ident $vjp:ident $value:ident $rule:ident) => {
        tensor_operator!(@one $Op $op $Rule $vjp $value $rule [Tensor<B>] [Tensor<B>]);
        tensor_operator!(@one $Op $op $Rule $vjp $value $rule [&Tensor<B>] [Tensor<B>]);
        tensor_operator!(@one $Op $op $Rule $vjp $value $rule [Tensor<B>] [&Tensor<B>]);
        tensor_operator!(@one $Op $op $Rule $vjp $value $rule [&Tensor<B>] [&Tensor<B>]);
    };
    (@one $Op:ident $op:ident $Rule:ident $vjp:ident $value:ident $rule:ident [$($L:tt)*] [$($R:tt)*]) => {
        impl<B: Backend> std::ops::$Op<$($R)*> for $($L)* {
            type Output = Tensor<B>;
            #[track_caller]
            fn $op(self, rhs: $($R)*) -> Tensor<B> {
                $value(self.into(), rhs.into())
            }
        }

        impl<B: Backend> $Rule<$($R)*> for $($L)* {
            type Output = Tensor<B>;
            type LhsTangent = TensorTangent<B>;
            type RhsTangent = TensorTangent<B>;
            #[track_caller]
            #[allow(refining_impl_trait, reason = "callers see that the pullback borrows nothing, so operators on `&local` work")]
            fn $vjp(self, rhs: $($R)*, needs: [bool; 2]) -> (Tensor<B>, impl FnOnce(TensorTangent<B>) -> Pair<B> + use<B>) {
                $rule(self.into(), rhs.into(), needs)
            }
        }
    };
}

tensor_operator!(Add add AddRule add_vjp add_given add_rule);
tensor_operator!(Sub sub SubRule sub_vjp sub_given sub_rule);
tensor_operator!(Mul mul MulRule mul_vjp mul_given mul_rule);
tensor_operator!(Div div DivRule div_vjp div_given div_rule);

macro_rules! tensor_neg {
    ($($T:ty),*) => {$(
        impl<B: Backend> std::ops::Neg for $T {
            type Output = Tensor<B>;
            #[track_caller]
            fn neg(self) -> Tensor<B> {
                Tensor::neg(&self)
            }
        }

        impl<B: Backend> NegRule for $T {
            type Output = Tensor<B>;
            type Tangent = TensorTangent<B>;
            #[track_caller]
            #[allow(refining_impl_trait, reason = "callers see that the pullback borrows nothing, so operators on `&local` work")]
            fn neg_vjp(self, needs: [bool; 1]) -> (Tensor<B>, impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>,) + use<B>) {
                (Tensor::neg(&self), move |d: TensorTangent<B>| (slot(needs[0], &d, |d| d.neg()),))
            }
        }
    )*};
}

tensor_neg!(Tensor<B>, &Tensor<B>);

#[cfg(test)]
mod tests {
    use super::super::testing::{boxed, check, check_binary, pos, rand, t64};
    use crate::rules::operators::{AddRule, DivRule, MulRule, SubRule};

    #[test]
    fn sum_to_sums_the_broadcast_axes() {
        let x = t64(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        assert_eq!(x.sum_to(&[3]).to_vec_f64(), vec![5.0, 7.0, 9.0]);
        assert_eq!(x.sum_to(&[2, 1]).to_vec_f64(), vec![6.0, 15.0]);
        assert_eq!(x.sum_to(&[]).to_vec_f64(), vec![21.0]);
        let row = t64(&[1.0, 2.0], &[1, 2]);
        assert_eq!(row.sum_to(&[2]).shape(), &[2]);
    }

    #[test]
    #[should_panic(expected = "sum_to: shape [2] does not broadcast to [2, 3]")]
    fn sum_to_rejects_a_shape_that_does_not_broadcast() {
        t64(&[0.0; 6], &[2, 3]).sum_to(&[2]);
    }

    #[test]
    fn add_sub_mul_div_broadcast() {
        for (a, b) in [
            (vec![3, 4], vec![3, 4]),
            (vec![2, 3, 4], vec![4]),
            (vec![3, 1], vec![1, 5]),
        ] {
            check_binary("add", &a, &b, |x, y| {
                AddRule::add_vjp(x.clone(), y.clone(), [true, true])
            });
            check_binary("sub", &a, &b, |x, y| {
                SubRule::sub_vjp(x.clone(), y.clone(), [true, true])
            });
            check_binary("mul", &a, &b, |x, y| {
                MulRule::mul_vjp(x.clone(), y.clone(), [true, true])
            });
            check_binary("maximum", &a, &b, |x, y| {
                x.maximum_vjp_full(y, [true, true])
            });
        }
        // The divisor's tangent, away from zero.
        check("div", &[rand(&[3, 4], 1), pos(&[4], 2)], |xs| {
            boxed(DivRule::div_vjp(xs[0].clone(), xs[1].clone(), [true, true]))
        });
    }

    #[test]
    fn owned_sums_reuse_an_unshared_buffer_and_never_a_shared_one() {
        let at = |t: &crate::Tensor| t.storage() as *const _;
        let (a, b) = (
            t64(&[1.0, 2.0, 3.0], &[1, 3]),
            t64(&[10.0, 20.0, 30.0], &[3]),
        );
        // An unshared left operand given by value holds the sum, with the broadcast shape.
        let a_buf = at(&a);
        let y = a + &b;
        assert_eq!(at(&y), a_buf);
        assert_eq!(
            (y.shape(), y.to_vec_f64()),
            (&[1, 3][..], vec![11.0, 22.0, 33.0])
        );
        // Else an unshared right operand: [3] + [1, 3] has shape [1, 3].
        let c = t64(&[1.0, 1.0, 1.0], &[1, 3]);
        let c_buf = at(&c);
        let z = &b + c;
        assert_eq!(at(&z), c_buf);
        assert_eq!(
            (z.shape(), z.to_vec_f64()),
            (&[1, 3][..], vec![11.0, 21.0, 31.0])
        );
        // A shared buffer is left alone (its other holder keeps its values); so is one that
        // broadcasts to more elements.
        let d = t64(&[1.0, 2.0, 3.0], &[1, 3]);
        let alias = d.clone();
        let w = d + &b;
        assert_ne!(at(&w), at(&alias));
        assert_eq!(alias.to_vec_f64(), vec![1.0, 2.0, 3.0]);
        let e = t64(&[1.0, 2.0, 3.0], &[3]);
        let wide = e + t64(&[0.0, 1.0], &[2, 1]);
        assert_eq!(wide.shape(), &[2, 3]);
        assert_eq!(wide.to_vec_f64(), vec![1.0, 2.0, 3.0, 2.0, 3.0, 4.0]);
        // Equally long operands that broadcast to more elements: [1, 3] + [3, 1] is [3, 3].
        let outer = t64(&[1.0, 2.0, 3.0], &[1, 3]) + t64(&[10.0, 20.0, 30.0], &[3, 1]);
        assert_eq!(outer.shape(), &[3, 3]);
        assert_eq!(
            outer.to_vec_f64(),
            vec![11.0, 12.0, 13.0, 21.0, 22.0, 23.0, 31.0, 32.0, 33.0]
        );
        // The rule of an owned sum: the value in place, the tangents summed to each shape.
        let (y, pb) = AddRule::add_vjp(
            t64(&[1.0, 2.0], &[1, 2]),
            t64(&[3.0, 4.0], &[2]),
            [true, true],
        );
        assert_eq!(y.to_vec_f64(), vec![4.0, 6.0]);
        let (da, db) = pb(crate::TensorTangent::Dense(t64(&[1.0, -1.0], &[1, 2])));
        assert_eq!(da.unwrap().shape(), &[1, 2]);
        assert_eq!(db.unwrap().to_vec_f64(), vec![1.0, -1.0]);
    }

    #[test]
    fn owned_operands_are_reused() {
        let at = |t: &crate::Tensor| t.storage() as *const _;
        let b = t64(&[2.0, 4.0, 8.0], &[3]);
        for (name, f, want) in [
            ("sub", (|x, y| x - y) as fn(_, &_) -> _, [-1.0, -2.0, -5.0]),
            ("mul", |x, y| x * y, [2.0, 8.0, 24.0]),
            ("div", |x, y| x / y, [0.5, 0.5, 0.375]),
        ] {
            let a = t64(&[1.0, 2.0, 3.0], &[1, 3]);
            let a_buf = at(&a);
            let y: crate::Tensor = f(a, &b);
            assert_eq!(at(&y), a_buf, "{name} writes into its unshared operand");
            assert_eq!(y.to_vec_f64(), want, "{name}");
        }
        // The right operand, when it is the one given by value: 2 / [1, 2, 4].
        let c = t64(&[1.0, 2.0, 4.0], &[3]);
        let c_buf = at(&c);
        let q = &t64(&[2.0, 2.0, 2.0], &[3]) / c;
        assert_eq!((at(&q), q.to_vec_f64()), (c_buf, vec![2.0, 1.0, 0.5]));
        // The rules keep what their pullbacks read before the value can overwrite it:
        // y = a·b with both given by value, ā = ȳ·b, b̄ = ȳ·a from the original values.
        let (y, pb) =
            MulRule::mul_vjp(t64(&[1.0, 2.0], &[2]), t64(&[3.0, 5.0], &[2]), [true, true]);
        assert_eq!(y.to_vec_f64(), vec![3.0, 10.0]);
        let (da, db) = pb(crate::TensorTangent::Dense(t64(&[1.0, 10.0], &[2])));
        assert_eq!(da.unwrap().to_vec_f64(), vec![3.0, 50.0]);
        assert_eq!(db.unwrap().to_vec_f64(), vec![1.0, 20.0]);
        // y = a / b: ā = ȳ/b, b̄ = −ȳ·y/b = [−1·(1/2)/2, −1·(3/4)/4].
        let (y, pb) =
            DivRule::div_vjp(t64(&[1.0, 3.0], &[2]), t64(&[2.0, 4.0], &[2]), [true, true]);
        assert_eq!(y.to_vec_f64(), vec![0.5, 0.75]);
        let (da, db) = pb(crate::TensorTangent::Dense(t64(&[1.0, 1.0], &[2])));
        assert_eq!(da.unwrap().to_vec_f64(), vec![0.5, 0.25]);
        assert_eq!(db.unwrap().to_vec_f64(), vec![-0.25, -0.1875]);
    }

    #[test]
    fn exact_small_case() {
        let a = t64(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
        let b = t64(&[10.0, 20.0], &[2]);
        assert_eq!((&a + &b).to_vec_f64(), vec![11.0, 22.0, 13.0, 24.0]);
        let (y, pb) = super::mul_rule((&a).into(), (&b).into(), [true, true]);
        assert_eq!(y.to_vec_f64(), vec![10.0, 40.0, 30.0, 80.0]);
        let (da, db) = pb(crate::TensorTangent::Dense(a.ones_like()));
        assert_eq!(da.unwrap().to_vec_f64(), vec![10.0, 20.0, 10.0, 20.0]);
        assert_eq!(db.unwrap().to_vec_f64(), vec![4.0, 6.0]);
    }

    #[test]
    #[should_panic(expected = "add: shapes [2, 3] and [4] do not broadcast")]
    fn bad_broadcast_names_op_and_shapes() {
        let _ = crate::Tensor::zeros(&[2, 3]) + crate::Tensor::zeros(&[4]);
    }
}
