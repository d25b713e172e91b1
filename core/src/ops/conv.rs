//! 2-D convolution and pooling over NCHW tensors.
//!
//! `x.conv2d(&w, opts)` with `x: [N, C, H, W]`, `w: [O, C/groups, kh, kw]` gives
//! `y[n, o, i, j] = Σ_{c, p, q} w[o, c, p, q] · x[n, g·C/groups + c, i·s₀ + p·d₀ − p₀, j·s₁ + q·d₁ − p₁]`
//! (zero outside the image), of shape `[N, O, oh, ow]` with
//! `oh = ⌊(H + 2p₀ − d₀(kh − 1) − 1)/s₀⌋ + 1` (likewise `ow`). The backend computes it (the
//! CPU directly from the image at stride 1 in `f32` on AVX2 without AVX-512, else as
//! `im2col` + one GEMM per image and group; CUDA as `im2col` + cuBLAS). Derivative, in terms
//! of the unfolded columns `colsₙ = im2col(xₙ)`:
//! `w̄ = Σₙ ȳₙ · colsₙᵀ`, `x̄ = col2im(wᵀ · ȳ)`, each only if needed; `conv2d_with_bias` adds
//! `b[o]` and `b̄ = Σ_{n,i,j} ȳ`. Pooling, on the same window geometry, is in
//! [`pool`](super::pool).

use super::forward::{linear, sum_terms};
use super::slot;
use crate::NoTangent;
use crate::tensor::error::{TensorError, ensure, or_panic};
use crate::tensor::{Backend, Conv2dGeometry, Tensor, TensorTangent};
use adjoint_backend::Conv2dSpec;

/// Stride, padding, dilation and groups of [`conv2d`](Tensor::conv2d) and the pools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2d {
    /// Step between windows along height and width.
    pub stride: [usize; 2],
    /// Zeros added on each side along height and width.
    pub padding: [usize; 2],
    /// Spacing between kernel taps along height and width.
    pub dilation: [usize; 2],
    /// Channel groups (convolution only): input and output channels split into this many
    /// independent convolutions.
    pub groups: usize,
}

impl Default for Conv2d {
    fn default() -> Self {
        Conv2d {
            stride: [1, 1],
            padding: [0, 0],
            dilation: [1, 1],
            groups: 1,
        }
    }
}

impl Conv2d {
    /// The default options with stride `s` on both axes.
    pub fn stride(s: usize) -> Self {
        Conv2d {
            stride: [s, s],
            ..Self::default()
        }
    }

    /// These options with padding `p` on both axes.
    pub fn padding(self, p: usize) -> Self {
        Conv2d {
            padding: [p, p],
            ..self
        }
    }
}

/// A boxed pullback of one tensor input.
pub(super) type Pb<B> = Box<dyn FnOnce(TensorTangent<B>) -> TensorTangent<B>>;

impl<B: Backend> Tensor<B> {
    /// The window geometry of `kernel` with `o` over NCHW `self`, checked.
    pub(super) fn geometry(
        &self,
        kernel: [usize; 2],
        o: &Conv2d,
        op: &'static str,
    ) -> Result<Conv2dGeometry, TensorError> {
        self.check_float(op)?;
        let s = self.shape();
        ensure(s.len() == 4, op, || {
            format!("input must be NCHW (rank 4), got {s:?}")
        })?;
        let g = Conv2dGeometry {
            batch: s[0],
            channels: s[1],
            input: [s[2], s[3]],
            kernel,
            stride: o.stride,
            padding: o.padding,
            dilation: o.dilation,
        };
        ensure(
            g.output().is_some() && o.dilation.iter().all(|&d| d > 0),
            op,
            || format!("kernel {kernel:?} with {o:?} does not fit input {s:?}"),
        )?;
        Ok(g)
    }

    /// `im2col` with its rule: `[N, C·kh·kw, L]` columns; the pullback folds them back.
    pub(super) fn unfold(&self, g: Conv2dGeometry, fill: f64, need: bool) -> (Self, Pb<B>) {
        let [oh, ow] = g.output().expect("checked");
        let shape = vec![g.batch, g.channels * g.kernel[0] * g.kernel[1], oh * ow];
        let cols = Tensor::from_storage(B::im2col(self.storage(), &g, fill), shape);
        let x_shape = self.shape_owned();
        (
            cols,
            Box::new(move |d| {
                slot(need, &d, |d| {
                    Tensor::from_storage(B::col2im(d.storage(), &g), x_shape)
                })
            }),
        )
    }

