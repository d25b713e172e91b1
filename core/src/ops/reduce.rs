//! Reductions over all elements or over given axes (`keepdim` keeps them with size 1).
//!
//! | method | value | `x̄` |
//! |---|---|---|
//! | `sum(axes)` | Σ over axes | ȳ broadcast back |
//! | `mean(axes)` | Σ / n | ȳ / n broadcast back |
//! | `max(axes)` / `min(axes)` | extremum | ȳ to the elements equal to it, split evenly on ties |
//! | `var(axes)` | mean((x − μ)²) (population variance, no correction) | 2ȳ(x − μ)/n |
//!
//! Axes may be negative (`-1` is the last). `sum_all`/`mean_all`/`max_all` reduce everything
//! to a rank-0 tensor.

use super::forward::{linear, linear_jvp, zero_if};
use super::slot;
use crate::NoTangent;
use crate::tensor::error::{TensorError, or_panic};
use crate::tensor::shape::normalize_axes;
use crate::tensor::{Backend, Tensor, TensorTangent};
use adjoint_backend::{BinaryOp, ReduceOp};

/// The pullback slots of a reduction `x.op(axes, keepdim)`.
pub(crate) type Reduced<B> = (TensorTangent<B>, NoTangent, NoTangent);

impl<B: Backend> Tensor<B> {
    /// Every axis, `0..rank`.
    fn all_axes(&self) -> Vec<isize> {
        (0..self.rank() as isize).collect()
    }

    /// `1/n` for a reduction to `kept` (reduced axes of size 1): `n` elements per output.
    fn mean_scale(&self, kept: &[usize]) -> f64 {
        kept.iter().product::<usize>() as f64 / self.len().max(1) as f64
    }

    /// Reduces over `axes` with `op`; the result keeps the axes (size 1) if `keepdim`.
    fn try_reduce(
        &self,
        op: ReduceOp,
        axes: &[isize],
        keepdim: bool,
        name: &'static str,
    ) -> Result<(Self, Vec<usize>), TensorError> {
        self.check_float(name)?;
        let axes = normalize_axes(name, axes, self.shape())?;
        let kept: Vec<usize> = (0..self.rank())
            .map(|i| {
                if axes.contains(&i) {
                    1
                } else {
                    self.shape()[i]
                }
            })
            .collect();
        let s = B::reduce(op, self.storage(), self.shape(), &axes);
        let y = Tensor::from_storage(s, kept.clone());
        let y = if keepdim {
            y
        } else {
            y.with_shape(drop_axes(self.shape(), &axes))
        };
        Ok((y, kept))
    }

    /// `y = Σ x` over `axes` (negative axes count from the end); the result keeps the reduced
    /// axes with size 1 if `keepdim`. Derivative: `x̄ = ȳ` broadcast back over the reduced axes.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    /// assert_eq!(x.sum(&[1], false).to_vec_f64(), [6.0, 15.0]);
    /// assert_eq!(x.sum(&[-2], true).shape(), [1, 3]);
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     (x.sum(&[1], false) * Tensor::from_vec(vec![1.0, 10.0], &[2])).sum_all()
    /// }
    /// let dx = gradient(f_vjp(&x)).unwrap();
    /// assert_eq!(dx.to_vec_f64(), [1.0, 1.0, 1.0, 10.0, 10.0, 10.0]);
    /// ```
    ///
    /// # Panics
    /// On an axis out of range or repeated, or a tensor not of a float dtype.
    #[track_caller]
    pub fn sum(&self, axes: &[isize], keepdim: bool) -> Self {
        or_panic(self.try_reduce(ReduceOp::Sum, axes, keepdim, "sum")).0
    }

