//! [`Gpt`]: the whole language model, and sampling from it.

use super::{Block, GptConfig, Init};
use crate::Differentiable;
use crate::gradient::without_derivative;
use crate::nn::init::derive_seed;
use crate::nn::{Dropout, Embedding, Layer, LayerNorm};
use crate::tensor::{Backend, Cpu, DType, Tensor, TensorTangent};
use adjoint_macros::{Differentiable, differentiable};

/// A GPT language model (nanoGPT's `GPT`): token ids `[B, T]` (`U32`, `T ≤ context`) to
/// next-token scores `[B, T, V]`; see the [module docs](super) for the math, the weight tying
/// and the parameter names.
///
/// ```
/// use adjoint::nn::{Gpt, GptConfig, Layer};
/// use adjoint::prelude::*;
///
/// let config = GptConfig { layers: 1, heads: 2, width: 8, context: 4, vocab: 5, dropout: 0.0, bias: true };
/// let model = Gpt::new(config, 0);
/// let ids = Tensor::from_vec(vec![0_u32, 3, 1, 4], &[1, 4]);
/// let targets = Tensor::from_vec(vec![3_u32, 1, 4, 2], &[1, 4]);
/// assert_eq!(model.forward(&ids).shape(), [1, 4, 5]);
/// let (loss, grad) = value_with_gradient(model.loss_vjp(&ids, &targets));
/// assert!((loss.to_scalar() - 5f64.ln()).abs() < 0.1); // about uniform at the start
/// assert_eq!(grad.wte.weight.unwrap().shape(), [5, 8]);
/// ```
#[derive(Clone, Debug, Differentiable)]
pub struct Gpt<B: Backend = Cpu> {
    /// The token embedding `[V, C]`, also the output projection.
    pub wte: Embedding<B>,
    /// The position embedding `[T_max, C]`.
    pub wpe: Embedding<B>,
    /// Dropout of the embeddings' sum.
    pub drop: Dropout,
    /// The blocks.
    pub h: Vec<Block<B>>,
    /// The final layer norm.
    pub ln_f: LayerNorm<B>,
    /// The size of the model.
    #[no_derivative]
    pub config: GptConfig,
}

impl Gpt<Cpu> {
    /// A freshly initialized `f32` model on the CPU, drawn from `seed`.
    ///
    /// # Panics
    /// If `config.width` is not a positive multiple of `config.heads`, or the dropout rate
    /// is not in `[0, 1)`.
    #[track_caller]
    pub fn new(config: GptConfig, seed: u64) -> Self {
        Self::new_on(config, seed, DType::F32, &Cpu)
    }
}

impl<B: Backend> Gpt<B> {
    /// A freshly initialized model of `dtype` on `device`, drawn from `seed` (see the
    /// [module docs](super)).
    ///
    /// # Panics
    /// As [`Gpt::new`].
    #[track_caller]
    pub fn new_on(config: GptConfig, seed: u64, dtype: DType, device: &B::Device) -> Self {
        let mut init = Init::new(config, seed, dtype, device);
        let wte = Embedding::from_parts(init.normal(&[config.vocab, config.width], 0.02));
        let wpe = Embedding::from_parts(init.normal(&[config.context, config.width], 0.02));
        let drop = init.dropout();
        let h = (0..config.layers).map(|_| Block::init(&mut init)).collect();
        Gpt {
            wte,
            wpe,
            drop,
            h,
            ln_f: init.layer_norm(),
            config,
        }
    }

    /// Switches every dropout to training (`true`) or evaluation (`false`) mode.
    pub fn train(&mut self, training: bool) {
        self.drop.train(training);
        for block in &mut self.h {
            block.train(training);
        }
    }

