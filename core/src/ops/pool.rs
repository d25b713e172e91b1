//! Max and average pooling over NCHW tensors, on the window geometry of
//! [`conv2d`](Tensor::conv2d).
//!
//! `max_pool2d` takes the maximum of each window (padding never wins); its tangent goes to the
//! window's first maximal element, as in PyTorch, and the rule keeps only that element's index
//! per output (not the windows). `avg_pool2d` takes the mean of each window, counting padding
//! as zeros (PyTorch's `count_include_pad=True`).
//!
//! Both are composed from primitives: the windows are unfolded (`im2col`) and reduced, and the
//! tangent is folded back (`col2im`). A backend may fuse max pooling, as the CPU does
//! ([`Backend::max_pool2d`]: one pass over the input instead of unfolding, reducing and
//! searching the windows; [`Backend::max_pool2d_backward`]: one scatter of `ȳ` to the winning
//! taps instead of building the windows' tangents and folding them). Tests check both fused
//! forms against the composed ones.

use super::conv::Conv2d;
use super::forward::{linear, linear_jvp};
use super::slot;
use crate::NoTangent;
use crate::tensor::error::or_panic;
use crate::tensor::{Backend, Conv2dGeometry, Tensor, TensorTangent};

impl<B: Backend> Tensor<B> {
    /// The rule of a pooling over each window of `[N, C, H, W]`, each plane `N·C` pooled on
    /// its own: max pooling through [`max_windows`](Tensor::max_windows) and
    /// [`max_pool_tangent`], average pooling as the mean of the unfolded `[N·C, kh·kw, L]`
    /// columns over axis 1.
    #[track_caller]
    fn pool_rule(
        &self,
        kernel: [usize; 2],
        options: Conv2d,
        max: bool,
        needs: [bool; 3],
    ) -> (Self, PoolPb<B>) {
        let (need, op) = (needs[0], if max { "max_pool2d" } else { "avg_pool2d" });
        let g = or_panic(self.geometry(kernel, &options, op));
        let [oh, ow] = g.output().expect("checked");
        let planes = Conv2dGeometry {
            batch: g.batch * g.channels,
            channels: 1,
            ..g
        };
        let out_shape = [g.batch, g.channels, oh, ow];
        if max {
            let (y, winners) = self.max_windows(&planes);
            let y = y.reshape(&out_shape);
            // The winning tap of each window is the only residual, not the columns.
            let winners = need.then_some(winners);
            let x_shape = self.shape_owned();
            return (
                y,
                Box::new(move |d: TensorTangent<B>| {
                    let dx = slot(need, &d, |d| {
                        let winners = winners.as_ref().expect("kept");
                        let d = d.reshape(&[planes.batch, oh * ow]);
                        max_pool_tangent(winners, &d, &planes).reshape(&x_shape)
                    });
                    (dx, NoTangent, NoTangent)
                }),
            );
        }
        let (cols, unfold_pb) = self.unfold(planes, 0.0, need);
        let (y, pb) = cols.mean_vjp_full(&[1], false, [need, false, false]);
        (
            y.reshape(&out_shape),
            Box::new(move |d: TensorTangent<B>| {
                let d = d.map(|d| d.reshape(&[planes.batch, oh * ow]));
                (unfold_pb(pb(d).0), NoTangent, NoTangent)
            }),
        )
    }

    /// The maximum of each window of `planes` and its first maximal tap (`[P, L]` each): fused
    /// by the backend when it can ([`Backend::max_pool2d`]), else the windows unfolded,
    /// reduced and searched.
    fn max_windows(&self, planes: &Conv2dGeometry) -> (Self, Self) {
        let [oh, ow] = planes.output().expect("checked");
        let shape = [planes.batch, oh * ow];
        if let Some((y, winners)) = B::max_pool2d(self.storage(), planes) {
            return (
                Tensor::from_storage(y, shape),
                Tensor::from_storage(winners, shape),
            );
        }
        let cols = self.max_pool_columns(planes);
        (cols.max(&[1], false), cols.argmax(1))
    }

    /// The windows of `planes` unfolded into `[P, kh·kw, L]` columns, padding reading −∞.
    fn max_pool_columns(&self, planes: &Conv2dGeometry) -> Self {
        let [oh, ow] = planes.output().expect("checked");
        Tensor::from_storage(
            B::im2col(self.storage(), planes, f64::NEG_INFINITY),
            [planes.batch, planes.kernel[0] * planes.kernel[1], oh * ow],
        )
    }

