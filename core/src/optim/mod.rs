//! Optimizers, learning-rate schedules and gradient clipping, written once for every model
//! through [`Parameters`].
//!
//! * [`Sgd`] (momentum, dampening, Nesterov, weight decay) and [`Adam`] (with an L2 penalty,
//!   or AdamW's decoupled weight decay through [`Adam::adamw`]) follow `torch.optim.SGD`,
//!   `Adam` and `AdamW`: same update formulas, defaults and state initialisation, evaluated
//!   operation by operation as PyTorch's single-tensor (CPU) implementation does, in the
//!   parameter's dtype; results agree with PyTorch's to the dtype's rounding.
//! * [`StepLr`] and [`CosineWithWarmup`] give the learning rate of each step
//!   ([`LrSchedule::lr_at`]); [`LrSchedule::apply`] sets it on an optimizer.
//! * [`clip_grad_norm`] rescales a gradient to a maximal global L2 norm, like
//!   `torch.nn.utils.clip_grad_norm_`.
//! * [`Groups`] holds one optimizer per parameter group (PyTorch's `param_groups`): groups
//!   chosen by a rule on each parameter's path and value (AdamW without weight decay on
//!   biases, norms and embeddings), or parts of a model stepped one at a time.
//!
//! # The training step
//! ```
//! use adjoint::optim::{Adam, Optimizer};
//! use adjoint::prelude::*;
//!
//! #[derive(Differentiable)]
//! struct Line {
//!     w: Tensor,
//!     b: Tensor,
//! }
//!
//! #[differentiable]
//! fn loss(m: &Line, x: &Tensor, y: &Tensor) -> Tensor {
//!     mse(&(x * &m.w + &m.b), y)
//! }
//!
//! let x = Tensor::from_vec(vec![0.0_f32, 1.0, 2.0, 3.0], &[4]);
//! let y = &x * 2.0 + 1.0;
//! let mut model = Line { w: Tensor::zeros(&[1]), b: Tensor::zeros(&[1]) };
//! let mut opt = Adam::new(0.1);
//! for _ in 0..300 {
//!     let (dm, _, _) = gradient(loss_vjp(&model, &x, &y));
//!     opt.step(&mut model, &dm);
//! }
//! assert!(loss(&model, &x, &y).to_scalar() < 1e-3);
//! ```
//!
//! A loop over models of real size runs each step through [`Backend::install`]
//! (`Cpu::install(|| { …; opt.step(&mut model, &dm) })`, or `B::install` in code generic over
//! the backend): the same values, and on the CPU the step's parallel ops then start their
//! work from one of the backend's worker threads instead of waking the pool and sleeping, op
//! after op (the MNIST examples and benchmarks do).
//!
//! # State and in-place updates
//! An optimizer keeps the state of each parameter (momentum buffer; Adam's moments and step
//! count) in the order [`Parameters::visit_mut`] visits them, which is fixed for a model type,
//! with the parameter's dotted path: a step on a model whose parameters differ in number or
//! path from the first step's panics, naming the parameter.
//!
//! A step writes the new values into the parameter's own buffer through the backend's fused
//! [`Backend::update`] (one pass over parameter, gradient and state; no allocation). Plain SGD
//! (no momentum, no weight decay) on a weight whose gradient is a matrix product not yet
//! computed (`xᵀ·ȳ` of `x.matmul(&w)`, as the `_vjp` functions return it:
//! [`TensorTangent::Outer`]) does less: one GEMM adds `−γ·xᵀ·ȳ` into the weight's buffer, so
//! the gradient is never stored and there is no pass over it. State
//! buffers are allocated once, on a parameter's first step. The write goes through
//! [`Tensor::storage_mut`], which is copy-on-write: if a parameter's buffer is still shared
//! (the caller kept a clone of the model, or a pullback that captured it is alive), that
//! parameter gets a fresh copy and the other holders keep the old values, so the update
//! allocates then, and only then.
//!
//! A parameter whose gradient is the symbolic zero ([`TensorTangent::Zero`], no derivative
//! flowed to it) is skipped entirely, like a PyTorch parameter whose `.grad` is `None`: no
//! weight decay, no momentum, and Adam's step count of that parameter does not advance.
//!
//! [`TensorTangent::Zero`]: crate::TensorTangent::Zero
//! [`TensorTangent::Outer`]: crate::TensorTangent::Outer