    /// The parameter group of `θ` at `path` for AdamW: 0 (weight decay) for the matrices
    /// of the linear layers, 1 (none) for biases, norms and the embeddings. For
    /// [`Groups::by`](crate::optim::Groups::by), with the decayed group first.
    pub fn decay_group(path: &str, param: &Tensor<B>) -> usize {
        let embedding = path.starts_with("wte.") || path.starts_with("wpe.");
        usize::from(param.rank() < 2 || embedding)
    }

    /// `count` tokens drawn one after the other after `prompt` (which must not be empty),
    /// each from the model's scores at the last position, with dropout off; each forward
    /// pass reads the last `context` tokens at most. Returns the new tokens.
    ///
    /// # Panics
    /// If `prompt` is empty or holds an id `≥ V`, or `sampling` is invalid (see [`Sampling`]).
    #[track_caller]
    pub fn generate(&self, prompt: &[u32], count: usize, sampling: Sampling) -> Vec<u32> {
        assert!(!prompt.is_empty(), "Gpt::generate: the prompt is empty");
        let mut model = self.clone();
        model.train(false);
        let device = self.wte.weight.device();
        let mut tokens = prompt.to_vec();
        for i in 0..count {
            let window = &tokens[tokens.len().saturating_sub(self.config.context)..];
            let ids = Tensor::from_vec_on(window.to_vec(), &[1, window.len()], &device);
            let logits = model.forward(&ids).narrow(1, window.len() - 1, 1);
            let next = sampling.draw(&logits.to_vec_f64(), derive_seed(sampling.seed, i as u64));
            tokens.push(next);
        }
        tokens.split_off(prompt.len())
    }
}

/// Panics unless a sequence of `t` positions fits a context of `context`.
#[track_caller]
fn check_context(t: usize, context: usize) {
    assert!(
        t <= context,
        "Gpt: a sequence of {t} tokens is longer than the context of {context}"
    );
}

// The `where` clause: see "Generic impls" in the `nn` module docs.
#[differentiable]
impl<B: Backend> Layer<B> for Gpt<B>
where
    Tensor<B>: Differentiable<Tangent = TensorTangent<B>>,
{
    /// The scores `[B, T, V]` of the next token after each prefix of the ids `x` `[B, T]`;
    /// see the [module docs](super).
    ///
    /// # Panics
    /// If `x` is not `U32` of shape `[B, T]` with `T ≤ context`, or holds an id `≥ V`.
    #[differentiable]
    fn forward(&self, x: &Tensor<B>) -> Tensor<B> {
        let t = x.shape()[1];
        check_context(t, without_derivative(self).config.context);
        let tokens = self.wte.forward(x) + self.wpe.weight.narrow(0, 0, t);
        let mut h = self.drop.forward(&tokens);
        for block in &self.h {
            h = block.forward(&h);
        }
        self.ln_f.forward(&h).matmul(&self.wte.weight.t())
    }
}

#[differentiable]
impl<B: Backend> Gpt<B>
where
    Tensor<B>: Differentiable<Tangent = TensorTangent<B>>,
{
    /// The mean cross-entropy of the next-token scores of `ids` `[B, T]` against `targets`
    /// `[B, T]` (the ids shifted by one), `−(1/BT) Σ log softmax(logits)[targets]`.
    ///
    /// Derivative: `logits̄ = (softmax(logits) − onehot(targets))/BT`, then [`Gpt::forward`]'s.
    ///
    /// # Panics
    /// As [`forward`](Layer::forward), or if `targets` has another shape or an id `≥ V`.
    #[differentiable]
    pub fn loss(
        &self,
        #[no_derivative] ids: &Tensor<B>,
        #[no_derivative] targets: &Tensor<B>,
    ) -> Tensor<B> {
        self.forward(ids).cross_entropy(targets)
    }
}

