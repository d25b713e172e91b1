//! kmeans: the cost f(C) = Σᵢ minⱼ |Cⱼ − Pᵢ|² of k centroids C for n points P (all in d
//! dimensions), and the Newton direction `dir` = J·H⁻¹: the gradient J = ∂f/∂C divided
//! elementwise by the Hessian's diagonal.
//!
//! Both derivatives come from one forward-over-reverse sweep: `cost_vjp` run on
//! [`Dual<f64>`] centroids C + ε·1 gives ∇f in the real parts and H·1 in the ε parts. H is
//! diagonal (each point's term depends on one centroid, and |Cⱼ − Pᵢ|² = Σₗ (Cⱼₗ − Pᵢₗ)² separates
//! the coordinates; the eval's README states it), so H·1 is its diagonal: the one-colour
//! compression of a diagonal Hessian, as tools that compute `jvp(grad f)(C; 1)` do.

use super::{Input, Module, timed};
use adjoint::prelude::*;
use serde::Deserialize;

/// A matrix given as a list of rows, kept row-major; whether the rows have one length is
/// left to [`Input::check`], which names the field.
#[derive(Deserialize)]
#[serde(from = "Vec<Vec<f64>>")]
pub struct Rows {
    /// The elements, row after row.
    pub data: Vec<f64>,
    /// The number of rows.
    pub count: usize,
    /// The length of the first row (0 when there is none).
    pub width: usize,
    /// The first row whose length differs from the first row's, and its length.
    pub ragged: Option<(usize, usize)>,
}

impl From<Vec<Vec<f64>>> for Rows {
    fn from(rows: Vec<Vec<f64>>) -> Self {
        let width = rows.first().map_or(0, Vec::len);
        let ragged = rows
            .iter()
            .enumerate()
            .find(|(_, r)| r.len() != width)
            .map(|(i, r)| (i, r.len()));
        Rows {
            data: rows.concat(),
            count: rows.len(),
            width,
            ragged,
        }
    }
}

impl Rows {
    /// Why `self` is not a non-empty matrix of rows of one length `width` (≥ 1), as the
    /// error of field `name`.
    fn check(&self, name: &str) -> Result<(), String> {
        if self.count == 0 {
            return Err(format!("`{name}` has no rows"));
        }
        if self.width == 0 {
            return Err(format!(
                "`{name}`[0] is empty; points need d ≥ 1 coordinates"
            ));
        }
        if let Some((row, len)) = self.ragged {
            return Err(format!(
                "`{name}`[{row}] has {len} coordinates where `{name}`[0] has {}",
                self.width
            ));
        }
        Ok(())
    }
}

/// The eval's input: n points and k centroids, one d-dimensional point per row.
#[derive(Deserialize)]
pub struct Kmeans {
    /// The points Pᵢ.
    pub points: Rows,
    /// The centroids Cⱼ.
    pub centroids: Rows,
}

impl Input for Kmeans {
    fn check(&self) -> Result<(), String> {
        self.points.check("points")?;
        self.centroids.check("centroids")?;
        if self.centroids.width != self.points.width {
            return Err(format!(
                "`centroids` have {} coordinates where `points` have {}",
                self.centroids.width, self.points.width
            ));
        }
        Ok(())
    }
}

/// f(C) = Σᵢ minⱼ Σₗ (Pᵢₗ − Cⱼₗ)² for row-major `points` (n × d) and `centroids` (k × d),
/// computed as the C++ reference does: per point, the running minimum over the centroids of
/// the squared distance.
#[differentiable]
pub fn cost<T: Float>(#[no_derivative] points: &[T], centroids: &[T], d: usize) -> T {
    let n = points.len() / d;
    let k = centroids.len() / d;
    let infinity = T::from_f64(f64::INFINITY);
    let mut cost = T::ZERO;
    for i in 0..n {
        let mut closest = infinity;
        for j in 0..k {
            let mut dist = T::ZERO;
            for l in 0..d {
                let diff = points[i * d + l] - centroids[j * d + l];
                dist += diff * diff;
            }
            closest = closest.min(dist);
        }
        cost += closest;
    }
    cost
}

/// J·H⁻¹ as k rows of d: ∇f and diag H from one reverse sweep of [`cost`] in dual numbers at
/// C + ε·1 (see the module docs), then their quotient.
fn dir(input: &Kmeans) -> Vec<Vec<f64>> {
    let d = input.points.width;
    let seeded: Vec<Dual<f64>> = input
        .centroids
        .data
        .iter()
        .map(|&c| Dual::variable(c))
        .collect();
    let points: Vec<Dual<f64>> = input
        .points
        .data
        .iter()
        .map(|&p| Dual::constant(p))
        .collect();
    let g: Vec<Dual<f64>> = gradient(cost_vjp(&points, &seeded, d));
    g.chunks(d)
        .map(|row| row.iter().map(|gh| gh.re / gh.eps).collect())
        .collect()
}

/// `cost` = f(C), `dir` = J·H⁻¹ from one forward-over-reverse sweep of `cost`.
pub const MODULE: Module = Module {
    name: "kmeans",
    functions: &[
        ("cost", |input| {
            timed(input, |i: &Kmeans| {
                cost(&i.points.data, &i.centroids.data, i.points.width)
            })
        }),
        ("dir", |input| timed(input, dir)),
    ],
};
