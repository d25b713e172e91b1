//! Gradient checking for users' own tests: a `_vjp` companion's pullback against central
//! finite differences in `f64`, like PyTorch's `torch.autograd.gradcheck` and JAX's
//! `check_grads`.
//!
//! * [`check_gradient`] compares every element of the gradient `∂⟨w, f(x)⟩/∂xᵢ` (with `w = 1`
//!   for a one-element result, a seeded random cotangent otherwise) with the central
//!   difference `(⟨w, f(x + h·eᵢ)⟩ − ⟨w, f(x − h·eᵢ)⟩) / 2h`: `2n + 1` calls of `f` for `n`
//!   input elements.
//! * [`check_dot_product`] checks the identity `⟨J v, w⟩ = ⟨v, Jᵀ w⟩` for a random direction
//!   `v` of each input and a random cotangent `w`, with `J v` from a central difference:
//!   three calls of `f` per input, whatever its size (a cheap test of big or vector-valued
//!   functions).
//! * [`check_jvp`] compares every element of a forward companion's `J·v` (from
//!   `#[differentiable(forward)]`'s `f_jvp`) with `(f(x + h·v) − f(x − h·v)) / 2h`: one call of
//!   the jvp and two of `f`, whatever the sizes.
//! * [`check_hessian`] compares every element of a Hessian by forward-over-reverse (the
//!   gradient of a function generic over `T: Float` run on [`Dual`](crate::Dual) numbers, as
//!   [`hessian`](crate::hessian) takes it) with the central difference of the gradient,
//!   `(gᵢ(x + h·eⱼ) − gᵢ(x − h·eⱼ)) / 2h`; [`check_hvp`] does so along one direction `v`.
//!
//! The function under test takes its inputs as one value, a tuple for several (`|(x, y)|
//! f_vjp(x, y)`), and returns the `(value, pullback)` pair of a companion; the inputs and the
//! value are [`Checkable`]: `f64`, `Vec`s and arrays of them, `f64` CPU tensors, tuples. A
//! failure is a [`CheckError`] naming the input, the element and the two numbers; the
//! [`Tolerance`] is stated in the report.
//!
//! ```
//! use adjoint::check::{CheckError, check_gradient};
//! use adjoint::prelude::*;
//!
//! #[differentiable]
//! fn f(x: f64, y: f64) -> f64 {
//!     x * y.sin() + y * y
//! }
//!
//! let report = check_gradient(|(x, y)| f_vjp(x, y), &(0.5, -1.25)).unwrap();
//! assert_eq!(report.checked, 2);
//!
//! // A wrong rule is caught, and the report names the input and element.
//! fn cube(x: f64) -> f64 {
//!     x * x * x
//! }
//! #[derivative_of(cube)]
//! fn cube_vjp(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
//!     (x * x * x, move |d| d * 2.0 * x * x) // should be 3x²
//! }
//! #[differentiable]
//! fn g(a: f64, b: f64) -> f64 {
//!     a + cube(b)
//! }
//! match check_gradient(|(a, b)| g_vjp(a, b), &(1.0, 2.0)) {
//!     Err(CheckError::Mismatch { worst, .. }) => {
//!         assert_eq!((worst.input, worst.element), (1, Some(0)));
//!         assert_eq!(worst.analytic, 8.0); // 2·b², where 3·b² = 12
//!     }
//!     other => panic!("the wrong rule was not caught: {other:?}"),
//! }
//! ```
//!
//! Tensors go in by value (`Tensor` is cheap to clone); the checker needs `F64` tensors:
//!
//! ```
//! use adjoint::check::{check_dot_product, check_gradient};
//! use adjoint::prelude::*;
//!
//! #[differentiable]
//! fn layer(w: Tensor, x: Tensor) -> Tensor {
//!     x.matmul(&w).tanh()
//! }
//!
//! let w = Tensor::from_vec(vec![0.5_f64, -1.0, 2.0, 0.25], &[2, 2]);
//! let x = Tensor::from_vec(vec![1.0_f64, -0.5, 0.75, 0.1, 0.3, -2.0], &[3, 2]);
//! // A vector value is checked along a random cotangent: one comparison per input element.
//! let report = check_gradient(|(w, x)| layer_vjp(w, x), &(w.clone(), x.clone())).unwrap();
//! assert_eq!(report.checked, 4 + 6);
//! // One comparison per input, whatever its size.
//! assert_eq!(check_dot_product(|(w, x)| layer_vjp(w, x), &(w, x)).unwrap().checked, 2);
//! ```

