//! The bundle-adjustment model of the C++ reference (`cpp/gradbench/evals/ba.hpp`), per
//! observation: rotate the point into the camera by Rodrigues' formula, project, distort
//! radially, scale by the focal length and shift by the principal point; the reprojection error
//! is `w · (projection − feature)` and the weight error `1 − w²`. Every function is ordinary Rust
//! over `f64`s (3-vectors as tuples, a camera as a struct); their derivatives are the pullbacks
//! `#[differentiable]` writes. They are `#[inline]`, and so are their companions: the Jacobian
//! calls `reproj_error_vjp` twice per observation, and inlined there its pullback has constant
//! `needs` flags and keeps its residuals in registers (about half the instructions).

use adjoint::prelude::*;

/// A 3-vector.
pub type Vec3 = (f64, f64, f64);
/// A 2-vector.
pub type Vec2 = (f64, f64);

/// The number of parameters of a camera.
pub const CAM_PARAMS: usize = 11;

/// One camera, in the order of the reference's 11 parameters
/// `[r1 r2 r3 C1 C2 C3 f u0 v0 k1 k2]`.
#[derive(Clone, Copy, Debug, PartialEq, Differentiable)]
pub struct Camera {
    /// Rotation r as an angle-axis vector (angle |r|, axis r/|r|).
    pub rot: Vec3,
    /// Centre C.
    pub centre: Vec3,
    /// Focal length f, in pixels.
    pub focal: f64,
    /// Principal point (u₀, v₀).
    pub principal: Vec2,
    /// Radial distortion parameters (k₁, k₂).
    pub radial: Vec2,
}

impl Camera {
    /// The camera of the reference's parameter array.
    pub fn from_params(c: &[f64; CAM_PARAMS]) -> Camera {
        Camera {
            rot: (c[0], c[1], c[2]),
            centre: (c[3], c[4], c[5]),
            focal: c[6],
            principal: (c[7], c[8]),
            radial: (c[9], c[10]),
        }
    }
}

/// The 11 numbers of a camera (or of its tangent) in the reference's order.
macro_rules! params_of {
    ($c:expr) => {{
        let (r, c, p, k) = ($c.rot, $c.centre, $c.principal, $c.radial);
        [r.0, r.1, r.2, c.0, c.1, c.2, $c.focal, p.0, p.1, k.0, k.1]
    }};
}

impl Camera {
    /// The reference's parameter array of `cam` (the inverse of [`Camera::from_params`]).
    pub fn to_params_of(cam: &Camera) -> [f64; CAM_PARAMS] {
        params_of!(cam)
    }
}

impl CameraTangent {
    /// The tangent as the reference orders the parameters.
    pub fn to_params(&self) -> [f64; CAM_PARAMS] {
        params_of!(self)
    }
}

/// a · b.
#[differentiable]
#[inline]
fn dot(a: Vec3, b: Vec3) -> f64 {
    let (a0, a1, a2) = a;
    let (b0, b1, b2) = b;
    a0 * b0 + a1 * b1 + a2 * b2
}

/// a × b.
#[differentiable]
#[inline]
fn cross(a: Vec3, b: Vec3) -> Vec3 {
    let (a0, a1, a2) = a;
    let (b0, b1, b2) = b;
    (a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0)
}

/// The point `pt` rotated by the angle-axis vector `rot` (θ = |rot|, w = rot/θ):
/// `pt cos θ + (w × pt) sin θ + w (w·pt)(1 − cos θ)`, or `pt + rot × pt` at θ = 0, as the
/// reference computes it (the Ceres form).
#[differentiable]
#[inline]
pub fn rodrigues_rotate_point(rot: Vec3, pt: Vec3) -> Vec3 {
    let sqtheta = dot(rot, rot);
    let (p0, p1, p2) = pt;
    if sqtheta != 0.0 {
        let theta = sqtheta.sqrt();
        let costheta = theta.cos();
        let sintheta = theta.sin();
        let theta_inverse = 1.0 / theta;
        let (r0, r1, r2) = rot;
        let w = (r0 * theta_inverse, r1 * theta_inverse, r2 * theta_inverse);
        let (c0, c1, c2) = cross(w, pt);
        let tmp = dot(w, pt) * (1.0 - costheta);
        let (w0, w1, w2) = w;
        (
            p0 * costheta + c0 * sintheta + w0 * tmp,
            p1 * costheta + c1 * sintheta + w1 * tmp,
            p2 * costheta + c2 * sintheta + w2 * tmp,
        )
    } else {
        let (c0, c1, c2) = cross(rot, pt);
        (p0 + c0, p1 + c1, p2 + c2)
    }
}

/// `proj · (1 + k₁ r² + k₂ r⁴)` with r² = |proj|².
#[differentiable]
#[inline]
pub fn radial_distort(rad: Vec2, proj: Vec2) -> Vec2 {
    let (k1, k2) = rad;
    let (x, y) = proj;
    let rsq = x * x + y * y;
    let l = 1.0 + k1 * rsq + k2 * rsq * rsq;
    (x * l, y * l)
}

/// The image of the point `x` in camera `cam`: `Xcam = R(r)·(x − C)`, its perspective division,
/// radial distortion, then `· f + (u₀, v₀)`.
#[differentiable]
#[inline]
pub fn project(cam: &Camera, x: Vec3) -> Vec2 {
    let (x0, x1, x2) = x;
    let (c0, c1, c2) = cam.centre;
    let (xc0, xc1, xc2) = rodrigues_rotate_point(cam.rot, (x0 - c0, x1 - c1, x2 - c2));
    let (d0, d1) = radial_distort(cam.radial, (xc0 / xc2, xc1 / xc2));
    let (u0, v0) = cam.principal;
    (d0 * cam.focal + u0, d1 * cam.focal + v0)
}

/// The reprojection error of one observation, `w · (project(cam, x) − feat)`.
#[differentiable(wrt(cam, x, w))]
#[inline]
pub fn reproj_error(cam: &Camera, x: Vec3, w: f64, feat: Vec2) -> Vec2 {
    let (p0, p1) = project(cam, x);
    let (f0, f1) = feat;
    (w * (p0 - f0), w * (p1 - f1))
}

/// The weight error `1 − w²` (derivative −2w).
#[differentiable]
#[inline]
pub fn weight_error(w: f64) -> f64 {
    1.0 - w * w
}