    /// The 2-D convolution (cross-correlation, as in PyTorch) of NCHW `self` with `weight`
    /// `[O, C/groups, kh, kw]`:
    /// `y[n, o, i, j] = Σ_{c, p, q} w[o, c, p, q] · x[n, c, i·s₀ + p·d₀ − p₀, j·s₁ + q·d₁ − p₁]`
    /// (per group; the [module docs](self) give the output size). Derivative:
    /// `x̄ = col2im(wᵀ·ȳ)` (each input pixel gets the weights of the taps that read it, times
    /// `ȳ`) and `w̄ = Σₙ ȳₙ·colsₙᵀ` (each tap gets the input pixels it read, times `ȳ`).
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec((0..9).map(f64::from).collect::<Vec<_>>(), &[1, 1, 3, 3]);
    /// let w = Tensor::from_vec(vec![1.0, 0.0, 0.0, 1.0], &[1, 1, 2, 2]); // x[i, j] + x[i+1, j+1]
    /// assert_eq!(x.conv2d(&w, Conv2d::default()).to_vec_f64(), [4.0, 6.0, 10.0, 12.0]);
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor, w: &Tensor) -> Tensor {
    ///     x.conv2d(w, Conv2d::default()).sum_all()
    /// }
    /// let (dx, dw) = gradient(f_vjp(&x, &w));
    /// // How many windows read each pixel through a tap of weight 1:
    /// assert_eq!(dx.unwrap().to_vec_f64(), [1.0, 1.0, 0.0, 1.0, 2.0, 1.0, 0.0, 1.0, 1.0]);
    /// // The sum of the pixels each tap reads: 0+1+3+4, 1+2+4+5, 3+4+6+7, 4+5+7+8.
    /// assert_eq!(dw.unwrap().to_vec_f64(), [8.0, 12.0, 20.0, 24.0]);
    /// ```
    ///
    /// # Panics
    /// On bad ranks, channel counts not divisible by `groups`, or a kernel that does not fit.
    #[track_caller]
    pub fn conv2d(&self, weight: &Self, options: Conv2d) -> Self {
        self.conv2d_vjp_full(weight, options, [false, false, false])
            .0
    }

    /// [`conv2d`](Tensor::conv2d) returning an error on bad input (the cases under its
    /// `# Panics`) instead of panicking.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![0.0; 9], &[1, 1, 3, 3]);
    /// let two_channels = Tensor::from_vec(vec![0.0; 8], &[1, 2, 2, 2]);
    /// let e = x.try_conv2d(&two_channels, Conv2d::default()).unwrap_err();
    /// assert!(e.to_string().starts_with(
    ///     "conv2d: input [1, 1, 3, 3] and weight [1, 2, 2, 2] do not match with groups = 1"
    /// ));
    /// ```
    pub fn try_conv2d(&self, weight: &Self, options: Conv2d) -> Result<Self, TensorError> {
        self.conv_check(weight, options)
            .map(|_| self.conv2d(weight, options))
    }

    fn conv_check(&self, w: &Self, o: Conv2d) -> Result<Conv2dGeometry, TensorError> {
        let ws = w.shape();
        ensure(ws.len() == 4, "conv2d", || {
            format!("weight must be [O, C/groups, kh, kw], got {ws:?}")
        })?;
        let g = self.geometry([ws[2], ws[3]], &o, "conv2d")?;
        let ok = o.groups > 0
            && g.channels.is_multiple_of(o.groups)
            && ws[0].is_multiple_of(o.groups)
            && ws[1] * o.groups == g.channels;
        ensure(ok && w.dtype() == self.dtype(), "conv2d", || {
            format!(
                "input {:?} and weight {ws:?} do not match with groups = {} (dtypes {:?}, {:?})",
                self.shape(),
                o.groups,
                self.dtype(),
                w.dtype()
            )
        })?;
        Ok(g)
    }

    /// Derivative rule of [`conv2d`](Tensor::conv2d): `x̄ = col2im(wᵀ·ȳ)`, `w̄ = Σₙ ȳₙ·colsₙᵀ`.
    #[track_caller]
    pub fn conv2d_vjp_full(
        &self,
        weight: &Self,
        options: Conv2d,
        needs: [bool; 3],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, TensorTangent<B>, NoTangent) + use<B>,
    ) {
        let spec = self.conv_spec(weight, options);
        let y = self.conv_forward(weight, None, &spec);
        let pb = self.conv_pullback(weight, spec, [needs[0], needs[1]]);
        (y, move |d: TensorTangent<B>| {
            let (dx, dw) = pb(d);
            (dx, dw, NoTangent)
        })
    }

    /// The checked geometry of a convolution of `self` with `weight`.
    #[track_caller]
    fn conv_spec(&self, weight: &Self, options: Conv2d) -> Conv2dSpec {
        Conv2dSpec {
            geometry: or_panic(self.conv_check(weight, options)),
            out_channels: weight.shape()[0],
            groups: options.groups,
        }
    }

    /// The convolution, plus `bias` per output channel: fused by the backend when it can
    /// ([`Backend::conv2d_bias`]), else added by a broadcast `add`.
    fn conv_forward(&self, weight: &Self, bias: Option<&Self>, spec: &Conv2dSpec) -> Self {
        let g = &spec.geometry;
        let [oh, ow] = g.output().expect("checked");
        let shape = [g.batch, spec.out_channels, oh, ow];
        let (x, w) = (self.storage(), weight.storage());
        let Some(bias) = bias else {
            return Tensor::from_storage(B::conv2d(x, w, spec), shape);
        };
        match B::conv2d_bias(x, w, bias.storage(), spec) {
            Some(y) => Tensor::from_storage(y, shape),
            None => Tensor::from_storage(B::conv2d(x, w, spec), shape).add(&bias.reshape(&[
                1,
                spec.out_channels,
                1,
                1,
            ])),
        }
    }

    /// The pullback `ȳ ↦ (x̄, w̄)` of a convolution of `self` with `weight`, computing only the
    /// tangents in `needs` and keeping only the operands they read.
    fn conv_pullback(
        &self,
        weight: &Self,
        spec: Conv2dSpec,
        needs: [bool; 2],
    ) -> impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, TensorTangent<B>) + use<B> {
        let keep_x = needs[1].then(|| self.clone());
        let keep_w = needs[0].then(|| weight.clone());
        let (x_shape, w_shape) = (self.shape_owned(), weight.shape_owned());
        move |d: TensorTangent<B>| {
            let dx = slot(needs[0], &d, |d| {
                let w = keep_w.as_ref().expect("kept");
                Tensor::from_storage(
                    B::conv2d_backward_input(d.storage(), w.storage(), &spec),
                    x_shape,
                )
            });
            let dw = slot(needs[1], &d, |d| {
                let x = keep_x.as_ref().expect("kept");
                Tensor::from_storage(
                    B::conv2d_backward_weight(x.storage(), d.storage(), &spec),
                    w_shape,
                )
            });
            (dx, dw)
        }
    }

    /// [`conv2d`](Tensor::conv2d) plus a bias `b` of shape `[O]` added to every output pixel:
    /// `y[n, o, i, j] = conv2d(x, w)[n, o, i, j] + b[o]`. Derivative: `x̄` and `w̄` as for
    /// `conv2d`, and `b̄[o] = Σ_{n,i,j} ȳ[n, o, i, j]`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[1, 1, 2, 2]);
    /// let w = Tensor::from_vec(vec![2.0], &[1, 1, 1, 1]);
    /// let b = Tensor::from_vec(vec![0.5], &[1]);
    /// let y = x.conv2d_with_bias(&w, &b, Conv2d::default());
    /// assert_eq!(y.to_vec_f64(), [2.5, 4.5, 6.5, 8.5]);
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor, w: &Tensor, b: &Tensor) -> Tensor {
    ///     x.conv2d_with_bias(w, b, Conv2d::default()).sum_all()
    /// }
    /// let (dx, dw, db) = gradient(f_vjp(&x, &w, &b));
    /// assert_eq!(dx.unwrap().to_vec_f64(), [2.0; 4]);
    /// assert_eq!(dw.unwrap().to_vec_f64(), [10.0]); // 1 + 2 + 3 + 4
    /// assert_eq!(db.unwrap().to_vec_f64(), [4.0]); // one per output pixel
    /// ```
    ///
    /// # Panics
    /// As [`conv2d`](Tensor::conv2d), or if `bias` is not `[O]` of the input's dtype.
    #[track_caller]
    pub fn conv2d_with_bias(&self, weight: &Self, bias: &Self, options: Conv2d) -> Self {
        self.conv2d_with_bias_vjp_full(weight, bias, options, [false; 4])
            .0
    }

    /// Derivative rule of [`conv2d_with_bias`](Tensor::conv2d_with_bias): as `conv2d`, and
    /// `b̄ = Σ_{n,i,j} ȳ`.
    #[track_caller]
    #[allow(clippy::type_complexity)]
    pub fn conv2d_with_bias_vjp_full(
        &self,
        weight: &Self,
        bias: &Self,
        options: Conv2d,
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
        let spec = self.conv_spec(weight, options);
        let o = spec.out_channels;
        assert!(
            bias.shape() == [o] && bias.dtype() == self.dtype(),
            "conv2d: bias must be [{o}] of {:?}, got {:?} of {:?}",
            self.dtype(),
            bias.shape(),
            bias.dtype()
        );
        let y = self.conv_forward(weight, Some(bias), &spec);
        let pb = self.conv_pullback(weight, spec, [needs[0], needs[1]]);
        (y, move |d: TensorTangent<B>| {
            let db = slot(needs[2], &d, |d| d.sum(&[0, 2, 3], false));
            let (dx, dw) = pb(d);
            (dx, dw, db, NoTangent)
        })
    }
}

