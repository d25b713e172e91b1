//! Elementwise functions of one tensor, one table line per function: its value, what its rule
//! saves for the pullback (the input `x` or the output `y`), and the pullback `ȳ ↦ x̄`.
//!
//! | method | `y` | saves | `x̄` |
//! |---|---|---|---|
//! | `exp` | eˣ | y | ȳ·y |
//! | `ln` | ln x | x | ȳ/x |
//! | `sqrt` | √x | y | ȳ/(2y) |
//! | `rsqrt` | 1/√x | y | −ȳ·y³/2 |
//! | `recip` | 1/x | y | −ȳ·y² |
//! | `abs` | \|x\| | x | ȳ·sign(x) (0 at 0, as PyTorch) |
//! | `sin` / `cos` | sin x / cos x | x | ȳ·cos x / −ȳ·sin x |
//! | `tanh` | tanh x | y | ȳ·(1 − y²) |
//! | `sigmoid` | 1/(1+e⁻ˣ) | y | ȳ·y(1 − y) |
//! | `relu` | max(x, 0) | 𝟙(y > 0), one bit each | ȳ·𝟙(y > 0) (0 at 0) |
//! | `gelu` | x/2·(1 + tanh(√(2/π)(x + 0.044715x³))) | x | ȳ·gelu′(x) |
//! | `gelu_erf` | x·Φ(x) = x/2·(1 + erf(x/√2)) | x | ȳ·(Φ(x) + x·φ(x)), φ(x) = e^(−x²/2)/√(2π) |
//! | `silu` | x·σ(x) | x | ȳ·σ(x)(1 + x(1 − σ(x))) |
//! | `leaky_relu(α)` | x > 0 ? x : αx | x | ȳ·(x > 0 ? 1 : α) |
//! | `powf(p)` | xᵖ | x | ȳ·p·xᵖ⁻¹ |
//! | `clamp(lo, hi)` | min(max(x, lo), hi) | x | ȳ·𝟙(lo ≤ x ≤ hi) |
//!
//! `gelu` is the tanh approximation (PyTorch's `approximate="tanh"`), `gelu_erf` the exact
//! form (PyTorch's default). `relu` keeps the signs
//! of its output packed 32 to a `u32` word ([`Backend::relu_with_bits`]) instead of the output
//! itself: a thirty-second of the memory when nothing else keeps the output (a ReLU before a
//! max-pool, whose rule keeps only its argmax), and a pullback that reads that much less.

use super::forward::{self_adjoint, self_adjoint_jvp};
use super::{slot, slot_owned};
use crate::NoTangent;
use crate::ops::arith::binary_given;
use crate::rules::methods::recorded;
use crate::rules::sites::GivenRule;
use crate::tensor::error::or_panic;
use crate::tensor::{Backend, Tensor, TensorTangent};
use adjoint_backend::{BinaryOp, UnaryOp};

/// The pullback of a one-input rule.
pub(crate) type One<B> = (TensorTangent<B>,);