mod adam;
mod clip;
mod groups;
mod schedule;
mod sgd;

pub use adam::Adam;
pub use clip::{clip_grad_norm, grad_norm};
pub use groups::Groups;
pub use schedule::{CosineWithWarmup, LrSchedule, StepLr};
pub use sgd::Sgd;

use crate::tensor::{Backend, Cpu, DType, Tensor, TensorTangent, UpdateOp};
use crate::{ParamPath, Parameters};

/// Which parameters a step updates: `select(path, θ)` for each, by its dotted path and value.
pub type Select<'a, B> = dyn FnMut(&str, &Tensor<B>) -> bool + 'a;

/// A first-order optimizer: moves a model's parameters along its gradient, in place.
pub trait Optimizer<B: Backend = Cpu> {
    /// One optimizer step: every parameter `θ` of `model` with a gradient `g` in `grad` is
    /// updated in place by the optimizer's rule (see the implementors).
    ///
    /// # Panics
    /// If a gradient's shape or dtype differs from its parameter's, or if the model's
    /// parameters (number, paths) differ from those of the first step.
    #[track_caller]
    fn step<M: Parameters<B>>(&mut self, model: &mut M, grad: &M::Tangent) {
        self.step_selected(model, grad, &mut |_, _| true);
    }

    /// [`step`](Optimizer::step) on the parameters for which `select(path, θ)` is true; the
    /// others are left alone and have no state in this optimizer. A parameter group: the
    /// selection must pick the same parameters at every step (a rule on paths or shapes),
    /// and [`Groups`] runs one optimizer per group this way.
    ///
    /// # Panics
    /// As [`step`](Optimizer::step), counting only the selected parameters.
    fn step_selected<M: Parameters<B>>(
        &mut self,
        model: &mut M,
        grad: &M::Tangent,
        select: &mut Select<'_, B>,
    );

    /// The learning rate `γ` of the next step.
    fn lr(&self) -> f64;

    /// Sets the learning rate `γ` of the following steps (what a schedule does).
    fn set_lr(&mut self, lr: f64);
}

/// Per-parameter optimizer state in visit order, each with the parameter's path.
#[derive(Clone, Debug)]
pub(crate) struct Slots<S> {
    items: Vec<(String, S)>,
}

impl<S> Default for Slots<S> {
    fn default() -> Self {
        Slots { items: Vec::new() }
    }
}

impl<S> Slots<S> {
    /// The state of the `index`-th visited parameter, `name`, created by `init` on first use.
    ///
    /// # Panics
    /// If another parameter had that position before (the model changed shape).
    #[track_caller]
    pub(crate) fn get(&mut self, index: usize, name: &str, init: impl FnOnce() -> S) -> &mut S {
        if index == self.items.len() {
            self.items.push((name.to_owned(), init()));
        }
        let (known, state) = &mut self.items[index];
        assert!(
            known == name,
            "optimizer: parameter {index} is `{name}`, but it was `{known}` on earlier steps (one optimizer serves one model; give each part or group of parameters its own optimizer in `optim::Groups`)"
        );
        state
    }

    /// Checks, after a step, that the model had as many parameters as before.
    #[track_caller]
    pub(crate) fn finish(&self, visited: usize) {
        assert!(
            visited == self.items.len(),
            "optimizer: the model has {visited} parameters, but it had {} on earlier steps (one optimizer serves one model; give each part or group of parameters its own optimizer in `optim::Groups`)",
            self.items.len()
        );
    }

