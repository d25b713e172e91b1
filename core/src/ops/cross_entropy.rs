//! The labelled losses: the negative log-likelihood and the softmax cross-entropy, over scores
//! of any leading shape `[…, C]` against `U32` class ids of that leading shape `[…]`.
//!
//! | op | value | derivative |
//! |---|---|---|
//! | `logp.nll(labels)` | `−(1/N) Σᵢ logp[i, labelᵢ]` | `logp̄ = −ȳ · onehot / N` |
//! | `z.cross_entropy(labels)` | `nll(log_softmax(z, −1), labels)` | `z̄ = ȳ · (softmax(z) − onehot) / N` |
//! | `…_ignoring(labels, k)` | the same over the rows `i` with `labelᵢ ≠ k`, `N` their count | `0` on the rows with `labelᵢ = k` |
//!
//! The index `i` runs over the `N` positions of the leading shape (`[B, T, V]` scores of a
//! language model are `N = B·T` rows of `V`), and the losses are means over those rows
//! (PyTorch's `reduction="mean"`), returned as rank-0 tensors. The `_ignoring` forms leave out
//! the rows whose label is `ignore_index` (padding, PyTorch's `ignore_index`); that id may
//! be any `u32`, also one at or above `C` such as `u32::MAX`. When every row is ignored the
//! mean of no rows is taken to be 0 (PyTorch gives NaN).
//!
//! A label at or above `C` other than `ignore_index` is an error naming the label, the class
//! count and the scores' shape. The check reads the labels' maximum (kept from their upload by
//! the CUDA backend); only when that maximum is the ignored id itself are the labels read
//! back, to check the others.

use super::forward::{through_gradient, zero_if};
use super::slot;
use crate::NoTangent;
use crate::tensor::error::{TensorError, ensure, or_panic};
use crate::tensor::{Backend, DType, Tensor, TensorTangent};
use adjoint_backend::UnaryOp;

/// The checked geometry of a labelled loss: scores flattened to `[n, c]` and the id to leave
/// out.
#[derive(Clone, Copy, Debug)]
struct Rows {
    n: usize,
    c: usize,
    ignore: Option<u32>,
}

/// The factor `1/N` of a mean over the rows that count: a host constant (no row ignored), or
/// the rank-0 tensor `1/max(N, 1)` counted on the device, where rows may be ignored (so that
/// the count is never read back).
#[derive(Clone, Debug)]
enum Mean<B: Backend> {
    Constant(f64),
    Counted(Tensor<B>),
}

impl<B: Backend> Mean<B> {
    /// `factor · t / N`.
    fn scaled(&self, t: &Tensor<B>, factor: f64) -> Tensor<B> {
        match self {
            Mean::Constant(s) => t.mul_scalar(factor * s),
            Mean::Counted(s) if factor == 1.0 => t.mul(s),
            Mean::Counted(s) => t.mul(s).mul_scalar(factor),
        }
    }
}

/// The pullback slots of an `_ignoring` loss: the scores', the labels' (zero) and the id's.
pub(crate) type IgnoringSlots<B> = (TensorTangent<B>, TensorTangent<B>, NoTangent);

impl<B: Backend> Tensor<B> {
    /// Checks float scores `[…, C]` against `U32` labels `[…]` below `C` (or equal to
    /// `ignore`).
    fn check_labels(
        &self,
        labels: &Self,
        op: &'static str,
        ignore: Option<u32>,
    ) -> Result<Rows, TensorError> {
        self.check_float(op)?;
        let (s, l) = (self.shape(), labels.shape());
        ensure(!s.is_empty() && l == &s[..s.len() - 1], op, || {
            format!(
                "expects scores [..., C] and labels of their leading shape [...], got {s:?} and {l:?}"
            )
        })?;
        ensure(labels.dtype() == DType::U32, op, || {
            format!("labels must be U32 ids, got {:?}", labels.dtype())
        })?;
        let c = s[s.len() - 1];
        let out_of_range = |label: u32| {
            TensorError::new(
                op,
                format!("label {label} is out of range for {c} classes (scores {s:?})"),
            )
        };
        match B::max_id(labels.storage()) {
            Some(max) if max as usize >= c && Some(max) == ignore => {
                let ids = B::download_u32(labels.storage());
                match ids
                    .into_iter()
                    .find(|&l| l as usize >= c && Some(l) != ignore)
                {
                    Some(bad) => Err(out_of_range(bad)),
                    None => Ok(()),
                }
            }
            Some(max) if max as usize >= c => Err(out_of_range(max)),
            _ => Ok(()),
        }?;
        Ok(Rows {
            n: labels.len(),
            c,
            ignore,
        })
    }

