//! The objective (every reprojection and weight error) and its sparse Jacobian, assembled
//! row by row as the C++ reference's `SparseMat` does: for observation i of camera c and point
//! k, two rows (the error's x and y) with 11 + 3 + 1 entries, ∂/∂cam_c, ∂/∂X_k and ∂/∂w_i, then
//! p rows of one entry, ∂(1 − w_i²)/∂w_i. Each row is one pullback of `reproj_error` or
//! `weight_error`.

use super::input::Problem;
use super::model::{CAM_PARAMS, reproj_error, reproj_error_vjp, weight_error, weight_error_vjp};
use adjoint::prelude::*;

/// Every reprojection error (one pair per observation) and weight error.
pub struct Errors {
    /// `w_i · (project(cam_c, X_k) − feat_i)` per observation i.
    pub reproj: Vec<(f64, f64)>,
    /// `1 − w_i²` per observation i.
    pub w: Vec<f64>,
}

/// The objective of the C++ reference: the two loops over the observations.
pub fn objective(problem: &Problem) -> Errors {
    let p = problem.p();
    let mut reproj = vec![(0.0, 0.0); p];
    for (i, &[cam, point]) in problem.obs.iter().enumerate() {
        reproj[i] = reproj_error(
            &problem.cams[cam],
            problem.xs[point],
            problem.ws[i],
            problem.feats[i],
        );
    }
    let mut w = vec![0.0; p];
    for (i, &wi) in problem.ws.iter().enumerate() {
        w[i] = weight_error(wi);
    }
    Errors { reproj, w }
}

/// A sparse matrix in compressed-row form: row r's entries are `cols[rows[r]..rows[r + 1]]`
/// and `vals[rows[r]..rows[r + 1]]` (32-bit indices, as the reference's `int`s).
pub struct SparseMat {
    /// Where each row starts in `cols`/`vals`, and one past the end.
    pub rows: Vec<u32>,
    /// The column of each entry.
    pub cols: Vec<u32>,
    /// The value of each entry.
    pub vals: Vec<f64>,
}

/// Entries per reprojection row: the camera's parameters, the point's coordinates, the weight.
const REPROJ_ENTRIES: usize = CAM_PARAMS + 3 + 1;

impl SparseMat {
    /// An empty matrix with room for the Jacobian of `p` observations.
    fn with_capacity(p: usize) -> SparseMat {
        let entries = REPROJ_ENTRIES * 2 * p + p;
        let mut rows = Vec::with_capacity(3 * p + 1);
        rows.push(0);
        SparseMat {
            rows,
            cols: Vec::with_capacity(entries),
            vals: Vec::with_capacity(entries),
        }
    }

    /// Appends a row with entries at `cols` of values `vals`.
    fn push_row(&mut self, cols: &[u32], vals: &[f64]) {
        self.cols.extend_from_slice(cols);
        self.vals.extend_from_slice(vals);
        self.rows.push(self.cols.len() as u32);
    }
}

/// One row of a reprojection error's Jacobian: ∂e/∂cam (11), ∂e/∂X (3), ∂e/∂w, for the error's
/// component picked by `seed` ((1, 0) or (0, 1)).
fn reproj_row(problem: &Problem, i: usize, seed: (f64, f64)) -> [f64; REPROJ_ENTRIES] {
    let [cam, point] = problem.obs[i];
    let (_, pullback) = reproj_error_vjp(
        &problem.cams[cam],
        problem.xs[point],
        problem.ws[i],
        problem.feats[i],
    );
    let (dcam, dx, dw) = pullback(seed);
    let c = dcam.to_params();
    [
        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], dx.0, dx.1, dx.2, dw,
    ]
}

/// The Jacobian of the objective with respect to (cams, X, w), in the reference's row order
/// and column numbering (cameras, then points, then weights).
///
/// # Panics
/// If a column index does not fit in 32 bits (more than 4·10⁹ unknowns).
pub fn jacobian(problem: &Problem) -> SparseMat {
    let (n, m, p) = (problem.n, problem.m, problem.p());
    let col = |c: usize| u32::try_from(c).expect("ba: a column index beyond 32 bits");
    let (points_at, weights_at) = (CAM_PARAMS * n, CAM_PARAMS * n + 3 * m);
    col(weights_at + p);
    let mut jac = SparseMat::with_capacity(p);
    for (i, &[cam, point]) in problem.obs.iter().enumerate() {
        let mut cols = [0; REPROJ_ENTRIES];
        for (k, c) in cols[..CAM_PARAMS].iter_mut().enumerate() {
            *c = col(CAM_PARAMS * cam + k);
        }
        for k in 0..3 {
            cols[CAM_PARAMS + k] = col(points_at + 3 * point + k);
        }
        cols[CAM_PARAMS + 3] = col(weights_at + i);
        jac.push_row(&cols, &reproj_row(problem, i, (1.0, 0.0)));
        jac.push_row(&cols, &reproj_row(problem, i, (0.0, 1.0)));
    }
    for (i, &wi) in problem.ws.iter().enumerate() {
        let dw = gradient(weight_error_vjp(wi));
        jac.push_row(&[col(weights_at + i)], &[dw]);
    }
    jac
}
