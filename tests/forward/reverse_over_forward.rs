//! Reverse-over-forward: `#[differentiable]` code that computes a derivative by dual arithmetic
//! inside (`dual(x, v)` … `dual_eps(y)`), differentiated by the reverse macro through the rules
//! of `Dual<f64>` (crossed cotangent parts, see `core/src/dual_reverse.rs`).
//!
//! Checked against hand-computed second derivatives (1e-12), against central differences of
//! the inner derivative, against forward-over-reverse (`f_vjp::<Dual<f64>>`), and on a loop
//! with an early exit whose inner derivative is a gradient by two dual sweeps.

use adjoint::prelude::*;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

/// f(x, y) = x² sin y + eˣʸ.
#[differentiable]
fn f<T: Float>(x: T, y: T) -> T {
    x * x * y.sin() + (x * y).exp()
}

/// ∂f/∂x at (x, y) by a dual sweep along eₓ.
#[differentiable]
fn dfdx(x: f64, y: f64) -> f64 {
    dual_eps(f(dual(x, 1.0), dual(y, 0.0)))
}

/// Both parts read: fₓ + (f)·c (the re part weighted).
#[differentiable]
fn both_parts(x: f64, y: f64, c: f64) -> f64 {
    let d = f(dual(x, 1.0), dual(y, 0.0));
    dual_eps(d) + dual_re(d) * c
}

#[test]
fn gradient_of_a_dual_derivative_is_the_hessian_row() {
    for (x, y) in [(0.7, -0.4), (1.3, 0.9), (-0.5, 2.0)] {
        let e = (x * y).exp();
        let fx = 2.0 * x * y.sin() + y * e;
        let fxx = 2.0 * y.sin() + y * y * e;
        let fxy = 2.0 * x * y.cos() + e + x * y * e;
        assert!(close(dfdx(x, y), fx, 1e-14));
        let (gx, gy) = gradient(dfdx_vjp(x, y));
        assert!(close(gx, fxx, 1e-12), "fxx: {gx} vs {fxx}");
        assert!(close(gy, fxy, 1e-12), "fxy: {gy} vs {fxy}");
        let h = 1e-5;
        let fd_x = (dfdx(x + h, y) - dfdx(x - h, y)) / (2.0 * h);
        let fd_y = (dfdx(x, y + h) - dfdx(x, y - h)) / (2.0 * h);
        assert!(close(gx, fd_x, 1e-7) && close(gy, fd_y, 1e-7));
        // Forward-over-reverse gives the same row of H.
        let (hx, hy) = gradient(f_vjp(Dual::new(x, 1.0), Dual::new(y, 0.0)));
        assert!(close(hx.eps, gx, 1e-12) && close(hy.eps, gy, 1e-12));
        // dual_re's rule: the re part weighted by c adds c·∇f.
        let c = 0.3;
        let (bx, by, bc) = gradient(both_parts_vjp(x, y, c));
        let fy = x * x * y.cos() + x * e;
        let value = x * x * y.sin() + e;
        assert!(close(bx, fxx + c * fx, 1e-12) && close(by, fxy + c * fy, 1e-12));
        assert!(close(bc, value, 1e-14));
    }
}

/// p(q) = 1/|q − a| for a fixed a = (1, 2) moved by w: a = (1, 2 − w).
#[differentiable]
fn potential<T: Float>(a: [T; 2], q: [T; 2]) -> T {
    let dx = a[0] - q[0];
    let dy = a[1] - q[1];
    T::ONE / (dx * dx + dy * dy).sqrt()
}

/// Euler steps of q̈ = −∇p(q), ∇p by two dual sweeps, until q₁ ≤ 0; the result is q₀².
#[differentiable]
fn fall(w: f64) -> f64 {
    let a = [dual(1.0, 0.0), dual(2.0 - w, 0.0)];
    let mut q = [0.0, 1.5];
    let mut v = [0.2, 0.0];
    loop {
        let gx = dual_eps(potential(a, [dual(q[0], 1.0), dual(q[1], 0.0)]));
        let gy = dual_eps(potential(a, [dual(q[0], 0.0), dual(q[1], 1.0)]));
        q = [q[0] + 0.1 * v[0], q[1] + 0.1 * v[1]];
        if q[1] <= 0.0 {
            break;
        }
        v = [v[0] - 0.1 * gx, v[1] - 0.1 * gy];
    }
    q[0] * q[0]
}

#[test]
fn reverse_through_a_loop_of_dual_gradients_matches_finite_differences() {
    for w in [0.0, 0.3, -0.2] {
        let g = gradient(fall_vjp(w));
        let h = 1e-6;
        let fd = (fall(w + h) - fall(w - h)) / (2.0 * h);
        assert!(close(g, fd, 1e-6), "w = {w}: {g} vs {fd}");
        assert!(
            g != 0.0,
            "the step count is fixed near w, so the derivative is the flow's"
        );
    }
}