mod flat;
mod forward;
mod report;
mod second;

pub use flat::Checkable;
pub use forward::{check_jvp, check_jvp_with};
pub use report::{CheckError, Comparison, Derivative, GradientReport, Tolerance};
pub use second::{check_hessian, check_hessian_with, check_hvp, check_hvp_with};

/// [`check_gradient_with`] at the default [`Tolerance`].
///
/// # Errors
/// See [`check_gradient_with`].
pub fn check_gradient<I, O, P>(
    f: impl Fn(I) -> (O, P),
    inputs: &I,
) -> Result<GradientReport, CheckError>
where
    I: Checkable,
    O: Checkable,
    P: FnOnce(O::Tangent) -> I::Tangent,
{
    check_gradient_with(Tolerance::default(), f, inputs)
}

/// Checks every element of the pullback's result against central differences.
///
/// `f` is called once with `inputs` for the pullback, which is seeded with the cotangent `w`
/// (`1` for a one-element value, seeded uniform `[-1, 1)` elements otherwise); then twice per
/// input element `xᵢ`, at `x ± h·eᵢ`, for `nᵢ = (⟨w, f(x + h·eᵢ)⟩ − ⟨w, f(x − h·eᵢ)⟩) / 2h`,
/// which must match `aᵢ = (Jᵀw)ᵢ` within `tolerance`.
///
/// # Errors
/// [`CheckError::Mismatch`] naming the worst element if any differs;
/// [`CheckError::TangentShape`] if the pullback's tangent does not fit the inputs;
/// [`CheckError::Precision`] if an input or the value is not `f64`.
pub fn check_gradient_with<I, O, P>(
    tolerance: Tolerance,
    f: impl Fn(I) -> (O, P),
    inputs: &I,
) -> Result<GradientReport, CheckError>
where
    I: Checkable,
    O: Checkable,
    P: FnOnce(O::Tangent) -> I::Tangent,
{
    compare_companion(tolerance, f, inputs, gradient_comparisons)
}

/// [`check_gradient_with`] for a function whose companion borrows its inputs (`fn f(x:
/// &Tensor)`, whose pullback may keep `x` borrowed, so that a closure cannot return it):
/// `value` computes `f`, `vjp` the pullback of a cotangent.
///
/// ```
/// use adjoint::check::{Tolerance, check_gradient_by};
/// use adjoint::prelude::*;
///
/// #[differentiable]
/// fn f(x: &Tensor, w: &Tensor) -> Tensor {
///     (x * w).sin().sum_all()
/// }
///
/// let (x, w) = (Tensor::from_vec(vec![0.5_f64, -1.0], &[2]), Tensor::from_vec(vec![2.0_f64, 0.25], &[2]));
/// let report = check_gradient_by(
///     Tolerance::default(),
///     |(x, w): &(Tensor, Tensor)| f(x, w),
///     |(x, w), seed| f_vjp(x, w).1(seed),
///     &(x, w),
/// );
/// assert_eq!(report.unwrap().checked, 4);
/// ```
///
/// # Errors
/// As [`check_gradient_with`].
pub fn check_gradient_by<I, O>(
    tolerance: Tolerance,
    value: impl Fn(&I) -> O,
    vjp: impl Fn(&I, O::Tangent) -> I::Tangent,
    inputs: &I,
) -> Result<GradientReport, CheckError>
where
    I: Checkable,
    O: Checkable,
{
    compare_by(tolerance, value, vjp, inputs, gradient_comparisons)
}

