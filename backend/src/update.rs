//! [`UpdateOp`]: the fused, in-place optimizer updates of [`Backend::update`](crate::Backend)
//! (and the in-place tangent sum [`UpdateOp::Accumulate`]),
//! with the scalar meaning of each as a generic function (the CPU kernel, and the CUDA test
//! oracle).
//!
//! The arithmetic follows PyTorch's single-tensor (`foreach=False`) implementations of
//! `torch.optim.SGD`, `Adam` and `AdamW` operation by operation, in the parameter's dtype, with
//! the scalar hyper-parameters rounded to that dtype, as PyTorch's CPU kernels do.

use crate::ops::Real;

/// One optimizer step applied to every element of a parameter, its gradient and the
/// optimizer's state buffers: `(θ, s) ← op(θ, g, s)`.
///
/// `s` holds [`state_len`](UpdateOp::state_len) buffers of the parameter's length and dtype,
/// owned by the optimizer (zeros before the first step).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UpdateOp {
    /// `torch.optim.SGD`, with learning rate `γ = lr`, momentum `μ`, dampening `τ` and weight
    /// decay `λ`; state `s₀ = b`, the momentum buffer (used only when `μ ≠ 0`):
    ///
    /// ```text
    /// g ← g + λ·θ                                   (if λ ≠ 0)
    /// b ← g                   on the first step     (if μ ≠ 0)
    /// b ← μ·b + (1 − τ)·g     on later steps
    /// g ← g + μ·b  (Nesterov)  or  g ← b
    /// θ ← θ − γ·g
    /// ```
    Sgd {
        /// Learning rate `γ`.
        lr: f64,
        /// Momentum factor `μ` (`0`: plain SGD, no state).
        momentum: f64,
        /// Dampening `τ` of the gradient in the momentum buffer.
        dampening: f64,
        /// L2 penalty `λ`, added to the gradient.
        weight_decay: f64,
        /// Nesterov momentum.
        nesterov: bool,
        /// The parameter's first step with momentum: the buffer starts as the gradient.
        first_step: bool,
    },
    /// `torch.optim.Adam` (`decoupled == false`) and `torch.optim.AdamW`
    /// (`decoupled == true`), with learning rate `γ`, betas `β₁, β₂`, `ε`, weight decay `λ`,
    /// at step `t` (from 1); state `s₀ = m`, `s₁ = v`:
    ///
    /// ```text
    /// θ ← θ·(1 − γλ)                  (AdamW)
    /// g ← g + λ·θ                     (Adam, if λ ≠ 0)
    /// m ← lerp(m, g, 1 − β₁)          = β₁·m + (1 − β₁)·g
    /// v ← β₂·v + (1 − β₂)·g²
    /// θ ← θ − (γ / c₁) · m / (√v / √c₂ + ε)
    /// ```
    ///
    /// with the bias corrections `c₁ = 1 − β₁ᵗ`, `c₂ = 1 − β₂ᵗ`, so that the last line is
    /// `θ ← θ − γ·m̂ / (√v̂ + ε)` with `m̂ = m/c₁`, `v̂ = v/c₂`. `lerp(a, b, w)` is PyTorch's:
    /// `a + w·(b − a)` if `|w| < ½`, else `b − (b − a)·(1 − w)`.
    Adam {
        /// Learning rate `γ`.
        lr: f64,
        /// `β₁`, the decay of the first moment.
        beta1: f64,
        /// `β₂`, the decay of the second moment.
        beta2: f64,
        /// `ε`, added to the denominator.
        eps: f64,
        /// Weight decay `λ`: an L2 penalty (Adam) or a decoupled decay (AdamW).
        weight_decay: f64,
        /// AdamW's decoupled weight decay.
        decoupled: bool,
        /// `c₁ = 1 − β₁ᵗ`.
        bias_correction1: f64,
        /// `c₂ = 1 − β₂ᵗ`.
        bias_correction2: f64,
    },
    /// `θ ← θ + g`: the in-place sum of two buffers, no state. (The CUDA backend's
    /// [`binary_assign`](crate::Backend::binary_assign) of a sum runs it.)
    Accumulate,
}

fn c<T: Real>(v: f64) -> T {
    T::from(v).expect("constant fits the float type")
}

impl UpdateOp {
    /// The number of state buffers the update reads and writes (0, 1 or 2).
    pub fn state_len(&self) -> usize {
        match *self {
            UpdateOp::Sgd { momentum, .. } => usize::from(momentum != 0.0),
            UpdateOp::Adam { .. } => 2,
            UpdateOp::Accumulate => 0,
        }
    }

    /// The update of one element: the new parameter and state from parameter `p`, gradient
    /// `g` and state `s` (entries past [`state_len`](UpdateOp::state_len) are ignored and
    /// returned unchanged).
    #[inline(always)]
    pub fn eval<T: Real>(self, p: T, g: T, s: [T; 2]) -> (T, [T; 2]) {
        match self {
            UpdateOp::Sgd {
                lr,
                momentum,
                dampening,
                weight_decay,
                nesterov,
                first_step,
            } => {
                let mut g = g;
                if weight_decay != 0.0 {
                    g = g + c::<T>(weight_decay) * p;
                }
                let mut b = s[0];
                if momentum != 0.0 {
                    b = if first_step {
                        g
                    } else {
                        b * c(momentum) + c::<T>(1.0 - dampening) * g
                    };
                    g = if nesterov {
                        g + c::<T>(momentum) * b
                    } else {
                        b
                    };
                }
                (p + c::<T>(-lr) * g, [b, s[1]])
            }
            UpdateOp::Adam {
                lr,
                beta1,
                beta2,
                eps,
                weight_decay,
                decoupled,
                bias_correction1,
                bias_correction2,
            } => {
                let (mut p, mut g) = (p, g);
                if decoupled {
                    p = p * c(1.0 - lr * weight_decay);
                } else if weight_decay != 0.0 {
                    g = g + c::<T>(weight_decay) * p;
                }
                let w = 1.0 - beta1;
                let m = if w.abs() < 0.5 {
                    s[0] + c::<T>(w) * (g - s[0])
                } else {
                    g - (g - s[0]) * c(1.0 - w)
                };
                let v = s[1] * c(beta2) + c::<T>(1.0 - beta2) * g * g;
                let denom = v.sqrt() / c(bias_correction2.sqrt()) + c(eps);
                let step_size = lr / bias_correction1;
                (p + c::<T>(-step_size) * m / denom, [m, v])
            }
            UpdateOp::Accumulate => (p + g, s),
        }
    }
}
