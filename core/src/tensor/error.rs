//! [`TensorError`]: what the `try_` variants of tensor ops return.

use std::fmt;

/// A tensor operation was given arguments it cannot work with (shapes, axes, ids, dtypes).
///
/// The message names the op and the offending shapes, e.g.
/// `matmul: inner dimensions differ: [2, 3] · [4, 5]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorError {
    /// The operation, as the user called it (`"matmul"`, `"add"`, ...).
    pub op: &'static str,
    /// What is wrong, with the shapes involved.
    pub message: String,
}

impl TensorError {
    /// A new error of `op`.
    pub fn new(op: &'static str, message: impl Into<String>) -> Self {
        TensorError {
            op,
            message: message.into(),
        }
    }
}

impl fmt::Display for TensorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.op, self.message)
    }
}

impl std::error::Error for TensorError {}

/// The value of `r`, or a panic with its message at the caller's location.
#[track_caller]
pub(crate) fn or_panic<T>(r: Result<T, TensorError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

/// `Err(TensorError)` unless `cond`.
pub(crate) fn ensure(
    cond: bool,
    op: &'static str,
    msg: impl FnOnce() -> String,
) -> Result<(), TensorError> {
    if cond {
        Ok(())
    } else {
        Err(TensorError::new(op, msg()))
    }
}
