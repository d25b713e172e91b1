//! Neural-network layers written once from primitives: `dropout` and `layer_norm`.
//!
//! | op | value | derivative |
//! |---|---|---|
//! | `x.dropout(p, seed)` | `x · m / (1 − p)`, `m ~ Bernoulli(1 − p)` drawn on the device from `seed` | `x̄ = ȳ · m / (1 − p)` |
//! | `x.layer_norm(γ, β, ε)` | `x̂ · γ + β`, `x̂ = (x − μ)/√(σ² + ε)` over the last axis | see below |
//!
//! Layer norm, with `r = 1/√(σ² + ε)` and `D` the last axis' size:
//! `β̄ = Σ ȳ`, `γ̄ = Σ ȳ·x̂` (sums over all but the last axis), and with `ĝ = ȳ·γ`:
//! `x̄ = r · (ĝ − mean(ĝ) − x̂ · mean(ĝ·x̂))` (means over the last axis).

use super::forward::{linear, self_adjoint_jvp, sum_terms};
use super::slot;
use crate::NoTangent;
use crate::tensor::{Backend, Tensor, TensorTangent};

impl<B: Backend> Tensor<B> {
    /// The dropout mask `m/(1 − p)` for this tensor's shape, drawn on its device.
    fn dropout_mask(&self, p: f64, seed: u64) -> Self {
        assert!(
            (0.0..1.0).contains(&p),
            "dropout: p = {p} must be in [0, 1)"
        );
        let u = Tensor::rand_uniform_on(self.shape(), 0.0, 1.0, seed, self.dtype(), &self.device());
        u.ge(&self.scalar_like(p)).mul_scalar(1.0 / (1.0 - p))
    }

    /// Zeroes each element with probability `p` and scales the rest by `1/(1 − p)`:
    /// `y = x · m / (1 − p)` with `m ~ Bernoulli(1 − p)` a function of `seed` (same seed, same
    /// mask). Derivative: `x̄ = ȳ · m / (1 − p)`, the same mask.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0; 8], &[8]);
    /// let y = x.dropout(0.5, 7);
    /// assert!(y.to_vec_f64().iter().all(|&v| v == 0.0 || v == 2.0)); // x·m/(1 − p)
    /// assert_eq!(x.dropout(0.5, 7), y); // same seed, same mask
    /// assert_eq!(x.dropout(0.0, 7), x); // p = 0 keeps everything
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.dropout(0.5, 7).sum_all()
    /// }
    /// // x̄ = m/(1 − p), which for x = 1 is the dropped-out x itself.
    /// assert_eq!(gradient(f_vjp(&x)).unwrap(), y);
    /// ```
    ///
    /// # Panics
    /// If `p` is not in `[0, 1)`.
    #[track_caller]
    pub fn dropout(&self, p: f64, seed: u64) -> Self {
        self.mul(&self.dropout_mask(p, seed))
    }

    /// Derivative rule of [`dropout`](Tensor::dropout): `x̄ = ȳ · mask`.
    #[track_caller]
    pub fn dropout_vjp_full(
        &self,
        p: f64,
        seed: u64,
        needs: [bool; 3],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent, NoTangent) + use<B>,
    ) {
        let mask = self.dropout_mask(p, seed);
        (self.mul(&mask), move |d| {
            (slot(needs[0], &d, |d| d.mul(&mask)), NoTangent, NoTangent)
        })
    }

    /// Layer normalisation over the last axis with scale `gamma` and shift `beta` (both of
    /// shape `[D]`): `y = x̂ · γ + β`, `x̂ = (x − μ)/√(σ² + ε)`, with `μ` and `σ²` (population
    /// variance) over the last axis. Derivative, with `r = 1/√(σ² + ε)` and `ĝ = ȳ·γ`:
    /// `x̄ = r · (ĝ − mean(ĝ) − x̂ · mean(ĝ·x̂))` (means over the last axis), `γ̄ = Σ ȳ·x̂` and
    /// `β̄ = Σ ȳ` (sums over all but the last axis).
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![0.0, 0.0, 4.0, 4.0], &[1, 4]); // μ = 2, σ = 2
    /// let gamma = Tensor::from_vec(vec![2.0, 1.0, 1.0, 1.0], &[4]);
    /// let beta = Tensor::from_vec(vec![0.5, 0.0, 0.0, 0.0], &[4]);
    /// let y = x.layer_norm(&gamma, &beta, 0.0);
    /// assert_eq!(y.to_vec_f64(), [-1.5, -1.0, 1.0, 1.0]); // x̂ = [−1, −1, 1, 1]
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor, g: &Tensor, b: &Tensor) -> Tensor {
    ///     let pick = Tensor::from_vec(vec![1.0, 0.0, 0.0, 0.0], &[4]);
    ///     (x.layer_norm(g, b, 0.0) * pick).sum_all() // y[0, 0]
    /// }
    /// let (dx, dg, db) = gradient(f_vjp(&x, &gamma, &beta));
    /// // ĝ = [2, 0, 0, 0]: r·(ĝ − 1/2 − x̂·(−1/2)) with r = 1/2
    /// assert_eq!(dx.unwrap().to_vec_f64(), [0.5, -0.5, 0.0, 0.0]);
    /// assert_eq!(dg.unwrap().to_vec_f64(), [-1.0, 0.0, 0.0, 0.0]);
    /// assert_eq!(db.unwrap().to_vec_f64(), [1.0, 0.0, 0.0, 0.0]);
    /// ```
    ///
    /// # Panics
    /// If `self` has rank 0, or `gamma` or `beta` is not `[D]`.
    #[track_caller]
    pub fn layer_norm(&self, gamma: &Self, beta: &Self, eps: f64) -> Self {
        self.layer_norm_vjp_full(gamma, beta, eps, [false; 4]).0
    }

    /// Derivative rule of [`layer_norm`](Tensor::layer_norm) (see the module table).
    #[track_caller]
    #[allow(clippy::type_complexity)]
    pub fn layer_norm_vjp_full(
        &self,
        gamma: &Self,
        beta: &Self,
        eps: f64,
        needs: [bool; 4],
    ) -> (
        Self,
        impl FnOnce(
            TensorTangent<B>,
        ) -> (
            TensorTangent<B>,
            TensorTangent<B>,
            TensorTangent<B>,
            NoTangent,
        ) + use<B>,
    ) {
        let d = *self.shape().last().expect("layer_norm: needs rank ≥ 1");
        assert!(
            gamma.shape() == [d] && beta.shape() == [d],
            "layer_norm: gamma {:?} and beta {:?} must have shape [{d}] (the last axis of {:?})",
            gamma.shape(),
            beta.shape(),
            self.shape()
        );
        let centred = self.sub(&self.mean(&[-1], true));
        let rstd = centred.square().mean(&[-1], true).add_scalar(eps).rsqrt();
        let xhat = centred.mul(&rstd);
        let y = xhat.mul(gamma).add(beta);
        let (gamma, lead) = (gamma.clone(), self.rank() - 1);
        (y, move |dy: TensorTangent<B>| {
            let rows: Vec<isize> = (0..lead as isize).collect();
            let db = slot(needs[2], &dy, |dy| dy.sum(&rows, false));
            let dg = slot(needs[1], &dy, |dy| dy.mul(&xhat).sum(&rows, false));
            let dx = slot(needs[0], &dy, |dy| {
                let g = dy.mul(&gamma);
                let inner = g
                    .sub(&g.mean(&[-1], true))
                    .sub(&xhat.mul(&g.mul(&xhat).mean(&[-1], true)));
                inner.mul(&rstd)
            });
            (dx, dg, db, NoTangent)
        })
    }
}