    /// The maximum of each `kernel` window (stride, padding and dilation from `options`; padding
    /// never wins), per image and channel of NCHW `self`:
    /// `y[n, c, i, j] = max_{p, q} x[n, c, i·s₀ + p·d₀ − p₀, j·s₁ + q·d₁ − p₁]`.
    /// Derivative: each window's `ȳ` goes to its first maximal element (summed where windows
    /// overlap), as in PyTorch.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 5.0, 2.0, 0.0, 3.0, 4.0, 8.0, 7.0], &[1, 1, 2, 4]);
    /// let y = x.max_pool2d([2, 2], Conv2d::stride(2));
    /// assert_eq!((y.shape(), y.to_vec_f64()), (&[1, 1, 1, 2][..], vec![5.0, 8.0]));
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.max_pool2d([2, 2], Conv2d::stride(2)).sum_all()
    /// }
    /// let dx = gradient(f_vjp(&x)).unwrap();
    /// assert_eq!(dx.to_vec_f64(), [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    /// ```
    ///
    /// # Panics
    /// If `self` is not NCHW (rank 4) of a float dtype, or the window does not fit the input.
    #[track_caller]
    pub fn max_pool2d(&self, kernel: [usize; 2], options: Conv2d) -> Self {
        self.pool_rule(kernel, options, true, [false; 3]).0
    }

    /// Derivative rule of [`max_pool2d`](Tensor::max_pool2d).
    #[track_caller]
    pub fn max_pool2d_vjp_full(
        &self,
        kernel: [usize; 2],
        options: Conv2d,
        needs: [bool; 3],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent, NoTangent) + use<B>,
    ) {
        self.pool_rule(kernel, options, true, needs)
    }

    /// The mean of each `kernel` window (stride, padding and dilation from `options`), padding
    /// counted as zeros:
    /// `y[n, c, i, j] = Σ_{p, q} x[n, c, i·s₀ + p·d₀ − p₀, j·s₁ + q·d₁ − p₁] / (kh·kw)`.
    /// Derivative: each window's `ȳ / (kh·kw)` goes to each of its elements (summed where
    /// windows overlap).
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 5.0, 2.0, 0.0, 3.0, 4.0, 8.0, 7.0], &[1, 1, 2, 4]);
    /// let y = x.avg_pool2d([2, 2], Conv2d::stride(2));
    /// assert_eq!(y.to_vec_f64(), [3.25, 4.25]);
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.avg_pool2d([2, 2], Conv2d::stride(2)).sum_all()
    /// }
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [0.25; 8]);
    /// ```
    ///
    /// # Panics
    /// If `self` is not NCHW (rank 4) of a float dtype, or the window does not fit the input.
    #[track_caller]
    pub fn avg_pool2d(&self, kernel: [usize; 2], options: Conv2d) -> Self {
        self.pool_rule(kernel, options, false, [false; 3]).0
    }

    /// Derivative rule of [`avg_pool2d`](Tensor::avg_pool2d).
    #[track_caller]
    pub fn avg_pool2d_vjp_full(
        &self,
        kernel: [usize; 2],
        options: Conv2d,
        needs: [bool; 3],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent, NoTangent) + use<B>,
    ) {
        self.pool_rule(kernel, options, false, needs)
    }
}

impl<B: Backend> Tensor<B> {
    /// Forward rule of [`max_pool2d`](Tensor::max_pool2d): each window's tangent is the
    /// tangent of its first maximal element, `ẏ[p, l] = ẋ[winner(p, l)]` (the windows of `ẋ`
    /// unfolded, masked by the winning taps and summed over the taps).
    #[track_caller]
    pub fn max_pool2d_jvp_full(
        &self,
        kernel: [usize; 2],
        options: Conv2d,
        t: (
            Option<&TensorTangent<B>>,
            Option<NoTangent>,
            Option<NoTangent>,
        ),
    ) -> (Self, Option<TensorTangent<B>>) {
        let g = or_panic(self.geometry(kernel, &options, "max_pool2d"));
        let [oh, ow] = g.output().expect("checked");
        let planes = Conv2dGeometry {
            batch: g.batch * g.channels,
            channels: 1,
            ..g
        };
        let out_shape = [g.batch, g.channels, oh, ow];
        let (y, winners) = self.max_windows(&planes);
        let ty = linear(t.0, |d| {
            let taps = planes.kernel[0] * planes.kernel[1];
            let cols = Tensor::from_storage(
                B::im2col(d.storage(), &planes, 0.0),
                [planes.batch, taps, oh * ow],
            );
            let ones = Tensor::full_on(winners.shape(), 1.0, d.dtype(), &d.device());
            let mask = winning_taps(&winners, &ones, &planes);
            cols.mul(&mask).sum(&[1], false).reshape(&out_shape)
        });
        (y.reshape(&out_shape), ty)
    }
}

linear_jvp! {
    /// Forward rule of [`avg_pool2d`](Tensor::avg_pool2d), linear: `ẏ = avg_pool2d(ẋ)`.
    avg_pool2d_jvp_full(kernel: [usize; 2] => NoTangent, options: Conv2d => NoTangent) => |d| d.avg_pool2d(kernel, options);
}

/// The boxed pullback of a pooling rule (max and average pooling build different closures).
type PoolPb<B> = Box<dyn FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent, NoTangent)>;

