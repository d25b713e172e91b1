//! [`Parameters`]: a model's parameter tensors, visited one by one with their gradients, so
//! that optimizers, gradient clipping, parameter counting and checkpoints are written once for
//! every model. `#[derive(Differentiable)]` implements it field by field.

use crate::Differentiable;
use crate::tensor::{Backend, Cpu, Tensor, TensorTangent};

/// What [`Parameters::visit_mut`] calls for each parameter: `(name, parameter, gradient)`.
///
/// The gradient is the parameter's tangent as the backward pass left it: the symbolic zero,
/// a dense tensor, or (a weight of a matrix product) the product not yet computed;
/// [`TensorTangent::dense_ref`] reads it as a tensor (`None` for the zero).
pub type GradVisitor<'a, B> = dyn FnMut(&str, &mut Tensor<B>, &TensorTangent<B>) + 'a;

/// What [`Parameters::visit_grad_mut`] calls for each parameter: `(name, parameter, gradient)`
/// with the gradient writable (what averaging gradients across processes uses: it replaces
/// each part of a model's gradient by the mean over the processes).
pub type GradMutVisitor<'a, B> = dyn FnMut(&str, &Tensor<B>, &mut TensorTangent<B>) + 'a;

/// The dotted path of a parameter inside its model (`"layers.1.weight"`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParamPath(String);

impl ParamPath {
    /// The empty path (the model itself).
    pub fn new() -> Self {
        ParamPath(String::new())
    }

    /// Runs `f` with `segment` appended (`path.segment`), then restores the path.
    pub fn with<R>(&mut self, segment: &str, f: impl FnOnce(&mut Self) -> R) -> R {
        let len = self.0.len();
        if !self.0.is_empty() {
            self.0.push('.');
        }
        self.0.push_str(segment);
        let r = f(self);
        self.0.truncate(len);
        r
    }

    /// The path as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A model's parameter tensors, in a fixed order, each under its [`ParamPath`].
///
/// # Example
/// ```
/// use adjoint::prelude::*;
/// use adjoint::{ParamPath, Parameters};
///
/// #[derive(Differentiable)]
/// struct Affine {
///     weight: Tensor,
///     bias: Tensor,
/// }
///
/// let model = Affine { weight: Tensor::zeros(&[3, 2]), bias: Tensor::zeros(&[2]) };
/// let mut names = Vec::new();
/// model.visit(&mut ParamPath::new(), &mut |name, t| names.push((name.to_owned(), t.shape().to_vec())));
/// assert_eq!(names, [("weight".to_owned(), vec![3, 2]), ("bias".to_owned(), vec![2])]);
/// ```
pub trait Parameters<B: Backend = Cpu>: Differentiable {
    /// Calls `f(name, parameter)` for every parameter tensor.
    fn visit(&self, path: &mut ParamPath, f: &mut dyn FnMut(&str, &Tensor<B>));

    /// Calls `f(name, parameter, gradient)` for every parameter tensor, with its part of `grad`
    /// (see [`GradVisitor`]), in the reverse of [`visit`](Parameters::visit)'s order (a
    /// struct's fields and a collection's items last first): what optimizers use.
    ///
    /// Reversed because a backward pass finishes the gradients last layer first: an optimizer
    /// that updates in this order touches each weight soon after the backward pass's last
    /// product with it, and the first layer's weight last, just before the next forward pass
    /// reads it first. The MNIST MLP step on the CPU took 1751–1758 µs against 1789–1790 in
    /// the forward order (medians of eight rounds, the two orders alternated in one process;
    /// the CNN step was unchanged), docs/perf-log.md (25th session).
    fn visit_mut(&mut self, grad: &Self::Tangent, path: &mut ParamPath, f: &mut GradVisitor<'_, B>);

    /// Calls `f(name, parameter)` for every parameter tensor, mutably: what loading uses.
    fn visit_each_mut(&mut self, path: &mut ParamPath, f: &mut dyn FnMut(&str, &mut Tensor<B>));

    /// Calls `f(name, parameter, gradient)` for every parameter tensor with its part of `grad`
    /// writable, in [`visit_mut`](Parameters::visit_mut)'s order (last first). Every parameter
    /// gets a slot: a collection whose gradient is shorter than the collection (the symbolic
    /// zero of a `Vec`) is first padded with zero tangents.
    fn visit_grad_mut(
        &self,
        grad: &mut Self::Tangent,
        path: &mut ParamPath,
        f: &mut GradMutVisitor<'_, B>,
    );

    /// The number of scalars in all parameter tensors.
    fn parameter_count(&self) -> usize {
        let mut count = 0;
        self.visit(&mut ParamPath::new(), &mut |_, t| {
            count += t.shape().iter().product::<usize>()
        });
        count
    }
}

impl<B: Backend> Parameters<B> for Tensor<B> {
    fn visit(&self, path: &mut ParamPath, f: &mut dyn FnMut(&str, &Tensor<B>)) {
        f(path.as_str(), self);
    }

    fn visit_mut(
        &mut self,
        grad: &TensorTangent<B>,
        path: &mut ParamPath,
        f: &mut GradVisitor<'_, B>,
    ) {
        f(path.as_str(), self, grad);
    }

    fn visit_each_mut(&mut self, path: &mut ParamPath, f: &mut dyn FnMut(&str, &mut Tensor<B>)) {
        f(path.as_str(), self);
    }

