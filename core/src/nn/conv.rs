//! [`Conv2d`] and [`MaxPool2d`] over NCHW tensors.

use super::init::{derive_seed, fan_in_uniform_on, kaiming_uniform_on};
use super::{Layer, no_parameters};
use crate::Differentiable;
use crate::gradient::without_derivative;
use crate::ops::conv::Conv2d as ConvOptions;
use crate::tensor::{Backend, Cpu, DType, Tensor, TensorTangent};
use adjoint_macros::{Differentiable, differentiable};

/// A 2-D convolution layer (cross-correlation, as PyTorch's `nn.Conv2d`) over NCHW input:
///
/// `y[n, o, i, j] = b[o] + Σ_{c, p, q} W[o, c, p, q] · x[n, g·C/G + c, i·s₀ + p·d₀ − p₀, j·s₁ + q·d₁ − p₁]`
///
/// with `g` the group of output channel `o` among `G = groups`, stride `s`, padding `p`,
/// dilation `d` from [`options`](Conv2d::options), and zero outside the image. `x` is
/// `[N, C, H, W]`, `y` is `[N, O, oh, ow]`, `oh = ⌊(H + 2p₀ − d₀(kh − 1) − 1)/s₀⌋ + 1`.
///
/// Parameters, in PyTorch's layout: `weight` `[O, C/G, kh, kw]`, `bias` `[O]` (or `None`).
/// Derivative: `W̄ = Σₙ ȳₙ · colsₙ(x)ᵀ`, `x̄ = col2im(Wᵀ · ȳ)` (the transposed convolution),
/// `b̄[o] = Σ_{n,i,j} ȳ[n, o, i, j]`; see [`Tensor::conv2d`].
///
/// Initialization: `W ~ U(−1/√fan_in, 1/√fan_in)` (Kaiming-uniform, `a = √5`) from `seed`,
/// `b ~ U(−1/√fan_in, 1/√fan_in)` from `derive_seed(seed, 1)`, `fan_in = C/G · kh · kw`.
///
/// Not to be confused with the options struct [`crate::ops::conv::Conv2d`] (exported by the
/// prelude as `Conv2d`), which this layer holds as `options`.
#[derive(Clone, Debug, Differentiable)]
pub struct Conv2d<B: Backend = Cpu> {
    /// `W`, of shape `[O, C/groups, kh, kw]`.
    pub weight: Tensor<B>,
    /// `b`, of shape `[O]`, or `None` for a convolution without bias.
    pub bias: Option<Tensor<B>>,
    /// Stride, padding, dilation and groups.
    #[no_derivative]
    pub options: ConvOptions,
}

impl Conv2d<Cpu> {
    /// A `Conv2d` from `input` to `output` channels with a `kernel` `[kh, kw]`, stride 1, no
    /// padding, with bias, `f32` on the CPU, initialized from `seed` as PyTorch does.
    ///
    /// # Panics
    /// If `input` or a kernel size is 0.
    #[track_caller]
    pub fn new(input: usize, output: usize, kernel: [usize; 2], seed: u64) -> Self {
        Self::new_on(
            input,
            output,
            kernel,
            ConvOptions::default(),
            true,
            seed,
            DType::F32,
            &Cpu,
        )
    }
}

impl<B: Backend> Conv2d<B> {
    /// A `Conv2d` with the given `options` (stride, padding, dilation, groups), with or without
    /// `bias`, of `dtype` on `device`, initialized from `seed` as PyTorch does.
    ///
    /// # Panics
    /// If `input` or a kernel size is 0, or the channel counts are not divisible by
    /// `options.groups`.
    #[track_caller]
    #[allow(clippy::too_many_arguments)]
    pub fn new_on(
        input: usize,
        output: usize,
        kernel: [usize; 2],
        options: ConvOptions,
        bias: bool,
        seed: u64,
        dtype: DType,
        device: &B::Device,
    ) -> Self {
        let groups = options.groups;
        assert!(
            groups > 0 && input.is_multiple_of(groups) && output.is_multiple_of(groups),
            "Conv2d: {input} input and {output} output channels must be divisible by groups = {groups}"
        );
        let fan_in = input / groups * kernel[0] * kernel[1];
        let shape = [output, input / groups, kernel[0], kernel[1]];
        Conv2d {
            weight: kaiming_uniform_on(&shape, fan_in, 5f64.sqrt(), seed, dtype, device),
            bias: bias
                .then(|| fan_in_uniform_on(&[output], fan_in, derive_seed(seed, 1), dtype, device)),
            options,
        }
    }

    /// A `Conv2d` with the given `weight` `[O, C/groups, kh, kw]`, `bias` `[O]` and options.
    ///
    /// # Panics
    /// If the shapes do not fit together.
    #[track_caller]
    pub fn from_parts(weight: Tensor<B>, bias: Option<Tensor<B>>, options: ConvOptions) -> Self {
        assert!(
            weight.rank() == 4
                && bias
                    .as_ref()
                    .is_none_or(|b| b.shape() == [weight.shape()[0]]),
            "Conv2d: weight {:?} must be [O, C/groups, kh, kw] and bias {:?} [O]",
            weight.shape(),
            bias.as_ref().map(|b| b.shape().to_vec())
        );
        Conv2d {
            weight,
            bias,
            options,
        }
    }
}

// The `where` clause: see "Generic impls" in the module docs.
#[differentiable]
impl<B: Backend> Layer<B> for Conv2d<B>
where
    Tensor<B>: Differentiable<Tangent = TensorTangent<B>>,
{
    /// The convolution of `x` `[N, C, H, W]`; see [`Conv2d`] for the math and derivative.
    #[differentiable]
    fn forward(&self, x: &Tensor<B>) -> Tensor<B> {
        let options = without_derivative(self).options;
        match self.bias.clone() {
            Some(b) => x.conv2d_with_bias(&self.weight, &b, options),
            None => x.conv2d(&self.weight, options),
        }
    }
}

/// 2-D max pooling over NCHW input: `y[n, c, i, j] = max_{p < kh, q < kw} x[n, c, i·s₀ + p·d₀ − p₀, j·s₁ + q·d₁ − p₁]`
/// (padding never wins). Derivative: `ȳ` goes to the maximal element of each window, split
/// evenly on a tie (PyTorch sends it to one), summed where windows overlap. No parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaxPool2d {
    /// The window size `[kh, kw]`.
    pub kernel: [usize; 2],
    /// Stride, padding and dilation of the windows (`groups` is ignored).
    pub options: ConvOptions,
}

impl MaxPool2d {
    /// Pooling over `kernel` windows with stride equal to the kernel (PyTorch's default), no
    /// padding.
    pub fn new(kernel: [usize; 2]) -> Self {
        MaxPool2d {
            kernel,
            options: ConvOptions {
                stride: kernel,
                ..ConvOptions::default()
            },
        }
    }

    /// Pooling over `kernel` windows with the given stride, padding and dilation.
    pub fn with_options(kernel: [usize; 2], options: ConvOptions) -> Self {
        MaxPool2d { kernel, options }
    }
}

no_parameters!(MaxPool2d);

// The `where` clause: see "Generic impls" in the module docs.
#[differentiable]
impl<B: Backend> Layer<B> for MaxPool2d
where
    Tensor<B>: Differentiable<Tangent = TensorTangent<B>>,
{
    /// The maximum of each window; see [`MaxPool2d`].
    #[differentiable]
    fn forward(&self, x: &Tensor<B>) -> Tensor<B> {
        let this = without_derivative(self);
        x.max_pool2d(this.kernel, this.options)
    }
}
