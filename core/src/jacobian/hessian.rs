//! Second derivatives by forward-over-reverse: the gradient of a function generic over
//! [`Float`](crate::Float), run on [`Dual`] numbers.

use super::{Jacobian, JacobianError};
use crate::Dual;

/// The gradient ∇f(x) and the Hessian-vector product H(x)·v, by forward-over-reverse: `grad`
/// is the gradient of f evaluated on dual numbers, typically
/// `|p| gradient(f_vjp::<Dual<f64>>(p))` for a `#[differentiable]` f generic over `T: Float`;
/// at x + ε·v its real parts are ∇f(x) and its ε parts d/dε ∇f(x + εv) = H·v: one reverse
/// pass in dual arithmetic (each operation on a value and a tangent).
///
/// # Errors
/// [`JacobianError::NonFiniteInput`] / [`NonFiniteSeed`](JacobianError::NonFiniteSeed) for a NaN
/// or infinite element of `x` / `v`, [`SeedShape`](JacobianError::SeedShape) when `v` is not as
/// long as `x`, [`TangentShape`](JacobianError::TangentShape) when `grad` returns a gradient of
/// another length.
///
/// # Example
/// ```
/// use adjoint::prelude::*;
///
/// /// f = x₀²x₁ + x₁³: H = [[2x₁, 2x₀], [2x₀, 6x₁]].
/// #[differentiable]
/// fn f<T: Float>(x: &[T]) -> T {
///     x[0] * x[0] * x[1] + x[1] * x[1] * x[1]
/// }
///
/// let (g, hv) = hvp(|p| gradient(f_vjp::<Dual<f64>>(p)), &[1.0, 2.0], &[1.0, 0.0]).unwrap();
/// assert_eq!(g, vec![4.0, 13.0]); // (2x₀x₁, x₀² + 3x₁²)
/// assert_eq!(hv, vec![4.0, 2.0]); // H's first column
/// ```
pub fn hvp(
    grad: impl Fn(&[Dual<f64>]) -> Vec<Dual<f64>>,
    x: &[f64],
    v: &[f64],
) -> Result<(Vec<f64>, Vec<f64>), JacobianError> {
    check_input(x)?;
    if v.len() != x.len() {
        return Err(JacobianError::SeedShape {
            message: format!(
                "the direction has {} elements, the input {}",
                v.len(),
                x.len()
            ),
        });
    }
    if let Some((element, &value)) = v.iter().enumerate().find(|(_, s)| !s.is_finite()) {
        return Err(JacobianError::NonFiniteSeed { element, value });
    }
    let point: Vec<Dual<f64>> = x.iter().zip(v).map(|(&a, &b)| Dual::new(a, b)).collect();
    let g = grad(&point);
    if g.len() != x.len() {
        return Err(JacobianError::TangentShape {
            message: format!(
                "the gradient has {} elements, the input {}",
                g.len(),
                x.len()
            ),
        });
    }
    Ok((
        g.iter().map(|d| d.re).collect(),
        g.iter().map(|d| d.eps).collect(),
    ))
}

/// The Hessian H(x) of a scalar function, one [`hvp`] per input element (column j is H·eⱼ);
/// `grad` as for [`hvp`]. The result is n × n, symmetric up to rounding.
///
/// # Errors
/// As [`hvp`].
///
/// # Example
/// ```
/// use adjoint::prelude::*;
///
/// #[differentiable]
/// fn f<T: Float>(x: &[T]) -> T {
///     x[0] * x[0] * x[1] + x[1] * x[1] * x[1]
/// }
///
/// let h = hessian(|p| gradient(f_vjp::<Dual<f64>>(p)), &[1.0, 2.0]).unwrap();
/// assert_eq!(h.as_slice(), &[4.0, 2.0, 2.0, 12.0]);
/// ```
pub fn hessian(
    grad: impl Fn(&[Dual<f64>]) -> Vec<Dual<f64>>,
    x: &[f64],
) -> Result<Jacobian, JacobianError> {
    check_input(x)?;
    let n = x.len();
    let mut columns = Vec::with_capacity(n);
    for j in 0..n {
        let unit: Vec<f64> = (0..n).map(|i| if i == j { 1.0 } else { 0.0 }).collect();
        columns.push(hvp(&grad, x, &unit)?.1);
    }
    let data = (0..n * n).map(|k| columns[k % n][k / n]).collect();
    Jacobian::from_row_major(n, n, data)
}

/// A NaN or infinite input element as an error.
fn check_input(x: &[f64]) -> Result<(), JacobianError> {
    match x.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        Some((element, &value)) => Err(JacobianError::NonFiniteInput { element, value }),
        None => Ok(()),
    }
}
