//! Reverse rules for building and reading [`Dual`] numbers: with them, reverse mode
//! differentiates code that runs forward mode by dual arithmetic inside (reverse-over-forward).
//!
//! `#[differentiable]` code writes `dual(re, eps)` for `re + eps·ε` and `dual_eps(d)` /
//! `dual_re(d)` for its parts; between them, every operation on duals is differentiated by the
//! ordinary rules instantiated at `T = Dual<f64>` (the rules are generic over [`Float`]).
//!
//! **Why the parts are crossed.** Those rules compute a cotangent in dual arithmetic: the
//! pullback of `a·b` gives `ā = ȳ·b`, a dual product. Multiplication by `b = b₀ + b₁ε` is the
//! real-linear map with matrix `[[b₀, 0], [b₁, b₀]]` on `(re, eps)`; its transpose
//! `[[b₀, b₁], [0, b₀]]` is what a reverse pass must apply. The two agree once the cotangent's
//! parts are crossed: if the dual `ȳ` carries the real cotangent `(c_re, c_eps)` as
//! `ȳ = c_eps + c_re·ε`, then `ȳ·b = c_eps·b₀ + (c_eps·b₁ + c_re·b₀)ε`, which is the crossed form
//! of the transpose's `(c_re·b₀ + c_eps·b₁, c_eps·b₀)`. The same holds for every rule of the form
//! `ā = ȳ·f′(a)` (the derivative of an operation on duals is multiplication by the dual
//! `f′(a)`, whose matrix has the same shape) and for sums. So a dual cotangent holds the
//! cotangent of `eps` in `re` and that of `re` in `eps`, and the three rules here convert at the
//! boundary:
//!
//! | function | value | pullback |
//! |---|---|---|
//! | `dual(re, eps)` | `re + eps·ε` | `d̄ ↦ (re̅, eps̅) = (d̄.eps, d̄.re)` |
//! | `dual_eps(d)` | `d.eps` | `ȳ ↦ d̄ = ȳ + 0ε` |
//! | `dual_re(d)` | `d.re` | `ȳ ↦ d̄ = 0 + ȳε` |
//!
//! Example: `y = dual_eps(f(dual(x, 1)))` is `f′(x)`, and its pullback gives `f″(x)`: the seed 1
//! becomes `1 + 0ε`, `f`'s pullback at `x + ε` multiplies it by `f′(x + ε) = f′(x) + f″(x)ε`,
//! and `dual`'s pullback reads `x̄ = f″(x)` from the `eps` part.

use crate::Dual;
use adjoint_macros::derivative_of;

/// The dual number `re + eps·ε`, as [`Dual::new`], for `#[differentiable]` code; its derivative
/// is the identity on the two parts (see the module docs for the pullback's crossed parts).
#[inline(always)]
pub fn dual(re: f64, eps: f64) -> Dual<f64> {
    Dual::new(re, eps)
}

/// The derivative part `d.eps`, for `#[differentiable]` code; its derivative is the
/// projection on that part.
#[inline(always)]
pub fn dual_eps(d: Dual<f64>) -> f64 {
    d.eps
}

/// The value part `d.re`, for `#[differentiable]` code; its derivative is the projection on
/// that part.
#[inline(always)]
pub fn dual_re(d: Dual<f64>) -> f64 {
    d.re
}

/// The reverse rule of [`dual`]: the cotangent `d̄` (crossed) gives `re̅ = d̄.eps`, `eps̅ = d̄.re`.
#[derivative_of(dual)]
#[inline(always)]
pub fn dual_rule(re: f64, eps: f64) -> (Dual<f64>, impl FnOnce(Dual<f64>) -> (f64, f64)) {
    (Dual::new(re, eps), move |d: Dual<f64>| (d.eps, d.re))
}

/// The reverse rule of [`dual_eps`]: `ȳ` becomes the crossed cotangent `ȳ + 0ε`.
#[derivative_of(dual_eps)]
#[inline(always)]
pub fn dual_eps_rule(d: Dual<f64>) -> (f64, impl FnOnce(f64) -> Dual<f64>) {
    (d.eps, move |y: f64| Dual::new(y, 0.0))
}

/// The reverse rule of [`dual_re`]: `ȳ` becomes the crossed cotangent `0 + ȳε`.
#[derivative_of(dual_re)]
#[inline(always)]
pub fn dual_re_rule(d: Dual<f64>) -> (f64, impl FnOnce(f64) -> Dual<f64>) {
    (d.re, move |y: f64| Dual::new(0.0, y))
}
