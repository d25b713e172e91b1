//! [`LayerNorm`]: normalization over the last axis.

use super::Layer;
use crate::Differentiable;
use crate::gradient::without_derivative;
use crate::tensor::{Backend, Cpu, DType, Tensor, TensorTangent};
use adjoint_macros::{Differentiable, differentiable};

/// Layer normalization over the last axis (PyTorch's `nn.LayerNorm(D)`):
/// `y = (x − μ)/√(σ² + ε) · γ + β`, with `μ`, `σ²` the mean and (biased) variance of the last
/// axis of size `D`; without a bias ([`LayerNorm::without_bias`], PyTorch's `bias=False`),
/// `β = 0` and is not a parameter.
///
/// Derivative, with `x̂ = (x − μ)·r`, `r = 1/√(σ² + ε)` and `ĝ = ȳ·γ`:
/// `β̄ = Σ ȳ`, `γ̄ = Σ ȳ·x̂` (sums over all but the last axis),
/// `x̄ = r · (ĝ − mean(ĝ) − x̂ · mean(ĝ·x̂))` (means over the last axis).
///
/// Initialization: `γ = 1`, `β = 0`, `ε = 10⁻⁵`.
#[derive(Clone, Debug, Differentiable)]
pub struct LayerNorm<B: Backend = Cpu> {
    /// `γ`, of shape `[D]`.
    pub weight: Tensor<B>,
    /// `β`, of shape `[D]`, if the layer has one.
    pub bias: Option<Tensor<B>>,
    /// `ε`, added to the variance.
    #[no_derivative]
    pub eps: f64,
}

impl LayerNorm<Cpu> {
    /// A `LayerNorm` over a last axis of size `dim`, `f32` on the CPU, `γ = 1`, `β = 0`,
    /// `ε = 10⁻⁵`.
    pub fn new(dim: usize) -> Self {
        Self::new_on(dim, DType::F32, &Cpu)
    }
}

impl<B: Backend> LayerNorm<B> {
    /// A `LayerNorm` of `dtype` on `device`, `γ = 1`, `β = 0`, `ε = 10⁻⁵`.
    pub fn new_on(dim: usize, dtype: DType, device: &B::Device) -> Self {
        LayerNorm {
            weight: Tensor::ones_on(&[dim], dtype, device),
            bias: Some(Tensor::zeros_on(&[dim], dtype, device)),
            eps: 1e-5,
        }
    }

    /// This layer with `ε = eps`.
    pub fn with_eps(self, eps: f64) -> Self {
        LayerNorm { eps, ..self }
    }

    /// This layer without its bias: `β = 0`, not a parameter.
    pub fn without_bias(self) -> Self {
        LayerNorm { bias: None, ..self }
    }
}

// The `where` clause: see "Generic impls" in the module docs.
#[differentiable]
impl<B: Backend> Layer<B> for LayerNorm<B>
where
    Tensor<B>: Differentiable<Tangent = TensorTangent<B>>,
{
    /// `(x − μ)/√(σ² + ε) · γ + β` over the last axis; see [`LayerNorm`].
    #[differentiable]
    fn forward(&self, x: &Tensor<B>) -> Tensor<B> {
        let eps = without_derivative(self).eps;
        match self.bias.clone() {
            Some(b) => x.layer_norm(&self.weight, &b, eps),
            None => x.layer_norm(&self.weight, &self.weight.zeros_like(), eps),
        }
    }
}
