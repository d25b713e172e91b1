//! Linear-blend skinning of the reference: each bone's posed transform (its rest transform
//! relative to its parent, times its Euler rotation), chained from the root, times its inverse
//! rest transform; each vertex is the weighted sum of its rest position moved by every bone,
//! then mirrored if the model is, then rotated and translated by the global pose.

#![allow(
    clippy::needless_range_loop,
    reason = "forward mode follows the tangents of indexed elements; `for x in slice` would drop them"
)]

use super::input::Model;
use super::model::{
    Mat4, Vec3, angle_axis_to_rotation_matrix, angle_axis_to_rotation_matrix_vjp,
    euler_angles_to_rotation_matrix, euler_angles_to_rotation_matrix_vjp, mat4_mul, mat4_mul_vjp,
};
use adjoint::prelude::*;

/// Each bone's transform relative to its parent in the pose: `base_relative · [R 0; 0 1]`
/// with R the Euler rotation of the bone's pose column.
#[differentiable(forward, wrt(pose))]
pub fn get_posed_relatives(model: &Model, pose: Vec<Vec3>) -> Vec<Mat4> {
    let bones = model.base_relatives.len();
    let mut relatives = Vec::with_capacity(bones);
    for i in 0..bones {
        let r = euler_angles_to_rotation_matrix(pose[i + 3]);
        let tr = [
            [r[0][0], r[0][1], r[0][2], 0.0],
            [r[1][0], r[1][1], r[1][2], 0.0],
            [r[2][0], r[2][1], r[2][2], 0.0],
            [0.0, 0.0, 0.0, 1.0],
        ];
        relatives.push(mat4_mul(model.base_relatives[i], tr));
    }
    relatives
}

/// Each bone's absolute transform: its relative one after its parent's absolute one.
#[differentiable(forward, wrt(relatives))]
pub fn relatives_to_absolutes(relatives: Vec<Mat4>, parents: &[Option<usize>]) -> Vec<Mat4> {
    let mut absolutes = Vec::with_capacity(relatives.len());
    for i in 0..relatives.len() {
        match parents[i] {
            None => absolutes.push(relatives[i]),
            Some(parent) => {
                let absolute = mat4_mul(absolutes[parent], relatives[i]);
                absolutes.push(absolute);
            }
        }
    }
    absolutes
}

/// The global transform: `R(rotation) · diag(scale) · p + translation` for every vertex p
/// (the first three columns of the pose parameters).
#[differentiable(forward)]
pub fn apply_global_transform(
    rotation: Vec3,
    scale: Vec3,
    t: Vec3,
    positions: Vec<Vec3>,
) -> Vec<Vec3> {
    let mut r = angle_axis_to_rotation_matrix(rotation);
    for row in 0..3 {
        let unscaled = r[row];
        r[row] = [
            unscaled[0] * scale[0],
            unscaled[1] * scale[1],
            unscaled[2] * scale[2],
        ];
    }
    let mut moved = Vec::with_capacity(positions.len());
    for v in 0..positions.len() {
        let p = positions[v];
        moved.push([
            r[0][0] * p[0] + r[0][1] * p[1] + r[0][2] * p[2] + t[0],
            r[1][0] * p[0] + r[1][1] * p[1] + r[1][2] * p[2] + t[1],
            r[2][0] * p[0] + r[2][1] * p[1] + r[2][2] * p[2] + t[2],
        ]);
    }
    moved
}

/// Every vertex of the posed hand: `Σ_b w_bv · (T_b · base_v)` (first three rows) with
/// `T_b = absolute_b · inverse_base_absolute_b`, mirrored and moved by the global pose.
#[differentiable(forward, wrt(pose))]
pub fn get_skinned_vertex_positions(model: &Model, pose: Vec<Vec3>) -> Vec<Vec3> {
    let (rotation, scale, translation) = (pose[0], pose[1], pose[2]);
    let relatives = get_posed_relatives(model, pose);
    let absolutes = relatives_to_absolutes(relatives, &model.parents);
    let mut transforms = Vec::with_capacity(absolutes.len());
    for i in 0..absolutes.len() {
        transforms.push(mat4_mul(absolutes[i], model.inverse_base_absolutes[i]));
    }
    let verts = model.base_positions.len();
    let mut positions = vec![[0.0; 3]; verts];
    for b in 0..transforms.len() {
        let t = transforms[b];
        let weights = &model.weights[b];
        for v in 0..verts {
            let base = model.base_positions[v];
            let mut position = positions[v];
            for i in 0..3 {
                let moved =
                    t[i][0] * base[0] + t[i][1] * base[1] + t[i][2] * base[2] + t[i][3] * base[3];
                position[i] += moved * weights[v];
            }
            positions[v] = position;
        }
    }
    if model.is_mirrored {
        for v in 0..verts {
            let p = positions[v];
            positions[v] = [-p[0], p[1], p[2]];
        }
    }
    apply_global_transform(rotation, scale, translation, positions)
}