    /// The one-hot rows `[n, c]` of the labels that count (a row of zeros for an ignored
    /// label) and the factor `1/N` of their mean.
    fn targets(&self, labels: &Self, rows: Rows) -> (Self, Mean<B>) {
        let Rows { n, c, ignore } = rows;
        let hot = Tensor::from_storage(B::one_hot(labels.storage(), c, self.dtype()), [n, c]);
        let Some(ignore) = ignore else {
            return (hot, Mean::Constant(1.0 / n.max(1) as f64));
        };
        // `one_hot` gives an id at or above `c` a row of zeros already.
        let hot = match ignore as usize {
            k if k < c => hot.mul(&hot.narrow(1, k, 1).neg().add_scalar(1.0)),
            _ => hot,
        };
        let count = hot
            .sum_all()
            .unary(UnaryOp::Clamp(1.0, f64::INFINITY), "nll");
        (hot, Mean::Counted(count.recip()))
    }

    /// The loss `−(1/N) Σᵢ logp[i, labelᵢ]` of the `[n, c]` log-probabilities
    /// `log_probs(self)`, with `logp`, the one-hot targets and their mean factor.
    fn checked_nll(
        &self,
        labels: &Self,
        rows: Rows,
        log_probs: impl FnOnce(&Self) -> Self,
    ) -> (Self, Self, Self, Mean<B>) {
        let (hot, mean) = self.targets(labels, rows);
        let logp = log_probs(&self.reshape(&[rows.n, rows.c]));
        let y = mean.scaled(&logp.mul(&hot).sum_all(), -1.0);
        (y, logp, hot, mean)
    }

    /// The negative log-likelihood `−(1/N) Σᵢ logp[i, labelᵢ]` of log-probabilities `[…, C]`
    /// against `U32` labels `[…]` (`N` rows: the product of the leading axes). Derivative:
    /// `logp̄ = −ȳ·onehot(labels)/N`; the labels get none.
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
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let e = Tensor::zeros(&[2, 2]).try_nll(&Tensor::from_vec(vec![0_u32, 2], &[2]));
    /// let message = "nll: label 2 is out of range for 2 classes (scores [2, 2])";
    /// assert_eq!(e.unwrap_err().to_string(), message);
    /// ```
    pub fn try_nll(&self, labels: &Self) -> Result<Self, TensorError> {
        self.try_nll_with(labels, "nll", None)
    }

    /// [`nll`](Tensor::nll) over the rows whose label is not `ignore_index` (see the
    /// [module docs](self)).
    ///
    /// ```
    /// use adjoint::Tensor;
    /// // Row 1's label is the ignored id: the mean is over row 0 alone, −(−1) = 1.
    /// let logp = Tensor::from_vec(vec![-1.0_f32, -2.0, -3.0, -4.0], &[2, 2]);
    /// let loss = logp.nll_ignoring(&Tensor::from_vec(vec![0_u32, 9], &[2]), 9);
    /// assert_eq!(loss.to_scalar(), 1.0);
    /// ```
    ///
    /// # Panics
    /// On bad shapes, non-`U32` labels or a label `≥ C` other than `ignore_index`.
    #[track_caller]
    pub fn nll_ignoring(&self, labels: &Self, ignore_index: u32) -> Self {
        or_panic(self.try_nll_ignoring(labels, ignore_index))
    }

    /// [`nll_ignoring`](Tensor::nll_ignoring) returning an error on bad input.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let logp = Tensor::from_vec(vec![-1.0, -2.0, -3.0, -4.0], &[2, 2]);
    /// let ignored = Tensor::from_vec(vec![0_u32, 9], &[2]); // row 1 does not count
    /// assert_eq!(logp.try_nll_ignoring(&ignored, 9).unwrap().to_scalar(), 1.0);
    /// let bad = Tensor::from_vec(vec![0_u32, 7], &[2]);
    /// assert!(logp.try_nll_ignoring(&bad, 9).is_err()); // 7 ≥ C and not the ignored id
    /// ```
    pub fn try_nll_ignoring(&self, labels: &Self, ignore_index: u32) -> Result<Self, TensorError> {
        self.try_nll_with(labels, "nll_ignoring", Some(ignore_index))
    }