    /// `y = Σ x` over all elements, as a rank-0 tensor; derivative `x̄ = ȳ` everywhere.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    /// assert_eq!(x.sum_all().to_scalar(), 6.0);
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.sum_all()
    /// }
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [1.0; 3]);
    /// ```
    ///
    /// # Panics
    /// If the tensor is not of a float dtype.
    #[track_caller]
    pub fn sum_all(&self) -> Self {
        self.sum(&self.all_axes(), false)
    }

    /// Derivative rule of [`sum`](Tensor::sum): `x̄ = ȳ` broadcast back.
    #[track_caller]
    pub fn sum_vjp_full(
        &self,
        axes: &[isize],
        keepdim: bool,
        needs: [bool; 3],
    ) -> (Self, impl FnOnce(TensorTangent<B>) -> Reduced<B> + use<B>) {
        let (y, kept) = or_panic(self.try_reduce(ReduceOp::Sum, axes, keepdim, "sum"));
        let shape = self.shape_owned();
        (y, move |d| {
            (
                slot(needs[0], &d, |d| d.with_shape(kept).broadcast_to(&shape)),
                NoTangent,
                NoTangent,
            )
        })
    }

    /// Derivative rule of [`sum_all`](Tensor::sum_all).
    #[track_caller]
    pub fn sum_all_vjp_full(
        &self,
        needs: [bool; 1],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>,) + use<B>,
    ) {
        let (y, pb) = self.sum_vjp_full(&self.all_axes(), false, [needs[0], false, false]);
        (y, input_slot(pb))
    }

    /// The mean over `axes`: `y = Σ x / n` with `n` the number of reduced elements (kept with
    /// size 1 if `keepdim`). Derivative: `x̄ = ȳ / n` broadcast back over the reduced axes.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 5.0], &[2, 2]);
    /// assert_eq!(x.mean(&[1], false).to_vec_f64(), [1.5, 4.0]);
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     (x.mean(&[1], false) * Tensor::from_vec(vec![2.0, 6.0], &[2])).sum_all()
    /// }
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [1.0, 1.0, 3.0, 3.0]);
    /// ```
    ///
    /// # Panics
    /// On an axis out of range or repeated, or a tensor not of a float dtype.
    #[track_caller]
    pub fn mean(&self, axes: &[isize], keepdim: bool) -> Self {
        let (y, kept) = or_panic(self.try_reduce(ReduceOp::Sum, axes, keepdim, "mean"));
        y.mul_scalar(self.mean_scale(&kept))
    }

    /// The mean of all `n` elements, `y = Σ x / n`, as a rank-0 tensor; derivative
    /// `x̄ = ȳ / n` everywhere.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 6.0], &[2, 2]);
    /// assert_eq!(x.mean_all().to_scalar(), 3.0);
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.mean_all()
    /// }
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [0.25; 4]);
    /// ```
    ///
    /// # Panics
    /// If the tensor is not of a float dtype.
    #[track_caller]
    pub fn mean_all(&self) -> Self {
        self.mean(&self.all_axes(), false)
    }

    /// Derivative rule of [`mean`](Tensor::mean): `x̄ = ȳ / n` broadcast back.
    #[track_caller]
    pub fn mean_vjp_full(
        &self,
        axes: &[isize],
        keepdim: bool,
        needs: [bool; 3],
    ) -> (Self, impl FnOnce(TensorTangent<B>) -> Reduced<B> + use<B>) {
        let (y, kept) = or_panic(self.try_reduce(ReduceOp::Sum, axes, keepdim, "mean"));
        let scale = self.mean_scale(&kept);
        let shape = self.shape_owned();
        (y.mul_scalar(scale), move |d| {
            (
                slot(needs[0], &d, |d| {
                    d.with_shape(kept).broadcast_to(&shape).mul_scalar(scale)
                }),
                NoTangent,
                NoTangent,
            )
        })
    }

    /// Derivative rule of [`mean_all`](Tensor::mean_all).
    #[track_caller]
    pub fn mean_all_vjp_full(
        &self,
        needs: [bool; 1],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>,) + use<B>,
    ) {
        let (y, pb) = self.mean_vjp_full(&self.all_axes(), false, [needs[0], false, false]);
        (y, input_slot(pb))
    }

    /// The largest element over `axes`, `y = max x` (kept with size 1 if `keepdim`; NaN if
    /// any element is). Derivative: `ȳ` goes to the maximal elements, split evenly on a tie.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 5.0, 5.0, 2.0], &[4]);
    /// assert_eq!(x.max(&[0], false).to_scalar(), 5.0);
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.max(&[0], false)
    /// }
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [0.0, 0.5, 0.5, 0.0]);
    /// ```
    ///
    /// # Panics
    /// On an axis out of range or repeated, or a tensor not of a float dtype.
    #[track_caller]
    pub fn max(&self, axes: &[isize], keepdim: bool) -> Self {
        or_panic(self.try_reduce(ReduceOp::Max, axes, keepdim, "max")).0
    }

    /// The smallest element over `axes`, `y = min x` (kept with size 1 if `keepdim`; NaN if
    /// any element is). Derivative: `ȳ` goes to the minimal elements, split evenly on a tie.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![3.0, 1.0, 2.0, 4.0], &[2, 2]);
    /// assert_eq!(x.min(&[1], false).to_vec_f64(), [1.0, 2.0]);
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.min(&[1], false).sum_all()
    /// }
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [0.0, 1.0, 1.0, 0.0]);
    /// ```
    ///
    /// # Panics
    /// On an axis out of range or repeated, or a tensor not of a float dtype.
    #[track_caller]
    pub fn min(&self, axes: &[isize], keepdim: bool) -> Self {
        or_panic(self.try_reduce(ReduceOp::Min, axes, keepdim, "min")).0
    }

    /// Derivative rule of [`max`](Tensor::max): `ȳ` goes to the maximal elements, split evenly.
    #[track_caller]
    pub fn max_vjp_full(
        &self,
        axes: &[isize],
        keepdim: bool,
        needs: [bool; 3],
    ) -> (Self, impl FnOnce(TensorTangent<B>) -> Reduced<B> + use<B>) {
        self.extremum_rule(ReduceOp::Max, axes, keepdim, needs)
    }

    /// Derivative rule of [`min`](Tensor::min): `ȳ` goes to the minimal elements, split evenly.
    #[track_caller]
    pub fn min_vjp_full(
        &self,
        axes: &[isize],
        keepdim: bool,
        needs: [bool; 3],
    ) -> (Self, impl FnOnce(TensorTangent<B>) -> Reduced<B> + use<B>) {
        self.extremum_rule(ReduceOp::Min, axes, keepdim, needs)
    }

    #[track_caller]
    fn extremum_rule(
        &self,
        op: ReduceOp,
        axes: &[isize],
        keepdim: bool,
        needs: [bool; 3],
    ) -> (Self, impl FnOnce(TensorTangent<B>) -> Reduced<B> + use<B>) {
        let name = if matches!(op, ReduceOp::Min) {
            "min"
        } else {
            "max"
        };
        let (y, kept) = or_panic(self.try_reduce(op, axes, keepdim, name));
        let saved = needs[0].then(|| {
            (
                self.clone(),
                y.clone(),
                normalize_axes(name, axes, self.shape()).expect("checked"),
            )
        });
        (y, move |d| {
            let dx = slot(needs[0], &d, |d| {
                let (x, y, axes) = saved.expect("saved");
                let mask = x.binary(&y.with_shape(kept.clone()), BinaryOp::Eq, name);
                let axes: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
                let count = mask.sum(&axes, true);
                mask.mul(&d.with_shape(kept).div(&count))
            });
            (dx, NoTangent, NoTangent)
        })
    }

    /// The population variance over `axes`: `y = mean((x − μ)²)` with `μ = mean(x)` over the
    /// same axes (kept with size 1 if `keepdim`). Derivative: `x̄ = 2ȳ(x − μ)/n`, `n` the
    /// number of reduced elements.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[4]);
    /// assert_eq!(x.var(&[0], false).to_scalar(), 1.25);
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.var(&[0], false)
    /// }
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [-0.75, -0.25, 0.25, 0.75]);
    /// ```
    ///
    /// # Panics
    /// On an axis out of range or repeated, or a tensor not of a float dtype.
    #[track_caller]
    pub fn var(&self, axes: &[isize], keepdim: bool) -> Self {
        let mu = self.mean(axes, true);
        self.sub(&mu).square().mean(axes, keepdim)
    }

    /// Derivative rule of [`var`](Tensor::var): `x̄ = 2ȳ(x − μ)/n`.
    #[track_caller]
    pub fn var_vjp_full(
        &self,
        axes: &[isize],
        keepdim: bool,
        needs: [bool; 3],
    ) -> (Self, impl FnOnce(TensorTangent<B>) -> Reduced<B> + use<B>) {
        let centred = self.sub(&self.mean(axes, true));
        let (y, kept) = or_panic(
            centred
                .square()
                .try_reduce(ReduceOp::Sum, axes, keepdim, "var"),
        );
        let scale = self.mean_scale(&kept);
        (y.mul_scalar(scale), move |d| {
            let dx = slot(needs[0], &d, |d| {
                centred.mul(&d.with_shape(kept)).mul_scalar(2.0 * scale)
            });
            (dx, NoTangent, NoTangent)
        })
    }

    /// Rule of [`argmax`](Tensor::argmax): an integer result, so the tangent is zero.
    #[track_caller]
    pub fn argmax_vjp_full(
        &self,
        axis: isize,
        _needs: [bool; 2],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent) + use<B>,
    ) {
        (self.argmax(axis), |_| (TensorTangent::Zero, NoTangent))
    }

    /// The index of the largest element along `axis` (first on ties), as a `U32` tensor with
    /// that axis removed. Its derivative is zero (an integer result).
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 3.0, 2.0, 4.0, 0.0, 4.0], &[2, 3]);
    /// assert_eq!(x.argmax(1).to_vec_u32(), [1, 0]);
    /// assert_eq!(x.argmax(-2).to_vec_u32(), [1, 0, 1]);
    /// ```
    ///
    /// # Panics
    /// On an axis out of range, or a tensor not of a float dtype.
    #[track_caller]
    pub fn argmax(&self, axis: isize) -> Self {
        or_panic(self.check_float("argmax"));
        let a = or_panic(normalize_axes("argmax", &[axis], self.shape()))[0];
        let s = B::argmax(self.storage(), self.shape(), a);
        Tensor::from_storage(s, drop_axes(self.shape(), &[a]))
    }
}

