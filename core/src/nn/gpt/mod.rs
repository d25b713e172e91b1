//! A GPT (decoder-only transformer, GPT-2's layout as in nanoGPT): [`Gpt`] of [`Block`]s, each
//! a [`CausalSelfAttention`] and an [`Mlp`] behind pre-layer-norm residual connections, sized
//! by a [`GptConfig`].
//!
//! ```text
//! x₀ = drop(wte[ids] + wpe[0..T])                         [B, T, C]
//! xₗ' = xₗ + attn(ln_1(xₗ)),  xₗ₊₁ = xₗ' + mlp(ln_2(xₗ'))   for each block
//! logits = ln_f(x_L) · wteᵀ                                [B, T, V]
//! ```
//!
//! The output projection is tied to the token embedding (GPT-2's weight tying): the one
//! parameter `wte.weight` is read twice, and its gradient is the sum of both reads' tangents,
//! `W̄ = scatter_add(ȳ_embedding by id) + ȳ_logitsᵀ · ln_f(x_L)`, as the `#[differentiable]`
//! code gives any value used twice.
//!
//! Parameters are named as in nanoGPT's `state_dict` without its `transformer.` prefix (`wte.weight`,
//! `h.0.attn.c_attn.weight`, …; no `lm_head.weight`, which is `wte.weight`), with PyTorch's
//! `[out, in]` layout, so that checkpoints move between the two by renaming.
//!
//! Initialization, as nanoGPT's `_init_weights`: every linear weight and both embeddings
//! `N(0, 0.02²)`, the residual projections (`c_proj`) `N(0, (0.02/√(2L))²)`, biases 0,
//! layer norms `γ = 1`, `β = 0`; tensor `k` of the model is drawn from `derive_seed(seed, k)`.

mod attention;
mod block;
mod model;

pub use attention::CausalSelfAttention;
pub use block::{Block, Mlp};
pub use model::{Gpt, Sampling};

use super::init::derive_seed;
use super::{Dropout, LayerNorm, Linear};
use crate::tensor::{Backend, DType, Tensor};

/// The size of a [`Gpt`] (nanoGPT's `GPTConfig`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GptConfig {
    /// The number of blocks `L`.
    pub layers: usize,
    /// Attention heads per block `H`; `width` must be a multiple of it.
    pub heads: usize,
    /// The embedding width `C`.
    pub width: usize,
    /// The longest sequence `T_max` (rows of the position embedding).
    pub context: usize,
    /// The vocabulary size `V`.
    pub vocab: usize,
    /// The dropout rate of the embeddings, attention probabilities and residual branches.
    pub dropout: f64,
    /// Whether the linear layers and layer norms have biases.
    pub bias: bool,
}

impl GptConfig {
    /// nanoGPT's character-level configuration for a CPU (its README's `--device=cpu` run):
    /// 4 layers, 4 heads, width 128, context 64, no dropout, no biases.
    pub fn nano_cpu(vocab: usize) -> Self {
        GptConfig {
            layers: 4,
            heads: 4,
            width: 128,
            context: 64,
            vocab,
            dropout: 0.0,
            bias: false,
        }
    }

    /// The width of one head, `C / H`.
    ///
    /// # Panics
    /// If `width` is not a positive multiple of `heads`.
    #[track_caller]
    pub fn head_width(&self) -> usize {
        assert!(
            self.heads > 0 && self.width > 0 && self.width.is_multiple_of(self.heads),
            "GptConfig: width {} must be a positive multiple of heads {}",
            self.width,
            self.heads
        );
        self.width / self.heads
    }
}

/// Draws a model's tensors, the `k`-th from `derive_seed(seed, k)`, with nanoGPT's
/// initialization, in `dtype` on `device`.
pub(crate) struct Init<'a, B: Backend> {
    config: GptConfig,
    seed: u64,
    drawn: u64,
    dtype: DType,
    device: &'a B::Device,
}

impl<'a, B: Backend> Init<'a, B> {
    /// Tensors for a model of `config` from `seed`.
    pub(crate) fn new(config: GptConfig, seed: u64, dtype: DType, device: &'a B::Device) -> Self {
        config.head_width();
        Init {
            config,
            seed,
            drawn: 0,
            dtype,
            device,
        }
    }

    /// The configuration.
    pub(crate) fn config(&self) -> GptConfig {
        self.config
    }

    /// A `N(0, std²)` tensor of `shape`, from the next seed.
    pub(crate) fn normal(&mut self, shape: &[usize], std: f64) -> Tensor<B> {
        let seed = derive_seed(self.seed, self.drawn);
        self.drawn += 1;
        Tensor::rand_normal_on(shape, 0.0, std, seed, self.dtype, self.device)
    }

    /// A linear layer `inputs → outputs`, weight `N(0, std²)`, bias 0 if the config has
    /// biases.
    pub(crate) fn linear(&mut self, inputs: usize, outputs: usize, std: f64) -> Linear<B> {
        let weight = self.normal(&[outputs, inputs], std);
        let bias = self
            .config
            .bias
            .then(|| Tensor::zeros_on(&[outputs], self.dtype, self.device));
        Linear::from_parts(weight, bias)
    }

    /// The weight std of the residual projections, `0.02/√(2L)`.
    pub(crate) fn residual_std(&self) -> f64 {
        0.02 / (2.0 * self.config.layers as f64).sqrt()
    }

    /// A layer norm over the width, `γ = 1`, `β = 0` if the config has biases.
    pub(crate) fn layer_norm(&self) -> LayerNorm<B> {
        let norm = LayerNorm::new_on(self.config.width, self.dtype, self.device);
        if self.config.bias {
            norm
        } else {
            norm.without_bias()
        }
    }

    /// A dropout layer of the config's rate, its masks from the next seed.
    pub(crate) fn dropout(&mut self) -> Dropout {
        let seed = derive_seed(self.seed, self.drawn);
        self.drawn += 1;
        Dropout::new(self.config.dropout, seed)
    }
}
