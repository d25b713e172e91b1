//! Forward mode through methods of a `#[derive(Differentiable)]` struct: the receiver's
//! tangent is the derived tangent struct, read field by field.

use adjoint::prelude::*;

#[derive(Clone, Debug, Differentiable)]
struct Spring {
    k: f64,
    rest: f64,
}

impl Spring {
    /// E = k (x − r)² / 2: ∂k = (x − r)²/2, ∂r = −k (x − r), ∂x = k (x − r).
    #[differentiable(forward)]
    fn energy(&self, x: f64) -> f64 {
        let d = x - self.rest;
        0.5 * self.k * d * d
    }

    /// 2E + x, through a call of a method on `self`.
    #[differentiable(forward)]
    fn doubled(&self, x: f64) -> f64 {
        self.energy(x) * 2.0 + x
    }
}

#[test]
fn method_tangent_is_the_directional_derivative() {
    let s = Spring { k: 3.0, rest: 0.5 };
    let x = 2.0;
    let ds = SpringTangent {
        k: 0.25,
        rest: -1.0,
    };
    let (e, t) = s.energy_jvp(x, &ds, 0.5);
    let d: f64 = x - s.rest;
    assert_eq!(e, 0.5 * 3.0 * d * d);
    let want = 0.25 * d * d / 2.0 + -1.0 * -(s.k * d) + 0.5 * s.k * d;
    assert!((t - want).abs() < 1e-14, "{t} vs {want}");
    let (_, t2) = s.doubled_jvp(x, &ds, 0.5);
    assert!((t2 - (2.0 * want + 0.5)).abs() < 1e-13);
    // Against reverse mode: ⟨∇, v⟩.
    let (gs, gx) = gradient(s.doubled_vjp(x));
    let dot = gs.k * 0.25 - gs.rest + gx * 0.5;
    assert!((t2 - dot).abs() < 1e-13);
}

#[derive(Clone, Debug, Differentiable)]
struct Point {
    x: f64,
    y: f64,
}

/// |p|² of p = (x, 2x + y) built as a struct literal: ∂x = 2x + 4(2x + y), ∂y = 2(2x + y).
#[differentiable(forward)]
fn built(x: f64, y: f64) -> f64 {
    let p = Point { x, y: 2.0 * x + y };
    p.x * p.x + p.y * p.y
}

#[test]
fn struct_literals_of_active_values() {
    let (x, y) = (0.5, -1.0);
    assert_eq!(built_jvp(x, y, 1.0, 0.0).1, 2.0 * x + 4.0 * (2.0 * x + y));
    assert_eq!(built_jvp(x, y, 0.0, 1.0).1, 2.0 * (2.0 * x + y));
}