/// The comparisons a check makes on a [`Probe`] (every element, or the dot-product identity).
type Comparisons<I, O> = fn(&Probe<'_, I, O>, Tolerance) -> Result<GradientReport, CheckError>;

/// `compare` on the probe of a companion `f` that takes its inputs by value: `f` called once
/// for the pullback, then for the value at each perturbed input.
fn compare_companion<I, O, P>(
    tolerance: Tolerance,
    f: impl Fn(I) -> (O, P),
    inputs: &I,
    compare: Comparisons<I, O>,
) -> Result<GradientReport, CheckError>
where
    I: Checkable,
    O: Checkable,
    P: FnOnce(O::Tangent) -> I::Tangent,
{
    let value = |x: &I| f(x.clone()).0;
    let (y, pullback) = f(inputs.clone());
    compare(
        &Probe::new(&value, inputs, tolerance, y, pullback)?,
        tolerance,
    )
}

/// `compare` on the probe of a function given as its `value` and its `vjp` (a companion that
/// borrows its inputs).
fn compare_by<I: Checkable, O: Checkable>(
    tolerance: Tolerance,
    value: impl Fn(&I) -> O,
    vjp: impl Fn(&I, O::Tangent) -> I::Tangent,
    inputs: &I,
    compare: Comparisons<I, O>,
) -> Result<GradientReport, CheckError> {
    let y = value(inputs);
    let probe = Probe::new(&value, inputs, tolerance, y, |seed| vjp(inputs, seed))?;
    compare(&probe, tolerance)
}

/// The comparisons of every element of the probe's gradient with its central difference.
fn gradient_comparisons<I: Checkable, O: Checkable>(
    probe: &Probe<'_, I, O>,
    tolerance: Tolerance,
) -> Result<GradientReport, CheckError> {
    let h = tolerance.step;
    let mut delta = vec![0.0; probe.x.len()];
    let mut comparisons = Vec::with_capacity(probe.x.len());
    for (input, range) in probe.ranges().into_iter().enumerate() {
        for (element, i) in range.enumerate() {
            delta[i] = h;
            comparisons.push(Comparison {
                derivative: Derivative::Pullback,
                input,
                element: Some(element),
                analytic: probe.gradient[i],
                numeric: probe.directional(&delta),
            });
            delta[i] = 0.0;
        }
    }
    summarize(comparisons, tolerance)
}

/// [`check_dot_product_with`] at the default [`Tolerance`].
///
/// # Errors
/// See [`check_dot_product_with`].
pub fn check_dot_product<I, O, P>(
    f: impl Fn(I) -> (O, P),
    inputs: &I,
) -> Result<GradientReport, CheckError>
where
    I: Checkable,
    O: Checkable,
    P: FnOnce(O::Tangent) -> I::Tangent,
{
    check_dot_product_with(Tolerance::default(), f, inputs)
}

/// Checks `⟨J v, w⟩ = ⟨v, Jᵀ w⟩` for each top-level input: `v` is a seeded random direction in
/// that input (zero in the others), `w` a seeded random cotangent (`1` for a one-element
/// value), `Jᵀ w` the pullback's tangent and `J v` the central difference
/// `(f(x + h·v) − f(x − h·v)) / 2h`.
///
/// # Errors
/// As [`check_gradient_with`]; a [`Comparison`] here has `element: None`.
pub fn check_dot_product_with<I, O, P>(
    tolerance: Tolerance,
    f: impl Fn(I) -> (O, P),
    inputs: &I,
) -> Result<GradientReport, CheckError>
where
    I: Checkable,
    O: Checkable,
    P: FnOnce(O::Tangent) -> I::Tangent,
{
    compare_companion(tolerance, f, inputs, dot_product_comparisons)
}

/// [`check_dot_product_with`] for a companion that borrows its inputs: `value` and `vjp` as
/// in [`check_gradient_by`].
///
/// # Errors
/// As [`check_gradient_with`].
pub fn check_dot_product_by<I, O>(
    tolerance: Tolerance,
    value: impl Fn(&I) -> O,
    vjp: impl Fn(&I, O::Tangent) -> I::Tangent,
    inputs: &I,
) -> Result<GradientReport, CheckError>
where
    I: Checkable,
    O: Checkable,
{
    compare_by(tolerance, value, vjp, inputs, dot_product_comparisons)
}

/// The dot-product identity along a random direction of each top-level input.
fn dot_product_comparisons<I: Checkable, O: Checkable>(
    probe: &Probe<'_, I, O>,
    tolerance: Tolerance,
) -> Result<GradientReport, CheckError> {
    let mut random = SplitMix(tolerance.seed ^ 0x05ee_dd07);
    let mut comparisons = Vec::new();
    for (input, range) in probe.ranges().into_iter().enumerate() {
        if range.is_empty() {
            continue;
        }
        let mut delta = vec![0.0; probe.x.len()];
        let mut analytic = 0.0;
        for i in range {
            let v = random.uniform();
            analytic += v * probe.gradient[i];
            delta[i] = v * tolerance.step;
        }
        let numeric = probe.directional(&delta);
        comparisons.push(Comparison {
            derivative: Derivative::Pullback,
            input,
            element: None,
            analytic,
            numeric,
        });
    }
    summarize(comparisons, tolerance)
}

/// The function under test at the inputs: the flat inputs, the cotangent `w` and the
/// pullback's tangent `Jᵀw`, flat.
struct Probe<'f, I, O> {
    value: &'f dyn Fn(&I) -> O,
    inputs: &'f I,
    x: Vec<f64>,
    w: Vec<f64>,
    gradient: Vec<f64>,
    step: f64,
}

