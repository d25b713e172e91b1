//! [`Sgd`]: stochastic gradient descent with momentum, as `torch.optim.SGD`.

use super::{Optimizer, Select, Slots, check_non_negative, fused_update};
use crate::Parameters;
use crate::tensor::{Backend, Cpu, Tensor, UpdateOp};

/// Stochastic gradient descent with optional momentum, dampening, Nesterov momentum and
/// weight decay: `torch.optim.SGD`, formula for formula.
///
/// For each parameter `θ` with gradient `g`, learning rate `γ`, momentum `μ`, dampening `τ`
/// and weight decay `λ`:
///
/// ```text
/// g ← g + λ·θ                                    (if λ ≠ 0)
/// b ← g                    on the first step     (if μ ≠ 0)
/// b ← μ·b + (1 − τ)·g      on later steps
/// g ← g + μ·b   (Nesterov)   or   g ← b
/// θ ← θ − γ·g
/// ```
///
/// The momentum buffer `b` starts as the first gradient itself, not as `(1 − τ)·g`, as in
/// PyTorch. Defaults are PyTorch's: `μ = τ = λ = 0`, no Nesterov. With those defaults, a
/// weight whose gradient is a matrix product not yet computed (`g = xᵀ·ȳ`) takes the step
/// `θ ← θ − γ·xᵀ·ȳ` by one GEMM (α = −γ, β = 1) into its buffer (see the [module
/// docs](super)).
///
/// ```
/// use adjoint::optim::{Optimizer, Sgd};
/// use adjoint::prelude::*;
///
/// let mut w = Tensor::from_vec(vec![1.0_f32, 2.0], &[2]);
/// let g = TensorTangent::Dense(Tensor::from_vec(vec![0.5_f32, -1.0], &[2]));
/// let mut opt = Sgd::new(0.5).momentum(0.5);
/// opt.step(&mut w, &g); // b = g;            θ = θ − γ·b
/// opt.step(&mut w, &g); // b = μ·b + g = 1.5·g
/// assert_eq!(w.to_vec_f32(), vec![1.0 - 0.25 - 0.375, 2.0 + 0.5 + 0.75]);
/// ```
#[derive(Clone, Debug)]
pub struct Sgd<B: Backend = Cpu> {
    lr: f64,
    momentum: f64,
    dampening: f64,
    weight_decay: f64,
    nesterov: bool,
    /// The momentum buffer of each parameter (`None` until its first step with momentum).
    state: Slots<Option<Tensor<B>>>,
}

impl<B: Backend> Sgd<B> {
    /// Plain SGD, `θ ← θ − γ·g`, with learning rate `γ = lr`.
    ///
    /// # Panics
    /// If `lr` is negative or not finite.
    #[track_caller]
    pub fn new(lr: f64) -> Self {
        check_non_negative("the learning rate", lr);
        Sgd {
            lr,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
            state: Slots::default(),
        }
    }

    /// With momentum factor `μ` (`b ← μ·b + (1 − τ)·g`, `θ ← θ − γ·b`).
    #[track_caller]
    pub fn momentum(mut self, momentum: f64) -> Self {
        check_non_negative("momentum", momentum);
        self.momentum = momentum;
        self
    }

    /// With dampening `τ`: later gradients enter the momentum buffer as `(1 − τ)·g`.
    #[track_caller]
    pub fn dampening(mut self, dampening: f64) -> Self {
        assert!(dampening.is_finite(), "optimizer: dampening must be finite");
        self.dampening = dampening;
        self
    }

    /// With Nesterov momentum: the step is along `g + μ·b` instead of `b`. Needs `μ > 0` and
    /// `τ = 0` (checked at the first step, as PyTorch checks at construction).
    pub fn nesterov(mut self, nesterov: bool) -> Self {
        self.nesterov = nesterov;
        self
    }

    /// With weight decay `λ`: an L2 penalty `λ/2·‖θ‖²`, i.e. `g ← g + λ·θ`.
    #[track_caller]
    pub fn weight_decay(mut self, weight_decay: f64) -> Self {
        check_non_negative("weight decay", weight_decay);
        self.weight_decay = weight_decay;
        self
    }

    /// The momentum buffer `b` of the parameter at `path` (dotted, as in
    /// [`Parameters::visit`]), once it has taken a step with momentum.
    pub fn momentum_buffer(&self, path: &str) -> Option<&Tensor<B>> {
        self.state.find(path).and_then(Option::as_ref)
    }
}

impl<B: Backend> Optimizer<B> for Sgd<B> {
    /// See [`Sgd`] for the update.
    #[track_caller]
    fn step_selected<M: Parameters<B>>(
        &mut self,
        model: &mut M,
        grad: &M::Tangent,
        select: &mut Select<'_, B>,
    ) {
        assert!(
            !self.nesterov || (self.momentum > 0.0 && self.dampening == 0.0),
            "optimizer: Nesterov momentum requires a momentum > 0 and zero dampening"
        );
        let Sgd {
            lr,
            momentum,
            dampening,
            weight_decay,
            nesterov,
            ref mut state,
        } = *self;
        state.visit(model, grad, select, |name, param, g, buffer| {
            let op = UpdateOp::Sgd {
                lr,
                momentum,
                dampening,
                weight_decay,
                nesterov,
                first_step: buffer.is_none(),
            };
            if momentum == 0.0 {
                fused_update(name, op, param, g, &mut []);
            } else {
                let b = buffer.get_or_insert_with(|| param.zeros_like());
                fused_update(name, op, param, g, &mut [b]);
            }
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