macro_rules! unary_ops {
    ($(
        $(#[$doc:meta])*
        $name:ident $vjp:ident $jvp:ident $op:ident saves $saved:ident $(recorded $marker:ident)? => |$s:ident, $d:ident| $dx:expr;
    )*) => {
        impl<B: Backend> Tensor<B> {$(
            $(#[$doc])*
            ///
            /// # Panics
            /// If the tensor is not of a float dtype.
            #[track_caller]
            pub fn $name(&self) -> Self {
                self.unary(UnaryOp::$op, stringify!($name))
            }

            #[doc = concat!("Derivative rule of [`", stringify!($name), "`](Tensor::", stringify!($name), ") (see the [module table](self)).")]
            #[track_caller]
            pub fn $vjp(&self, needs: [bool; 1]) -> (Self, impl FnOnce(TensorTangent<B>) -> One<B> + use<B>) {
                let y = self.$name();
                let $s = unary_ops!(@saved $saved self y needs);
                (y, move |d: TensorTangent<B>| (slot_owned(needs[0], d, |$d| {
                    let $s = $s.as_ref().expect("saved for the pullback");
                    $dx
                }),))
            }

            #[doc = concat!("Forward rule of [`", stringify!($name), "`](Tensor::", stringify!($name), "): `ẏ = f′(x)·ẋ`, the pullback's expression with the tangent for the seed.")]
            #[track_caller]
            pub fn $jvp(&self, t: (Option<&TensorTangent<B>>,)) -> (Self, Option<TensorTangent<B>>) {
                self_adjoint(t.0, |n| self.$vjp([n]), |r: One<B>| r.0)
            }
        )*}
        $($(
            #[doc = concat!("Derivative rule of [`", stringify!($name), "`](Tensor::", stringify!($name), ") given its value `y`, recorded by the forward pass of a loop that its pullback runs again.")]
            impl<B: Backend> GivenRule<recorded::$marker> for Tensor<B> {
                type Value = Self;
                type Tangent = TensorTangent<B>;
                type Other = NoTangent;
                #[track_caller]
                fn given(self, y: Self, needs: [bool; 2]) -> (Self, impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent)) {
                    let $s = unary_ops!(@saved $saved self y needs);
                    (y, move |d: TensorTangent<B>| (slot_owned(needs[0], d, |$d| {
                        let $s = $s.as_ref().expect("saved for the pullback");
                        $dx
                    }), NoTangent))
                }
            }
        )?)*
    };
    (@saved x $x:ident $y:ident $needs:ident) => { $needs[0].then(|| $x.clone()) };
    (@saved y $x:ident $y:ident $needs:ident) => { $needs[0].then(|| $y.clone()) };
}

unary_ops! {
    /// `eˣ` elementwise; derivative `ȳ·y`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.exp().sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![0.0, 1.0], &[2]);
    /// assert_eq!(x.exp().to_vec_f64(), [1.0, 1f64.exp()]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [1.0, 1f64.exp()]);
    /// ```
    exp exp_vjp_full exp_jvp_full Exp saves y recorded exp => |y, d| d * y;
    /// `ln x` elementwise; derivative `ȳ/x`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.ln().sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![1.0, 4.0], &[2]);
    /// assert_eq!(x.ln().to_vec_f64(), [0.0, 4f64.ln()]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [1.0, 0.25]);
    /// ```
    ln ln_vjp_full ln_jvp_full Ln saves x recorded ln => |x, d| d / x;
    /// `√x` elementwise; derivative `ȳ/(2y)`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.sqrt().sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![4.0, 16.0], &[2]);
    /// assert_eq!(x.sqrt().to_vec_f64(), [2.0, 4.0]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [0.25, 0.125]);
    /// ```
    sqrt sqrt_vjp_full sqrt_jvp_full Sqrt saves y => |y, d| (d / y).mul_scalar(0.5);
    /// `1/√x` elementwise; derivative `−ȳ·y³/2`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.rsqrt().sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![4.0], &[1]);
    /// assert_eq!(x.rsqrt().to_vec_f64(), [0.5]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [-0.0625]);
    /// ```
    rsqrt rsqrt_vjp_full rsqrt_jvp_full Rsqrt saves y => |y, d| (d * &y.mul(y).mul(y)).mul_scalar(-0.5);
    /// `1/x` elementwise; derivative `−ȳ·y²`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.recip().sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![2.0, -4.0], &[2]);
    /// assert_eq!(x.recip().to_vec_f64(), [0.5, -0.25]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [-0.25, -0.0625]);
    /// ```
    recip recip_vjp_full recip_jvp_full Recip saves y => |y, d| (d * &y.mul(y)).neg();
    /// `|x|` elementwise; derivative `ȳ·sign(x)`, 0 at 0.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.abs().sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![-2.0, 0.0, 3.0], &[3]);
    /// assert_eq!(x.abs().to_vec_f64(), [2.0, 0.0, 3.0]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [-1.0, 0.0, 1.0]);
    /// ```
    abs abs_vjp_full abs_jvp_full Abs saves x => |x, d| d * &x.unary(UnaryOp::Sign, "abs");
    /// `sin x` elementwise; derivative `ȳ·cos x`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.sin().sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![0.0, 1.0], &[2]);
    /// assert_eq!(x.sin().to_vec_f64(), [0.0, 1f64.sin()]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [1.0, 1f64.cos()]);
    /// ```
    sin sin_vjp_full sin_jvp_full Sin saves x recorded sin => |x, d| d * &x.cos();
    /// `cos x` elementwise; derivative `−ȳ·sin x`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.cos().sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![0.0, 1.0], &[2]);
    /// assert_eq!(x.cos().to_vec_f64(), [1.0, 1f64.cos()]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [-0.0, -1f64.sin()]);
    /// ```
    cos cos_vjp_full cos_jvp_full Cos saves x recorded cos => |x, d| (d * &x.sin()).neg();
    /// `tanh x` elementwise; derivative `ȳ·(1 − y²)`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.tanh().sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![0.0, 0.5], &[2]);
    /// assert_eq!(x.tanh().to_vec_f64(), [0.0, 0.5f64.tanh()]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [1.0, 1.0 - 0.5f64.tanh() * 0.5f64.tanh()]);
    /// ```
    tanh tanh_vjp_full tanh_jvp_full Tanh saves y recorded tanh => |y, d| binary_given(y.into(), d.into(), BinaryOp::TanhGrad, "tanh");
    /// `σ(x) = 1/(1 + e⁻ˣ)` elementwise; derivative `ȳ·y(1 − y)`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.sigmoid().sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![0.0], &[1]);
    /// assert_eq!(x.sigmoid().to_vec_f64(), [0.5]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [0.25]);
    /// ```
    sigmoid sigmoid_vjp_full sigmoid_jvp_full Sigmoid saves y => |y, d| binary_given(y.into(), d.into(), BinaryOp::SigmoidGrad, "sigmoid");
    /// GELU, tanh form: `x/2·(1 + tanh(√(2/π)(x + 0.044715x³)))`; derivative `ȳ·gelu′(x)`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.gelu().sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![0.0], &[1]);
    /// assert_eq!(x.gelu().to_vec_f64(), [0.0]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [0.5]);
    /// ```
    gelu gelu_vjp_full gelu_jvp_full Gelu saves x => |x, d| binary_given(x.into(), d.into(), BinaryOp::GeluGrad, "gelu");
    /// GELU, exact form: `x·Φ(x) = x/2·(1 + erf(x/√2))`; derivative `ȳ·(Φ(x) + x·φ(x))` with
    /// `φ(x) = e^(−x²/2)/√(2π)`.
    gelu_erf gelu_erf_vjp_full gelu_erf_jvp_full GeluErf saves x => |x, d| binary_given(x.into(), d.into(), BinaryOp::GeluErfGrad, "gelu_erf");
    /// SiLU (swish) `x·σ(x)`; derivative `ȳ·σ(x)(1 + x(1 − σ(x)))`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.silu().sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![0.0], &[1]);
    /// assert_eq!(x.silu().to_vec_f64(), [0.0]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [0.5]);
    /// ```
    silu silu_vjp_full silu_jvp_full Silu saves x => |x, d| binary_given(x.into(), d.into(), BinaryOp::SiluGrad, "silu");
}

/// The pullback of a rule with one tensor input and one constant parameter.
pub(crate) type OneAndParam<B> = (TensorTangent<B>, NoTangent);

impl<B: Backend> Tensor<B> {
    /// `max(x, 0)` elementwise; derivative `ȳ·𝟙(x > 0)` (0 at 0).
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.relu().sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![-1.0, 0.0, 2.0], &[3]);
    /// assert_eq!(x.relu().to_vec_f64(), [0.0, 0.0, 2.0]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [0.0, 0.0, 1.0]);
    /// ```
    ///
    /// # Panics
    /// If the tensor is not of a float dtype.
    #[track_caller]
    pub fn relu(&self) -> Self {
        self.unary(UnaryOp::Relu, "relu")
    }

    /// Derivative rule of [`relu`](Tensor::relu): keeps `𝟙(y > 0)` as bits; the pullback is
    /// `ȳ·𝟙(y > 0)` in a new buffer (one pass over `ȳ`).
    #[track_caller]
    pub fn relu_vjp_full(
        &self,
        needs: [bool; 1],
    ) -> (Self, impl FnOnce(TensorTangent<B>) -> One<B> + use<B>) {
        let (y, bits) = if needs[0] {
            or_panic(self.check_float("relu"));
            let (y, bits) = B::relu_with_bits(self.storage());
            (Tensor::from_storage(y, self.shape()), Some(bits))
        } else {
            (self.relu(), None)
        };
        (y, move |d| {
            (slot(needs[0], &d, |d| {
                let bits = bits.as_ref().expect("saved for the pullback");
                Tensor::from_storage(B::mask_by_bits(d.storage(), bits), d.shape())
            }),)
        })
    }

    /// `x > 0 ? x : α·x` elementwise; derivative `ȳ·(x > 0 ? 1 : α)`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.leaky_relu(0.25).sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![-1.0, 2.0], &[2]);
    /// assert_eq!(x.leaky_relu(0.25).to_vec_f64(), [-0.25, 2.0]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [0.25, 1.0]);
    /// ```
    ///
    /// # Panics
    /// If the tensor is not of a float dtype.
    #[track_caller]
    pub fn leaky_relu(&self, alpha: f64) -> Self {
        self.unary(UnaryOp::LeakyRelu(alpha), "leaky_relu")
    }

    /// Derivative rule of [`leaky_relu`](Tensor::leaky_relu); `α` is a constant.
    #[track_caller]
    pub fn leaky_relu_vjp_full(
        &self,
        alpha: f64,
        needs: [bool; 2],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> OneAndParam<B> + use<B>,
    ) {
        let x = needs[0].then(|| self.clone());
        (self.leaky_relu(alpha), move |d| {
            (
                slot_owned(needs[0], d, |d| {
                    let x = x.expect("saved");
                    binary_given(
                        (&x).into(),
                        d.into(),
                        BinaryOp::LeakyReluGrad(alpha),
                        "leaky_relu",
                    )
                }),
                NoTangent,
            )
        })
    }

    /// `xᵖ` elementwise for a constant `p`; derivative `ȳ·p·xᵖ⁻¹`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.powf(3.0).sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![2.0, -1.0], &[2]);
    /// assert_eq!(x.powf(3.0).to_vec_f64(), [8.0, -1.0]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [12.0, 3.0]);
    /// ```
    ///
    /// # Panics
    /// If the tensor is not of a float dtype.
    #[track_caller]
    pub fn powf(&self, p: f64) -> Self {
        self.unary(UnaryOp::Powf(p), "powf")
    }

    /// Derivative rule of [`powf`](Tensor::powf); `p` is a constant.
    #[track_caller]
    pub fn powf_vjp_full(
        &self,
        p: f64,
        needs: [bool; 2],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> OneAndParam<B> + use<B>,
    ) {
        let x = needs[0].then(|| self.clone());
        (self.powf(p), move |d| {
            let dx = slot_owned(needs[0], d, |d| {
                (d * &x.expect("saved").powf(p - 1.0)).mul_scalar(p)
            });
            (dx, NoTangent)
        })
    }

    /// `x²` elementwise; derivative `2x·ȳ`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.square().sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![3.0, -0.5], &[2]);
    /// assert_eq!(x.square().to_vec_f64(), [9.0, 0.25]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [6.0, -1.0]);
    /// ```
    ///
    /// # Panics
    /// If the tensor is not of a float dtype.
    #[track_caller]
    pub fn square(&self) -> Self {
        self.mul(self)
    }

    /// Derivative rule of [`square`](Tensor::square).
    #[track_caller]
    pub fn square_vjp_full(
        &self,
        needs: [bool; 1],
    ) -> (Self, impl FnOnce(TensorTangent<B>) -> One<B> + use<B>) {
        let x = self.clone();
        (self.square(), move |d| {
            (slot_owned(needs[0], d, |d| (d * &x).mul_scalar(2.0)),)
        })
    }

    /// `min(max(x, lo), hi)` elementwise; derivative `ȳ·𝟙(lo ≤ x ≤ hi)`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.clamp(-1.0, 1.0).sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![-2.0, 0.5, 3.0], &[3]);
    /// assert_eq!(x.clamp(-1.0, 1.0).to_vec_f64(), [-1.0, 0.5, 1.0]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [0.0, 1.0, 0.0]);
    /// ```
    ///
    /// # Panics
    /// If `lo > hi`, or if the tensor is not of a float dtype.
    #[track_caller]
    pub fn clamp(&self, lo: f64, hi: f64) -> Self {
        assert!(lo <= hi, "clamp: lo {lo} is above hi {hi}");
        self.unary(UnaryOp::Clamp(lo, hi), "clamp")
    }

    /// Derivative rule of [`clamp`](Tensor::clamp); the bounds are constants.
    #[track_caller]
    pub fn clamp_vjp_full(
        &self,
        lo: f64,
        hi: f64,
        needs: [bool; 3],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent, NoTangent) + use<B>,
    ) {
        let x = needs[0].then(|| self.clone());
        (self.clamp(lo, hi), move |d| {
            let dx = slot_owned(needs[0], d, |d| {
                let x = x.expect("saved");
                binary_given((&x).into(), d.into(), BinaryOp::ClampGrad(lo, hi), "clamp")
            });
            (dx, NoTangent, NoTangent)
        })
    }
}