linear_jvp! {
    /// Forward rule of [`sum`](Tensor::sum), linear: `ẏ = Σ ẋ` over the axes.
    sum_jvp_full(axes: &[isize] => NoTangent, keepdim: bool => NoTangent) => |d| d.sum(axes, keepdim);
    /// Forward rule of [`sum_all`](Tensor::sum_all), linear: `ẏ = Σ ẋ`.
    sum_all_jvp_full() => |d| d.sum_all();
    /// Forward rule of [`mean`](Tensor::mean), linear: `ẏ = Σ ẋ / n` over the axes.
    mean_jvp_full(axes: &[isize] => NoTangent, keepdim: bool => NoTangent) => |d| d.mean(axes, keepdim);
    /// Forward rule of [`mean_all`](Tensor::mean_all), linear: `ẏ = Σ ẋ / n`.
    mean_all_jvp_full() => |d| d.mean_all();
}

/// The tangent slots of a reduction: the input's, then the axes' and `keepdim`'s (none).
type ReducedTangents<'t, B> = (
    Option<&'t TensorTangent<B>>,
    Option<NoTangent>,
    Option<NoTangent>,
);

impl<B: Backend> Tensor<B> {
    /// Forward rule of [`max`](Tensor::max): `ẏ = Σ 𝟙(x = y)·ẋ / #{x = y}` over the axes, the
    /// mean of the tangents of the elements that reach the maximum (a tie shares evenly).
    #[track_caller]
    pub fn max_jvp_full(
        &self,
        axes: &[isize],
        keepdim: bool,
        t: ReducedTangents<'_, B>,
    ) -> (Self, Option<TensorTangent<B>>) {
        self.extremum_jvp(ReduceOp::Max, axes, keepdim, t.0)
    }

