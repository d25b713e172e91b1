//! Learning-rate schedules: [`StepLr`] and [`CosineWithWarmup`].

use super::Optimizer;
use crate::tensor::Backend;

/// A learning rate as a function of the step: `γ(t)` for the `t`-th optimizer step,
/// counted from 0.
///
/// A schedule is a pure function; [`apply`](LrSchedule::apply) sets its value on an
/// optimizer before a step:
///
/// ```
/// use adjoint::optim::{LrSchedule, Optimizer, Sgd, StepLr};
/// use adjoint::prelude::*;
///
/// let schedule = StepLr::new(0.1, 10, 0.5);
/// let mut opt = Sgd::new(schedule.lr_at(0));
/// let mut w = Tensor::zeros(&[2]);
/// let g = TensorTangent::Dense(Tensor::ones(&[2]));
/// for t in 0..25 {
///     schedule.apply(&mut opt, t);
///     opt.step(&mut w, &g);
/// }
/// assert_eq!(opt.lr(), 0.025); // 0.1 · 0.5²
/// ```
pub trait LrSchedule {
    /// The learning rate of step `step` (the first step is 0).
    fn lr_at(&self, step: usize) -> f64;

    /// Sets the learning rate of `optimizer` to `lr_at(step)`, and returns it.
    fn apply<B: Backend, O: Optimizer<B>>(&self, optimizer: &mut O, step: usize) -> f64 {
        let lr = self.lr_at(step);
        optimizer.set_lr(lr);
        lr
    }
}

/// Step decay, as `torch.optim.lr_scheduler.StepLR`: the rate is multiplied by `γ` every
/// `step_size` steps,
///
/// ```text
/// lr(t) = base · γ^⌊t / step_size⌋
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepLr {
    base: f64,
    step_size: usize,
    gamma: f64,
}

impl StepLr {
    /// Starts at `base` and multiplies by `gamma` every `step_size` steps.
    ///
    /// # Panics
    /// If `step_size` is 0.
    #[track_caller]
    pub fn new(base: f64, step_size: usize, gamma: f64) -> Self {
        assert!(step_size > 0, "StepLr: step_size must be at least 1");
        StepLr {
            base,
            step_size,
            gamma,
        }
    }
}

impl LrSchedule for StepLr {
    /// `base · γ^⌊t / step_size⌋`.
    fn lr_at(&self, step: usize) -> f64 {
        // `gamma ** k` of PyTorch's closed form, in double precision.
        self.base * self.gamma.powf((step / self.step_size) as f64)
    }
}

/// Linear warm-up followed by cosine annealing (SGDR without restarts, as
/// `torch.optim.lr_scheduler.CosineAnnealingLR` after a linear warm-up):
///
/// ```text
/// lr(t) = base · (t + 1) / W                                  for t < W
/// lr(t) = min + (base − min) · ½·(1 + cos(π · (t − W)/(T − W)))  for W ≤ t < T
/// lr(t) = min                                                  for t ≥ T
/// ```
///
/// with `W` warm-up steps and `T` total steps. The warm-up reaches `base` at its last step
/// (`t = W − 1`); the first step after it also runs at `base`, and the rate then decays to
/// `min` at `t = T`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CosineWithWarmup {
    base: f64,
    min: f64,
    warmup: usize,
    total: usize,
}

impl CosineWithWarmup {
    /// Warms up linearly to `base` over `warmup` steps, then anneals to 0 at step `total`.
    ///
    /// # Panics
    /// If `total` is not above `warmup`.
    #[track_caller]
    pub fn new(base: f64, warmup: usize, total: usize) -> Self {
        assert!(
            total > warmup,
            "CosineWithWarmup: total steps ({total}) must exceed the warm-up ({warmup})"
        );
        CosineWithWarmup {
            base,
            min: 0.0,
            warmup,
            total,
        }
    }

    /// Anneals to `min` instead of 0 (`η_min` of `CosineAnnealingLR`).
    pub fn min_lr(mut self, min: f64) -> Self {
        self.min = min;
        self
    }
}

impl LrSchedule for CosineWithWarmup {
    /// See [`CosineWithWarmup`].
    fn lr_at(&self, step: usize) -> f64 {
        let (w, t) = (self.warmup, step);
        if t < w {
            self.base * (t + 1) as f64 / w as f64
        } else if t < self.total {
            let progress = (t - w) as f64 / (self.total - w) as f64;
            self.min
                + (self.base - self.min) * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos())
        } else {
            self.min
        }
    }
}
