//! [`check_jvp`]: a forward companion's directional derivative against central differences.

use super::{
    CheckError, Checkable, Comparison, Derivative, GradientReport, Tolerance, precision, summarize,
};

/// [`check_jvp_with`] at the default [`Tolerance`].
///
/// ```
/// use adjoint::check::{CheckError, check_jvp};
/// use adjoint::prelude::*;
///
/// #[differentiable(forward)]
/// fn polar(r: f64, theta: f64) -> (f64, f64) {
///     (r * theta.cos(), r * theta.sin())
/// }
///
/// let x = (2.0, 0.5);
/// let report = check_jvp(
///     |(r, t), (dr, dt)| polar_jvp(r, t, dr, dt),
///     |(r, t)| polar(r, t),
///     &x,
///     &(0.3, -1.0),
/// )
/// .unwrap();
/// assert_eq!(report.checked, 2); // one comparison per output element
///
/// // A wrong jvp (∂y/∂θ should be r·cos θ, not cos θ) is caught, and the report names the
/// // output element.
/// let wrong = |(r, t): (f64, f64), (dr, dt): (f64, f64)| {
///     let y = (r * t.cos(), r * t.sin());
///     (y, (dr * t.cos() - dt * r * t.sin(), dr * t.sin() + dt * t.cos()))
/// };
/// match check_jvp(wrong, |(r, t)| polar(r, t), &x, &(0.3, -1.0)) {
///     Err(CheckError::Mismatch { worst, failures, .. }) => {
///         assert_eq!((worst.input, worst.element, failures), (1, Some(0), 1));
///     }
///     other => panic!("the wrong jvp was not caught: {other:?}"),
/// }
/// ```
///
/// # Errors
/// See [`check_jvp_with`].
pub fn check_jvp<I, O>(
    f_jvp: impl FnOnce(I, I::Tangent) -> (O, O::Tangent),
    f: impl Fn(I) -> O,
    inputs: &I,
    tangent: &I::Tangent,
) -> Result<GradientReport, CheckError>
where
    I: Checkable,
    O: Checkable,
{
    check_jvp_with(Tolerance::default(), f_jvp, f, inputs, tangent)
}

/// Checks every element of a jvp `J·v` against the central difference of `f` along `v`.
///
/// `f_jvp` is called once, with `inputs` and `tangent` (rebuilt with the inputs' full
/// structure, as in [`jvp`](crate::jvp)), and `f` twice, at `x ± h·v`: each element `k` of the
/// jvp's tangent, `aₖ = (J v)ₖ`, must match `nₖ = (fₖ(x + h·v) − fₖ(x − h·v)) / 2h` within
/// `tolerance`, `|aₖ − nₖ| ≤ atol + rtol·|nₖ|`. The truncation error of `nₖ` grows as `|v|²`,
/// so give a tangent of order 1. A [`Comparison`] of the report is a
/// [`Derivative::Jvp`] one: its `input` is the top-level part of the output (the position in
/// an output tuple) and its `element` the element in that part.
///
/// # Errors
/// [`CheckError::Mismatch`] naming the worst output element if any differs;
/// [`CheckError::TangentShape`] if `tangent` does not fit `inputs`, the jvp's tangent does not
/// fit its value, or `f`'s value has another size;
/// [`CheckError::Precision`] if an input or the value is not `f64`.
pub fn check_jvp_with<I, O>(
    tolerance: Tolerance,
    f_jvp: impl FnOnce(I, I::Tangent) -> (O, O::Tangent),
    f: impl Fn(I) -> O,
    inputs: &I,
    tangent: &I::Tangent,
) -> Result<GradientReport, CheckError>
where
    I: Checkable,
    O: Checkable,
{
    precision(inputs, "an input")?;
    let shape = |message: String| CheckError::TangentShape { message };
    let mut v = Vec::with_capacity(inputs.flat_len());
    inputs
        .flatten_tangent(tangent, &mut v)
        .map_err(|e| shape(format!("the tangent given does not fit the inputs: {e}")))?;
    let (y, jv) = f_jvp(inputs.clone(), inputs.tangent_from(&mut v.iter()));
    precision(&y, "the value")?;
    let mut analytic = Vec::with_capacity(y.flat_len());
    y.flatten_tangent(&jv, &mut analytic)
        .map_err(|e| shape(format!("the jvp's tangent does not fit its value: {e}")))?;
    let mut x = Vec::with_capacity(v.len());
    inputs.flatten(&mut x);
    let at = |sign: f64| -> Result<Vec<f64>, CheckError> {
        let moved: Vec<f64> = x
            .iter()
            .zip(&v)
            .map(|(x, v)| x + sign * tolerance.step * v)
            .collect();
        let mut out = Vec::with_capacity(analytic.len());
        f(inputs.unflatten(&mut moved.iter())).flatten(&mut out);
        if out.len() != analytic.len() {
            return Err(shape(format!(
                "f's value has {} elements where the jvp's has {}",
                out.len(),
                analytic.len()
            )));
        }
        Ok(out)
    };
    let (plus, minus) = (at(1.0)?, at(-1.0)?);
    let mut comparisons = Vec::with_capacity(analytic.len());
    let mut k = 0;
    for (part, len) in y.parts().into_iter().enumerate() {
        for element in 0..len {
            comparisons.push(Comparison {
                derivative: Derivative::Jvp,
                input: part,
                element: Some(element),
                analytic: analytic[k],
                numeric: (plus[k] - minus[k]) / (2.0 * tolerance.step),
            });
            k += 1;
        }
    }
    summarize(comparisons, tolerance)
}