self_adjoint_jvp! {
    /// Forward rule of [`relu`](Tensor::relu): `ẏ = ẋ·𝟙(x > 0)`.
    relu_jvp_full = relu_vjp_full();
    /// Forward rule of [`leaky_relu`](Tensor::leaky_relu): `ẏ = ẋ·(x > 0 ? 1 : α)`.
    leaky_relu_jvp_full = leaky_relu_vjp_full(alpha: f64 => NoTangent);
    /// Forward rule of [`powf`](Tensor::powf): `ẏ = p·xᵖ⁻¹·ẋ`.
    powf_jvp_full = powf_vjp_full(p: f64 => NoTangent);
    /// Forward rule of [`square`](Tensor::square): `ẏ = 2x·ẋ`.
    square_jvp_full = square_vjp_full();
    /// Forward rule of [`clamp`](Tensor::clamp): `ẏ = ẋ·𝟙(lo ≤ x ≤ hi)`.
    clamp_jvp_full = clamp_vjp_full(lo: f64 => NoTangent, hi: f64 => NoTangent);
}

#[cfg(test)]
mod tests {
    use super::super::testing::{check_unary, pos, rand};

    #[test]
    fn elementwise_pullbacks_write_into_the_adjoint() {
        use crate::{Tensor, TensorTangent};
        let at = |t: &Tensor| t.storage() as *const _;
        let x = Tensor::from_vec(vec![-1.0, 0.5, 2.0], &[3]);
        // leaky_relu(½): x̄ = ȳ·(x > 0 ? 1 : ½) = [½, 10, 100], over ȳ's own buffer.
        let (_, pb) = x.leaky_relu_vjp_full(0.5, [true, false]);
        let d = Tensor::from_vec(vec![1.0, 10.0, 100.0], &[3]);
        let d_buf = at(&d);
        let dx = pb(TensorTangent::Dense(d)).0.unwrap();
        assert_eq!((at(&dx), dx.to_vec_f64()), (d_buf, vec![0.5, 10.0, 100.0]));
        // An adjoint shared with another holder is left alone: exp's x̄ = ȳ·eˣ in a new buffer.
        let (y, pb) = x.exp_vjp_full([true]);
        let d = Tensor::from_vec(vec![2.0, 2.0, 2.0], &[3]);
        let alias = d.clone();
        let dx = pb(TensorTangent::Dense(d)).0.unwrap();
        assert_ne!(at(&dx), at(&alias));
        assert_eq!(alias.to_vec_f64(), vec![2.0; 3]);
        assert_eq!(dx.to_vec_f64(), (&y * 2.0).to_vec_f64());
    }

