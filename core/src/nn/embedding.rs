//! [`Embedding`]: a lookup table of vectors.

use super::Layer;
use crate::Differentiable;
use crate::tensor::{Backend, Cpu, DType, Tensor, TensorTangent};
use adjoint_macros::{Differentiable, differentiable};

/// A table of `V` vectors of size `D`, looked up by `U32` ids: `y[…, :] = W[ids[…], :]`, of
/// shape `[…ids.shape, D]` (PyTorch's `nn.Embedding`).
///
/// Derivative: `W̄[v, :] = Σ_{k : ids[k] = v} ȳ[k, :]` (each row of `ȳ` is added to the row
/// of its id); ids are data, their tangent is zero.
///
/// Initialization: `W ~ N(0, 1)` from `seed`.
#[derive(Clone, Debug, Differentiable)]
pub struct Embedding<B: Backend = Cpu> {
    /// `W`, of shape `[V, D]`.
    pub weight: Tensor<B>,
}

impl Embedding<Cpu> {
    /// An `Embedding` of `count` vectors of size `dim`, `f32` on the CPU, `N(0, 1)` from
    /// `seed`.
    #[track_caller]
    pub fn new(count: usize, dim: usize, seed: u64) -> Self {
        Self::new_on(count, dim, seed, DType::F32, &Cpu)
    }
}

impl<B: Backend> Embedding<B> {
    /// An `Embedding` of `dtype` on `device`, `N(0, 1)` from `seed`.
    #[track_caller]
    pub fn new_on(count: usize, dim: usize, seed: u64, dtype: DType, device: &B::Device) -> Self {
        Embedding {
            weight: Tensor::rand_normal_on(&[count, dim], 0.0, 1.0, seed, dtype, device),
        }
    }

    /// An `Embedding` with the given table `[V, D]`.
    ///
    /// # Panics
    /// If `weight` is not of rank 2.
    #[track_caller]
    pub fn from_parts(weight: Tensor<B>) -> Self {
        assert!(
            weight.rank() == 2,
            "Embedding: weight {:?} must be [V, D]",
            weight.shape()
        );
        Embedding { weight }
    }
}

// The `where` clause: see "Generic impls" in the module docs.
#[differentiable]
impl<B: Backend> Layer<B> for Embedding<B>
where
    Tensor<B>: Differentiable<Tangent = TensorTangent<B>>,
{
    /// The rows of the table picked by the `U32` ids `x`; see [`Embedding`].
    ///
    /// # Panics
    /// If an id is out of range or `x` is not `U32`.
    #[differentiable]
    fn forward(&self, x: &Tensor<B>) -> Tensor<B> {
        self.weight.embedding(x)
    }
}
