//! Softmax, log-softmax and the mean squared error, written once from primitives, and the
//! free-function forms of the losses.
//!
//! | op | value | derivative |
//! |---|---|---|
//! | `softmax(a)` | `yᵢ = e^(xᵢ − m) / Σⱼ e^(xⱼ − m)`, `m = max x` | `x̄ = y ⊙ (ȳ − Σ ȳ⊙y)` |
//! | `log_softmax(a)` | `yᵢ = xᵢ − m − ln Σⱼ e^(xⱼ − m)` | `x̄ = ȳ − softmax(x) · Σ ȳ` |
//! | `mse(p, t)` | `mean((p − t)²)` | `p̄ = 2ȳ(p − t)/n`, `t̄ = −p̄` |
//!
//! Sums run over the softmax axis; subtracting the maximum keeps `exp` from overflowing.
//! `mse` returns a rank-0 tensor. The labelled losses (`nll`, `cross_entropy`) are in
//! [`cross_entropy`](super::cross_entropy); their free-function forms are here.

use super::forward::{linear, self_adjoint_jvp, sum_terms};
use super::slot;
use crate::NoTangent;
use crate::tensor::error::{TensorError, ensure, or_panic};
use crate::tensor::{Backend, Tensor, TensorTangent};

impl<B: Backend> Tensor<B> {
    /// The softmax along `axis`: `yᵢ = e^(xᵢ) / Σⱼ e^(xⱼ)` (computed stably, from `x − max x`).
    /// Derivative: `x̄ = y ⊙ (ȳ − Σⱼ ȳⱼ yⱼ)` along `axis`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![0.0, 0.0], &[1, 2]);
    /// assert_eq!(x.softmax(1).to_vec_f64(), [0.5, 0.5]);
    ///
    /// #[differentiable]
    /// fn first(x: &Tensor) -> Tensor {
    ///     (x.softmax(1) * Tensor::from_vec(vec![1.0, 0.0], &[1, 2])).sum_all()
    /// }
    /// // y ⊙ (w − y·w) with w = [1, 0]
    /// assert_eq!(gradient(first_vjp(&x)).unwrap().to_vec_f64(), [0.25, -0.25]);
    /// ```
    ///
    /// # Panics
    /// On an axis out of range, or a tensor not of a float dtype.
    #[track_caller]
    pub fn softmax(&self, axis: isize) -> Self {
        self.softmax_along("softmax", axis, false)
    }

    /// The softmax, or its log, along `axis`: the backend's fused form if it has one
    /// ([`Backend::softmax`]), else composed from the maximum `m`: `e = e^(x − m)`, then
    /// `e / Σe` or `(x − m) − ln Σe`.
    fn softmax_along(&self, op: &'static str, axis: isize, log: bool) -> Self {
        let a = self.axis(op, axis);
        if let Some(y) = B::softmax(self.storage(), self.shape(), a, log) {
            return Tensor::from_storage(y, self.shape_owned());
        }
        let a = a as isize;
        let shifted = self.sub(&self.max(&[a], true));
        let e = shifted.exp();
        if log {
            shifted.sub(&e.sum(&[a], true).ln())
        } else {
            e.div(&e.sum(&[a], true))
        }
    }

