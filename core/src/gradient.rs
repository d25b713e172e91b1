//! Entry points that turn a `_vjp` companion into a gradient.

use crate::Differentiable;

/// A differentiable result that is a single number, so that its gradient is defined: the
/// pullback is seeded with the tangent `1`.
///
/// # Example
/// ```
/// use adjoint::prelude::*;
/// assert_eq!(2.5_f64.unit_seed(), 1.0);
/// ```
pub trait UnitSeed: Differentiable {
    /// The tangent `1` at `self` (for a scalar, `1.0`).
    fn unit_seed(&self) -> Self::Tangent;
}

impl UnitSeed for f32 {
    fn unit_seed(&self) -> f32 {
        1.0
    }
}

impl UnitSeed for f64 {
    fn unit_seed(&self) -> f64 {
        1.0
    }
}

/// The gradient `∇f(x)` of a scalar function from its value and pullback, as returned by a
/// `_vjp` companion: the pullback applied to the seed `1`.
///
/// # Example
/// ```
/// use adjoint::prelude::*;
///
/// #[differentiable]
/// fn f(x: f64, y: f64) -> f64 {
///     x * y + x.sin()
/// }
///
/// let (dx, dy) = gradient(f_vjp(2.0, 3.0));
/// assert_eq!((dx, dy), (3.0 + 2.0_f64.cos(), 2.0));
/// ```
#[inline]
pub fn gradient<V, P, G>(value_and_pullback: (V, P)) -> G
where
    V: UnitSeed,
    P: FnOnce(V::Tangent) -> G,
{
    let (value, pullback) = value_and_pullback;
    pullback(value.unit_seed())
}

/// The value `f(x)` together with the gradient `∇f(x)` of a scalar function.
///
/// # Example
/// ```
/// use adjoint::prelude::*;
///
/// #[differentiable]
/// fn square(x: f64) -> f64 {
///     x * x
/// }
///
/// assert_eq!(value_with_gradient(square_vjp(3.0)), (9.0, 6.0));
/// ```
#[inline]
pub fn value_with_gradient<V, P, G>(value_and_pullback: (V, P)) -> (V, G)
where
    V: UnitSeed,
    P: FnOnce(V::Tangent) -> G,
{
    let (value, pullback) = value_and_pullback;
    let seed = value.unit_seed();
    (value, pullback(seed))
}

/// Returns `x` unchanged and stops derivatives flowing through it: inside `#[differentiable]`
/// code its result is a constant (JAX's `stop_gradient`, Swift's `withoutDerivative(at:)`).
///
/// # Example
/// ```
/// use adjoint::prelude::*;
///
/// #[differentiable]
/// fn f(x: f64) -> f64 {
///     x * without_derivative(x)
/// }
///
/// // d/dx (x · c) with c = x held constant is c, not 2x.
/// assert_eq!(gradient(f_vjp(3.0)), 3.0);
/// ```
#[inline(always)]
pub fn without_derivative<T>(x: T) -> T {
    x
}