    /// Forward rule of [`min`](Tensor::min): as [`max_jvp_full`](Tensor::max_jvp_full) with the
    /// minimum.
    #[track_caller]
    pub fn min_jvp_full(
        &self,
        axes: &[isize],
        keepdim: bool,
        t: ReducedTangents<'_, B>,
    ) -> (Self, Option<TensorTangent<B>>) {
        self.extremum_jvp(ReduceOp::Min, axes, keepdim, t.0)
    }

    #[track_caller]
    fn extremum_jvp(
        &self,
        op: ReduceOp,
        axes: &[isize],
        keepdim: bool,
        t: Option<&TensorTangent<B>>,
    ) -> (Self, Option<TensorTangent<B>>) {
        let name = if matches!(op, ReduceOp::Min) {
            "min"
        } else {
            "max"
        };
        let (y, kept) = or_panic(self.try_reduce(op, axes, keepdim, name));
        let ty = linear(t, |d| {
            let mask = self.binary(&y.with_shape(kept.clone()), BinaryOp::Eq, name);
            let share = mask.div(&mask.sum(axes, true));
            share.mul(d).sum(axes, keepdim)
        });
        (y, ty)
    }

    /// Forward rule of [`var`](Tensor::var): `ẏ = 2/n·Σ (x − μ)·ẋ` over the axes (the term of
    /// `μ̇` vanishes, since `Σ (x − μ) = 0`).
    #[track_caller]
    pub fn var_jvp_full(
        &self,
        axes: &[isize],
        keepdim: bool,
        t: ReducedTangents<'_, B>,
    ) -> (Self, Option<TensorTangent<B>>) {
        let centred = self.sub(&self.mean(axes, true));
        let (y, kept) = or_panic(
            centred
                .square()
                .try_reduce(ReduceOp::Sum, axes, keepdim, "var"),
        );
        let scale = self.mean_scale(&kept);
        let ty = linear(t.0, |d| {
            centred.mul(d).sum(axes, keepdim).mul_scalar(2.0 * scale)
        });
        (y.mul_scalar(scale), ty)
    }