impl<'f, I: Checkable, O: Checkable> Probe<'f, I, O> {
    /// The probe of the value `y` at `inputs` and its pullback.
    fn new(
        value: &'f dyn Fn(&I) -> O,
        inputs: &'f I,
        tolerance: Tolerance,
        y: O,
        pullback: impl FnOnce(O::Tangent) -> I::Tangent,
    ) -> Result<Self, CheckError> {
        precision(inputs, "an input")?;
        precision(&y, "the value")?;
        let w = match y.flat_len() {
            1 => vec![1.0],
            n => {
                let mut random = SplitMix(tolerance.seed);
                (0..n).map(|_| random.uniform()).collect()
            }
        };
        let tangent = pullback(y.tangent_from(&mut w.iter()));
        let mut gradient = Vec::with_capacity(inputs.flat_len());
        inputs
            .flatten_tangent(&tangent, &mut gradient)
            .map_err(|e| CheckError::TangentShape {
                message: format!("the pullback's tangent does not fit the inputs: {e}"),
            })?;
        let mut x = Vec::with_capacity(gradient.len());
        inputs.flatten(&mut x);
        Ok(Probe {
            value,
            inputs,
            x,
            w,
            gradient,
            step: tolerance.step,
        })
    }

    /// The element ranges of the top-level inputs in the flat inputs.
    fn ranges(&self) -> Vec<std::ops::Range<usize>> {
        let mut start = 0;
        let parts = self.inputs.parts();
        parts
            .into_iter()
            .map(|n| {
                start += n;
                start - n..start
            })
            .collect()
    }

    /// `⟨w, f(x + δ)⟩`.
    fn value_at(&self, delta: &[f64], sign: f64) -> f64 {
        let moved: Vec<f64> = self
            .x
            .iter()
            .zip(delta)
            .map(|(x, d)| x + sign * d)
            .collect();
        let y = (self.value)(&self.inputs.unflatten(&mut moved.iter()));
        let mut flat = Vec::with_capacity(self.w.len());
        y.flatten(&mut flat);
        flat.iter().zip(&self.w).map(|(y, w)| y * w).sum()
    }

    /// `(⟨w, f(x + δ)⟩ − ⟨w, f(x − δ)⟩) / 2h`.
    fn directional(&self, delta: &[f64]) -> f64 {
        (self.value_at(delta, 1.0) - self.value_at(delta, -1.0)) / (2.0 * self.step)
    }
}

/// A [`CheckError::Precision`] if `value` (`what`: "an input", "the value") cannot be checked
/// in `f64`.
fn precision<T: Checkable>(value: &T, what: &str) -> Result<(), CheckError> {
    match value.precision_issue() {
        Some(message) => Err(CheckError::Precision {
            message: format!("{what} is {message}"),
        }),
        None => Ok(()),
    }
}

/// The report of `comparisons`, or the error naming the worst.
fn summarize(
    comparisons: Vec<Comparison>,
    tolerance: Tolerance,
) -> Result<GradientReport, CheckError> {
    let ratio = |c: &Comparison| c.ratio(&tolerance);
    let worst = comparisons
        .iter()
        .copied()
        .max_by(|a, b| ratio(a).total_cmp(&ratio(b)));
    let failures = comparisons.iter().filter(|c| !c.passes(&tolerance)).count();
    match worst {
        Some(worst) if failures > 0 => Err(CheckError::Mismatch {
            worst,
            failures,
            checked: comparisons.len(),
            tolerance,
        }),
        _ => Ok(GradientReport {
            checked: comparisons.len(),
            worst,
            tolerance,
        }),
    }
}

/// SplitMix64: a small seeded generator, so that a check is reproducible.
struct SplitMix(u64);

impl SplitMix {
    /// Uniform in `[-1, 1)`.
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

#[cfg(test)]
mod tests;
