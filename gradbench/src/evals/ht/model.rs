//! The small pieces of the hand model of the C++ reference (`cpp/gradbench/evals/ht.hpp`):
//! rotation matrices from an angle-axis vector and from Euler angles, matrix products, and the
//! layout of the pose parameters. Ordinary Rust over `f64` arrays; the derivatives are the
//! forward tangents (and pullbacks) `#[differentiable(forward)]` writes.

#![allow(
    clippy::needless_range_loop,
    reason = "forward mode follows the tangents of indexed elements; `for x in slice` would drop them"
)]

use adjoint::prelude::*;

/// A point or a column of the pose parameters.
pub type Vec3 = [f64; 3];
/// A 3×3 matrix, row by row.
pub type Mat3 = [[f64; 3]; 3];
/// A 4×4 matrix, row by row.
pub type Mat4 = [[f64; 4]; 4];

/// The number of pose parameters θ: global rotation (3), global translation (3), and per
/// finger one bend-and-spread pair and two bends (4 × 5).
pub const N_THETA: usize = 26;

/// a · b for 3×3 matrices.
#[differentiable(forward)]
#[inline]
pub fn mat3_mul(a: Mat3, b: Mat3) -> Mat3 {
    let mut out = [[0.0; 3]; 3];
    for i in 0..3 {
        let mut row = [0.0; 3];
        for k in 0..3 {
            let mut s = a[i][0] * b[0][k];
            for j in 1..3 {
                s += a[i][j] * b[j][k];
            }
            row[k] = s;
        }
        out[i] = row;
    }
    out
}

/// a · b for 4×4 matrices.
#[differentiable(forward)]
#[inline]
pub fn mat4_mul(a: Mat4, b: Mat4) -> Mat4 {
    let mut out = [[0.0; 4]; 4];
    for i in 0..4 {
        let mut row = [0.0; 4];
        for k in 0..4 {
            let mut s = a[i][0] * b[0][k];
            for j in 1..4 {
                s += a[i][j] * b[j][k];
            }
            row[k] = s;
        }
        out[i] = row;
    }
    out
}

/// The rotation by the angle |a| about the axis a/|a| (Rodrigues' matrix
/// `R = c I + s [n]ₓ + (1 − c) n nᵀ`), the identity for |a| < 10⁻⁴ as in the reference.
#[differentiable(forward)]
pub fn angle_axis_to_rotation_matrix(angle_axis: Vec3) -> Mat3 {
    let norm = (angle_axis[0] * angle_axis[0]
        + angle_axis[1] * angle_axis[1]
        + angle_axis[2] * angle_axis[2])
        .sqrt();
    if norm < 0.0001 {
        return [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    }
    let x = angle_axis[0] / norm;
    let y = angle_axis[1] / norm;
    let z = angle_axis[2] / norm;
    let s = norm.sin();
    let c = norm.cos();
    [
        [
            x * x + (1.0 - x * x) * c,
            x * y * (1.0 - c) - z * s,
            x * z * (1.0 - c) + y * s,
        ],
        [
            x * y * (1.0 - c) + z * s,
            y * y + (1.0 - y * y) * c,
            y * z * (1.0 - c) - x * s,
        ],
        [
            x * z * (1.0 - c) - y * s,
            z * y * (1.0 - c) + x * s,
            z * z + (1.0 - z * z) * c,
        ],
    ]
}

/// `Rz(t_z) · Ry(t_y) · Rx(t_x)` for the angles stored in the order (x, z, y).
#[differentiable(forward)]
pub fn euler_angles_to_rotation_matrix(xzy: Vec3) -> Mat3 {
    let (tx, ty, tz) = (xzy[0], xzy[2], xzy[1]);
    let (cx, sx) = (tx.cos(), tx.sin());
    let (cy, sy) = (ty.cos(), ty.sin());
    let (cz, sz) = (tz.cos(), tz.sin());
    let rx = [[1.0, 0.0, 0.0], [0.0, cx, -sx], [0.0, sx, cx]];
    let ry = [[cy, 0.0, sy], [0.0, 1.0, 0.0], [-sy, 0.0, cy]];
    let rz = [[cz, -sz, 0.0], [sz, cz, 0.0], [0.0, 0.0, 1.0]];
    mat3_mul(mat3_mul(rz, ry), rx)
}

/// The pose parameters as the reference's 3 × (bones + 3) matrix, one column per entry:
/// global rotation θ₀..₂, scale 1, global translation θ₃..₅, then per finger (from column 5,
/// four columns each, the last left zero) a bend and spread, a bend, a bend.
#[differentiable(forward)]
pub fn to_pose_params(theta: &[f64], bones: usize) -> Vec<Vec3> {
    let mut pose = vec![[0.0; 3]; bones + 3];
    pose[0] = [theta[0], theta[1], theta[2]];
    pose[1] = [1.0, 1.0, 1.0];
    pose[2] = [theta[3], theta[4], theta[5]];
    let mut i_theta = 6;
    let mut i_pose = 5;
    for _finger in 0..5 {
        for i in 2..=4 {
            let mut column = [theta[i_theta], 0.0, 0.0];
            i_theta += 1;
            if i == 2 {
                column[1] = theta[i_theta];
                i_theta += 1;
            }
            pose[i_pose] = column;
            i_pose += 1;
        }
        i_pose += 1;
    }
    pose
}
