//! [`check_hessian`] and [`check_hvp`]: second derivatives by forward-over-reverse
//! ([`hvp`](crate::hvp)) against central differences of the gradient.

use super::{CheckError, Comparison, Derivative, GradientReport, Tolerance, summarize};
use crate::{Dual, JacobianError, hvp};

/// [`check_hessian_with`] at the default [`Tolerance`].
///
/// ```
/// use adjoint::check::{CheckError, check_hessian};
/// use adjoint::prelude::*;
///
/// /// Rosenbrock: H = [[1200x₀² − 400x₁ + 2, −400x₀], [−400x₀, 200]].
/// #[differentiable]
/// fn rosenbrock<T: Float>(x: &[T]) -> T {
///     let (a, b) = (T::from_f64(1.0) - x[0], x[1] - x[0] * x[0]);
///     a * a + T::from_f64(100.0) * b * b
/// }
///
/// let grad = |p: &[Dual<f64>]| gradient(rosenbrock_vjp::<Dual<f64>>(p));
/// let report = check_hessian(grad, &[0.5, -0.25]).unwrap();
/// assert_eq!(report.checked, 4); // every element of the 2 × 2 Hessian
///
/// // A gradient whose dual parts are wrong (here: dropped) is caught, though its values are
/// // right: H[0][0] is 2, the dual parts give 0.
/// let flat = |p: &[Dual<f64>]| vec![Dual::new(2.0 * p[0].re, 0.0)];
/// match check_hessian(flat, &[3.0]) {
///     Err(CheckError::Mismatch { worst, .. }) => {
///         assert_eq!((worst.analytic, worst.element), (0.0, Some(0)));
///     }
///     other => panic!("the wrong second derivative was not caught: {other:?}"),
/// }
/// ```
///
/// # Errors
/// See [`check_hessian_with`].
pub fn check_hessian(
    grad: impl Fn(&[Dual<f64>]) -> Vec<Dual<f64>>,
    x: &[f64],
) -> Result<GradientReport, CheckError> {
    check_hessian_with(Tolerance::default(), grad, x)
}

/// Checks every element of the Hessian of a scalar function against central differences of
/// its gradient.
///
/// `grad` is the gradient evaluated on dual numbers, as for [`hvp`](crate::hvp): typically
/// `|p| gradient(f_vjp::<Dual<f64>>(p))` for a `#[differentiable]` f generic over
/// `T: Float`. Its real parts at real points (dual parts 0) are the gradient g(x), its dual
/// parts at `x + ε·eⱼ` column j of the Hessian. Each element `H[i][j]` must match
/// `(gᵢ(x + h·eⱼ) − gᵢ(x − h·eⱼ)) / 2h` within `tolerance` (`|a − n| ≤ atol + rtol·|n|`): `n²`
/// comparisons from `3n` calls of `grad`. A [`Comparison`] of the report is a
/// [`Derivative::Hessian`] one: its `input` is the column j, its `element` the row i.
///
/// # Errors
/// [`CheckError::Mismatch`] naming the worst element if any differs;
/// [`CheckError::TangentShape`] if `grad` returns a gradient of another length than `x`;
/// [`CheckError::NonFinite`] for a NaN or infinite element of `x`.
pub fn check_hessian_with(
    tolerance: Tolerance,
    grad: impl Fn(&[Dual<f64>]) -> Vec<Dual<f64>>,
    x: &[f64],
) -> Result<GradientReport, CheckError> {
    let mut comparisons = Vec::with_capacity(x.len() * x.len());
    for column in 0..x.len() {
        let unit: Vec<f64> = (0..x.len())
            .map(|i| f64::from(u8::from(i == column)))
            .collect();
        comparisons.extend(along(tolerance, &grad, x, &unit, column)?);
    }
    summarize(comparisons, tolerance)
}

/// [`check_hvp_with`] at the default [`Tolerance`].
///
/// # Errors
/// See [`check_hvp_with`].
pub fn check_hvp(
    grad: impl Fn(&[Dual<f64>]) -> Vec<Dual<f64>>,
    x: &[f64],
    v: &[f64],
) -> Result<GradientReport, CheckError> {
    check_hvp_with(Tolerance::default(), grad, x, v)
}

/// Checks every element of a Hessian-vector product `H·v` ([`hvp`](crate::hvp)) against the
/// central difference of the gradient along `v`, `(g(x + h·v) − g(x − h·v)) / 2h`: `n`
/// comparisons from 3 calls of `grad`, whatever the size (a cheap check of big Hessians; the
/// truncation error grows as `|v|²`, so give a direction of order 1). `grad` as for
/// [`check_hessian_with`]; a [`Comparison`] of the report has `input` 0 and `element` the
/// row i.
///
/// # Errors
/// As [`check_hessian_with`]; [`CheckError::TangentShape`] too if `v` is not as long as `x`,
/// [`CheckError::NonFinite`] for a NaN or infinite element of `v`.
pub fn check_hvp_with(
    tolerance: Tolerance,
    grad: impl Fn(&[Dual<f64>]) -> Vec<Dual<f64>>,
    x: &[f64],
    v: &[f64],
) -> Result<GradientReport, CheckError> {
    summarize(along(tolerance, &grad, x, v, 0)?, tolerance)
}

/// The comparisons of `H·v` from [`hvp`] with the central difference of the gradient along
/// `v`, one per gradient element, named `input` (the direction).
fn along(
    tolerance: Tolerance,
    grad: &impl Fn(&[Dual<f64>]) -> Vec<Dual<f64>>,
    x: &[f64],
    v: &[f64],
    input: usize,
) -> Result<Vec<Comparison>, CheckError> {
    let (_, hv) = hvp(grad, x, v).map_err(from_jacobian)?;
    let h = tolerance.step;
    let gradient_at = |sign: f64| -> Result<Vec<f64>, CheckError> {
        let moved: Vec<Dual<f64>> = x
            .iter()
            .zip(v)
            .map(|(x, v)| Dual::new(x + sign * h * v, 0.0))
            .collect();
        let g: Vec<f64> = grad(&moved).iter().map(|d| d.re).collect();
        if g.len() != x.len() {
            return Err(CheckError::TangentShape {
                message: format!(
                    "the gradient has {} elements, the input {}",
                    g.len(),
                    x.len()
                ),
            });
        }
        Ok(g)
    };
    let (plus, minus) = (gradient_at(1.0)?, gradient_at(-1.0)?);
    Ok(hv
        .iter()
        .enumerate()
        .map(|(row, &analytic)| Comparison {
            derivative: Derivative::Hessian,
            input,
            element: Some(row),
            analytic,
            numeric: (plus[row] - minus[row]) / (2.0 * h),
        })
        .collect())
}

/// An [`hvp`] error as the checker's.
fn from_jacobian(error: JacobianError) -> CheckError {
    match error {
        JacobianError::NonFiniteInput { .. } | JacobianError::NonFiniteSeed { .. } => {
            CheckError::NonFinite {
                message: error.to_string(),
            }
        }
        other => CheckError::TangentShape {
            message: other.to_string(),
        },
    }
}
