//! [`CausalSelfAttention`]: multi-head self-attention where each position sees only itself
//! and the positions before it.

use super::Init;
use crate::Differentiable;
use crate::gradient::without_derivative;
use crate::nn::{Dropout, Layer, Linear};
use crate::tensor::{Backend, Cpu, Tensor, TensorTangent};
use adjoint_macros::{Differentiable, differentiable};

/// Causal multi-head self-attention (nanoGPT's `CausalSelfAttention`), on `x` of shape
/// `[B, T, C]` with `H` heads of width `D = C/H`:
///
/// ```text
/// q, k, v = split(x · W_attnᵀ + b_attn, [C, C, C])       each viewed as [B, H, T, D]
/// P = softmax(mask(q · kᵀ / √D))                           [B, H, T, T], mask: −∞ where j > i
/// y = (drop(P) · v) viewed as [B, T, C]
/// out = drop(y · W_projᵀ + b_proj)
/// ```
///
/// Derivative: composed from the ops' rules. With `Ȳ = P̄ · …`, the softmax's
/// `S̄ = P ⊙ (P̄ − Σⱼ P̄ ⊙ P)` is zero at the masked entries (there `P = 0`), so no
/// derivative reaches a later position; `q̄ = S̄ · k/√D`, `k̄ = S̄ᵀ · q/√D`, `v̄ = Pᵀ · ȳ`,
/// and the projections' as [`Linear`]'s.
#[derive(Clone, Debug, Differentiable)]
pub struct CausalSelfAttention<B: Backend = Cpu> {
    /// The query, key and value projections in one, `C → 3C`.
    pub c_attn: Linear<B>,
    /// The output projection, `C → C`.
    pub c_proj: Linear<B>,
    /// Dropout of the attention probabilities.
    pub attn_dropout: Dropout,
    /// Dropout of the output.
    pub resid_dropout: Dropout,
    /// The number of heads `H`.
    #[no_derivative]
    pub heads: usize,
}

impl<B: Backend> CausalSelfAttention<B> {
    /// An attention layer of `init`'s configuration, drawn from it.
    pub(crate) fn init(init: &mut Init<'_, B>) -> Self {
        let config = init.config();
        let c = config.width;
        CausalSelfAttention {
            c_attn: init.linear(c, 3 * c, 0.02),
            c_proj: init.linear(c, c, init.residual_std()),
            attn_dropout: init.dropout(),
            resid_dropout: init.dropout(),
            heads: config.heads,
        }
    }

    /// Switches its dropouts to training (`true`) or evaluation (`false`) mode.
    pub fn train(&mut self, training: bool) {
        self.attn_dropout.train(training);
        self.resid_dropout.train(training);
    }
}

/// The causal mask of `t` positions, `[t, t]`, 1 where a query `i` must not see key `j`
/// (`j > i`), in `like`'s dtype on its device.
pub(crate) fn causal_mask<B: Backend>(t: usize, like: &Tensor<B>) -> Tensor<B> {
    Tensor::ones_on(&[t, t], like.dtype(), &like.device()).triu(1)
}

// The `where` clause: see "Generic impls" in the `nn` module docs.
#[differentiable]
impl<B: Backend> Layer<B> for CausalSelfAttention<B>
where
    Tensor<B>: Differentiable<Tangent = TensorTangent<B>>,
{
    /// The attention of `x` `[B, T, C]` to itself; see [`CausalSelfAttention`].
    ///
    /// # Panics
    /// If `x` is not `[B, T, C]` with `C` the layer's width.
    #[differentiable]
    fn forward(&self, x: &Tensor<B>) -> Tensor<B> {
        let heads = without_derivative(self).heads;
        let (b, t, c) = (x.shape()[0], x.shape()[1], x.shape()[2]);
        let qkv = self.c_attn.forward(x).split(&[c, c, c], -1);
        let d = c / heads;
        // Each [B, T, C] viewed as [B, H, T, D]; the query scaled by 1/√D.
        let q = (&qkv[0] * (1.0 / (d as f64).sqrt())).reshape(&[b, t, heads, d]);
        let q = q.permute(&[0, 2, 1, 3]);
        let k = qkv[1].reshape(&[b, t, heads, d]).permute(&[0, 2, 1, 3]);
        let v = qkv[2].reshape(&[b, t, heads, d]).permute(&[0, 2, 1, 3]);
        let mask = causal_mask(t, without_derivative(x));
        let scores = q.matmul(&k.transpose(-2, -1));
        let p = scores.masked_fill(&mask, f64::NEG_INFINITY).softmax(-1);
        let y = self.attn_dropout.forward(&p).matmul(&v);
        let y = y.permute(&[0, 2, 1, 3]).reshape(&[b, t, c]);
        self.resid_dropout.forward(&self.c_proj.forward(&y))
    }
}
