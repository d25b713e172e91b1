//! Neural-network layers: structs of parameter tensors with a `#[differentiable] fn forward`.
//!
//! Every layer is a `#[derive(Differentiable)]` struct (or a parameterless one), generic over
//! the backend `B` (default [`Cpu`]), and implements [`Layer`]. Its derivative with respect to
//! the whole struct is a tangent struct with the same field names
//! (`<Linear as Differentiable>::Tangent` has fields `weight` and `bias`, each a
//! `TensorTangent`), and [`Parameters`] visits its tensors under PyTorch's names (`weight`, `bias`), so
//! optimizers, gradient clipping and checkpoints work on any model built from these layers.
//!
//! | layer | forward `y = f(x)` | parameters |
//! |---|---|---|
//! | [`Linear`] | `x · Wᵀ + b` | `weight [out, in]`, `bias [out]` |
//! | [`Conv2d`] | NCHW cross-correlation `+ b` | `weight [O, C/groups, kh, kw]`, `bias [O]` (optional) |
//! | [`Embedding`] | rows of the table picked by `U32` ids | `weight [V, D]` |
//! | [`LayerNorm`] | `(x − μ)/√(σ² + ε) · γ + β` over the last axis | `weight [D]`, `bias [D]` |
//! | [`Dropout`] | `x · m/(1 − p)` in training, `x` in evaluation | none |
//! | [`Relu`], [`Gelu`], [`GeluErf`], [`Tanh`], [`Sigmoid`], [`Silu`] | elementwise | none |
//! | [`Flatten`], [`MaxPool2d`] | reshape, window maximum | none |
//! | [`Chain`] | `second(first(x))` | both layers' |
//! | [`CausalSelfAttention`], [`Mlp`], [`Block`], [`Gpt`] | a GPT and its parts ([`GptConfig`]) | nanoGPT's names |
//!
//! Layers chain with [`Layer::then`], which keeps the static type of the whole model (the idea
//! of DeepSwift's `ChainedLayers`): no boxing, no dynamic dispatch, and the tangent of the chain
//! is the nested tangent struct `ChainTangent { first, second }`.
//!
//! ```
//! use adjoint::prelude::*;
//! use adjoint::nn::{Layer, Linear, Relu};
//!
//! let model = Linear::new(4, 8, 0).then(Relu).then(Linear::new(8, 3, 1));
//! let x = Tensor::rand_normal(&[2, 4], 0.0, 1.0, 7);
//! let labels = Tensor::from_vec(vec![0_u32, 2], &[2]);
//!
//! #[differentiable]
//! fn loss<L: Layer>(model: &L, #[no_derivative] x: &Tensor, #[no_derivative] labels: &Tensor) -> Tensor {
//!     model.forward(x).cross_entropy(labels)
//! }
//!
//! let (value, grad) = value_with_gradient(loss_vjp(&model, &x, &labels));
//! assert!(value.to_scalar() > 0.0);
//! assert_eq!(grad.first.first.weight.unwrap().shape(), [8, 4]);
//! ```
//!
//! # Initialization
//! As PyTorch's `reset_parameters`, from a `seed` (same seed, same parameters): [`Linear`] and
//! [`Conv2d`] weights are Kaiming-uniform with `a = √5`, which is `U(−1/√fan_in, 1/√fan_in)`,
//! and their biases `U(−1/√fan_in, 1/√fan_in)`; [`Embedding`] is `N(0, 1)`; [`LayerNorm`] is
//! `γ = 1`, `β = 0`. The weight is drawn from `seed` and the bias from
//! [`init::derive_seed`]`(seed, 1)`. The short constructors (`Linear::new`) make `f32` tensors
//! on the CPU; the `_on` forms take a dtype and a device (`f64` serves gradient checks).
//!
//! # Writing a layer
//! A model is a `#[derive(Clone, Differentiable)]` struct of layers with a `#[differentiable]
//! impl Layer` block (nested layers read in differentiable code are cloned, which shares their
//! tensors):
//!
//! ```
//! use adjoint::prelude::*;
//! use adjoint::nn::{Layer, Linear};
//!
//! #[derive(Clone, Differentiable)]
//! struct Mlp {
//!     hidden: Linear,
//!     out: Linear,
//! }
//!
//! #[differentiable]
//! #[allow(refining_impl_trait)]
//! impl Layer for Mlp {
//!     #[differentiable]
//!     fn forward(&self, x: &Tensor) -> Tensor {
//!         let h = self.hidden.forward(x).relu();
//!         self.out.forward(&h)
//!     }
//! }
//!
//! let mlp = Mlp { hidden: Linear::new(2, 4, 0), out: Linear::new(4, 1, 1) };
//! let x = Tensor::ones(&[3, 2]);
//! let (y, pullback) = mlp.forward_vjp(&x);
//! let (dmlp, _dx) = pullback(TensorTangent::Dense(y.ones_like()));
//! assert_eq!(dmlp.hidden.weight.unwrap().shape(), [4, 2]);
//! ```
//!
//! `#[allow(refining_impl_trait)]`: for an impl with no generic parameters the macro's
//! companions capture nothing, less than the trait's declaration allows, which rustc reports
//! as a (harmless) refinement.
//!
//! ## Generic impls
//! An impl generic over the backend (`impl<B: Backend> Layer<B> for Linear<B>`) needs
//! `where Tensor<B>: Differentiable<Tangent = TensorTangent<B>>`. The macro bounds the types of
//! the differentiated parameters by `Differentiable` unless they mention a generic parameter
//! *of the method*; `Tensor<B>` mentions one of the impl, so it gets the bound
//! `Tensor<B>: Differentiable`, which hides the impl that says its tangent is
//! `TensorTangent<B>` (rust-lang/rust#152409). The `where` clause restores it.
//!
//! A `#[no_derivative]` field of the layer is read through `without_derivative(self).field`:
//! differentiable code reads a field of an active value through an accessor that the derive
//! writes only for differentiated fields.

