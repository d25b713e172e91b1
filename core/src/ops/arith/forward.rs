//! Forward rules of the elementwise arithmetic between tensors, with broadcasting: the
//! `<op>_jvp_full` methods and the [`AddJvp`], [`SubJvp`], [`MulJvp`], [`DivJvp`] and
//! [`NegJvp`] operators for every pair of tensors and references.
//!
//! | op | `ẏ` |
//! |---|---|
//! | `a + b` | ȧ + ḃ |
//! | `a - b` | ȧ − ḃ |
//! | `a * b` | ȧ·b + a·ḃ |
//! | `a / b` | ȧ/b − y·ḃ/b |
//! | `a.maximum(b)` | ȧ·(𝟙(a > b) + ½𝟙(a = b)) + ḃ·(𝟙(b > a) + ½𝟙(a = b)) |
//! | `a.minimum(b)` | the same with `<` |
//! | `-a` | −ȧ |
//!
//! Each term is broadcast to the value's shape, so an operand that broadcasts gives a tangent
//! of the result's shape.

use crate::ops::forward::{TangentArg, linear, sum_terms};
use crate::rules::operators::{AddJvp, DivJvp, MulJvp, NegJvp, SubJvp};
use crate::tensor::{Backend, Tensor, TensorTangent};
use adjoint_backend::BinaryOp;

/// `𝟙(x ≻ o) + ½𝟙(x = o)`, the share of `x` in an extremum (`≻` is `>` for max, `<` for min).
fn wins<B: Backend>(x: &Tensor<B>, o: &Tensor<B>, max: bool) -> Tensor<B> {
    let strict = x.binary(o, if max { BinaryOp::Gt } else { BinaryOp::Lt }, "maximum");
    strict.add(&x.binary(o, BinaryOp::Eq, "maximum").mul_scalar(0.5))
}

macro_rules! arith_jvp {
    ($($(#[$doc:meta])* $name:ident $jvp:ident $rule:ident => |$a:ident, $b:ident, $y:ident, $d:ident| ($da:expr, $db:expr);)*) => {
        $(
            #[track_caller]
            #[allow(unused_variables)]
            fn $rule<B: Backend>(
                $a: &Tensor<B>,
                $b: &Tensor<B>,
                t: (Option<impl TangentArg<B>>, Option<impl TangentArg<B>>),
            ) -> (Tensor<B>, Option<TensorTangent<B>>) {
                let $y = $a.$name($b);
                let ta = linear(t.0, |$d| $da);
                let tb = linear(t.1, |$d| $db);
                let ty = sum_terms($y.shape(), [ta, tb]);
                ($y, ty)
            }
        )*
        impl<B: Backend> Tensor<B> {$(
            $(#[$doc])*
            #[track_caller]
            pub fn $jvp(
                &self,
                rhs: &Self,
                t: (Option<&TensorTangent<B>>, Option<&TensorTangent<B>>),
            ) -> (Self, Option<TensorTangent<B>>) {
                $rule(self, rhs, t)
            }
        )*}
    };
}

arith_jvp! {
    /// Forward rule of [`add`](Tensor::add): `ẏ = ȧ + ḃ`.
    add add_jvp_full add_jvp => |a, b, y, d| (d.clone(), d.clone());
    /// Forward rule of [`sub`](Tensor::sub): `ẏ = ȧ − ḃ`.
    sub sub_jvp_full sub_jvp => |a, b, y, d| (d.clone(), d.neg());
    /// Forward rule of [`mul`](Tensor::mul): `ẏ = ȧ·b + a·ḃ`.
    mul mul_jvp_full mul_jvp => |a, b, y, d| (d.mul(b), a.mul(d));
    /// Forward rule of [`div`](Tensor::div): `ẏ = ȧ/b − y·ḃ/b`.
    div div_jvp_full div_jvp => |a, b, y, d| (d.div(b), d.mul(&y).div(b).neg());
    /// Forward rule of [`maximum`](Tensor::maximum): each operand's tangent where it is the
    /// larger, half of each at a tie.
    maximum maximum_jvp_full maximum_jvp => |a, b, y, d| (d.mul(&wins(a, b, true)), d.mul(&wins(b, a, true)));
    /// Forward rule of [`minimum`](Tensor::minimum): each operand's tangent where it is the
    /// smaller, half of each at a tie.
    minimum minimum_jvp_full minimum_jvp => |a, b, y, d| (d.mul(&wins(a, b, false)), d.mul(&wins(b, a, false)));
}

impl<B: Backend> Tensor<B> {
    /// Forward rule of [`neg`](Tensor::neg): `ẏ = −ẋ`.
    #[track_caller]
    pub fn neg_jvp_full(
        &self,
        t: (Option<&TensorTangent<B>>,),
    ) -> (Self, Option<TensorTangent<B>>) {
        (self.neg(), linear(t.0, Tensor::neg))
    }
}

macro_rules! operator_jvp {
    ($Trait:ident $method:ident $rule:ident) => {
        operator_jvp!(@one $Trait $method $rule [Tensor<B>] [TensorTangent<B>] [Tensor<B>] [TensorTangent<B>]);
        operator_jvp!(@one $Trait $method $rule [&'l Tensor<B>] [&'l TensorTangent<B>] [Tensor<B>] [TensorTangent<B>]);
        operator_jvp!(@one $Trait $method $rule [Tensor<B>] [TensorTangent<B>] [&'r Tensor<B>] [&'r TensorTangent<B>]);
        operator_jvp!(@one $Trait $method $rule [&'l Tensor<B>] [&'l TensorTangent<B>] [&'r Tensor<B>] [&'r TensorTangent<B>]);
    };
    (@one $Trait:ident $method:ident $rule:ident [$($L:tt)*] [$($LT:tt)*] [$($R:tt)*] [$($RT:tt)*]) => {
        impl<'l, 'r, B: Backend> $Trait<$($R)*> for $($L)* {
            type Output = Tensor<B>;
            type LhsTangent = $($LT)*;
            type RhsTangent = $($RT)*;
            type OutTangent = TensorTangent<B>;
            #[track_caller]
            fn $method(self, rhs: $($R)*, t: (Option<$($LT)*>, Option<$($RT)*>)) -> (Tensor<B>, Option<TensorTangent<B>>) {
                $rule(&self, &rhs, t)
            }
        }
    };
}

operator_jvp!(AddJvp add_jvp add_jvp);
operator_jvp!(SubJvp sub_jvp sub_jvp);
operator_jvp!(MulJvp mul_jvp mul_jvp);
operator_jvp!(DivJvp div_jvp div_jvp);

macro_rules! neg_jvp {
    ($([$($T:tt)*] [$($TT:tt)*]),*) => {$(
        impl<'a, B: Backend> NegJvp for $($T)* {
            type Output = Tensor<B>;
            type Tangent = $($TT)*;
            type OutTangent = TensorTangent<B>;
            #[track_caller]
            fn neg_jvp(self, t: (Option<$($TT)*>,)) -> (Tensor<B>, Option<TensorTangent<B>>) {
                (Tensor::neg(&self), linear(t.0, Tensor::neg))
            }
        }
    )*};
}

neg_jvp!([Tensor<B>] [TensorTangent<B>], [&'a Tensor<B>] [&'a TensorTangent<B>]);
