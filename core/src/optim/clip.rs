//! Global-norm gradient clipping: [`clip_grad_norm`], as `torch.nn.utils.clip_grad_norm_`.

use crate::tensor::{Backend, DType, Tensor};
use crate::{ParamPath, Parameters, TangentVector};

/// The global L2 norm of a model's gradient over all its parameter tensors,
///
/// ```text
/// ‖g‖ = √(Σₚ Σᵢ gₚ,ᵢ²)
/// ```
///
/// Symbolic-zero gradients count as zeros. Each tensor's sum of squares is reduced on its
/// device in its dtype and the sum over tensors is taken in `f64` on the device (PyTorch takes the norm of
/// the per-tensor norms in the gradients' dtype: the two agree to the dtype's rounding).
///
/// `model` is only read: it is `&mut` because [`Parameters::visit_mut`] is the walk that
/// pairs each parameter with its part of `grad` (a derived tangent struct has no walk of its
/// own). Scalar (non-tensor) fields of the model are not parameters and do not count.
pub fn grad_norm<B: Backend, M: Parameters<B>>(model: &mut M, grad: &M::Tangent) -> f64 {
    // The per-tensor sums stay on the device (as f64) until the one read at the end: on a
    // GPU the norm costs one synchronization, not one per parameter.
    let mut sum_sq: Option<Tensor<B>> = None;
    model.visit_mut(grad, &mut ParamPath::new(), &mut |_, _, g| {
        if let Some(g) = g.dense_ref() {
            let s = (g * g).sum_all().to_dtype(DType::F64);
            sum_sq = Some(match sum_sq.take() {
                Some(total) => total + s,
                None => s,
            });
        }
    });
    sum_sq.map_or(0.0, |s| s.to_scalar().sqrt())
}

/// Rescales `grad` so that its global L2 norm is at most `max_norm`, and returns the norm it
/// had before, like `torch.nn.utils.clip_grad_norm_` (L2 norm, `error_if_nonfinite=False`):
///
/// ```text
/// n = ‖g‖   (see grad_norm)
/// c = max_norm / (n + 10⁻⁶)
/// g ← min(c, 1)·g        (left untouched when c ≥ 1)
/// ```
///
/// The `10⁻⁶` is PyTorch's, so a clipped gradient's norm is slightly below `max_norm`. A
/// non-finite norm makes `c` NaN or 0 and is propagated into the gradient as in PyTorch;
/// check the returned norm to skip such a step.
///
/// Every tensor of `grad` is replaced by its scaled copy (tensors are immutable and the
/// gradient is fresh from the backward pass; symbolic zeros stay zeros). The whole tangent is
/// scaled by [`TangentVector::scaled`], so scalar (non-tensor) fields of a model's gradient
/// are scaled by the same factor, though they do not count in the norm. `model` is only read
/// (see [`grad_norm`]).
///
/// ```
/// use adjoint::optim::clip_grad_norm;
/// use adjoint::prelude::*;
///
/// let mut w = Tensor::zeros(&[2]);
/// let mut g = TensorTangent::Dense(Tensor::from_vec(vec![3.0_f32, 4.0], &[2]));
/// let norm = clip_grad_norm(&mut w, &mut g, 1.0);
/// assert_eq!(norm, 5.0);
/// let g = g.unwrap().to_vec_f32();
/// assert!((g[0] - 0.6).abs() < 1e-6 && (g[1] - 0.8).abs() < 1e-6);
/// ```
pub fn clip_grad_norm<B: Backend, M: Parameters<B>>(
    model: &mut M,
    grad: &mut M::Tangent,
    max_norm: f64,
) -> f64 {
    let norm = grad_norm(model, grad);
    let coef = max_norm / (norm + 1e-6);
    // Scale unless `coef ≥ 1`: a NaN coefficient propagates, as in PyTorch.
    if coef < 1.0 || coef.is_nan() {
        let g = std::mem::replace(grad, M::Tangent::zero());
        *grad = g.scaled(coef);
    }
    norm
}