    fn try_nll_with(
        &self,
        labels: &Self,
        op: &'static str,
        ignore: Option<u32>,
    ) -> Result<Self, TensorError> {
        let rows = self.check_labels(labels, op, ignore)?;
        Ok(self.checked_nll(labels, rows, Self::clone).0)
    }

    /// The rule of the negative log-likelihood: `logp̄ = −ȳ · onehot / N`.
    #[track_caller]
    fn nll_rule(
        &self,
        labels: &Self,
        op: &'static str,
        ignore: Option<u32>,
        need: bool,
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> TensorTangent<B> + use<B>,
    ) {
        let rows = or_panic(self.check_labels(labels, op, ignore));
        let (y, _, hot, mean) = self.checked_nll(labels, rows, Self::clone);
        let shape = self.shape_owned();
        (y, move |d| {
            slot(need, &d, |d| mean.scaled(&hot.mul(d), -1.0).reshape(&shape))
        })
    }

    /// The mean softmax cross-entropy of scores `[…, C]` against `U32` labels `[…]`:
    /// `nll(log_softmax(z, −1), labels)`. Derivative: `z̄ = ȳ(softmax(z) − onehot(labels))/N`
    /// over the `N` rows; the labels get none.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let z = Tensor::from_vec(vec![0.0, 0.0], &[1, 2]);
    /// let labels = Tensor::from_vec(vec![1_u32], &[1]);
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
    ///
    /// ```
    /// use adjoint::Tensor;
    /// // Batch 1, 2 positions, 3 classes: equal scores cost ln 3 at each position.
    /// let z = Tensor::zeros(&[1, 2, 3]);
    /// let labels = Tensor::from_vec(vec![2_u32, 0], &[1, 2]);
    /// assert!((z.cross_entropy(&labels).to_scalar() - 3f64.ln()).abs() < 1e-6);
    /// ```
    #[track_caller]
    pub fn cross_entropy(&self, labels: &Self) -> Self {
        or_panic(self.try_cross_entropy(labels))
    }

    /// [`cross_entropy`](Tensor::cross_entropy) returning an error on bad input.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let e = Tensor::zeros(&[2, 3]).try_cross_entropy(&Tensor::zeros(&[2])).unwrap_err();
    /// assert_eq!(e.to_string(), "cross_entropy: labels must be U32 ids, got F32");
    /// ```
    pub fn try_cross_entropy(&self, labels: &Self) -> Result<Self, TensorError> {
        Ok(self
            .cross_entropy_parts(labels, "cross_entropy", None, false)?
            .0)
    }

    /// [`cross_entropy`](Tensor::cross_entropy) over the rows whose label is not
    /// `ignore_index` (see the [module docs](self)).
    ///
    /// ```
    /// use adjoint::Tensor;
    /// // Equal scores over 3 classes cost ln 3 a row; row 1 (label 7, ignored) counts nothing.
    /// let scores = Tensor::zeros(&[2, 3]);
    /// let loss = scores.cross_entropy_ignoring(&Tensor::from_vec(vec![1_u32, 7], &[2]), 7);
    /// assert!((loss.to_scalar() - 3.0_f64.ln()).abs() < 1e-6);
    /// ```
    ///
    /// # Panics
    /// On bad shapes, non-`U32` labels or a label `≥ C` other than `ignore_index`.
    #[track_caller]
    pub fn cross_entropy_ignoring(&self, labels: &Self, ignore_index: u32) -> Self {
        or_panic(self.try_cross_entropy_ignoring(labels, ignore_index))
    }

    /// [`cross_entropy_ignoring`](Tensor::cross_entropy_ignoring) returning an error on bad
    /// input.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let z = Tensor::from_vec(vec![0.0; 4], &[2, 2]);
    /// let ignored = Tensor::from_vec(vec![0_u32, 9], &[2]); // row 1 does not count
    /// assert_eq!(z.try_cross_entropy_ignoring(&ignored, 9).unwrap().to_scalar(), 2f64.ln());
    /// let e = z.try_cross_entropy_ignoring(&Tensor::from_vec(vec![0_u32], &[1]), 9);
    /// assert!(e.unwrap_err().to_string().starts_with("cross_entropy_ignoring: expects scores"));
    /// ```
    pub fn try_cross_entropy_ignoring(
        &self,
        labels: &Self,
        ignore_index: u32,
    ) -> Result<Self, TensorError> {
        const OP: &str = "cross_entropy_ignoring";
        Ok(self
            .cross_entropy_parts(labels, OP, Some(ignore_index), false)?
            .0)
    }

