//! Forward rules given with `#[derivative_of(f, jvp = rule)]`, called from forward-mode code.

use adjoint::prelude::*;

fn cube(x: f64) -> f64 {
    x * x * x
}

/// The reverse rule: x̄ = 3x²·ȳ.
#[derivative_of(cube, jvp = cube_forward)]
fn cube_vjp(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
    (x * x * x, move |d| d * 3.0 * x * x)
}

/// The forward rule: ẏ = 3x²·ẋ.
fn cube_forward(x: f64, dx: f64) -> (f64, f64) {
    (x * x * x, 3.0 * x * x * dx)
}

/// w·Σ xᵢ, with a forward rule taking the slice's tangent by reference:
/// ẏ = w·Σ ẋᵢ + ẇ·Σ xᵢ.
fn weighted(x: &[f64], w: f64) -> f64 {
    x.iter().map(|v| v * w).sum()
}

#[derivative_of(weighted, jvp = weighted_forward)]
fn weighted_rule(x: &[f64], w: f64) -> (f64, impl FnOnce(f64) -> (Vec<f64>, f64) + use<>) {
    let (xs, value) = (x.to_vec(), weighted(x, w));
    (value, move |d| {
        (vec![d * w; xs.len()], d * xs.iter().sum::<f64>())
    })
}

fn weighted_forward(x: &[f64], w: f64, dx: &Vec<f64>, dw: f64) -> (f64, f64) {
    let t = dx.iter().sum::<f64>() * w + dw * x.iter().sum::<f64>();
    (weighted(x, w), t)
}

/// cube(x) + x·weighted(v, 3): ∂x = 3x² + 3Σv, ∂vᵢ = 3x.
#[differentiable(forward)]
fn uses_rules(x: f64, v: &[f64]) -> f64 {
    cube(x) + x * weighted(v, 3.0)
}

#[test]
fn forward_rules_of_hand_written_derivatives() {
    assert_eq!(cube_jvp(2.0, 0.5), (8.0, 6.0));
    let (x, v, dv) = (1.5, vec![1.0, -0.5], vec![0.25, 1.0]);
    let (value, t) = uses_rules_jvp(x, &v, 1.0, &dv);
    assert_eq!(value, uses_rules(x, &v));
    let want = 3.0 * x * x + 3.0 * 0.5 + 3.0 * x * (0.25 + 1.0);
    assert!((t - want).abs() < 1e-13, "{t} vs {want}");
    // The same derivative in reverse mode, through the reverse rules.
    let (gx, gv) = gradient(uses_rules_vjp(x, &v));
    let dot = gx + gv.iter().zip(&dv).map(|(a, b)| a * b).sum::<f64>();
    assert!((t - dot).abs() < 1e-13, "{t} vs {dot}");
    assert_eq!(weighted_jvp(&[1.0, 2.0], 3.0, &vec![1.0, 0.0], 0.0).1, 3.0);
}
