//! [`Dropout`]: random zeroing in training, identity in evaluation.

use super::init::derive_seed;
use super::{Layer, no_parameters};
use crate::Differentiable;
use crate::gradient::without_derivative;
use crate::tensor::{Backend, Tensor, TensorTangent};
use adjoint_macros::differentiable;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Dropout (PyTorch's `nn.Dropout(p)`): in training mode each element is zeroed with
/// probability `p` and the others scaled by `1/(1 − p)`, `y = x · m/(1 − p)` with
/// `m ~ Bernoulli(1 − p)`; in evaluation mode (or with `p = 0`) `y = x`.
///
/// Derivative: `x̄ = ȳ · m/(1 − p)` with the same mask (`x̄ = ȳ` in evaluation).
///
/// The mask is drawn on the device from a seed. The layer holds a call counter and every
/// training call of `forward` or `forward_vjp` uses the next seed `derive_seed(seed, k)`, so
/// successive calls get different masks and a run is reproducible from the constructor's
/// `seed`. Clones share the counter (as they share parameter tensors): differentiable code
/// clones the layers of a model it reads (`self.first.forward(x)` in a [`Chain`](super::Chain)),
/// and a dropout inside still draws a fresh mask on every call. Two layers made by
/// [`Dropout::new`] with the same seed draw the same sequence of masks. The counter is atomic,
/// so a model may be shared between threads. No parameters: rate, mode and counter are not
/// differentiated.
#[derive(Clone, Debug)]
pub struct Dropout {
    /// The probability `p ∈ [0, 1)` of zeroing an element.
    pub p: f64,
    /// Training mode (masks drawn) if `true`, evaluation mode (identity) if `false`.
    pub training: bool,
    seed: u64,
    calls: Arc<AtomicU64>,
}

impl Dropout {
    /// Dropout with rate `p`, in training mode, masks drawn from `seed`.
    ///
    /// # Panics
    /// If `p` is not in `[0, 1)`.
    #[track_caller]
    pub fn new(p: f64, seed: u64) -> Self {
        assert!(
            (0.0..1.0).contains(&p),
            "Dropout: p = {p} must be in [0, 1)"
        );
        Dropout {
            p,
            training: true,
            seed,
            calls: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Switches to training mode (`true`) or evaluation mode (`false`).
    pub fn train(&mut self, training: bool) {
        self.training = training;
    }

    /// Whether the next call draws a mask.
    fn active(&self) -> bool {
        self.training && self.p > 0.0
    }

    /// The seed of the next mask, advancing the counter.
    fn next_seed(&self) -> u64 {
        derive_seed(self.seed, self.calls.fetch_add(1, Ordering::Relaxed))
    }
}

no_parameters!(Dropout);

// The `where` clause: see "Generic impls" in the module docs.
#[differentiable]
impl<B: Backend> Layer<B> for Dropout
where
    Tensor<B>: Differentiable<Tangent = TensorTangent<B>>,
{
    /// `x · m/(1 − p)` with a fresh mask in training mode, `x` in evaluation mode; see
    /// [`Dropout`].
    #[differentiable]
    fn forward(&self, x: &Tensor<B>) -> Tensor<B> {
        let this = without_derivative(self);
        if this.active() {
            x.dropout(this.p, this.next_seed())
        } else {
            x.clone()
        }
    }
}