    /// The cross-entropy's value and, when `grad`, its derivative `(softmax(z) − onehot)/N`
    /// (shaped like the scores) after [checking](Tensor::check_labels) the labels: the
    /// backend's fused form if it has one ([`Backend::cross_entropy`]), else
    /// `nll(log_softmax(z, −1))` and `e^logp − onehot`.
    fn cross_entropy_parts(
        &self,
        labels: &Self,
        op: &'static str,
        ignore: Option<u32>,
        grad: bool,
    ) -> Result<(Self, Option<Self>), TensorError> {
        let rows = self.check_labels(labels, op, ignore)?;
        let (shape, flat) = (self.shape_owned(), [rows.n, rows.c]);
        let fused = B::cross_entropy(self.storage(), labels.storage(), flat, ignore, grad);
        let (y, g) = match fused {
            Some((y, g)) => (
                Tensor::from_storage(y, []),
                g.map(|g| Tensor::from_storage(g, flat)),
            ),
            None => self.cross_entropy_composed(labels, rows, grad),
        };
        Ok((y, g.map(|g| g.reshape(&shape))))
    }

    /// [`cross_entropy_parts`](Tensor::cross_entropy_parts) composed from the generic ops
    /// (the derivative `[n, c]`), the labels already checked against the scores.
    fn cross_entropy_composed(
        &self,
        labels: &Self,
        rows: Rows,
        grad: bool,
    ) -> (Self, Option<Self>) {
        let (y, logp, hot, mean) = self.checked_nll(labels, rows, |z| z.log_softmax(1));
        let g = grad.then(|| {
            let p = logp.exp();
            // An ignored row's probabilities are masked by its row of the one-hot targets.
            let p = match rows.ignore {
                Some(_) => p.mul(&hot.sum(&[1], true)),
                None => p,
            };
            mean.scaled(&p.sub(&hot), 1.0)
        });
        (y, g)
    }

    /// The rule of the cross-entropy: `z̄ = ȳ(softmax(z) − onehot)/N`.
    #[track_caller]
    fn cross_entropy_rule(
        &self,
        labels: &Self,
        op: &'static str,
        ignore: Option<u32>,
        need: bool,
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> TensorTangent<B> + use<B>,
    ) {
        let (y, grad) = or_panic(self.cross_entropy_parts(labels, op, ignore, need));
        (y, move |d| {
            grad.map_or(TensorTangent::Zero, |g| slot(true, &d, |d| g.mul(d)))
        })
    }
}

/// The public rules of a labelled loss, plain and `_ignoring`, from its rule `$rule`; the
/// labels' tangent is the symbolic zero (integer ids) and the ignored id gets none.
macro_rules! labelled_rules {
    ($($name:ident $vjp:ident $jvp:ident, $ignoring:ident $ignoring_vjp:ident $ignoring_jvp:ident => $rule:ident, $math:literal;)*) => {
        impl<B: Backend> Tensor<B> {$(
            #[doc = concat!("Derivative rule of [`", stringify!($name), "`](Tensor::", stringify!($name), "): ", $math, ".")]
            #[track_caller]
            pub fn $vjp(&self, labels: &Self, needs: [bool; 2]) -> (Self, impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, TensorTangent<B>) + use<B>) {
                let (y, pb) = self.$rule(labels, stringify!($name), None, needs[0]);
                (y, move |d| (pb(d), TensorTangent::Zero))
            }

            #[doc = concat!("Derivative rule of [`", stringify!($ignoring), "`](Tensor::", stringify!($ignoring), "): ", $math, ", zero on the ignored rows.")]
            #[track_caller]
            pub fn $ignoring_vjp(&self, labels: &Self, ignore_index: u32, needs: [bool; 3]) -> (Self, impl FnOnce(TensorTangent<B>) -> IgnoringSlots<B> + use<B>) {
                let (y, pb) = self.$rule(labels, stringify!($ignoring), Some(ignore_index), needs[0]);
                (y, move |d| (pb(d), TensorTangent::Zero, NoTangent))
            }

            #[doc = concat!("Forward rule of [`", stringify!($name), "`](Tensor::", stringify!($name), "): `ẏ = ⟨∇y, ẋ⟩`, the gradient of the mean loss against the tangent; the labels are constants.")]
            #[track_caller]
            pub fn $jvp(&self, labels: &Self, t: (Option<&TensorTangent<B>>, Option<&TensorTangent<B>>)) -> (Self, Option<TensorTangent<B>>) {
                let (y, ty) = through_gradient(t.0, |n| self.$rule(labels, stringify!($name), None, n), |g| g);
                (y, ty.or_else(|| zero_if(t.1.is_some())))
            }

            #[doc = concat!("Forward rule of [`", stringify!($ignoring), "`](Tensor::", stringify!($ignoring), "): `ẏ = ⟨∇y, ẋ⟩`, zero on the ignored rows; the labels are constants.")]
            #[track_caller]
            pub fn $ignoring_jvp(&self, labels: &Self, ignore_index: u32, t: (Option<&TensorTangent<B>>, Option<&TensorTangent<B>>, Option<NoTangent>)) -> (Self, Option<TensorTangent<B>>) {
                let (y, ty) = through_gradient(t.0, |n| self.$rule(labels, stringify!($ignoring), Some(ignore_index), n), |g| g);
                (y, ty.or_else(|| zero_if(t.1.is_some())))
            }
        )*}
    };
}