    #[test]
    fn unary_rules() {
        let x = || rand(&[3, 4], 3);
        check_unary("exp", x(), |x| x.exp_vjp_full([true]));
        check_unary("ln", pos(&[3, 4], 3), |x| x.ln_vjp_full([true]));
        check_unary("sqrt", pos(&[3, 4], 3), |x| x.sqrt_vjp_full([true]));
        check_unary("rsqrt", pos(&[3, 4], 3), |x| x.rsqrt_vjp_full([true]));
        check_unary("recip", pos(&[3, 4], 3), |x| x.recip_vjp_full([true]));
        check_unary("abs", x(), |x| x.abs_vjp_full([true]));
        check_unary("sin", x(), |x| x.sin_vjp_full([true]));
        check_unary("cos", x(), |x| x.cos_vjp_full([true]));
        check_unary("tanh", x(), |x| x.tanh_vjp_full([true]));
        check_unary("sigmoid", x(), |x| x.sigmoid_vjp_full([true]));
        check_unary("relu", x(), |x| x.relu_vjp_full([true]));
        check_unary("gelu", x(), |x| x.gelu_vjp_full([true]));
        check_unary("gelu_erf", x().mul_scalar(3.0), |x| {
            x.gelu_erf_vjp_full([true])
        });
        check_unary("silu", x(), |x| x.silu_vjp_full([true]));
        check_unary("leaky_relu", x(), |x| {
            x.leaky_relu_vjp_full(0.1, [true, false])
        });
        check_unary("powf", pos(&[3, 4], 3), |x| {
            x.powf_vjp_full(2.5, [true, false])
        });
        check_unary("square", x(), |x| x.square_vjp_full([true]));
        check_unary("clamp", x(), |x| {
            x.clamp_vjp_full(-0.5, 0.5, [true, false, false])
        });
    }

