//! What a gradient check returns: the [`Tolerance`] it used, a [`GradientReport`] when every
//! comparison passed, a [`CheckError`] naming the worst one when some did not.

use std::fmt;

/// The finite-difference step and the tolerance of a check.
///
/// A derivative `a` from the pullback passes against the central difference
/// `n = (f(x + h) − f(x − h)) / 2h` when `|a − n| ≤ atol + rtol·|n|` (NaN never passes). The
/// defaults, `h = 1e-6`, `atol = rtol = 1e-5`, are tighter than PyTorch's `gradcheck`
/// (`atol = 1e-5`, `rtol = 1e-3`): the truncation error of a central difference is `O(h²)`
/// and its rounding error about `1e-16·|f| / h`, both far below `1e-5` for values of order 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// The step `h` of the central differences.
    pub step: f64,
    /// The absolute part of the tolerance.
    pub atol: f64,
    /// The relative part of the tolerance, times `|n|`.
    pub rtol: f64,
    /// The seed of the random cotangent and directions.
    pub seed: u64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance {
            step: 1e-6,
            atol: 1e-5,
            rtol: 1e-5,
            seed: 0,
        }
    }
}

/// Which companion gave the derivative of a [`Comparison`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Derivative {
    /// A pullback ([`check_gradient`](super::check_gradient),
    /// [`check_dot_product`](super::check_dot_product)): the comparison names an input element.
    Pullback,
    /// A jvp ([`check_jvp`](super::check_jvp)): the comparison names an output element.
    Jvp,
    /// A second derivative by forward-over-reverse ([`check_hessian`](super::check_hessian),
    /// [`check_hvp`](super::check_hvp)): the comparison names the Hessian's column (the
    /// direction `eⱼ`; 0 for the one direction of `check_hvp`) as its `input` and its row
    /// (the gradient element) as its `element`.
    Hessian,
}

/// One comparison of a derivative from a companion with its finite difference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comparison {
    /// The companion checked; it says whether `input` and `element` name an input or an
    /// output element.
    pub derivative: Derivative,
    /// The top-level input (the position in the inputs' tuple; 0 for a single input), or for
    /// a [`Derivative::Jvp`] the top-level part of the output.
    pub input: usize,
    /// The element of that input (or output part), in [`Checkable`](super::Checkable) order,
    /// or `None` for a dot-product check along a random direction.
    pub element: Option<usize>,
    /// What the companion gives (`∂⟨w, f⟩/∂xᵢ`, `⟨v, Jᵀw⟩`, `(J v)ₖ`, or `(H v)ᵢ`).
    pub analytic: f64,
    /// What central differences give (or `⟨J v, w⟩`, or `(f(x + hv) − f(x − hv))ₖ / 2h`, or
    /// `(∇f(x + hv) − ∇f(x − hv))ᵢ / 2h`).
    pub numeric: f64,
}

impl Comparison {
    /// `|a − n|`.
    pub fn abs_error(&self) -> f64 {
        (self.analytic - self.numeric).abs()
    }

    /// `|a − n| / max(|a|, |n|)`, 0 when both are 0.
    pub fn rel_error(&self) -> f64 {
        let scale = self.analytic.abs().max(self.numeric.abs());
        if scale == 0.0 {
            0.0
        } else {
            self.abs_error() / scale
        }
    }

    /// `|a − n| / (atol + rtol·|n|)`: at most 1 passes (infinite for NaN).
    pub fn ratio(&self, tolerance: &Tolerance) -> f64 {
        let r = self.abs_error() / (tolerance.atol + tolerance.rtol * self.numeric.abs());
        if r.is_nan() { f64::INFINITY } else { r }
    }

    /// Whether the comparison passes `tolerance`.
    pub fn passes(&self, tolerance: &Tolerance) -> bool {
        self.ratio(tolerance) <= 1.0
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let by = match (self.derivative, self.element) {
            (Derivative::Pullback, Some(e)) => {
                write!(f, "input {}, element {e}", self.input)?;
                "pullback"
            }
            (Derivative::Pullback, None) => {
                write!(f, "input {}, along a random direction", self.input)?;
                "pullback"
            }
            (Derivative::Jvp, e) => {
                write!(f, "output {}, element {}", self.input, e.unwrap_or(0))?;
                "jvp"
            }
            (Derivative::Hessian, e) => {
                write!(f, "Hessian row {}, column {}", e.unwrap_or(0), self.input)?;
                "forward-over-reverse Hessian"
            }
        };
        write!(
            f,
            ": the {by} gives {:e}, central differences {:e} (relative error {:.2e})",
            self.analytic,
            self.numeric,
            self.rel_error()
        )
    }
}

/// A passed check: how many comparisons were made and the one closest to failing.
#[derive(Clone, Debug, PartialEq)]
pub struct GradientReport {
    /// The number of comparisons.
    pub checked: usize,
    /// The comparison with the largest [`ratio`](Comparison::ratio), `None` if there was none
    /// (an input without elements).
    pub worst: Option<Comparison>,
    /// The tolerance used.
    pub tolerance: Tolerance,
}

/// Why a check failed.
#[derive(Clone, Debug, PartialEq)]
pub enum CheckError {
    /// Some derivatives differ from their finite differences beyond the tolerance.
    Mismatch {
        /// The comparison with the largest error ratio.
        worst: Comparison,
        /// How many comparisons failed.
        failures: usize,
        /// How many comparisons were made.
        checked: usize,
        /// The tolerance used.
        tolerance: Tolerance,
    },
    /// The pullback returned a tangent that does not fit its input (shape, length), or, for
    /// [`check_jvp`](super::check_jvp), the tangent given does not fit the inputs or the jvp's
    /// does not fit its value.
    TangentShape {
        /// What does not fit, naming the part.
        message: String,
    },
    /// An input or the output cannot be checked in `f64` (an `f32` tensor).
    Precision {
        /// Which value, and how to fix it.
        message: String,
    },
    /// A NaN or infinite input element or direction, where no derivative can be checked.
    NonFinite {
        /// Which element, and its value.
        message: String,
    },
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::Mismatch {
                worst,
                failures,
                checked,
                tolerance,
            } => write!(
                f,
                "gradient check failed: {failures} of {checked} derivatives differ from central differences (step {:e}, allowed |a − n| ≤ {:e} + {:e}·|n|); worst: {worst}",
                tolerance.step, tolerance.atol, tolerance.rtol
            ),
            CheckError::TangentShape { message } => {
                write!(f, "gradient check: a tangent does not fit: {message}")
            }
            CheckError::Precision { message } | CheckError::NonFinite { message } => {
                write!(f, "gradient check: {message}")
            }
        }
    }
}

impl std::error::Error for CheckError {}