labelled_rules! {
    nll nll_vjp_full nll_jvp_full, nll_ignoring nll_ignoring_vjp_full nll_ignoring_jvp_full => nll_rule, "`logp̄ = −ȳ · onehot / N`";
    cross_entropy cross_entropy_vjp_full cross_entropy_jvp_full, cross_entropy_ignoring cross_entropy_ignoring_vjp_full cross_entropy_ignoring_jvp_full => cross_entropy_rule, "`z̄ = ȳ · (softmax(z) − onehot) / N`";
}

#[cfg(test)]
mod tests {
    use super::super::testing::{check_unary, first, rand};
    use crate::{DType, Tensor, TensorTangent};

    fn labels() -> Tensor {
        Tensor::from_vec(vec![2_u32, 0, 3], &[3])
    }

    /// `[2, 3, 4]` scores against `[2, 3]` labels, one of them the ignored id 1 (inside the
    /// class range) and one `u32::MAX` in the `u32::MAX`-ignoring case.
    fn labels_2x3(ignored: u32) -> Tensor {
        Tensor::from_vec(vec![2_u32, ignored, 3, 0, 1, 3], &[2, 3])
    }

    #[test]
    fn labelled_loss_rules() {
        check_unary("cross_entropy", rand(&[3, 4], 4), |x| {
            first(x.cross_entropy_vjp_full(&labels(), [true, false]))
        });
        check_unary("nll", rand(&[3, 4], 4), |x| {
            first(x.nll_vjp_full(&labels(), [true, false]))
        });
        check_unary("cross_entropy [2, 3, 4]", rand(&[2, 3, 4], 5), |x| {
            first(x.cross_entropy_vjp_full(&labels_2x3(1), [true, false]))
        });
        check_unary("nll [2, 3, 4]", rand(&[2, 3, 4], 5), |x| {
            first(x.nll_vjp_full(&labels_2x3(1), [true, false]))
        });
        for ignored in [1, u32::MAX] {
            check_unary("cross_entropy_ignoring", rand(&[2, 3, 4], 6), |x| {
                let (y, pb) =
                    x.cross_entropy_ignoring_vjp_full(&labels_2x3(ignored), ignored, [true; 3]);
                (y, move |d| (pb(d).0,))
            });
            check_unary("nll_ignoring", rand(&[2, 3, 4], 6), |x| {
                let (y, pb) = x.nll_ignoring_vjp_full(&labels_2x3(ignored), ignored, [true; 3]);
                (y, move |d| (pb(d).0,))
            });
        }
    }

