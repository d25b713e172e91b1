//! ht (hand tracking): the 3·N residuals between N observed points and a skinned hand model
//! posed by 26 parameters θ (simple variant: each point matched to a vertex; complicated: to a
//! point of a triangle given by barycentric coordinates `us`), and their dense Jacobian with
//! respect to θ (and to `us`, two compressed columns), from forward tangents of
//! [`objective::objective_simple`] and [`objective::objective_complicated`].

pub mod input;
pub mod model;
pub mod objective;
pub mod skinning;
#[cfg(test)]
mod tests;

use super::{Module, timed_prepared};
use input::Problem;
use serde::Serialize;

/// The Jacobian as the reference encodes it: a list of rows, from its columns.
struct Rows(Vec<Vec<f64>>);

impl Serialize for Rows {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let columns = &self.0;
        let rows = columns.first().map_or(0, Vec::len);
        let by_row: Vec<Vec<f64>> = (0..rows)
            .map(|r| columns.iter().map(|c| c[r]).collect())
            .collect();
        by_row.serialize(serializer)
    }
}

/// `objective` = the residuals, `jacobian` = their dense Jacobian by forward mode.
pub const MODULE: Module = Module {
    name: "ht",
    functions: &[
        ("objective", |input| {
            timed_prepared(input, Problem::new, objective::objective)
        }),
        ("jacobian", |input| {
            timed_prepared(input, Problem::new, |p| Rows(objective::jacobian(p)))
        }),
    ],
};
