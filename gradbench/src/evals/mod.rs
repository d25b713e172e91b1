//! The evals this tool implements, one module each, and the glue that decodes an input, times
//! a function over it and encodes its output.

use crate::runs::Runs;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::time::Duration;

pub mod ba;
pub mod det;
mod gd;
pub mod gmm;
pub mod hello;
pub mod ht;
pub mod kmeans;
pub mod llsq;
pub mod lse;
pub mod lstm;
pub mod ode;
pub mod particle;
pub mod rows;
pub mod saddle;

/// One function of an eval: the decoded-and-timed call on a raw `input`, or why the input
/// does not fit.
pub type Function = fn(Value) -> Result<Done, String>;

/// A GradBench module: its name and its functions by name.
pub struct Module {
    /// The name `define` and `evaluate` messages use.
    pub name: &'static str,
    /// The functions, by the names `evaluate` messages use.
    pub functions: &'static [(&'static str, Function)],
}

/// Every module this tool answers `define` with `success: true`.
pub const MODULES: &[Module] = &[
    ba::MODULE,
    det::MODULE,
    gmm::MODULE,
    hello::MODULE,
    ht::MODULE,
    kmeans::MODULE,
    llsq::MODULE,
    lse::MODULE,
    lstm::MODULE,
    ode::MODULE,
    particle::MODULE,
    saddle::MODULE,
];

/// Functions of the evals whose nesting of derivatives adjoint cannot do yet: (module,
/// function, why). `evaluate` answers them with [`EvalError::Unsupported`].
pub const UNSUPPORTED: &[(&str, &str, &str)] = &[
    ("particle", "rr", REVERSE_OVER_REVERSE),
    ("saddle", "rr", REVERSE_OVER_REVERSE),
    ("saddle", "rf", SADDLE_RF),
];

const REVERSE_OVER_REVERSE: &str = "reverse-over-reverse is not supported yet: the outer \
    pullback would have to differentiate code that calls the inner pullback \
    (`gradient(f_vjp(..))`), and #[differentiable] cannot differentiate its own generated \
    companions or their closures; reverse-over-forward (dual sweeps inside) and the forward \
    outer orders work";

const SADDLE_RF: &str = "reverse-over-forward is not written for saddle yet: the outer pullback \
    must run through the whole inner gradient descent, which lives in the generic solver \
    (closures, early returns) that #[differentiable] does not take; particle's rf shows the \
    mechanism (dual(..)/dual_eps(..) inside a reverse-differentiated loop)";

/// The module called `name`.
pub fn module(name: &str) -> Option<&'static Module> {
    MODULES.iter().find(|m| m.name == name)
}

/// A function's output, encoded, and the time of each run.
pub struct Done {
    /// The output of the last run.
    pub output: Value,
    /// One duration per run.
    pub timings: Vec<Duration>,
}

/// Why an `evaluate` message has no output.
#[derive(Debug, PartialEq)]
pub enum EvalError {
    /// No module of that name.
    UnknownModule(String),
    /// The module has no function of that name.
    UnknownFunction { module: String, function: String },
    /// The function exists in the eval but adjoint cannot compute its nesting of derivatives.
    Unsupported {
        module: String,
        function: String,
        reason: &'static str,
    },
    /// The input does not decode, or decodes to a value the function cannot take.
    BadInput {
        module: String,
        function: String,
        reason: String,
    },
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::UnknownModule(m) => {
                let known: Vec<&str> = MODULES.iter().map(|m| m.name).collect();
                write!(
                    f,
                    "adjoint has no module `{m}` (it has {})",
                    known.join(", ")
                )
            }
            EvalError::UnknownFunction { module, function } => {
                let known: Vec<&str> = self::module(module)
                    .map(|m| m.functions.iter().map(|(name, _)| *name).collect())
                    .unwrap_or_default();
                write!(
                    f,
                    "module `{module}` has no function `{function}` (it has {})",
                    known.join(", ")
                )
            }
            EvalError::Unsupported {
                module,
                function,
                reason,
            } => write!(f, "{module}::{function}: {reason}"),
            EvalError::BadInput {
                module,
                function,
                reason,
            } => {
                write!(f, "bad input to {module}::{function}: {reason}")
            }
        }
    }
}

impl std::error::Error for EvalError {}

/// Runs `function` of `module` on `input`.
pub fn evaluate(module: &str, function: &str, input: Value) -> Result<Done, EvalError> {
    let found = self::module(module).ok_or_else(|| EvalError::UnknownModule(module.to_owned()))?;
    if let Some((_, _, reason)) = UNSUPPORTED
        .iter()
        .find(|(m, f, _)| *m == module && *f == function)
    {
        return Err(EvalError::Unsupported {
            module: module.to_owned(),
            function: function.to_owned(),
            reason,
        });
    }
    let (_, call) = found
        .functions
        .iter()
        .find(|(name, _)| *name == function)
        .ok_or_else(|| EvalError::UnknownFunction {
            module: module.to_owned(),
            function: function.to_owned(),
        })?;
    call(input).map_err(|reason| EvalError::BadInput {
        module: module.to_owned(),
        function: function.to_owned(),
        reason,
    })
}

/// An eval's decoded input, with the checks its functions need beyond its JSON shape.
pub trait Input: DeserializeOwned {
    /// Why the decoded value cannot be evaluated, if it cannot.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Decodes `I` and the runs from `input`, then times `f` on it.
pub fn timed<I: Input, O: Serialize>(input: Value, f: impl Fn(&I) -> O) -> Result<Done, String> {
    timed_prepared(input, |i: I| i, f)
}

/// Decodes `I` and the runs from `input`, turns the checked input into what `f` runs on by
/// `prepare` (untimed, as the C++ tools do such work while decoding: ba's copies of its one
/// camera, ht's matrices), then times `f` on it.
pub fn timed_prepared<I: Input, P, O: Serialize>(
    input: Value,
    prepare: impl FnOnce(I) -> P,
    f: impl Fn(&P) -> O,
) -> Result<Done, String> {
    let runs = match &input {
        Value::Object(_) => Runs::deserialize(&input).map_err(|e| e.to_string())?,
        _ => Runs::default(),
    };
    let decoded = I::deserialize(input).map_err(|e| e.to_string())?;
    decoded.check()?;
    let prepared = prepare(decoded);
    let timed = runs.time(|| f(&prepared));
    let output = serde_json::to_value(&timed.output)
        .map_err(|e| format!("the output does not encode: {e}"))?;
    Ok(Done {
        output,
        timings: timed.timings,
    })
}