/// How [`Gpt::generate`] picks each token from the scores `s` of the last position: from
/// `softmax(s / temperature)` restricted to the `top_k` highest scores (all if `None`), by a
/// uniform draw from `derive_seed(seed, i)` for the `i`-th token. `temperature = 0` picks the
/// highest score (the first on a tie).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    /// Divides the scores: below 1 sharper, above 1 flatter; 0 for the arg max.
    pub temperature: f64,
    /// Keep only the `k` highest scores.
    pub top_k: Option<usize>,
    /// The seed of the draws.
    pub seed: u64,
}

impl Sampling {
    /// The id drawn from `scores` with the seed `seed`.
    ///
    /// # Panics
    /// If the temperature is negative or not finite, or `top_k` is `Some(0)`.
    #[track_caller]
    fn draw(&self, scores: &[f64], seed: u64) -> u32 {
        assert!(
            self.temperature.is_finite() && self.temperature >= 0.0,
            "Sampling: temperature {} must be finite and ≥ 0",
            self.temperature
        );
        assert!(self.top_k != Some(0), "Sampling: top_k must be at least 1");
        let best = (0..scores.len()).fold(0, |b, i| if scores[i] > scores[b] { i } else { b });
        if self.temperature == 0.0 {
            return best as u32;
        }
        let mut sorted = scores.to_vec();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let k = self.top_k.unwrap_or(scores.len()).min(scores.len());
        let floor = sorted[k - 1];
        let weights: Vec<f64> = scores
            .iter()
            .map(|&s| {
                if s >= floor {
                    ((s - scores[best]) / self.temperature).exp()
                } else {
                    0.0
                }
            })
            .collect();
        // A uniform draw in [0, 1) from the top 53 bits, scaled to the total weight.
        let u = (seed >> 11) as f64 / (1u64 << 53) as f64 * weights.iter().sum::<f64>();
        let mut acc = 0.0;
        for (i, w) in weights.iter().enumerate() {
            acc += w;
            if u < acc {
                return i as u32;
            }
        }
        best as u32
    }
}

#[cfg(test)]
mod tests {
    use super::Sampling;

    fn sampling(temperature: f64, top_k: Option<usize>) -> Sampling {
        Sampling {
            temperature,
            top_k,
            seed: 0,
        }
    }

    #[test]
    fn temperature_zero_is_the_arg_max() {
        assert_eq!(sampling(0.0, None).draw(&[0.1, 3.0, 2.0, 3.0], 5), 1);
    }

    #[test]
    fn top_one_is_the_arg_max_whatever_the_draw() {
        for seed in [0, 1 << 63, u64::MAX] {
            assert_eq!(sampling(1.0, Some(1)).draw(&[0.1, 3.0, 2.0], seed), 1);
        }
    }

    #[test]
    fn draws_follow_the_softmax_of_the_top_k() {
        // Scores ln 1, ln 3, ln 100 with top-2: probabilities 0 (cut), 3/103, 100/103.
        // The draw u·Σw with Σw = (3 + 100)/100 = 1.03 crosses 0.03 (the second weight) at
        // u = 0.03/1.03.
        let s = sampling(1.0, Some(2));
        let scores = [1f64.ln(), 3f64.ln(), 100f64.ln()];
        let at = |u: f64| ((u * (1u64 << 53) as f64) as u64) << 11;
        assert_eq!(s.draw(&scores, at(0.0)), 1);
        assert_eq!(s.draw(&scores, at(0.029)), 1);
        assert_eq!(s.draw(&scores, at(0.03)), 2);
        assert_eq!(s.draw(&scores, at(0.999)), 2);
        // Temperature 2 flattens: weights √(1/100), √(3/100), 1 over all three.
        let t = sampling(2.0, None);
        let total = 0.1 + 0.03f64.sqrt() + 1.0;
        assert_eq!(t.draw(&scores, at(0.09 / total)), 0);
        assert_eq!(t.draw(&scores, at(0.11 / total)), 1);
    }

    #[test]
    #[should_panic(expected = "top_k must be at least 1")]
    fn top_zero_is_refused() {
        sampling(1.0, Some(0)).draw(&[0.0], 0);
    }
}
