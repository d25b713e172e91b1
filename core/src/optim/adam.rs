//! [`Adam`]: Adam and AdamW, as `torch.optim.Adam` and `torch.optim.AdamW`.

use super::{Optimizer, Select, Slots, check_non_negative, fused_update};
use crate::Parameters;
use crate::tensor::{Backend, Cpu, Tensor, UpdateOp};

/// The moments of one parameter and its own step count.
#[derive(Clone, Debug)]
struct Moments<B: Backend> {
    step: u64,
    m: Tensor<B>,
    v: Tensor<B>,
}

/// Adam (Kingma & Ba) and, with decoupled weight decay, AdamW (Loshchilov & Hutter):
/// `torch.optim.Adam` and `torch.optim.AdamW`, formula for formula.
///
/// For each parameter `θ` with gradient `g`, at its `t`-th step (from 1), with learning rate
/// `γ`, betas `β₁, β₂`, `ε` and weight decay `λ`, and moments `m₀ = v₀ = 0`:
///
/// ```text
/// θ ← θ·(1 − γλ)                        (AdamW: decoupled decay)
/// g ← g + λ·θ                           (Adam: L2 penalty, if λ ≠ 0)
/// m ← β₁·m + (1 − β₁)·g
/// v ← β₂·v + (1 − β₂)·g²
/// m̂ = m / (1 − β₁ᵗ),   v̂ = v / (1 − β₂ᵗ)
/// θ ← θ − γ·m̂ / (√v̂ + ε)
/// ```
///
/// The last line is evaluated as PyTorch does, `θ − (γ/(1 − β₁ᵗ))·m / (√v/√(1 − β₂ᵗ) + ε)`,
/// and the first moment with PyTorch's `lerp` (see [`UpdateOp::Adam`]). Defaults are
/// PyTorch's: `β = (0.9, 0.999)`, `ε = 10⁻⁸`, `λ = 0` for [`Adam::new`] and `λ = 10⁻²` for
/// [`Adam::adamw`]. `amsgrad`, `maximize` and a tensor learning rate are not implemented.
///
/// ```
/// use adjoint::optim::{Adam, Optimizer};
/// use adjoint::prelude::*;
///
/// // The first Adam step moves every coordinate by γ·g/(|g| + ε) ≈ γ·sign(g).
/// let mut w = Tensor::from_vec(vec![1.0_f64, 2.0], &[2]);
/// let g = TensorTangent::Dense(Tensor::from_vec(vec![0.25_f64, -4.0], &[2]));
/// let mut opt = Adam::new(0.1);
/// opt.step(&mut w, &g);
/// let w = w.to_vec_f64();
/// assert!((w[0] - 0.9).abs() < 1e-7 && (w[1] - 2.1).abs() < 1e-7);
/// ```
#[derive(Clone, Debug)]
pub struct Adam<B: Backend = Cpu> {
    lr: f64,
    betas: (f64, f64),
    eps: f64,
    weight_decay: f64,
    decoupled: bool,
    state: Slots<Option<Moments<B>>>,
}

impl<B: Backend> Adam<B> {
    /// Adam with learning rate `γ = lr` and PyTorch's defaults (`β = (0.9, 0.999)`,
    /// `ε = 10⁻⁸`, no weight decay).
    ///
    /// # Panics
    /// If `lr` is negative or not finite.
    #[track_caller]
    pub fn new(lr: f64) -> Self {
        check_non_negative("the learning rate", lr);
        Adam {
            lr,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled: false,
            state: Slots::default(),
        }
    }

    /// AdamW with learning rate `γ = lr` and PyTorch's defaults (`β = (0.9, 0.999)`,
    /// `ε = 10⁻⁸`, decoupled weight decay `λ = 10⁻²`: `θ ← θ·(1 − γλ)` before the Adam step).
    #[track_caller]
    pub fn adamw(lr: f64) -> Self {
        Adam {
            weight_decay: 1e-2,
            decoupled: true,
            ..Self::new(lr)
        }
    }

    /// With betas `(β₁, β₂)`, the decay rates of the moment estimates (each in `[0, 1)`).
    #[track_caller]
    pub fn betas(mut self, beta1: f64, beta2: f64) -> Self {
        for (i, b) in [beta1, beta2].into_iter().enumerate() {
            assert!(
                (0.0..1.0).contains(&b),
                "optimizer: beta{} must be in [0, 1), got {b}",
                i + 1
            );
        }
        self.betas = (beta1, beta2);
        self
    }

    /// With `ε`, added to `√v̂` in the denominator.
    #[track_caller]
    pub fn eps(mut self, eps: f64) -> Self {
        check_non_negative("eps", eps);
        self.eps = eps;
        self
    }

    /// With weight decay `λ`: an L2 penalty `g ← g + λ·θ` (Adam) or the decoupled decay
    /// `θ ← θ·(1 − γλ)` (AdamW), whichever this optimizer is.
    #[track_caller]
    pub fn weight_decay(mut self, weight_decay: f64) -> Self {
        check_non_negative("weight decay", weight_decay);
        self.weight_decay = weight_decay;
        self
    }

    /// Whether the weight decay is decoupled (AdamW) rather than an L2 penalty (Adam).
    pub fn is_decoupled(&self) -> bool {
        self.decoupled
    }

    /// The moments `(m, v)` and the step count `t` of the parameter at `path` (dotted, as in
    /// [`Parameters::visit`]), once it has taken a step.
    pub fn moments(&self, path: &str) -> Option<(&Tensor<B>, &Tensor<B>, u64)> {
        let s = self.state.find(path)?.as_ref()?;
        Some((&s.m, &s.v, s.step))
    }
}

impl<B: Backend> Optimizer<B> for Adam<B> {
    /// See [`Adam`] for the update.
    #[track_caller]
    fn step_selected<M: Parameters<B>>(
        &mut self,
        model: &mut M,
        grad: &M::Tangent,
        select: &mut Select<'_, B>,
    ) {
        let Adam {
            lr,
            betas: (beta1, beta2),
            eps,
            weight_decay,
            decoupled,
            ref mut state,
        } = *self;
        state.visit(model, grad, select, |name, param, g, slot| {
            let s = slot.get_or_insert_with(|| Moments {
                step: 0,
                m: param.zeros_like(),
                v: param.zeros_like(),
            });
            s.step += 1;
            // PyTorch evaluates `beta ** step` in double precision on the host.
            let t = s.step as f64;
            let op = UpdateOp::Adam {
                lr,
                beta1,
                beta2,
                eps,
                weight_decay,
                decoupled,
                bias_correction1: 1.0 - beta1.powf(t),
                bias_correction2: 1.0 - beta2.powf(t),
            };
            fused_update(name, op, param, g, &mut [&mut s.m, &mut s.v]);
        });
    }

    fn lr(&self) -> f64 {
        self.lr
    }

    #[track_caller]
    fn set_lr(&mut self, lr: f64) {
        check_non_negative("the learning rate", lr);
        self.lr = lr;
    }
}