    /// Hand-computed: the rows `[0, ln 3]` (label 0) and `[ln 2, 0]` (label 1) have softmax
    /// `[1/4, 3/4]` and `[2/3, 1/3]`, so the loss is `(ln 4 + ln 3) / 2` and its derivative
    /// `(softmax − onehot) / 2`.
    #[test]
    fn cross_entropy_value_and_derivative_by_hand() {
        let z = Tensor::from_vec(vec![0.0, 3.0_f64.ln(), 2.0_f64.ln(), 0.0], &[2, 2]);
        let labels = Tensor::from_vec(vec![0_u32, 1], &[2]);
        let (y, pb) = z.cross_entropy_vjp_full(&labels, [true, false]);
        let g = pb(TensorTangent::Dense(z.scalar_like(2.0))).0;
        let want_y = 12.0_f64.ln() / 2.0;
        // The seed 2 doubles the derivative.
        let want_g = [-3.0 / 4.0, 3.0 / 4.0, 2.0 / 3.0, -2.0 / 3.0];
        assert!((y.to_scalar() - want_y).abs() < 1e-15, "{}", y.to_scalar());
        let g = g.dense().expect("a dense tangent").to_vec_f64();
        for (g, w) in g.iter().zip(want_g) {
            assert!((g - w).abs() < 1e-15, "{g} against {w}");
        }
    }

    /// Hand-computed, `[1, 3, 2]` scores (a batch of one sequence of three positions): the
    /// rows `[0, ln 3]`, `[5, −5]` and `[ln 2, 0]`, with softmax `[1/4, 3/4]`, (unused) and
    /// `[2/3, 1/3]`. With labels `[0, k, 1]` and `k` ignored (`k ≥ C`, read back to check the
    /// others), the middle row drops out: the loss is `(ln 4 + ln 3)/2` and the derivative
    /// `(softmax − onehot)/2` on the outer rows. With labels `[0, 1, 0]` and the class `1`
    /// ignored, the middle row drops out again, and the last row counts with label 0:
    /// `(ln 4 + ln(3/2))/2`. The fused kernel (`f64`, `f32`) and the composed ops agree.
    #[test]
    fn ignored_rows_by_hand() {
        let data = vec![0.0, 3.0_f64.ln(), 5.0, -5.0, 2.0_f64.ln(), 0.0];
        let (q, t) = (3.0 / 8.0, 1.0 / 3.0);
        let cases = [
            (
                vec![0_u32, 7, 1],
                7,
                DType::F64,
                12.0_f64.ln() / 2.0,
                [-q, q, 0.0, 0.0, t, -t],
            ),
            (
                vec![0, u32::MAX, 1],
                u32::MAX,
                DType::F32,
                12.0_f64.ln() / 2.0,
                [-q, q, 0.0, 0.0, t, -t],
            ),
            (
                vec![0, 1, 0],
                1,
                DType::F64,
                6.0_f64.ln() / 2.0,
                [-q, q, 0.0, 0.0, -t / 2.0, t / 2.0],
            ),
        ];
        for (labels, ignored, dtype, want_y, want_g) in cases {
            let tol = if dtype == DType::F64 { 1e-15 } else { 1e-6 };
            let z = Tensor::from_vec(data.clone(), &[1, 3, 2]).to_dtype(dtype);
            let hot_last = labels[2] as usize;
            let labels = Tensor::from_vec(labels, &[1, 3]);
            let (y, pb) = z.cross_entropy_ignoring_vjp_full(&labels, ignored, [true; 3]);
            let g = pb(TensorTangent::Dense(z.scalar_like(1.0))).0.unwrap();
            assert_eq!(g.shape(), &[1, 3, 2]);
            assert!((y.to_scalar() - want_y).abs() < tol, "{ignored}: {y:?}");
            let rows = super::Rows {
                n: 3,
                c: 2,
                ignore: Some(ignored),
            };
            let (y0, g0) = z.cross_entropy_composed(&labels, rows, true);
            assert!((y0.to_scalar() - want_y).abs() < tol, "{ignored}: {y0:?}");
            let g0 = g0.unwrap().to_vec_f64();
            for (g, w) in g.to_vec_f64().iter().chain(&g0).zip(want_g.iter().cycle()) {
                assert!((g - w).abs() < tol, "{ignored}: {g} against {w}");
            }
            // nll of the log-probabilities: the same loss, `−onehot/N` on the rows that count.
            let (y, pb) = z
                .log_softmax(-1)
                .nll_ignoring_vjp_full(&labels, ignored, [true; 3]);
            assert!((y.to_scalar() - want_y).abs() < tol);
            let g = pb(TensorTangent::Dense(z.scalar_like(1.0))).0.unwrap();
            let mut want = vec![-0.5, 0.0, 0.0, 0.0, 0.0, 0.0];
            want[4 + hot_last] = -0.5;
            assert_eq!(g.to_vec_f64(), want);
        }
        // Every row ignored: the mean of no rows is 0, and so is the derivative.
        let z = Tensor::from_vec(data, &[3, 2]);
        let all = Tensor::from_vec(vec![4_u32; 3], &[3]);
        let (y, pb) = z.cross_entropy_ignoring_vjp_full(&all, 4, [true; 3]);
        assert_eq!(y.to_scalar(), 0.0);
        let g = pb(TensorTangent::Dense(z.scalar_like(1.0))).0.unwrap();
        assert_eq!(g.to_vec_f64(), vec![0.0; 6]);
    }