    fn visit_grad_mut(
        &self,
        grad: &mut TensorTangent<B>,
        path: &mut ParamPath,
        f: &mut GradMutVisitor<'_, B>,
    ) {
        f(path.as_str(), self, grad);
    }
}

/// Scalar fields are not tensor parameters: they move with `move_by`, and tensor optimizers,
/// counting and checkpoints skip them.
macro_rules! scalar_parameters {
    ($($t:ty)*) => {$(
        impl<B: Backend> Parameters<B> for $t {
            fn visit(&self, _: &mut ParamPath, _: &mut dyn FnMut(&str, &Tensor<B>)) {}
            fn visit_mut(&mut self, _: &$t, _: &mut ParamPath, _: &mut GradVisitor<'_, B>) {}
            fn visit_each_mut(&mut self, _: &mut ParamPath, _: &mut dyn FnMut(&str, &mut Tensor<B>)) {}
            fn visit_grad_mut(&self, _: &mut $t, _: &mut ParamPath, _: &mut GradMutVisitor<'_, B>) {}
        }
    )*};
}
scalar_parameters!(f32 f64);

impl<B: Backend, T: Parameters<B>> Parameters<B> for Vec<T> {
    fn visit(&self, path: &mut ParamPath, f: &mut dyn FnMut(&str, &Tensor<B>)) {
        for (i, item) in self.iter().enumerate() {
            path.with(&i.to_string(), |p| item.visit(p, f));
        }
    }

    fn visit_mut(
        &mut self,
        grad: &Vec<T::Tangent>,
        path: &mut ParamPath,
        f: &mut GradVisitor<'_, B>,
    ) {
        // A shorter (or empty, i.e. zero) gradient leaves the remaining items without one.
        let zero = <T::Tangent as crate::TangentVector>::zero();
        for (i, item) in self.iter_mut().enumerate().rev() {
            let g = grad.get(i).unwrap_or(&zero);
            path.with(&i.to_string(), |p| item.visit_mut(g, p, f));
        }
    }

    fn visit_each_mut(&mut self, path: &mut ParamPath, f: &mut dyn FnMut(&str, &mut Tensor<B>)) {
        for (i, item) in self.iter_mut().enumerate() {
            path.with(&i.to_string(), |p| item.visit_each_mut(p, f));
        }
    }

    fn visit_grad_mut(
        &self,
        grad: &mut Vec<T::Tangent>,
        path: &mut ParamPath,
        f: &mut GradMutVisitor<'_, B>,
    ) {
        if grad.len() < self.len() {
            grad.resize_with(self.len(), <T::Tangent as crate::TangentVector>::zero);
        }
        for (i, (item, g)) in self.iter().zip(grad.iter_mut()).enumerate().rev() {
            path.with(&i.to_string(), |p| item.visit_grad_mut(g, p, f));
        }
    }
}

/// An optional parameter (a bias that may be absent): visited under the same path when
/// present, skipped when `None`.
impl<B: Backend, T: Parameters<B>> Parameters<B> for Option<T> {
    fn visit(&self, path: &mut ParamPath, f: &mut dyn FnMut(&str, &Tensor<B>)) {
        if let Some(item) = self {
            item.visit(path, f);
        }
    }

    fn visit_mut(&mut self, grad: &T::Tangent, path: &mut ParamPath, f: &mut GradVisitor<'_, B>) {
        if let Some(item) = self {
            item.visit_mut(grad, path, f);
        }
    }

    fn visit_each_mut(&mut self, path: &mut ParamPath, f: &mut dyn FnMut(&str, &mut Tensor<B>)) {
        if let Some(item) = self {
            item.visit_each_mut(path, f);
        }
    }

    fn visit_grad_mut(
        &self,
        grad: &mut T::Tangent,
        path: &mut ParamPath,
        f: &mut GradMutVisitor<'_, B>,
    ) {
        if let Some(item) = self {
            item.visit_grad_mut(grad, path, f);
        }
    }
}

impl<B: Backend, T: Parameters<B>, const N: usize> Parameters<B> for [T; N] {
    fn visit(&self, path: &mut ParamPath, f: &mut dyn FnMut(&str, &Tensor<B>)) {
        for (i, item) in self.iter().enumerate() {
            path.with(&i.to_string(), |p| item.visit(p, f));
        }
    }

    fn visit_mut(
        &mut self,
        grad: &[T::Tangent; N],
        path: &mut ParamPath,
        f: &mut GradVisitor<'_, B>,
    ) {
        for (i, (item, g)) in self.iter_mut().zip(grad).enumerate().rev() {
            path.with(&i.to_string(), |p| item.visit_mut(g, p, f));
        }
    }

    fn visit_each_mut(&mut self, path: &mut ParamPath, f: &mut dyn FnMut(&str, &mut Tensor<B>)) {
        for (i, item) in self.iter_mut().enumerate() {
            path.with(&i.to_string(), |p| item.visit_each_mut(p, f));
        }
    }

    fn visit_grad_mut(
        &self,
        grad: &mut [T::Tangent; N],
        path: &mut ParamPath,
        f: &mut GradMutVisitor<'_, B>,
    ) {
        for (i, (item, g)) in self.iter().zip(grad.iter_mut()).enumerate().rev() {
            path.with(&i.to_string(), |p| item.visit_grad_mut(g, p, f));
        }
    }
}
