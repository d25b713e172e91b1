//! [`Mlp`] and [`Block`]: the feed-forward part of a transformer block, and the block.

use super::{CausalSelfAttention, Init};
use crate::Differentiable;
use crate::nn::{Dropout, Layer, LayerNorm, Linear};
use crate::tensor::{Backend, Cpu, Tensor, TensorTangent};
use adjoint_macros::{Differentiable, differentiable};

/// The feed-forward network of a transformer block (nanoGPT's `MLP`), applied to each
/// position: `y = drop(GELU(x · W_fcᵀ + b_fc) · W_projᵀ + b_proj)`, `C → 4C → C`, with the
/// exact GELU `x·Φ(x)`.
///
/// Derivative: with `h = x · W_fcᵀ + b_fc`, `h̄ = (ȳ · W_proj) ⊙ (Φ(h) + h·φ(h))`, then
/// [`Linear`]'s rule for both projections.
#[derive(Clone, Debug, Differentiable)]
pub struct Mlp<B: Backend = Cpu> {
    /// The expansion, `C → 4C`.
    pub c_fc: Linear<B>,
    /// The projection back, `4C → C`.
    pub c_proj: Linear<B>,
    /// Dropout of the output.
    pub dropout: Dropout,
}

impl<B: Backend> Mlp<B> {
    /// A feed-forward network of `init`'s configuration, drawn from it.
    pub(crate) fn init(init: &mut Init<'_, B>) -> Self {
        let c = init.config().width;
        Mlp {
            c_fc: init.linear(c, 4 * c, 0.02),
            c_proj: init.linear(4 * c, c, init.residual_std()),
            dropout: init.dropout(),
        }
    }
}

// The `where` clause: see "Generic impls" in the `nn` module docs.
#[differentiable]
impl<B: Backend> Layer<B> for Mlp<B>
where
    Tensor<B>: Differentiable<Tangent = TensorTangent<B>>,
{
    /// `drop(GELU(x · W_fcᵀ + b_fc) · W_projᵀ + b_proj)`; see [`Mlp`].
    #[differentiable]
    fn forward(&self, x: &Tensor<B>) -> Tensor<B> {
        let h = self.c_fc.forward(x).gelu_erf();
        self.dropout.forward(&self.c_proj.forward(&h))
    }
}

/// A transformer block with layer norms before each part (GPT-2's), on `x` `[B, T, C]`:
///
/// ```text
/// x' = x + attn(ln_1(x))
/// y  = x' + mlp(ln_2(x'))
/// ```
///
/// Derivative: the residual connections add the identity, `x̄' = ȳ + ln_2ᵀ(mlpᵀ(ȳ))` and
/// `x̄ = x̄' + ln_1ᵀ(attnᵀ(x̄'))` (each part's pullback, see [`CausalSelfAttention`], [`Mlp`]
/// and [`LayerNorm`]).
#[derive(Clone, Debug, Differentiable)]
pub struct Block<B: Backend = Cpu> {
    /// The norm before the attention.
    pub ln_1: LayerNorm<B>,
    /// The attention.
    pub attn: CausalSelfAttention<B>,
    /// The norm before the feed-forward network.
    pub ln_2: LayerNorm<B>,
    /// The feed-forward network.
    pub mlp: Mlp<B>,
}

impl<B: Backend> Block<B> {
    /// A block of `init`'s configuration, drawn from it.
    pub(crate) fn init(init: &mut Init<'_, B>) -> Self {
        Block {
            ln_1: init.layer_norm(),
            attn: CausalSelfAttention::init(init),
            ln_2: init.layer_norm(),
            mlp: Mlp::init(init),
        }
    }

    /// Switches its dropouts to training (`true`) or evaluation (`false`) mode.
    pub fn train(&mut self, training: bool) {
        self.attn.train(training);
        self.mlp.dropout.train(training);
    }
}

// The `where` clause: see "Generic impls" in the `nn` module docs.
#[differentiable]
impl<B: Backend> Layer<B> for Block<B>
where
    Tensor<B>: Differentiable<Tangent = TensorTangent<B>>,
{
    /// `x' = x + attn(ln_1(x))`, then `x' + mlp(ln_2(x'))`; see [`Block`].
    #[differentiable]
    fn forward(&self, x: &Tensor<B>) -> Tensor<B> {
        let x = x + self.attn.forward(&self.ln_1.forward(x));
        &x + self.mlp.forward(&self.ln_2.forward(&x))
    }
}
