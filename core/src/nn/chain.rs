//! [`Chain`]: two layers one after the other, with static types.

use super::Layer;
use crate::Differentiable;
use crate::tensor::{Backend, Tensor, TensorTangent};
use adjoint_macros::{Differentiable, differentiable};

/// Two layers one after the other: `y = second(first(x))`.
///
/// Derivative (chain rule): with `h = first(x)`, the pullback of `ȳ` is
/// `second̄, h̄ = second.pullback(ȳ)`, then `first̄, x̄ = first.pullback(h̄)`; the tangent is
/// `ChainTangent { first: first̄, second: second̄ }`. Parameters are named `first.…` and
/// `second.…`, so a chain of `n` layers nests (`first.first.weight`).
///
/// Build it with [`Layer::then`]. Both layers must be `Clone` (differentiable code clones a
/// nested layer it reads; tensors are shared, so this is cheap).
#[derive(Clone, Debug, Differentiable)]
pub struct Chain<L1, L2> {
    /// The layer applied first.
    pub first: L1,
    /// The layer applied to the output of `first`.
    pub second: L2,
}

// `'static`: the pullback owns the layers' tangents. The `where` clause on `Tensor<B>`: see
// "Generic impls" in the module docs.
#[differentiable]
#[allow(refining_impl_trait)]
impl<B, L1, L2> Layer<B> for Chain<L1, L2>
where
    B: Backend,
    L1: Layer<B> + Clone + 'static,
    L2: Layer<B> + Clone + 'static,
    Tensor<B>: Differentiable<Tangent = TensorTangent<B>>,
{
    /// `second(first(x))`.
    #[differentiable]
    fn forward(&self, x: &Tensor<B>) -> Tensor<B> {
        let h = self.first.forward(x);
        self.second.forward(&h)
    }
}