    /// By hand: `gelu_erf(x) = x·Φ(x)` and its derivative `Φ(x) + x·φ(x)` at 0 and ±1, with
    /// `Φ(1) = 0.841344746068542949`, `Φ(−1) = 1 − Φ(1)` and `φ(1) = e^(−½)/√(2π) =
    /// 0.241970724519143349`.
    #[test]
    fn gelu_erf_by_hand() {
        let (cdf1, pdf1) = (0.841_344_746_068_542_9, 0.241_970_724_519_143_35);
        let x = crate::Tensor::from_vec(vec![-1.0_f64, 0.0, 1.0], &[3]);
        let (y, pb) = x.gelu_erf_vjp_full([true]);
        let d = crate::TensorTangent::Dense(x.ones_like());
        let dx = pb(d).0.unwrap().to_vec_f64();
        let want_y = [-(1.0 - cdf1), 0.0, cdf1];
        let want_dx = [(1.0 - cdf1) - pdf1, 0.5, cdf1 + pdf1];
        for (got, want) in y
            .to_vec_f64()
            .iter()
            .chain(&dx)
            .zip(want_y.iter().chain(&want_dx))
        {
            assert!((got - want).abs() < 1e-15, "{got} against {want}");
        }
    }

    #[test]
    fn inactive_input_gets_symbolic_zero() {
        let x = rand(&[2], 1);
        let (_, pb) = x.exp_vjp_full([false]);
        assert!(pb(crate::TensorTangent::Dense(x.ones_like())).0.is_zero());
    }
}
