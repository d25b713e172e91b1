//! [`Groups`]: one optimizer per parameter group, stepped as one.

use super::{Optimizer, Select};
use crate::Parameters;
use crate::tensor::{Backend, Cpu, Tensor};
use std::fmt;
use std::sync::Arc;

/// Which group a parameter belongs to: `rule(path, θ)`, an index into the groups.
type Rule<B> = Arc<dyn Fn(&str, &Tensor<B>) -> usize + Send + Sync>;

/// Parameter groups, as PyTorch's `param_groups`: one optimizer per group, each with its own
/// hyper-parameters and its own state, stepped together.
///
/// * **By a rule.** [`by`](Groups::by) names each parameter's group from its dotted path and
///   value; [`step`](Optimizer::step) on the whole model then updates every parameter by its
///   group's optimizer (each group's optimizer steps the parameters the rule gives it, as
///   [`Optimizer::step_selected`]). nanoGPT's AdamW decays the matrices only, not the
///   biases and norm gains: `.by(|_, θ| usize::from(θ.rank() < 2))` with the decayed group
///   first.
/// * **By parts.** [`step_group`](Groups::step_group)`(i, &mut model.part, &grad.part)` steps
///   one part of a model by group `i`'s optimizer, for models whose parts are stepped apart
///   (one optimizer keeps the state of one model, so it cannot serve two parts itself).
///
/// [`set_lr`](Optimizer::set_lr), what a schedule calls, sets the rate of every group (as
/// nanoGPT's loop does); [`group_mut`](Groups::group_mut) reaches one group's optimizer.
///
/// ```
/// use adjoint::optim::{Adam, Groups, Optimizer};
/// use adjoint::prelude::*;
///
/// #[derive(Differentiable)]
/// struct Layer { w: Tensor, b: Tensor }
///
/// let mut layer = Layer { w: Tensor::ones(&[2, 2]), b: Tensor::ones(&[2]) };
/// let grad = LayerTangent {
///     w: TensorTangent::Dense(Tensor::ones(&[2, 2])),
///     b: TensorTangent::Dense(Tensor::ones(&[2])),
/// };
/// // AdamW with decay 0.5 on matrices, none on vectors.
/// let mut opt = Groups::new([Adam::adamw(0.1).weight_decay(0.5), Adam::adamw(0.1).weight_decay(0.0)])
///     .by(|_, p| usize::from(p.rank() < 2));
/// opt.step(&mut layer, &grad);
/// // First AdamW step: θ(1 − γλ) − γ·g/(|g| + ε), so 0.95 − 0.1 and 1 − 0.1.
/// assert!((layer.w.to_vec_f32()[0] - 0.85).abs() < 1e-6);
/// assert!((layer.b.to_vec_f32()[0] - 0.9).abs() < 1e-6);
/// ```
#[derive(Clone)]
pub struct Groups<O, B: Backend = Cpu> {
    groups: Vec<O>,
    rule: Option<Rule<B>>,
}

impl<O, B: Backend> Groups<O, B> {
    /// The groups, one optimizer each, in group order.
    ///
    /// # Panics
    /// If there are none.
    #[track_caller]
    pub fn new(groups: impl IntoIterator<Item = O>) -> Self {
        let groups: Vec<O> = groups.into_iter().collect();
        assert!(
            !groups.is_empty(),
            "optimizer: `Groups` needs at least one group"
        );
        Groups { groups, rule: None }
    }

    /// With `rule(path, θ)`, the group of each parameter of a model given to
    /// [`step`](Optimizer::step); it must name the same group for a parameter at every step.
    pub fn by(mut self, rule: impl Fn(&str, &Tensor<B>) -> usize + Send + Sync + 'static) -> Self {
        self.rule = Some(Arc::new(rule));
        self
    }

    /// The number of groups.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Always false: there is at least one group.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The optimizer of group `i`.
    ///
    /// # Panics
    /// If there is no group `i`.
    #[track_caller]
    pub fn group(&self, i: usize) -> &O {
        &self.groups[self.index(i)]
    }

    /// The optimizer of group `i`, mutably (to set its own learning rate).
    ///
    /// # Panics
    /// If there is no group `i`.
    #[track_caller]
    pub fn group_mut(&mut self, i: usize) -> &mut O {
        let i = self.index(i);
        &mut self.groups[i]
    }

    #[track_caller]
    fn index(&self, i: usize) -> usize {
        assert!(
            i < self.groups.len(),
            "optimizer: group {i} of {} groups",
            self.groups.len()
        );
        i
    }

    /// One step of group `i`'s optimizer on `part` (a model, or a part of one, whose
    /// parameters belong to this group).
    ///
    /// # Panics
    /// If there is no group `i`, or as [`Optimizer::step`].
    #[track_caller]
    pub fn step_group<M: Parameters<B>>(&mut self, i: usize, part: &mut M, grad: &M::Tangent)
    where
        O: Optimizer<B>,
    {
        self.group_mut(i).step(part, grad);
    }
}

impl<O: Optimizer<B>, B: Backend> Optimizer<B> for Groups<O, B> {
    /// Each parameter updated by the optimizer of the group the rule names.
    ///
    /// # Panics
    /// Without a rule ([`by`](Groups::by)), if the rule names a group that does not exist, or
    /// as [`Optimizer::step`].
    #[track_caller]
    fn step_selected<M: Parameters<B>>(
        &mut self,
        model: &mut M,
        grad: &M::Tangent,
        select: &mut Select<'_, B>,
    ) {
        let rule = self.rule.clone().unwrap_or_else(|| {
            panic!(
                "optimizer: these `Groups` have no rule to give each parameter its group: add one with `Groups::by`, or step each part with `step_group(i, part, grad)`"
            )
        });
        let count = self.groups.len();
        for (i, opt) in self.groups.iter_mut().enumerate() {
            opt.step_selected(model, grad, &mut |path, p| {
                let group = rule(path, p);
                assert!(
                    group < count,
                    "optimizer: the rule puts `{path}` in group {group}, but there are {count} groups"
                );
                group == i && select(path, p)
            });
        }
    }

    /// The learning rate of the first group.
    fn lr(&self) -> f64 {
        self.groups[0].lr()
    }

    /// Sets the learning rate of every group.
    #[track_caller]
    fn set_lr(&mut self, lr: f64) {
        for opt in &mut self.groups {
            opt.set_lr(lr);
        }
    }
}

impl<O: fmt::Debug, B: Backend> fmt::Debug for Groups<O, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Groups")
            .field("groups", &self.groups)
            .field("rule", &self.rule.as_ref().map(|_| "fn(path, θ) -> group"))
            .finish()
    }
}