/// The tangent slots of [`layer_norm`](Tensor::layer_norm): `x`, `γ`, `β`, `eps` (none).
type NormTangents<'t, B> = (
    Option<&'t TensorTangent<B>>,
    Option<&'t TensorTangent<B>>,
    Option<&'t TensorTangent<B>>,
    Option<NoTangent>,
);

impl<B: Backend> Tensor<B> {
    /// Forward rule of [`layer_norm`](Tensor::layer_norm): with `x̂ = (x − μ)·r`,
    /// `r = 1/√(σ² + ε)` over the last axis, `ẏ = γ·r·(ẋ − mean(ẋ) − x̂·mean(x̂·ẋ)) + x̂·γ̇ + β̇`.
    #[track_caller]
    pub fn layer_norm_jvp_full(
        &self,
        gamma: &Self,
        beta: &Self,
        eps: f64,
        t: NormTangents<'_, B>,
    ) -> (Self, Option<TensorTangent<B>>) {
        let y = self.layer_norm(gamma, beta, eps);
        let centred = self.sub(&self.mean(&[-1], true));
        let rstd = centred.square().mean(&[-1], true).add_scalar(eps).rsqrt();
        let xhat = centred.mul(&rstd);
        let dx = linear(t.0, |d| {
            let inner = d
                .sub(&d.mean(&[-1], true))
                .sub(&xhat.mul(&xhat.mul(d).mean(&[-1], true)));
            inner.mul(&rstd).mul(gamma)
        });
        let dg = linear(t.1, |d| xhat.mul(d));
        let db = linear(t.2, Tensor::clone);
        let ty = sum_terms(y.shape(), [dx, dg, db]);
        (y, ty)
    }
}

self_adjoint_jvp! {
    /// Forward rule of [`dropout`](Tensor::dropout): `ẏ = ẋ·mask`, the same mask (seeded).
    dropout_jvp_full = dropout_vjp_full(p: f64 => NoTangent, seed: u64 => NoTangent);
}

#[cfg(test)]
mod tests {
    use super::super::testing::{boxed, check, check_unary, rand};

    #[test]
    fn nn_rules() {
        check_unary("dropout", rand(&[4, 5], 1), |x| {
            x.dropout_vjp_full(0.3, 7, [true, false, false])
        });
        check(
            "layer_norm",
            &[rand(&[2, 3, 5], 1), rand(&[5], 2), rand(&[5], 3)],
            |xs| {
                let (y, pb) =
                    xs[0].layer_norm_vjp_full(&xs[1], &xs[2], 1e-5, [true, true, true, false]);
                boxed((y, move |d| {
                    let (a, b, c, _) = pb(d);
                    (a, b, c)
                }))
            },
        );
    }

    #[test]
    fn dropout_is_seeded_and_scaled() {
        let x = crate::Tensor::ones(&[1000]);
        let a = x.dropout(0.25, 3);
        assert_eq!(a, x.dropout(0.25, 3));
        let kept = a.to_vec_f32().iter().filter(|&&v| v != 0.0).count();
        assert!((650..850).contains(&kept), "kept {kept}");
        assert!(
            a.to_vec_f32()
                .iter()
                .all(|&v| v == 0.0 || (v - 4.0 / 3.0).abs() < 1e-6)
        );
    }
}
