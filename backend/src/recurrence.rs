//! The Elman recurrence as one primitive: [`Backend::recurrence`](crate::Backend::recurrence)
//! and its backward pass.

use crate::{BinaryOp, UnaryOp};

/// `hₜ = f(hₜ₋₁·op(W) + xₜ·op(U) + Σⱼ cⱼ)` for `t = 1..T`: every `hₜ` is `m × n`, `W` is
/// `n × n` (stored transposed when `w_transposed`: `op(W) = Wᵀ`), the optional input product
/// has `xₜ` of `m × k` and `U` of `k × n` (`n × k` stored when `u_transposed`), and each
/// bias `cⱼ` holds `n` elements (added to every row) or `m·n` (one per element). The sum runs
/// in the order written: the products (the input product first when `input_first`), then
/// the biases, then `f`.
///
/// The backward pass, from `h̄_T`: `z̄ₜ = h̄ₜ·f′` (by the kernel `grad(hₜ, h̄ₜ)`),
/// `h̄ₜ₋₁ = z̄ₜ·op(W)ᵀ`, `W̄ = Σₜ hₜ₋₁ᵀ·z̄ₜ` (as stored: its transpose for a transposed `W`),
/// `Ū = Σₜ xₜᵀ·z̄ₜ` (likewise), and the biases' `Σₜ Σ_rows z̄ₜ` (`n` elements) or `Σₜ z̄ₜ`
/// (`m·n`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecurrenceSpec {
    /// The number of steps `T`.
    pub steps: usize,
    /// Rows of `h`.
    pub m: usize,
    /// Columns of `h` (the units).
    pub n: usize,
    /// Columns of `xₜ` when the step has an input product.
    pub input: Option<usize>,
    /// `op(W) = Wᵀ`, `W` stored `n × n` either way.
    pub w_transposed: bool,
    /// `op(U) = Uᵀ`, `U` stored `n × k`.
    pub u_transposed: bool,
    /// The input product comes first in the sum (`x·U + h·W`).
    pub input_first: bool,
    /// The activation `f` and the kernel of `z̄ = grad(y, ȳ)`; `None`: `f(z) = z`.
    pub act: Option<(UnaryOp, BinaryOp)>,
}

/// Which tangents [`Backend::recurrence_backward`](crate::Backend::recurrence_backward)
/// computes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecurrenceNeeds {
    /// `h̄₀`.
    pub h0: bool,
    /// `W̄`.
    pub w: bool,
    /// `Ū`.
    pub u: bool,
    /// `Σₜ Σ_rows z̄ₜ` (`n` elements), the tangent of a bias added to every row.
    pub rows: bool,
    /// `Σₜ z̄ₜ` (`m·n` elements), the tangent of a bias with one element per element of `h`.
    pub steps: bool,
}

/// The tangents [`Backend::recurrence_backward`](crate::Backend::recurrence_backward)
/// computed, each `Some` exactly where [`RecurrenceNeeds`] asked for it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecurrenceTangents<S> {
    /// `h̄₀` (`m·n`).
    pub h0: Option<S>,
    /// `W̄` (`n·n`, as `W` is stored).
    pub w: Option<S>,
    /// `Ū` (`k·n`, as `U` is stored).
    pub u: Option<S>,
    /// `Σₜ Σ_rows z̄ₜ` (`n`).
    pub rows: Option<S>,
    /// `Σₜ z̄ₜ` (`m·n`).
    pub steps: Option<S>,
}