    /// Derivative rule of [`softmax`](Tensor::softmax).
    #[track_caller]
    pub fn softmax_vjp_full(
        &self,
        axis: isize,
        needs: [bool; 2],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent) + use<B>,
    ) {
        self.output_rule(self.softmax(axis), axis, "softmax", needs, |y, d, a| {
            y.mul(&d.sub(&d.mul(y).sum(&[a], true)))
        })
    }

    /// The log-softmax along `axis`: `yᵢ = xᵢ − ln Σⱼ e^(xⱼ)` (computed stably, from
    /// `x − max x`). Derivative: `x̄ = ȳ − softmax(x) · Σⱼ ȳⱼ` along `axis`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![0.0, 0.0], &[1, 2]);
    /// assert_eq!(x.log_softmax(1).to_vec_f64(), [-(2f64.ln()), -(2f64.ln())]);
    ///
    /// #[differentiable]
    /// fn first(x: &Tensor) -> Tensor {
    ///     (x.log_softmax(1) * Tensor::from_vec(vec![1.0, 0.0], &[1, 2])).sum_all()
    /// }
    /// assert_eq!(gradient(first_vjp(&x)).unwrap().to_vec_f64(), [0.5, -0.5]);
    /// ```
    ///
    /// # Panics
    /// On an axis out of range, or a tensor not of a float dtype.
    #[track_caller]
    pub fn log_softmax(&self, axis: isize) -> Self {
        self.softmax_along("log_softmax", axis, true)
    }

    /// Derivative rule of [`log_softmax`](Tensor::log_softmax).
    #[track_caller]
    pub fn log_softmax_vjp_full(
        &self,
        axis: isize,
        needs: [bool; 2],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent) + use<B>,
    ) {
        self.output_rule(
            self.log_softmax(axis),
            axis,
            "log_softmax",
            needs,
            |y, d, a| d.sub(&y.exp().mul(&d.sum(&[a], true))),
        )
    }

    /// The rule of an op along `axis` whose derivative needs only its output `y`:
    /// `x̄ = rule(y, ȳ, axis)`.
    #[track_caller]
    fn output_rule(
        &self,
        y: Self,
        axis: isize,
        op: &'static str,
        needs: [bool; 2],
        rule: fn(&Self, &Self, isize) -> Self,
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent) + use<B>,
    ) {
        let a = self.axis(op, axis) as isize;
        let saved = y.clone();
        (y, move |d| {
            (slot(needs[0], &d, |d| rule(&saved, d, a)), NoTangent)
        })
    }

    /// The mean squared error `mean((p − t)²)` of two tensors of equal shape, `n` elements.
    /// Derivative: `p̄ = 2ȳ(p − t)/n`, `t̄ = −p̄`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let p = Tensor::from_vec(vec![1.0, 3.0], &[2]);
    /// let t = Tensor::from_vec(vec![0.0, 1.0], &[2]);
    /// assert_eq!(p.mse(&t).to_scalar(), 2.5); // (1 + 4) / 2
    ///
    /// #[differentiable]
    /// fn loss(p: &Tensor, t: &Tensor) -> Tensor {
    ///     p.mse(t)
    /// }
    /// let (dp, dt) = gradient(loss_vjp(&p, &t));
    /// assert_eq!(dp.unwrap().to_vec_f64(), [1.0, 2.0]);
    /// assert_eq!(dt.unwrap().to_vec_f64(), [-1.0, -2.0]);
    /// ```
    ///
    /// # Panics
    /// If the shapes differ.
    #[track_caller]
    pub fn mse(&self, target: &Self) -> Self {
        or_panic(self.try_mse(target))
    }

    /// [`mse`](Tensor::mse) returning an error on a shape mismatch.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let e = Tensor::zeros(&[2]).try_mse(&Tensor::zeros(&[3])).unwrap_err();
    /// assert_eq!(e.to_string(), "mse: prediction [2] and target [3] differ in shape");
    /// ```
    pub fn try_mse(&self, target: &Self) -> Result<Self, TensorError> {
        ensure(self.shape() == target.shape(), "mse", || {
            format!(
                "prediction {:?} and target {:?} differ in shape",
                self.shape(),
                target.shape()
            )
        })?;
        Ok(self.try_sub(target)?.square().mean_all())
    }

    /// Derivative rule of [`mse`](Tensor::mse): `p̄ = 2ȳ(p − t)/n`, `t̄ = −p̄`.
    #[track_caller]
    pub fn mse_vjp_full(
        &self,
        target: &Self,
        needs: [bool; 2],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, TensorTangent<B>) + use<B>,
    ) {
        let y = self.mse(target);
        let diff = self.sub(target);
        let scale = 2.0 / self.len().max(1) as f64;
        (y, move |d| {
            let dp = slot(needs[0] || needs[1], &d, |d| diff.mul(d).mul_scalar(scale));
            let dt = if needs[1] {
                dp.clone().map(|t| t.neg())
            } else {
                TensorTangent::Zero
            };
            (if needs[0] { dp } else { TensorTangent::Zero }, dt)
        })
    }
}

self_adjoint_jvp! {
    /// Forward rule of [`softmax`](Tensor::softmax): `ẏ = y ⊙ (ẋ − Σₐ y ⊙ ẋ)`; its Jacobian
    /// `diag(y) − y·yᵀ` is symmetric, so this is the pullback's expression on `ẋ`.
    softmax_jvp_full = softmax_vjp_full(axis: isize => NoTangent);
}

impl<B: Backend> Tensor<B> {
    /// Forward rule of [`log_softmax`](Tensor::log_softmax): `ẏ = ẋ − Σₐ softmax(x) ⊙ ẋ`.
    #[track_caller]
    pub fn log_softmax_jvp_full(
        &self,
        axis: isize,
        t: (Option<&TensorTangent<B>>, Option<NoTangent>),
    ) -> (Self, Option<TensorTangent<B>>) {
        let y = self.log_softmax(axis);
        let a = self.axis("log_softmax", axis) as isize;
        let ty = linear(t.0, |d| d.sub(&y.exp().mul(d).sum(&[a], true)));
        (y, ty)
    }

