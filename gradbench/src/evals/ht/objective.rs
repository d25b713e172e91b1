//! The objective of the reference, in its two variants, and its dense Jacobian from forward
//! tangents: one `_jvp` per pose parameter θₖ (column k), and for the complicated variant two
//! more, one per barycentric coordinate, with the tangent of that coordinate of every point
//! set at once (each point's error depends on its own (u₀, u₁) only, so column 0 holds
//! ∂errᵢ/∂u₀ᵢ for every i: the layout the reference returns).

#![allow(
    clippy::needless_range_loop,
    reason = "forward mode follows the tangents of indexed elements; `for x in slice` would drop them"
)]

use super::input::{Data, Problem};
use super::model::{N_THETA, to_pose_params, to_pose_params_vjp};
use super::skinning::{get_skinned_vertex_positions, get_skinned_vertex_positions_vjp};
use adjoint::prelude::*;

/// The simple variant: per point i, `points_i − vertex(correspondence_i)`, three numbers each.
#[differentiable(forward, wrt(theta))]
pub fn objective_simple(theta: &[f64], data: &Data) -> Vec<f64> {
    let pose = to_pose_params(theta, data.model.base_relatives.len());
    let vertices = get_skinned_vertex_positions(&data.model, pose);
    let mut err = Vec::with_capacity(3 * data.points.len());
    for i in 0..data.points.len() {
        let vertex = vertices[data.correspondences[i]];
        for j in 0..3 {
            err.push(data.points[i][j] - vertex[j]);
        }
    }
    err
}

/// The complicated variant: per point i, `points_i − (u₀ a + u₁ b + (1 − u₀ − u₁) c)` with
/// (a, b, c) the vertices of triangle `correspondence_i`.
#[differentiable(forward, wrt(theta, us))]
pub fn objective_complicated(theta: &[f64], us: &[[f64; 2]], data: &Data) -> Vec<f64> {
    let pose = to_pose_params(theta, data.model.base_relatives.len());
    let vertices = get_skinned_vertex_positions(&data.model, pose);
    let mut err = Vec::with_capacity(3 * data.points.len());
    for i in 0..data.points.len() {
        let [a, b, c] = data.model.triangles[data.correspondences[i]];
        let u = us[i];
        for j in 0..3 {
            let point = u[0] * vertices[a][j]
                + u[1] * vertices[b][j]
                + (1.0 - u[0] - u[1]) * vertices[c][j];
            err.push(data.points[i][j] - point);
        }
    }
    err
}

/// The complicated objective as a function of θ alone (`us` held).
#[differentiable(forward, wrt(theta))]
fn complicated_in_theta(theta: &[f64], us: &[[f64; 2]], data: &Data) -> Vec<f64> {
    objective_complicated(theta, us, data)
}

/// The complicated objective as a function of `us` alone (θ held).
#[differentiable(forward, wrt(us))]
fn complicated_in_us(theta: &[f64], us: &[[f64; 2]], data: &Data) -> Vec<f64> {
    objective_complicated(theta, us, data)
}

/// The objective of the variant the input asks for.
pub fn objective(problem: &Problem) -> Vec<f64> {
    if problem.us.is_empty() {
        objective_simple(&problem.theta, &problem.data)
    } else {
        objective_complicated(&problem.theta, &problem.us, &problem.data)
    }
}

/// The unit tangent eₖ of θ.
fn unit(k: usize) -> Vec<f64> {
    let mut e = vec![0.0; N_THETA];
    e[k] = 1.0;
    e
}

/// The Jacobian's columns (each of length 3 · points): for the complicated variant ∂/∂u₀ and
/// ∂/∂u₁ (see the module's docs) first, then ∂/∂θₖ for k = 0..26.
pub fn jacobian(problem: &Problem) -> Vec<Vec<f64>> {
    let (theta, us, data) = (&problem.theta, &problem.us, &problem.data);
    let mut columns = Vec::with_capacity(2 + N_THETA);
    if us.is_empty() {
        for k in 0..N_THETA {
            columns.push(objective_simple_jvp(theta, data, &unit(k)).1);
        }
    } else {
        for coordinate in 0..2 {
            let mut dus = vec![[0.0; 2]; us.len()];
            for du in &mut dus {
                du[coordinate] = 1.0;
            }
            columns.push(complicated_in_us_jvp(theta, us, data, &dus).1);
        }
        for k in 0..N_THETA {
            columns.push(complicated_in_theta_jvp(theta, us, data, &unit(k)).1);
        }
    }
    columns
}