/// The tangent slots of [`conv2d_with_bias`](Tensor::conv2d_with_bias): `x`, `w`, `b`, the
/// options (none).
type BiasedTangents<'t, B> = (
    Option<&'t TensorTangent<B>>,
    Option<&'t TensorTangent<B>>,
    Option<&'t TensorTangent<B>>,
    Option<NoTangent>,
);

impl<B: Backend> Tensor<B> {
    /// Forward rule of [`conv2d`](Tensor::conv2d), bilinear: `ẏ = conv(ẋ, w) + conv(x, ẇ)`.
    #[track_caller]
    pub fn conv2d_jvp_full(
        &self,
        weight: &Self,
        options: Conv2d,
        t: (
            Option<&TensorTangent<B>>,
            Option<&TensorTangent<B>>,
            Option<NoTangent>,
        ),
    ) -> (Self, Option<TensorTangent<B>>) {
        let y = self.conv2d(weight, options);
        let dx = linear(t.0, |d| d.conv2d(weight, options));
        let dw = linear(t.1, |d| self.conv2d(d, options));
        let ty = sum_terms(y.shape(), [dx, dw]);
        (y, ty)
    }

    /// Forward rule of [`conv2d_with_bias`](Tensor::conv2d_with_bias):
    /// `ẏ = conv(ẋ, w) + conv(x, ẇ) + ḃ` (`ḃ` broadcast over the batch and the plane).
    #[track_caller]
    pub fn conv2d_with_bias_jvp_full(
        &self,
        weight: &Self,
        bias: &Self,
        options: Conv2d,
        t: BiasedTangents<'_, B>,
    ) -> (Self, Option<TensorTangent<B>>) {
        let y = self.conv2d_with_bias(weight, bias, options);
        let dx = linear(t.0, |d| d.conv2d(weight, options));
        let dw = linear(t.1, |d| self.conv2d(d, options));
        let db = linear(t.2, |d| d.reshape(&[d.len(), 1, 1]));
        let ty = sum_terms(y.shape(), [dx, dw, db]);
        (y, ty)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{boxed, check, rand};
    use super::Conv2d;
    use crate::Tensor;

    #[test]
    fn conv_rules() {
        let opts = [
            Conv2d::default(),
            Conv2d {
                stride: [2, 1],
                padding: [1, 2],
                dilation: [1, 2],
                groups: 1,
            },
            Conv2d {
                groups: 2,
                ..Conv2d::stride(1).padding(1)
            },
        ];
        for o in opts {
            let w_shape = [4, 4 / o.groups, 2, 3];
            check(
                "conv2d",
                &[rand(&[2, 4, 5, 6], 1), rand(&w_shape, 2), rand(&[4], 3)],
                |xs| {
                    let (y, pb) = xs[0].conv2d_with_bias_vjp_full(
                        &xs[1],
                        &xs[2],
                        o,
                        [true, true, true, false],
                    );
                    boxed((y, move |d| {
                        let (a, b, c, _) = pb(d);
                        (a, b, c)
                    }))
                },
            );
        }
    }

    #[test]
    fn exact_values() {
        let x = Tensor::from_vec((0..16).map(f64::from).collect::<Vec<_>>(), &[1, 1, 4, 4]);
        let w = Tensor::from_vec(vec![1.0_f64, 0.0, 0.0, 1.0], &[1, 1, 2, 2]);
        let y = x.conv2d(&w, Conv2d::stride(2));
        assert_eq!(y.to_vec_f64(), vec![5.0, 9.0, 21.0, 25.0]);
        assert_eq!(
            x.max_pool2d([2, 2], Conv2d::stride(2)).to_vec_f64(),
            vec![5.0, 7.0, 13.0, 15.0]
        );
        assert_eq!(
            x.avg_pool2d([2, 2], Conv2d::stride(2)).to_vec_f64(),
            vec![2.5, 4.5, 10.5, 12.5]
        );
    }

    #[test]
    #[should_panic(
        expected = "conv2d: input [1, 3, 4, 4] and weight [2, 2, 1, 1] do not match with groups = 1"
    )]
    fn bad_channels() {
        let _ =
            Tensor::zeros(&[1, 3, 4, 4]).conv2d(&Tensor::zeros(&[2, 2, 1, 1]), Conv2d::default());
    }
}