    /// Forward rule of [`mse`](Tensor::mse): `ẏ = 2/n·Σ (p − t)·(ṗ − ṫ)`.
    #[track_caller]
    pub fn mse_jvp_full(
        &self,
        target: &Self,
        t: (Option<&TensorTangent<B>>, Option<&TensorTangent<B>>),
    ) -> (Self, Option<TensorTangent<B>>) {
        let y = self.mse(target);
        let diff = self.sub(target);
        let scale = 2.0 / self.len().max(1) as f64;
        let term = |d: &Tensor<B>| diff.mul(d).sum_all().mul_scalar(scale);
        let dp = linear(t.0, term);
        let dt = linear(t.1, |d| term(d).neg());
        let ty = sum_terms(y.shape(), [dp, dt]);
        (y, ty)
    }
}

/// Free-function forms `cross_entropy(&logits, &labels)`, `nll(..)`, `mse(..)`, with the
/// companions `#[differentiable]` code calls (`f_vjp` and the hidden `f_vjp::__full`).
macro_rules! free_losses {
    ($($(#[$doc:meta])* $name:ident $vjp:ident ($a:ident, $b:ident) -> $slots:ty;)*) => {$(
        $(#[$doc])*
        #[track_caller]
        pub fn $name<B: Backend>($a: &Tensor<B>, $b: &Tensor<B>) -> Tensor<B> {
            $a.$name($b)
        }

        #[doc = concat!("The value and pullback of [`", stringify!($name), "`], differentiating the first argument.")]
        #[track_caller]
        pub fn $vjp<B: Backend>($a: &Tensor<B>, $b: &Tensor<B>) -> (Tensor<B>, impl FnOnce(TensorTangent<B>) -> TensorTangent<B> + use<B>) {
            let (y, pb) = paste_full!($name, $a, $b, [true, false]);
            (y, move |d| pb(d).0)
        }

        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        pub struct $vjp {}

        impl $vjp {
            #[doc(hidden)]
            #[track_caller]
            pub fn __full<B: Backend>($a: &Tensor<B>, $b: &Tensor<B>, needs: [bool; 2]) -> (Tensor<B>, impl FnOnce(TensorTangent<B>) -> $slots + use<B>) {
                paste_full!($name, $a, $b, needs)
            }

            #[doc(hidden)]
            #[track_caller]
            pub fn __jvp<B: Backend>($a: &Tensor<B>, $b: &Tensor<B>, t: (Option<&TensorTangent<B>>, Option<&TensorTangent<B>>)) -> (Tensor<B>, Option<TensorTangent<B>>) {
                paste_jvp!($name, $a, $b, t)
            }
        }
    )*};
}

macro_rules! paste_full {
    (cross_entropy, $a:ident, $b:ident, $n:expr) => {
        $a.cross_entropy_vjp_full($b, $n)
    };
    (nll, $a:ident, $b:ident, $n:expr) => {
        $a.nll_vjp_full($b, $n)
    };
    (mse, $a:ident, $b:ident, $n:expr) => {
        $a.mse_vjp_full($b, $n)
    };
}

macro_rules! paste_jvp {
    (cross_entropy, $a:ident, $b:ident, $t:expr) => {
        $a.cross_entropy_jvp_full($b, $t)
    };
    (nll, $a:ident, $b:ident, $t:expr) => {
        $a.nll_jvp_full($b, $t)
    };
    (mse, $a:ident, $b:ident, $t:expr) => {
        $a.mse_jvp_full($b, $t)
    };
}

free_losses! {
    /// `logits.cross_entropy(labels)`: mean softmax cross-entropy (see the module table).
    cross_entropy cross_entropy_vjp(logits, labels) -> (TensorTangent<B>, TensorTangent<B>);
    /// `logp.nll(labels)`: mean negative log-likelihood (see the module table).
    nll nll_vjp(logp, labels) -> (TensorTangent<B>, TensorTangent<B>);
    /// `prediction.mse(target)`: mean squared error (see the module table).
    mse mse_vjp(prediction, target) -> (TensorTangent<B>, TensorTangent<B>);
}

#[cfg(test)]
mod tests {
    use super::super::testing::{boxed, check, check_unary, rand};
    use crate::Tensor;

    #[test]
    fn loss_rules() {
        check_unary("softmax", rand(&[3, 4], 4), |x| {
            x.softmax_vjp_full(1, [true, false])
        });
        check_unary("softmax axis 0", rand(&[3, 4], 4), |x| {
            x.softmax_vjp_full(0, [true, false])
        });
        check_unary("log_softmax", rand(&[3, 4], 4), |x| {
            x.log_softmax_vjp_full(-1, [true, false])
        });
        check("mse", &[rand(&[3, 4], 1), rand(&[3, 4], 2)], |xs| {
            boxed(xs[0].mse_vjp_full(&xs[1], [true, true]))
        });
    }

    #[test]
    fn stable_and_exact() {
        let z = Tensor::from_vec(vec![1000.0_f64, 1000.0, 0.0, 0.0], &[2, 2]);
        assert_eq!(z.softmax(1).to_vec_f64(), vec![0.5, 0.5, 0.5, 0.5]);
    }
}
