//! ba (bundle adjustment): for p observations of m points by n cameras, the reprojection errors
//! `w_i · (project(cam_c, X_k) − feat_i)` (2 per observation) and weight errors `1 − w_i²`, and
//! their sparse Jacobian with respect to every camera parameter, point coordinate and weight.
//! Each observation's two Jacobian rows are two pullbacks of [`model::reproj_error`] (seeded
//! with (1, 0) and (0, 1)); each weight row is the gradient of [`model::weight_error`].
//!
//! The eval sends one camera, point, weight and feature and the counts (see [`input`]); the
//! answer, as the reference encodes it, is the first two errors and the count for the objective,
//! and the first 30 and the last entry of each of the Jacobian's compressed-row lists.

pub mod input;
pub mod jacobian;
pub mod model;
#[cfg(test)]
mod tests;

use super::{Module, timed_prepared};
use input::{Compact, Problem};
use jacobian::{Errors, SparseMat};
use serde::Serialize;
use serde_json::{Value, json};

/// The objective as the reference encodes it: its first reprojection error and weight error,
/// each with the number of observations.
fn encode_errors(errors: &Errors) -> Value {
    json!({
        "reproj_error": {"elements": errors.reproj.first().map(|&(e0, e1)| [e0, e1]), "repeated": errors.reproj.len()},
        "w_err": {"element": errors.w.first(), "repeated": errors.w.len()},
    })
}

/// The first 30 items and the last of `items` (fewer if it is shorter).
fn head_and_last<T: Copy>(items: &[T]) -> Vec<T> {
    let mut kept: Vec<T> = items.iter().take(30).copied().collect();
    if items.len() > 30 {
        kept.extend(items.last().copied());
    }
    kept
}

/// The Jacobian as the reference encodes it: the first 30 and the last of `rows`, `cols` and
/// `vals`.
fn encode_jacobian(jac: &SparseMat) -> Value {
    json!({
        "rows": head_and_last(&jac.rows),
        "cols": head_and_last(&jac.cols),
        "vals": head_and_last(&jac.vals),
    })
}

/// An output that encodes itself by a function of the full result (untimed).
struct Encoded<T>(T, fn(&T) -> Value);

impl<T> Serialize for Encoded<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (self.1)(&self.0).serialize(serializer)
    }
}

/// `objective` = every error, `jacobian` = their sparse Jacobian from per-observation pullbacks.
pub const MODULE: Module = Module {
    name: "ba",
    functions: &[
        ("objective", |input| {
            timed_prepared(
                input,
                |c: Compact| Problem::expand(&c),
                |p| Encoded(jacobian::objective(p), encode_errors),
            )
        }),
        ("jacobian", |input| {
            timed_prepared(
                input,
                |c: Compact| Problem::expand(&c),
                |p| Encoded(jacobian::jacobian(p), encode_jacobian),
            )
        }),
    ],
};
