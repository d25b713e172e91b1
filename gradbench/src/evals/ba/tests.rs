//! ba's rows against hand-computed values and central differences, and its input checks.

use super::input::{Compact, Problem};
use super::jacobian::jacobian;
use super::model::{CAM_PARAMS, Camera, reproj_error};
use crate::evals::Input;

/// The 15 numbers a row differentiates: the camera's 11, the point's 3, the weight.
fn unknowns(cam: &Camera, x: (f64, f64, f64), w: f64) -> [f64; 15] {
    let c = Camera::to_params_of(cam);
    let mut u = [0.0; 15];
    u[..CAM_PARAMS].copy_from_slice(&c);
    u[11..].copy_from_slice(&[x.0, x.1, x.2, w]);
    u
}

fn error_at(u: &[f64; 15], feat: (f64, f64)) -> (f64, f64) {
    let cam = Camera::from_params(u[..CAM_PARAMS].try_into().unwrap());
    reproj_error(&cam, (u[11], u[12], u[13]), u[14], feat)
}

/// The two Jacobian rows of one observation, from the tool's sparse matrix.
fn rows_of(cam: &[f64], x: [f64; 3], w: f64, feat: [f64; 2]) -> [Vec<f64>; 2] {
    let compact = Compact {
        n: 1,
        m: 1,
        p: 1,
        cam: cam.to_vec(),
        x: x.to_vec(),
        w,
        feat: feat.to_vec(),
    };
    compact.check().unwrap();
    let jac = jacobian(&Problem::expand(&compact));
    assert_eq!(jac.rows, [0, 15, 30, 31]);
    let cols: Vec<u32> = (0..15).collect();
    assert_eq!(&jac.cols[..15], &cols[..]);
    assert_eq!(&jac.cols[15..30], &cols[..]);
    assert_eq!(jac.cols[30], 14);
    assert_eq!(jac.vals[30], -2.0 * w);
    [jac.vals[..15].to_vec(), jac.vals[15..30].to_vec()]
}

#[test]
fn rows_at_zero_rotation_are_the_hand_derivatives() {
    // rot = 0, C = 0, f = 1, no principal point or distortion, X = (1, 2, 4), w = 1:
    // Xcam = X + rot × X, e = (x₀/x₂, x₁/x₂) = (1/4, 1/2).
    let mut cam = [0.0; CAM_PARAMS];
    cam[6] = 1.0;
    let [e0, e1] = rows_of(&cam, [1.0, 2.0, 4.0], 1.0, [0.0, 0.0]);
    // r² = |e|² = 5/16; ∂e/∂k₁ = e·r², ∂e/∂k₂ = e·r⁴.
    let rsq = 5.0 / 16.0;
    // ∂(rot × X)/∂r: ∂x₀/∂r₁ = X₂, ∂x₀/∂r₂ = −X₁, ∂x₁/∂r₀ = −X₂, ∂x₁/∂r₂ = X₀,
    // ∂x₂/∂r₀ = X₁, ∂x₂/∂r₁ = −X₀; e₀ = x₀/x₂ ⇒ ∂e₀ = (∂x₀·4 − 1·∂x₂)/16.
    let want0 = [
        -2.0 / 16.0,
        17.0 / 16.0,
        -2.0 / 4.0,
        -0.25,
        0.0,
        1.0 / 16.0,
        0.25,
        1.0,
        0.0,
        0.25 * rsq,
        0.25 * rsq * rsq,
        0.25,
        0.0,
        -1.0 / 16.0,
        0.25,
    ];
    // e₁ = x₁/x₂ ⇒ ∂e₁ = (∂x₁·4 − 2·∂x₂)/16.
    let want1 = [
        (-16.0 - 4.0) / 16.0,
        2.0 / 16.0,
        4.0 / 16.0,
        0.0,
        -0.25,
        2.0 / 16.0,
        0.5,
        0.0,
        1.0,
        0.5 * rsq,
        0.5 * rsq * rsq,
        0.0,
        0.25,
        -2.0 / 16.0,
        0.5,
    ];
    assert_eq!(e0, want0);
    assert_eq!(e1, want1);
}

#[test]
fn rows_match_central_differences() {
    let cams = [
        [
            -0.758453, -1.109613, -0.845551, 34.556073, 39.676747, 53.881673, 419.194514, 5.864426,
            -8.51887, 0.087812, 0.002739,
        ],
        [0.0, 0.0, 0.0, 0.3, -0.2, -5.0, 2.0, 0.1, -0.1, 0.01, 0.002],
    ];
    let (x, w, feat) = ([7.203245, 0.001144, 3.023326], 0.417022, [271.76, 834.2]);
    for cam in &cams {
        let rows = rows_of(cam, x, w, feat);
        let c = Camera::from_params(cam);
        let u = unknowns(&c, (x[0], x[1], x[2]), w);
        for k in 0..15 {
            let h = 1e-6 * u[k].abs().max(1.0);
            let (mut up, mut down) = (u, u);
            up[k] += h;
            down[k] -= h;
            let (a, b) = (error_at(&up, feat.into()), error_at(&down, feat.into()));
            let fd = [(a.0 - b.0) / (2.0 * h), (a.1 - b.1) / (2.0 * h)];
            for r in 0..2 {
                let err = (rows[r][k] - fd[r]).abs() / fd[r].abs().max(1.0);
                assert!(
                    err < 1e-6,
                    "row {r}, unknown {k}: {} against {}",
                    rows[r][k],
                    fd[r]
                );
            }
        }
    }
}

#[test]
fn inconsistent_sizes_are_named() {
    let good = || Compact {
        n: 2,
        m: 3,
        p: 4,
        cam: vec![0.0; 11],
        x: vec![0.0; 3],
        w: 1.0,
        feat: vec![0.0; 2],
    };
    assert_eq!(good().check(), Ok(()));
    let mut c = good();
    c.cam.pop();
    assert_eq!(
        c.check().unwrap_err(),
        "`cam` has 10 numbers; a camera has 11"
    );
    let mut c = good();
    c.x.push(1.0);
    assert_eq!(c.check().unwrap_err(), "`x` has 4 numbers; a point has 3");
    let mut c = good();
    c.feat.clear();
    assert_eq!(
        c.check().unwrap_err(),
        "`feat` has 0 numbers; a feature has 2"
    );
    let mut c = good();
    c.m = 0;
    assert!(c.check().unwrap_err().starts_with("`m` is 0"));
}