    #[test]
    fn stable_and_exact() {
        let z = Tensor::from_vec(vec![1000.0_f64, 1000.0, 0.0, 0.0], &[2, 2]);
        let ce = z.cross_entropy(&Tensor::from_vec(vec![0_u32, 1], &[2]));
        assert!((ce.to_scalar() - std::f64::consts::LN_2).abs() < 1e-12);
    }

    /// The backend's fused cross-entropy gives the composed ops' loss and derivative (within
    /// rounding: the sums run in other orders), in f64 and f32, with a row whose scores are
    /// far above the others' (the maximum keeps `exp` finite), without and with an ignored id.
    #[test]
    fn fused_cross_entropy_matches_the_composed_ops() {
        let mut data = rand(&[6, 11], 9).to_vec_f64();
        data[14] = 300.0;
        let labels = Tensor::from_vec(vec![3_u32, 0, 10, 4, 4, 1], &[6]);
        let cases = [(crate::DType::F64, 1e-14), (crate::DType::F32, 2e-6)];
        for ((dtype, tol), ignore) in cases.into_iter().flat_map(|c| [(c, None), (c, Some(4))]) {
            let z = Tensor::from_vec(data.clone(), &[6, 11]).to_dtype(dtype);
            let (y, g) = z
                .cross_entropy_parts(&labels, "test", ignore, true)
                .unwrap();
            let rows = super::Rows {
                n: 6,
                c: 11,
                ignore,
            };
            let (y0, g0) = z.cross_entropy_composed(&labels, rows, true);
            let close = |a: f64, b: f64| (a - b).abs() <= tol * (1.0 + b.abs());
            assert!(
                close(y.to_scalar(), y0.to_scalar()),
                "{dtype:?}: {y:?} {y0:?}"
            );
            let (g, g0) = (g.unwrap().to_vec_f64(), g0.unwrap().to_vec_f64());
            for (i, (a, b)) in g.iter().zip(&g0).enumerate() {
                assert!(close(*a, *b), "{dtype:?} element {i}: {a} against {b}");
            }
            let (y1, none) = z
                .cross_entropy_parts(&labels, "test", ignore, false)
                .unwrap();
            assert!(none.is_none());
            assert_eq!(y1.to_scalar(), y.to_scalar());
        }
        // A NaN score makes the loss and its row's derivative NaN, and no other row's.
        data[13] = f64::NAN;
        let z = Tensor::from_vec(data, &[6, 11]).to_dtype(crate::DType::F32);
        let (y, g) = z.cross_entropy_parts(&labels, "test", None, true).unwrap();
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

    /// Bad labels next to an ignored id at or above `C` are still found; shapes are checked.
    #[test]
    fn bad_labels_are_errors() {
        let z = Tensor::zeros(&[2, 2, 4]);
        let l = Tensor::from_vec(vec![0_u32, 9, 5, 9], &[2, 2]);
        assert_eq!(
            z.try_cross_entropy_ignoring(&l, 9).unwrap_err().to_string(),
            "cross_entropy_ignoring: label 5 is out of range for 4 classes (scores [2, 2, 4])"
        );
        assert_eq!(
            z.try_nll_ignoring(&l, 5).unwrap_err().to_string(),
            "nll_ignoring: label 9 is out of range for 4 classes (scores [2, 2, 4])"
        );
        let err = z
            .try_cross_entropy(&Tensor::from_vec(vec![0_u32; 2], &[2]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cross_entropy: expects scores [..., C] and labels of their leading shape [...], got [2, 2, 4] and [2]"
        );
    }
}
