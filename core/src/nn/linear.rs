//! [`Linear`]: the affine layer `y = x · Wᵀ + b`.

use super::Layer;
use super::init::{derive_seed, fan_in_uniform_on, kaiming_uniform_on};
use crate::Differentiable;
use crate::tensor::{Backend, Cpu, DType, Tensor, TensorTangent};
use adjoint_macros::{Differentiable, differentiable};

/// A fully connected layer, `y = x · Wᵀ + b`, with PyTorch's layout (so weights move between
/// adjoint and PyTorch through safetensors unchanged): `weight` is `[out, in]`, `bias` is
/// `[out]`, or absent (`y = x · Wᵀ`, PyTorch's `bias=False`, [`Linear::without_bias`]). The
/// input is `[…, in]` (any leading batch axes), the output `[…, out]`.
///
/// Derivative, with `ȳ` of shape `[…, out]`: `x̄ = ȳ · W`, `W̄ = Σ ȳᵀ · x` (over the batch
/// axes), `b̄ = Σ ȳ` (over all but the last axis).
///
/// Initialization (see [`super::init`]): `W ~ U(−1/√in, 1/√in)` (Kaiming-uniform, `a = √5`)
/// from `seed`, `b ~ U(−1/√in, 1/√in)` from `derive_seed(seed, 1)`.
///
/// ```
/// use adjoint::prelude::*;
/// use adjoint::nn::{Layer, Linear};
///
/// let layer = Linear::from_parts(
///     Tensor::from_vec(vec![1.0_f32, 2.0, 3.0, 4.0], &[2, 2]),
///     Some(Tensor::from_vec(vec![0.5_f32, -0.5], &[2])),
/// );
/// let y = layer.forward(&Tensor::from_vec(vec![1.0_f32, 1.0], &[1, 2]));
/// assert_eq!(y.to_vec_f32(), [3.5, 6.5]);
/// ```
#[derive(Clone, Debug, Differentiable)]
pub struct Linear<B: Backend = Cpu> {
    /// `W`, of shape `[out, in]`.
    pub weight: Tensor<B>,
    /// `b`, of shape `[out]`, if the layer has one.
    pub bias: Option<Tensor<B>>,
}

impl Linear<Cpu> {
    /// A `Linear` with `input` inputs and `output` outputs, `f32` on the CPU, initialized from
    /// `seed` as PyTorch does.
    ///
    /// # Panics
    /// If `input` is 0.
    #[track_caller]
    pub fn new(input: usize, output: usize, seed: u64) -> Self {
        Self::new_on(input, output, seed, DType::F32, &Cpu)
    }
}

impl<B: Backend> Linear<B> {
    /// A `Linear` of the given dtype on `device`, initialized from `seed` as PyTorch does.
    ///
    /// # Panics
    /// If `input` is 0 or `dtype` is not a float type.
    #[track_caller]
    pub fn new_on(
        input: usize,
        output: usize,
        seed: u64,
        dtype: DType,
        device: &B::Device,
    ) -> Self {
        Linear {
            weight: kaiming_uniform_on(&[output, input], input, 5f64.sqrt(), seed, dtype, device),
            bias: Some(fan_in_uniform_on(
                &[output],
                input,
                derive_seed(seed, 1),
                dtype,
                device,
            )),
        }
    }

    /// A `Linear` with the given `weight [out, in]` and `bias [out]` (or none).
    ///
    /// # Panics
    /// If the shapes do not fit together.
    #[track_caller]
    pub fn from_parts(weight: Tensor<B>, bias: Option<Tensor<B>>) -> Self {
        assert!(
            weight.rank() == 2
                && bias
                    .as_ref()
                    .is_none_or(|b| b.shape() == [weight.shape()[0]]),
            "Linear: weight {:?} must be [out, in] and bias {:?} [out]",
            weight.shape(),
            bias.as_ref().map(Tensor::shape)
        );
        Linear { weight, bias }
    }

    /// This layer without its bias: `y = x · Wᵀ` (PyTorch's `nn.Linear(…, bias=False)`).
    pub fn without_bias(self) -> Self {
        Linear { bias: None, ..self }
    }

    /// The number of inputs, `in`.
    pub fn input_size(&self) -> usize {
        self.weight.shape()[1]
    }

    /// The number of outputs, `out`.
    pub fn output_size(&self) -> usize {
        self.weight.shape()[0]
    }
}

// The `where` clause works around the macro bounding `Tensor<B>: Differentiable` without its
// tangent type (see `super` docs, "Generic impls").
#[differentiable]
impl<B: Backend> Layer<B> for Linear<B>
where
    Tensor<B>: Differentiable<Tangent = TensorTangent<B>>,
{
    /// `x · Wᵀ + b` (`x · Wᵀ` without a bias); see [`Linear`] for the derivative.
    #[differentiable]
    fn forward(&self, x: &Tensor<B>) -> Tensor<B> {
        match self.bias.clone() {
            Some(b) => x.matmul(&self.weight.t()) + &b,
            None => x.matmul(&self.weight.t()),
        }
    }
}