    /// Forward rule of [`argmax`](Tensor::argmax): the value is `U32` ids, whose tangent is
    /// zero (symbolic).
    #[track_caller]
    pub fn argmax_jvp_full(
        &self,
        axis: isize,
        t: (Option<&TensorTangent<B>>, Option<NoTangent>),
    ) -> (Self, Option<TensorTangent<B>>) {
        (self.argmax(axis), zero_if(t.0.is_some()))
    }
}

/// The pullback of a reduction over all axes: only the input's slot.
fn input_slot<B: Backend>(
    pb: impl FnOnce(TensorTangent<B>) -> Reduced<B>,
) -> impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>,) {
    move |d| (pb(d).0,)
}

/// `shape` without `axes`.
pub(crate) fn drop_axes(shape: &[usize], axes: &[usize]) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .filter(|(i, _)| !axes.contains(i))
        .map(|(_, &s)| s)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::testing::{check_unary, rand, t64};

    #[test]
    fn reduction_rules() {
        let x = || rand(&[2, 3, 4], 5);
        check_unary("sum", x(), |x| {
            x.sum_vjp_full(&[1], false, [true, false, false])
        });
        check_unary("sum keepdim", x(), |x| {
            x.sum_vjp_full(&[0, 2], true, [true, false, false])
        });
        check_unary("sum_all", x(), |x| x.sum_all_vjp_full([true]));
        check_unary("mean", x(), |x| {
            x.mean_vjp_full(&[-1], false, [true, false, false])
        });
        check_unary("mean_all", x(), |x| x.mean_all_vjp_full([true]));
        check_unary("max", x(), |x| {
            x.max_vjp_full(&[1], false, [true, false, false])
        });
        check_unary("min", x(), |x| {
            x.min_vjp_full(&[0, 2], true, [true, false, false])
        });
        check_unary("var", x(), |x| {
            x.var_vjp_full(&[2], false, [true, false, false])
        });
    }

    #[test]
    fn exact_values() {
        let x = t64(&[1.0, 5.0, 3.0, 5.0, 2.0, 0.0], &[2, 3]);
        assert_eq!(x.sum(&[1], false).to_vec_f64(), vec![9.0, 7.0]);
        assert_eq!(x.mean(&[0], true).shape(), &[1, 3]);
        assert_eq!(x.max(&[0, 1], false).to_scalar(), 5.0);
        assert_eq!(x.argmax(1).to_vec_u32(), vec![1, 0]);
        // Ties split the tangent evenly.
        let (_, pb) = x.max_vjp_full(&[0, 1], false, [true, false, false]);
        let dx = pb(crate::TensorTangent::Dense(t64(&[1.0], &[]))).0.unwrap();
        assert_eq!(dx.to_vec_f64(), vec![0.0, 0.5, 0.0, 0.5, 0.0, 0.0]);
        assert!((x.var(&[1], false).to_vec_f64()[0] - 8.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    #[should_panic(expected = "sum: axis 3 is out of range for shape [2, 3]")]
    fn bad_axis() {
        let _ = crate::Tensor::zeros(&[2, 3]).sum(&[3], false);
    }
}