mod activation;
mod chain;
mod conv;
mod dropout;
mod embedding;
pub mod gpt;
pub mod init;
mod linear;
mod norm;

pub use activation::{Flatten, Gelu, GeluErf, Relu, Sigmoid, Silu, Tanh};
pub use chain::Chain;
pub use conv::{Conv2d, MaxPool2d};
pub use dropout::Dropout;
pub use embedding::Embedding;
pub use gpt::{Block, CausalSelfAttention, Gpt, GptConfig, Mlp, Sampling};
pub use linear::Linear;
pub use norm::LayerNorm;

use crate::Parameters;
use crate::tensor::{Backend, Cpu, Tensor};
use adjoint_macros::differentiable;

/// A layer: a differentiable map `x ↦ forward(x)` from a tensor to a tensor, whose parameters
/// are the fields of `Self`.
///
/// `#[differentiable]` on the trait gives every implementation the companion
/// `forward_vjp(&self, x) -> (y, pullback)` with `pullback(ȳ) = (Self::Tangent, x̄)`, the
/// derivative with respect to the layer's parameters and to its input; the pullback borrows
/// neither the layer nor `x`. Differentiable code calling `layer.forward(x)` on a layer it is
/// differentiating gets both.
///
/// Implement it in a `#[differentiable] impl` block, with `#[differentiable]` on `forward`.
#[differentiable]
pub trait Layer<B: Backend = Cpu>: Parameters<B> {
    /// The layer's output for the input `x`.
    #[differentiable]
    fn forward(&self, x: &Tensor<B>) -> Tensor<B>;

    /// `self` followed by `next`: the layer `x ↦ next(self(x))`, of the static type
    /// `Chain<Self, L>`. By the chain rule, with `h = self(x)`, its pullback maps `ȳ` to the
    /// tangent `{ first: self̄, second: next̄ }` and `x̄`, where `(next̄, h̄)` is `next`'s
    /// pullback of `ȳ` and `(self̄, x̄)` is `self`'s pullback of `h̄`.
    fn then<L: Layer<B>>(self, next: L) -> Chain<Self, L>
    where
        Self: Sized,
    {
        Chain {
            first: self,
            second: next,
        }
    }
}

/// Implements `Differentiable` (tangent `()`) and `Parameters` (nothing to visit) for layers
/// without parameters.
macro_rules! no_parameters {
    ($($t:ty),*) => {$(
        impl $crate::Differentiable for $t {
            type Tangent = ();
            fn move_by(&mut self, _: &()) {}
        }

        impl<B: Backend> $crate::Parameters<B> for $t {
            fn visit(&self, _: &mut $crate::ParamPath, _: &mut dyn FnMut(&str, &Tensor<B>)) {}
            fn visit_mut(
                &mut self,
                _: &(),
                _: &mut $crate::ParamPath,
                _: &mut $crate::GradVisitor<'_, B>,
            ) {
            }
            fn visit_each_mut(
                &mut self,
                _: &mut $crate::ParamPath,
                _: &mut dyn FnMut(&str, &mut Tensor<B>),
            ) {
            }
            fn visit_grad_mut(
                &self,
                _: &mut (),
                _: &mut $crate::ParamPath,
                _: &mut $crate::GradMutVisitor<'_, B>,
            ) {
            }
        }
    )*};
}
pub(crate) use no_parameters;
