//! Softmax, log-softmax and the losses, written once from primitives.
//!
//! | op | value | derivative |
//! |---|---|---|
//! | `softmax(a)` | `yᵢ = e^(xᵢ − m) / Σⱼ e^(xⱼ − m)`, `m = max x` | `x̄ = y ⊙ (ȳ − Σ ȳ⊙y)` |
//! | `log_softmax(a)` | `yᵢ = xᵢ − m − ln Σⱼ e^(xⱼ − m)` | `x̄ = ȳ − softmax(x) · Σ ȳ` |
//! | `nll(logp, labels)` | `−(1/N) Σᵢ logp[i, labelᵢ]` | `logp̄ = −ȳ · onehot / N` |
//! | `cross_entropy(z, labels)` | `nll(log_softmax(z, 1), labels)` | `z̄ = ȳ · (softmax(z) − onehot) / N` |
//! | `mse(p, t)` | `mean((p − t)²)` | `p̄ = 2ȳ(p − t)/n`, `t̄ = −p̄` |
//!
//! Sums run over the softmax axis; subtracting the maximum keeps `exp` from overflowing.
//! Labels are a `U32` tensor of shape `[N]` with values below the class count `C` of the
//! `[N, C]` scores. The losses return rank-0 tensors (means over the batch).

use super::slot;
use crate::NoTangent;
use crate::tensor::error::{TensorError, ensure, or_panic};
use crate::tensor::{Backend, DType, Tensor, TensorTangent};

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

    /// Checks `[N, C]` float scores against `[N]` `U32` labels below `C`; returns `[N, C]`.
    fn check_labels(&self, labels: &Self, op: &'static str) -> Result<[usize; 2], TensorError> {
        self.check_float(op)?;
        let (s, l) = (self.shape(), labels.shape());
        ensure(s.len() == 2 && l.len() == 1 && s[0] == l[0], op, || {
            format!("expects scores [N, C] and labels [N], got {s:?} and {l:?}")
        })?;
        ensure(labels.dtype() == DType::U32, op, || {
            format!("labels must be U32 ids, got {:?}", labels.dtype())
        })?;
        if let Some(max) = B::max_id(labels.storage()) {
            ensure((max as usize) < s[1], op, || {
                format!(
                    "label {max} is out of range for {} classes (scores {s:?})",
                    s[1]
                )
            })?;
        }
        Ok([s[0], s[1]])
    }

    /// The batch-mean negative log-likelihood of the log-probabilities `log_probs(self)` after
    /// [checking](Tensor::check_labels) the labels: `(y, logp, onehot, 1/N)`.
    fn labelled_nll(
        &self,
        labels: &Self,
        op: &'static str,
        log_probs: impl FnOnce(&Self) -> Self,
    ) -> Result<(Self, Self, Self, f64), TensorError> {
        let shape = self.check_labels(labels, op)?;
        Ok(self.checked_nll(labels, shape, log_probs))
    }

    /// [`labelled_nll`](Tensor::labelled_nll) of labels already checked against the scores'
    /// `shape`.
    fn checked_nll(
        &self,
        labels: &Self,
        [n, c]: [usize; 2],
        log_probs: impl FnOnce(&Self) -> Self,
    ) -> (Self, Self, Self, f64) {
        let hot = Tensor::from_storage(B::one_hot(labels.storage(), c, self.dtype()), [n, c]);
        let scale = 1.0 / n.max(1) as f64;
        let logp = log_probs(self);
        let y = logp.mul(&hot).sum_all().mul_scalar(-scale);
        (y, logp, hot, scale)
    }

    /// The negative log-likelihood `−(1/N) Σᵢ logp[i, labelᵢ]` of log-probabilities `[N, C]`
    /// against `U32` labels `[N]`. Derivative: `logp̄ = −ȳ·onehot(labels)/N`; the labels get
    /// none.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let logp = Tensor::from_vec(vec![-1.0, -2.0, -3.0, -4.0], &[2, 2]);
    /// let labels = Tensor::from_vec(vec![0_u32, 1], &[2]);
    /// assert_eq!(logp.nll(&labels).to_scalar(), 2.5); // (1 + 4) / 2
    ///
    /// #[differentiable(wrt(logp))]
    /// fn loss(logp: &Tensor, labels: &Tensor) -> Tensor {
    ///     logp.nll(labels)
    /// }
    /// let d = gradient(loss_vjp(&logp, &labels)).unwrap();
    /// assert_eq!(d.to_vec_f64(), [-0.5, 0.0, 0.0, -0.5]);
    /// ```
    ///
    /// # Panics
    /// On bad shapes, non-`U32` labels or a label `≥ C`.
    #[track_caller]
    pub fn nll(&self, labels: &Self) -> Self {
        or_panic(self.try_nll(labels))
    }

    /// [`nll`](Tensor::nll) returning an error on bad input.
    pub fn try_nll(&self, labels: &Self) -> Result<Self, TensorError> {
        Ok(self.labelled_nll(labels, "nll", Self::clone)?.0)
    }

    /// Derivative rule of [`nll`](Tensor::nll); the labels' tangent is the symbolic zero.
    #[track_caller]
    pub fn nll_vjp_full(
        &self,
        labels: &Self,
        needs: [bool; 2],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, TensorTangent<B>) + use<B>,
    ) {
        let (y, _, hot, scale) = or_panic(self.labelled_nll(labels, "nll", Self::clone));
        (y, move |d| {
            (
                slot(needs[0], &d, |d| hot.mul(d).mul_scalar(-scale)),
                TensorTangent::Zero,
            )
        })
    }

    /// The mean softmax cross-entropy of scores `[N, C]` against `U32` labels `[N]`:
    /// `nll(log_softmax(z, 1), labels)`. Derivative: `z̄ = ȳ(softmax(z) − onehot(labels))/N`;
    /// the labels get none.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let z = Tensor::from_vec(vec![0.0, 0.0], &[1, 2]);
    /// let labels = Tensor::from_vec(vec![1_u32], &[1]);
    /// assert!((z.cross_entropy(&labels).to_scalar() - 2f64.ln()).abs() < 1e-15);
    ///
    /// #[differentiable(wrt(z))]
    /// fn loss(z: &Tensor, labels: &Tensor) -> Tensor {
    ///     z.cross_entropy(labels)
    /// }
    /// let d = gradient(loss_vjp(&z, &labels)).unwrap();
    /// assert_eq!(d.to_vec_f64(), [0.5, -0.5]); // softmax − onehot
    /// ```
    ///
    /// # Panics
    /// On bad shapes, non-`U32` labels or a label `≥ C`.
    #[track_caller]
    pub fn cross_entropy(&self, labels: &Self) -> Self {
        or_panic(self.try_cross_entropy(labels))
    }

    /// [`cross_entropy`](Tensor::cross_entropy) returning an error on bad input.
    pub fn try_cross_entropy(&self, labels: &Self) -> Result<Self, TensorError> {
        Ok(self.cross_entropy_parts(labels, false)?.0)
    }

    /// The cross-entropy's value and, when `grad`, its derivative `(softmax(z) − onehot)/N`
    /// after [checking](Tensor::check_labels) the labels: the backend's fused form if it has
    /// one ([`Backend::cross_entropy`]), else `nll(log_softmax(z, 1))` and `e^logp − onehot`.
    fn cross_entropy_parts(
        &self,
        labels: &Self,
        grad: bool,
    ) -> Result<(Self, Option<Self>), TensorError> {
        const OP: &str = "cross_entropy";
        let shape = self.check_labels(labels, OP)?;
        if let Some((y, g)) = B::cross_entropy(self.storage(), labels.storage(), shape, grad) {
            let g = g.map(|g| Tensor::from_storage(g, shape));
            return Ok((Tensor::from_storage(y, []), g));
        }
        Ok(self.cross_entropy_composed(labels, shape, grad))
    }

    /// [`cross_entropy_parts`](Tensor::cross_entropy_parts) composed from the generic ops, the
    /// labels already checked against the scores' `shape`.
    fn cross_entropy_composed(
        &self,
        labels: &Self,
        shape: [usize; 2],
        grad: bool,
    ) -> (Self, Option<Self>) {
        let (y, logp, hot, scale) = self.checked_nll(labels, shape, |z| z.log_softmax(1));
        let g = grad.then(|| logp.exp().sub(&hot).mul_scalar(scale));
        (y, g)
    }

    /// Derivative rule of [`cross_entropy`](Tensor::cross_entropy): `z̄ = ȳ(softmax(z) −
    /// onehot)/N`; the labels' tangent is the symbolic zero (integer ids).
    #[track_caller]
    pub fn cross_entropy_vjp_full(
        &self,
        labels: &Self,
        needs: [bool; 2],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, TensorTangent<B>) + use<B>,
    ) {
        let (y, grad) = or_panic(self.cross_entropy_parts(labels, needs[0]));
        (y, move |d| {
            let z = grad.map_or(TensorTangent::Zero, |g| slot(true, &d, |d| g.mul(d)));
            (z, TensorTangent::Zero)
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
    use super::super::testing::{boxed, check, check_unary, first, rand};
    use crate::Tensor;

    fn labels() -> Tensor {
        Tensor::from_vec(vec![2_u32, 0, 3], &[3])
    }

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
        check_unary("cross_entropy", rand(&[3, 4], 4), |x| {
            first(x.cross_entropy_vjp_full(&labels(), [true, false]))
        });
        check_unary("nll", rand(&[3, 4], 4), |x| {
            first(x.nll_vjp_full(&labels(), [true, false]))
        });
        check("mse", &[rand(&[3, 4], 1), rand(&[3, 4], 2)], |xs| {
            boxed(xs[0].mse_vjp_full(&xs[1], [true, true]))
        });
    }

    #[test]
    fn stable_and_exact() {
        let z = Tensor::from_vec(vec![1000.0_f64, 1000.0, 0.0, 0.0], &[2, 2]);
        assert_eq!(z.softmax(1).to_vec_f64(), vec![0.5, 0.5, 0.5, 0.5]);
        let ce = z.cross_entropy(&Tensor::from_vec(vec![0_u32, 1], &[2]));
        assert!((ce.to_scalar() - std::f64::consts::LN_2).abs() < 1e-12);
    }

    /// Hand-computed: the rows `[0, ln 3]` (label 0) and `[ln 2, 0]` (label 1) have softmax
    /// `[1/4, 3/4]` and `[2/3, 1/3]`, so the loss is `(ln 4 + ln 3) / 2` and its derivative
    /// `(softmax − onehot) / 2`.
    #[test]
    fn cross_entropy_value_and_derivative_by_hand() {
        let z = Tensor::from_vec(vec![0.0, 3.0_f64.ln(), 2.0_f64.ln(), 0.0], &[2, 2]);
        let labels = Tensor::from_vec(vec![0_u32, 1], &[2]);
        let (y, pb) = z.cross_entropy_vjp_full(&labels, [true, false]);
        let g = pb(crate::tensor::TensorTangent::Dense(z.scalar_like(2.0))).0;
        let want_y = 12.0_f64.ln() / 2.0;
        // The seed 2 doubles the derivative.
        let want_g = [-3.0 / 4.0, 3.0 / 4.0, 2.0 / 3.0, -2.0 / 3.0];
        assert!((y.to_scalar() - want_y).abs() < 1e-15, "{}", y.to_scalar());
        let g = g.dense().expect("a dense tangent").to_vec_f64();
        for (g, w) in g.iter().zip(want_g) {
            assert!((g - w).abs() < 1e-15, "{g} against {w}");
        }
    }

    /// The backend's fused cross-entropy gives the composed ops' loss and derivative (within
    /// rounding: the sums run in other orders), in f64 and f32, with a row whose scores are
    /// far above the others' (the maximum keeps `exp` finite).
    #[test]
    fn fused_cross_entropy_matches_the_composed_ops() {
        let mut data = rand(&[6, 11], 9).to_vec_f64();
        data[14] = 300.0;
        let labels = Tensor::from_vec(vec![3_u32, 0, 10, 4, 4, 1], &[6]);
        for (dtype, tol) in [(crate::DType::F64, 1e-14), (crate::DType::F32, 2e-6)] {
            let z = Tensor::from_vec(data.clone(), &[6, 11]).to_dtype(dtype);
            let (y, g) = z.cross_entropy_parts(&labels, true).unwrap();
            let (y0, g0) = z.cross_entropy_composed(&labels, [6, 11], true);
            let close = |a: f64, b: f64| (a - b).abs() <= tol * (1.0 + b.abs());
            assert!(
                close(y.to_scalar(), y0.to_scalar()),
                "{dtype:?}: {y:?} {y0:?}"
            );
            let (g, g0) = (g.unwrap().to_vec_f64(), g0.unwrap().to_vec_f64());
            for (i, (a, b)) in g.iter().zip(&g0).enumerate() {
                assert!(close(*a, *b), "{dtype:?} element {i}: {a} against {b}");
            }
            let (y1, none) = z.cross_entropy_parts(&labels, false).unwrap();
            assert!(none.is_none());
            assert_eq!(y1.to_scalar(), y.to_scalar());
        }
        // A NaN score makes the loss and its row's derivative NaN, and no other row's.
        data[13] = f64::NAN;
        let z = Tensor::from_vec(data, &[6, 11]).to_dtype(crate::DType::F32);
        let (y, g) = z.cross_entropy_parts(&labels, true).unwrap();
        assert!(y.to_scalar().is_nan());
        let g = g.unwrap().to_vec_f64();
        assert!(g[11..22].iter().all(|v| v.is_nan()), "{:?}", &g[11..22]);
        assert!(g[..11].iter().chain(&g[22..]).all(|v| v.is_finite()));
    }

    #[test]
    #[should_panic(
        expected = "cross_entropy: label 7 is out of range for 4 classes (scores [3, 4])"
    )]
    fn label_out_of_range() {
        let _ = Tensor::zeros(&[3, 4]).cross_entropy(&Tensor::from_vec(vec![0_u32, 7, 1], &[3]));
    }
}