    /// Calls `f(name, parameter, gradient, state)` for every parameter of `model` that
    /// `select` picks and whose gradient in `grad` is not the symbolic zero, its state created
    /// by `S::default()` on first use; then checks, as [`finish`](Slots::finish) does, that the
    /// model had as many selected parameters as before.
    ///
    /// # Panics
    /// If the model changed shape since earlier steps (see [`get`](Slots::get)).
    #[track_caller]
    pub(crate) fn visit<B: Backend, M: Parameters<B>>(
        &mut self,
        model: &mut M,
        grad: &M::Tangent,
        select: &mut Select<'_, B>,
        mut f: impl FnMut(&str, &mut Tensor<B>, &TensorTangent<B>, &mut S),
    ) where
        S: Default,
    {
        let mut index = 0;
        model.visit_mut(grad, &mut ParamPath::new(), &mut |name, param, g| {
            if !select(name, param) {
                return;
            }
            let state = self.get(index, name, S::default);
            index += 1;
            if !g.is_zero() {
                f(name, param, g, state);
            }
        });
        self.finish(index);
    }

    /// The state of the parameter at `path`, if it has taken a step.
    pub(crate) fn find(&self, path: &str) -> Option<&S> {
        self.items.iter().find(|(n, _)| n == path).map(|(_, s)| s)
    }
}

/// Runs the fused step `op` on `param`, its (nonzero) gradient `grad` and the state buffers
/// `state`, in place: [`Backend::update`], or, for plain SGD (`θ ← θ − γ·g`, no momentum or
/// weight decay) on a gradient that is a matrix product not yet computed (`g = Aᵀ·G`, a
/// weight's, [`TensorTangent::Outer`]), one GEMM that adds `−γ·Aᵀ·G` into `θ`'s buffer
/// ([`OuterSum::add_scaled_into`](crate::tensor::OuterSum::add_scaled_into)): the gradient
/// is never stored, and there is no pass over it. A product that a reader by reference has
/// already computed (clipping's norm) is added by the update pass instead.
///
/// # Panics
/// If `grad` or a state buffer differs from `param` in shape or dtype, or `param` is not a
/// float tensor; the message names the parameter.
#[track_caller]
pub(crate) fn fused_update<B: Backend>(
    name: &str,
    op: UpdateOp,
    param: &mut Tensor<B>,
    grad: &TensorTangent<B>,
    state: &mut [&mut Tensor<B>],
) {
    let like_param =
        |shape: &[usize], dtype: DType| shape == param.shape() && dtype == param.dtype();
    assert!(
        param.dtype().is_float(),
        "optimizer: parameter `{name}` is a {:?} tensor; only float tensors can be optimized",
        param.dtype()
    );
    let (shape, dtype) = match grad {
        TensorTangent::Outer(sum) => (sum.shape().to_vec(), sum.dtype()),
        other => {
            let g = other
                .dense_ref()
                .expect("the optimizers skip zero gradients");
            (g.shape().to_vec(), g.dtype())
        }
    };
    assert!(
        like_param(&shape, dtype),
        "optimizer: the gradient of `{name}` is {dtype:?} {shape:?}, the parameter {:?} {:?}",
        param.dtype(),
        param.shape()
    );
    assert!(state.iter().all(|s| like_param(s.shape(), s.dtype())));
    if let TensorTangent::Outer(sum) = grad
        && !sum.is_computed()
        && let UpdateOp::Sgd {
            lr,
            momentum,
            weight_decay,
            ..
        } = op
        && momentum == 0.0
        && weight_decay == 0.0
    {
        return sum.add_scaled_into(-lr, param);
    }
    let grad = grad
        .dense_ref()
        .expect("the optimizers skip zero gradients");
    let p = param.storage_mut();
    match state {
        [] => B::update(op, p, grad.storage(), &mut []),
        [a] => B::update(op, p, grad.storage(), &mut [a.storage_mut()]),
        [a, b] => B::update(
            op,
            p,
            grad.storage(),
            &mut [a.storage_mut(), b.storage_mut()],
        ),
        _ => unreachable!("updates have at most two state buffers"),
    }
}

/// Panics unless `value` is finite and `≥ 0`, naming the hyper-parameter.
#[track_caller]
pub(crate) fn check_non_negative(what: &str, value: f64) {
    assert!(
        value.is_finite() && value >= 0.0,
        "optimizer: {what} must be finite and ≥ 0, got {value}"
    );
}
