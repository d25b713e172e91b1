//! Tuples and structs.

use super::{Pt, dual_gradient};
use crate::common::{assert_close, check, check_vjp};
use adjoint::prelude::*;

// ---------------------------------------------------------------------------------------------
// Tuples and structs.

/// Polar coordinates returned as a tuple: (r, θ) = (√(x² + y²), atan2(y, x));
/// ∂r = (x, y)/r, ∂θ = (−y, x)/r².
#[differentiable]
fn to_polar(x: f64, y: f64) -> (f64, f64) {
    let r = (x * x + y * y).sqrt();
    (r, y.atan2(x))
}

/// A helper returning a tuple, destructured: r²θ with (r, θ) from [`to_polar`];
/// ∂x = 2xθ − y, ∂y = 2yθ + x.
#[differentiable]
fn polar_area(x: f64, y: f64) -> f64 {
    let (r, theta) = to_polar(x, y);
    r * r * theta
}

/// Mean and spread of three values as a tuple.
#[differentiable]
fn mean_and_spread(v: [f64; 3]) -> (f64, f64) {
    let m = (v[0] + v[1] + v[2]) / 3.0;
    let d = [v[0] - m, v[1] - m, v[2] - m];
    (m, ((d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) / 3.0).sqrt())
}

/// The z-score of the first value: (v₀ − m)/σ, generic twin in [`z_score_by_hand`].
#[differentiable]
fn z_score(v: [f64; 3]) -> f64 {
    let (m, s) = mean_and_spread(v);
    (v[0] - m) / s
}

/// [`z_score`] written with the same operations over `Float`, for dual numbers.
fn z_score_by_hand<T: Float>(v: [T; 3]) -> T {
    let three = T::from_f64(3.0);
    let m = (v[0] + v[1] + v[2]) / three;
    let d = [v[0] - m, v[1] - m, v[2] - m];
    let s = ((d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) / three).sqrt();
    (v[0] - m) / s
}

/// A Fibonacci-like recurrence by tuple assignment: (a, b) ← (b, a + bx) from (1, x),
/// n steps, generic so that dual numbers give its exact derivative.
#[differentiable]
fn fib_like<T: Float>(x: T, n: usize) -> T {
    let (mut a, mut b) = (T::ONE, x);
    for _ in 0..n {
        (a, b) = (b, a + b * x);
    }
    b
}

/// `std::mem::swap` into order: min² + 3·max; ∇ = 2·min at the smaller, 3 at the larger.
#[differentiable]
fn ordered_pair(x: f64, y: f64) -> f64 {
    let (mut lo, mut hi) = (x, y);
    if lo > hi {
        std::mem::swap(&mut lo, &mut hi);
    }
    lo * lo + 3.0 * hi
}

/// Fields written one by one (`p.x = ..`, `p.y += ..`, `p.x *= ..`): p = (x², y + xy)
/// then p.x ← p.x·y; f = p.x + p.y = x²y + y + xy; ∇ = (2xy + y, x² + 1 + x).
#[differentiable]
fn field_by_field(x: f64, y: f64) -> f64 {
    let mut p = Pt { x: 0.0, y };
    p.x = x * x;
    p.y += x * y;
    p.x *= y;
    p.x + p.y
}

/// Struct update syntax: q = (x, 2y) from p = (x, y), r = (q.x + q.y, q.y); f = r.x·r.y =
/// 2xy + 4y², ∇ = (2y, 2x + 8y).
#[differentiable]
fn updated(x: f64, y: f64) -> f64 {
    let p = Pt { x, y };
    let q = Pt { y: p.y * 2.0, ..p };
    let r = Pt { x: q.x + q.y, ..q };
    r.x * r.y
}

/// A particle on a spring.
#[derive(Clone, Debug, Differentiable)]
struct Particle {
    pos: f64,
    vel: f64,
}

/// One symplectic Euler step with dt = 0.1: v ← v − dt k x, then x ← x + dt v.
#[differentiable]
fn spring_step(p: Particle, k: f64) -> Particle {
    let mut q = Particle {
        pos: p.pos,
        vel: p.vel,
    };
    q.vel -= 0.1 * k * p.pos;
    q.pos += 0.1 * q.vel;
    q
}

/// The spring energy ½(v² + k x²) after 3 steps of [`spring_step`] (a helper returning a
/// struct, called in a loop).
#[differentiable]
fn spring_energy(pos: f64, vel: f64, k: f64) -> f64 {
    let mut p = Particle { pos, vel };
    for _ in 0..3 {
        p = spring_step(p, k);
    }
    0.5 * (p.vel * p.vel + k * p.pos * p.pos)
}

/// [`spring_energy`] with the same operations over `Float`, on a tuple.
fn spring_energy_by_hand<T: Float>(pos: T, vel: T, k: T) -> T {
    let dt = T::from_f64(0.1);
    let (mut x, mut v) = (pos, vel);
    for _ in 0..3 {
        v -= dt * k * x;
        x += dt * v;
    }
    T::from_f64(0.5) * (v * v + k * x * x)
}

/// A struct parameter: ‖p‖ + atan2(p.y, p.x); ∂p = (x/r − y/r², y/r + x/r²).
#[differentiable]
fn point_measure(p: Pt) -> f64 {
    p.x.hypot(p.y) + p.y.atan2(p.x)
}

#[test]
fn tuples_and_structs() {
    let (x, y) = (0.6_f64, 0.8_f64);
    let (value, pullback) = to_polar_vjp(x, y);
    assert_eq!(value, to_polar(x, y));
    let seed = (1.5, -0.5);
    let vjp = pullback(seed);
    assert_close("to_polar", vjp, (1.5 * x + 0.5 * y, 1.5 * y - 0.5 * x));
    check_vjp("to_polar", |(x, y)| to_polar(x, y), (x, y), seed, vjp);
    let th = y.atan2(x);
    check!(polar_area, polar_area_vjp; x, y => (2.0 * x * th - y, 2.0 * y * th + x));

    let v = [1.5, -0.5, 0.4];
    assert_eq!(z_score(v), z_score_by_hand(v));
    check!(z_score, z_score_vjp; v => dual_gradient(z_score_by_hand, v));
    let exact = fib_like(Dual::variable(x), 5).eps;
    check!(|x| fib_like(x, 5), |x| fib_like_vjp(x, 5); x => exact);

    check!(ordered_pair, ordered_pair_vjp; x, y => (2.0 * x, 3.0));
    check!(ordered_pair, ordered_pair_vjp; y, x => (3.0, 2.0 * x));
    check!(field_by_field, field_by_field_vjp; x, y => (2.0 * x * y + y, x * x + 1.0 + x));
    check!(updated, updated_vjp; x, y => (2.0 * y, 2.0 * x + 8.0 * y));

    let at = [0.7, -0.2, 4.0];
    assert_eq!(
        spring_energy(at[0], at[1], at[2]),
        spring_energy_by_hand(at[0], at[1], at[2])
    );
    let [dp, dv, dk] = dual_gradient(|[p, v, k]| spring_energy_by_hand(p, v, k), at);
    check!(spring_energy, spring_energy_vjp; at[0], at[1], at[2] => (dp, dv, dk));

    let r = 1.0;
    check!(
        |x, y| point_measure(Pt { x, y }),
        |x, y| {
            let (value, pullback) = point_measure_vjp(Pt { x, y });
            (value, move |seed: f64| {
                let dp = pullback(seed);
                (dp.x, dp.y)
            })
        };
        x, y => (x / r - y / (r * r), y / r + x / (r * r))
    );
}