/// The input tangent of max pooling over `planes` (`[P, H, W]`) from the winning tap of
/// each window and the output tangent `d` (both `[P, L]`): `d` at each winner, summed where
/// windows overlap. Fused by the backend when it can ([`Backend::max_pool2d_backward`]), else
/// composed: the windows' tangents (a mask of the winning taps times `d`) folded back by
/// `col2im`.
fn max_pool_tangent<B: Backend>(
    winners: &Tensor<B>,
    d: &Tensor<B>,
    planes: &Conv2dGeometry,
) -> Tensor<B> {
    let [h, w] = planes.input;
    let shape = [planes.batch, 1, h, w];
    if let Some(dx) = B::max_pool2d_backward(d.storage(), winners.storage(), planes) {
        return Tensor::from_storage(dx, shape);
    }
    Tensor::from_storage(
        B::col2im(winning_taps(winners, d, planes).storage(), planes),
        shape,
    )
}

/// `[P, taps, L]` columns holding `d[p, l]` at tap `winners[p, l]` and zeros elsewhere.
fn winning_taps<B: Backend>(
    winners: &Tensor<B>,
    d: &Tensor<B>,
    planes: &Conv2dGeometry,
) -> Tensor<B> {
    let taps = planes.kernel[0] * planes.kernel[1];
    let tap =
        Tensor::arange_on(0.0, taps as f64, 1.0, d.dtype(), &d.device()).reshape(&[1, taps, 1]);
    winners
        .to_dtype(d.dtype())
        .unsqueeze(1)
        .eq_mask(&tap)
        .mul(&d.unsqueeze(1))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{check_unary, rand};
    use super::{max_pool_tangent, winning_taps};
    use crate::tensor::{Backend, Conv2dGeometry};
    use crate::{Conv2d, Cpu, Tensor};

    #[test]
    fn pool_rules() {
        let o = Conv2d::stride(2).padding(1);
        check_unary("max_pool2d", rand(&[2, 3, 5, 4], 4), |x| {
            x.max_pool2d_vjp_full([3, 3], o, [true, false, false])
        });
        check_unary("avg_pool2d", rand(&[2, 3, 5, 4], 4), |x| {
            x.avg_pool2d_vjp_full([2, 3], o, [true, false, false])
        });
    }

    #[test]
    fn max_pool_tangent_goes_to_the_first_maximum_of_a_window() {
        // Windows [[1, 3], [3, 0]] and [[2, 2], [2, 2]]: ties go to the first in row-major
        // order, as in PyTorch.
        let x = Tensor::from_vec(
            vec![1.0_f64, 3.0, 2.0, 2.0, 3.0, 0.0, 2.0, 2.0],
            &[1, 1, 2, 4],
        );
        let (y, pb) = x.max_pool2d_vjp_full([2, 2], Conv2d::stride(2), [true, false, false]);
        assert_eq!(y.to_vec_f64(), vec![3.0, 2.0]);
        let d = Tensor::from_vec(vec![10.0_f64, 20.0], &[1, 1, 1, 2]);
        let dx = pb(crate::TensorTangent::Dense(d)).0.unwrap();
        assert_eq!(
            dx.to_vec_f64(),
            vec![0.0, 10.0, 20.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        );
    }

    /// Small integers with many ties, so both forms must pick the same (first) maximum and
    /// the tangents' sums are exact.
    fn integers(shape: &[usize], seed: u64) -> Tensor {
        let n = shape.iter().product();
        let mut state = seed;
        let values = (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 33) % 5) as f64
            })
            .collect::<Vec<f64>>();
        Tensor::from_vec(values, shape)
    }

    #[test]
    fn fused_max_pool_matches_the_composed_one() {
        let options = [
            Conv2d::stride(2),
            Conv2d::stride(2).padding(1),
            Conv2d {
                stride: [1, 2],
                padding: [1, 0],
                dilation: [2, 1],
                groups: 1,
            },
        ];
        for o in options {
            let x = integers(&[2, 3, 7, 6], 5);
            let g = x.geometry([3, 2], &o, "max_pool2d").expect("fits");
            let planes = Conv2dGeometry {
                batch: 6,
                channels: 1,
                ..g
            };
            let [oh, ow] = g.output().expect("fits");
            let cols = x.max_pool_columns(&planes);
            let winners = cols.argmax(1);
            let (y, fused_winners) = x.max_windows(&planes);
            assert_eq!(y.to_vec_f64(), cols.max(&[1], false).to_vec_f64(), "{o:?}");
            assert_eq!(fused_winners.to_vec_f64(), winners.to_vec_f64(), "{o:?}");
            let d = integers(&[6, oh * ow], 6);
            let fused = max_pool_tangent(&winners, &d, &planes);
            let composed = Cpu::col2im(winning_taps(&winners, &d, &planes).storage(), &planes);
            assert_eq!(
                fused.to_vec_f64(),
                Tensor::<Cpu>::from_storage(composed, [6, 1, 7, 6]).to_vec_f64(),
                "{o:?}"
            );
        }
    }
}
