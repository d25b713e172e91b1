//! Nested derivatives through [`Dual`]: generic functions over `T: Float` run unchanged on
//! `Dual<f64>` and `Dual<Dual<f64>>`.
//! - forward-over-reverse: `f_vjp::<Dual<f64>>` at `x + εv` with seed 1 gives `∇f + (H·v)ε`;
//!   the Hessian's columns come from the unit vectors `v = eⱼ`;
//! - forward-over-forward: `f_jvp::<Dual<f64>>` at `x + εu` along `v` gives `∇f·v + (uᵀHv)ε`;
//! - third order: `Dual<Dual<f64>>` through `f_vjp`.
//!
//! Every Hessian is checked against the hand-computed one (1e-12), against central finite
//! differences of the f64 gradient, and for symmetry; the forward-over-forward entries against
//! the same hand values.

use adjoint::prelude::*;

type D = Dual<f64>;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

fn assert_matrix_close(got: &[Vec<f64>], want: &[Vec<f64>], tol: f64, what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        for (j, (a, b)) in g.iter().zip(w).enumerate() {
            assert!(close(*a, *b, tol), "{what}[{i}][{j}]: got {a}, want {b}");
        }
    }
    assert_eq!(got.len(), want.len(), "{what}: row count");
}

fn assert_symmetric(h: &[Vec<f64>]) {
    for i in 0..h.len() {
        for j in 0..i {
            assert!(
                close(h[i][j], h[j][i], 1e-12),
                "H[{i}][{j}] = {} ≠ H[{j}][{i}] = {}",
                h[i][j],
                h[j][i]
            );
        }
    }
}

/// `x + ε·eⱼ` as duals.
fn seeded(x: &[f64], j: usize) -> Vec<D> {
    x.iter()
        .enumerate()
        .map(|(i, &a)| D::new(a, if i == j { 1.0 } else { 0.0 }))
        .collect()
}

/// The Hessian by forward-over-reverse: column `j` is the `eps` part of the gradient of the
/// dual pullback at `x + ε·eⱼ`; also checks that `re` is the f64 gradient `grad`.
fn hessian_fwd_rev(grad_dual: impl Fn(&[D]) -> Vec<D>, x: &[f64], grad: &[f64]) -> Vec<Vec<f64>> {
    let n = x.len();
    let mut h = vec![vec![0.0; n]; n];
    for j in 0..n {
        let g = grad_dual(&seeded(x, j));
        for i in 0..n {
            assert_eq!(
                g[i].re, grad[i],
                "re of the dual gradient [{i}] is the gradient"
            );
            h[i][j] = g[i].eps;
        }
    }
    h
}

/// Hessian by central finite differences of the f64 gradient.
fn hessian_fd(grad: impl Fn(&[f64]) -> Vec<f64>, x: &[f64]) -> Vec<Vec<f64>> {
    let (n, h) = (x.len(), 1e-5);
    let mut out = vec![vec![0.0; n]; n];
    for j in 0..n {
        let mut plus = x.to_vec();
        let mut minus = x.to_vec();
        plus[j] += h;
        minus[j] -= h;
        let (gp, gm) = (grad(&plus), grad(&minus));
        for i in 0..n {
            out[i][j] = (gp[i] - gm[i]) / (2.0 * h);
        }
    }
    out
}

/// All checks of a Hessian of a two-argument function.
fn check_two(
    grad: impl Fn(&[f64]) -> Vec<f64>,
    grad_dual: impl Fn(&[D]) -> Vec<D>,
    second_ff: impl Fn(&[D], &[D]) -> D,
    x: &[f64],
    want: &[Vec<f64>],
) {
    let h = hessian_fwd_rev(&grad_dual, x, &grad(x));
    assert_matrix_close(&h, want, 1e-12, "forward-over-reverse H");
    assert_matrix_close(&h, &hessian_fd(&grad, x), 1e-6, "finite-difference H");
    assert_symmetric(&h);
    // Forward-over-forward: tangent along eᵢ at x + ε·eⱼ gives Hᵢⱼ in eps, ∂ᵢf in re.
    for i in 0..x.len() {
        for j in 0..x.len() {
            let v: Vec<D> = (0..x.len())
                .map(|k| D::constant(if k == i { 1.0 } else { 0.0 }))
                .collect();
            let t = second_ff(&seeded(x, j), &v);
            assert!(
                close(t.eps, want[i][j], 1e-12),
                "forward-over-forward H[{i}][{j}]: {} vs {}",
                t.eps,
                want[i][j]
            );
            assert!(close(t.re, grad(x)[i], 1e-14), "forward-over-forward ∂{i}f");
        }
    }
}

#[differentiable(forward)]
fn rosen2<T: Float>(x: T, y: T) -> T {
    let a = T::ONE - x;
    let b = y - x * x;
    a * a + T::from_f64(100.0) * b * b
}

#[test]
fn rosenbrock_2d_hessian() {
    for (x, y) in [(1.0, 1.0), (-1.2, 1.0), (0.3, -0.7)] {
        let want = vec![
            vec![2.0 - 400.0 * y + 1200.0 * x * x, -400.0 * x],
            vec![-400.0 * x, 200.0],
        ];
        check_two(
            |p| {
                let (gx, gy) = gradient(rosen2_vjp(p[0], p[1]));
                vec![gx, gy]
            },
            |p| {
                let (gx, gy) = gradient(rosen2_vjp(p[0], p[1]));
                vec![gx, gy]
            },
            |p, v| rosen2_jvp(p[0], p[1], v[0], v[1]).1,
            &[x, y],
            &want,
        );
    }
}

#[differentiable(forward)]
fn rosen_n<T: Float>(x: &[T]) -> T {
    let mut s = T::ZERO;
    for i in 0..x.len() - 1 {
        let a = T::ONE - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + T::from_f64(100.0) * b * b;
    }
    s
}

/// The hand-computed Hessian of the n-D Rosenbrock function: term i adds
/// `2 − 400(xᵢ₊₁ − xᵢ²) + 800xᵢ²` at (i, i), `−400xᵢ` at (i, i+1) and (i+1, i), 200 at (i+1, i+1).
fn rosen_n_hessian(x: &[f64]) -> Vec<Vec<f64>> {
    let n = x.len();
    let mut h = vec![vec![0.0; n]; n];
    for i in 0..n - 1 {
        h[i][i] += 2.0 - 400.0 * (x[i + 1] - x[i] * x[i]) + 800.0 * x[i] * x[i];
        h[i][i + 1] -= 400.0 * x[i];
        h[i + 1][i] -= 400.0 * x[i];
        h[i + 1][i + 1] += 200.0;
    }
    h
}

#[test]
fn rosenbrock_nd_hessian() {
    let x: Vec<f64> = (0..6).map(|i| 0.25 * i as f64 - 0.6).collect();
    let want = rosen_n_hessian(&x);
    check_two(
        |p| gradient(rosen_n_vjp(p)),
        |p| gradient(rosen_n_vjp(p)),
        |p, v| rosen_n_jvp(p, &v.to_vec()).1,
        &x,
        &want,
    );
}

#[differentiable(forward)]
fn branchy<T: Float>(x: T, y: T) -> T {
    if x > y { x * x * y } else { x.sin() * y.exp() }
}

#[test]
fn branch_hessian_is_the_branch_taken() {
    // x > y: f = x²y.
    let (x, y) = (1.5, 0.5);
    let want = vec![vec![2.0 * y, 2.0 * x], vec![2.0 * x, 0.0]];
    check_two(
        grad_branchy,
        grad_branchy,
        |p, v| branchy_jvp(p[0], p[1], v[0], v[1]).1,
        &[x, y],
        &want,
    );
    // x ≤ y: f = sin x · eʸ.
    let (x, y) = (0.4, 0.9);
    let (s, c, e) = (x.sin(), x.cos(), y.exp());
    let want = vec![vec![-s * e, c * e], vec![c * e, s * e]];
    check_two(
        grad_branchy,
        grad_branchy,
        |p, v| branchy_jvp(p[0], p[1], v[0], v[1]).1,
        &[x, y],
        &want,
    );
}

fn grad_branchy<T: Float + UnitSeed>(p: &[T]) -> Vec<T> {
    let (gx, gy) = gradient(branchy_vjp(p[0], p[1]));
    vec![gx, gy]
}

#[differentiable(forward)]
fn looped<T: Float>(x: T, y: T, n: usize) -> T {
    let mut s = T::ZERO;
    let mut p = T::ONE;
    for _ in 0..n {
        p *= x;
        s += p * y;
    }
    s
}

fn grad_looped<T: Float + UnitSeed>(p: &[T]) -> Vec<T> {
    let (gx, gy) = gradient(looped_vjp(p[0], p[1], 3));
    vec![gx, gy]
}

#[test]
fn loop_hessian() {
    // f = y(x + x² + x³): fxx = y(2 + 6x), fxy = 1 + 2x + 3x², fyy = 0.
    let (x, y) = (0.7, -1.3);
    let fxy = 1.0 + 2.0 * x + 3.0 * x * x;
    let want = vec![vec![y * (2.0 + 6.0 * x), fxy], vec![fxy, 0.0]];
    check_two(
        grad_looped,
        grad_looped,
        |p, v| looped_jvp(p[0], p[1], 3, v[0], v[1]).1,
        &[x, y],
        &want,
    );
}

#[differentiable(forward)]
fn recursive<T: Float>(x: T, y: T, n: u32) -> T {
    if n == 0 {
        y
    } else {
        x * recursive(x, y, n - 1)
    }
}

fn grad_recursive<T: Float + UnitSeed>(p: &[T]) -> Vec<T> {
    let (gx, gy) = gradient(recursive_vjp(p[0], p[1], 3));
    vec![gx, gy]
}

#[test]
fn recursion_hessian() {
    // f = x³y: fxx = 6xy, fxy = 3x², fyy = 0.
    let (x, y) = (1.1, 0.6);
    let want = vec![vec![6.0 * x * y, 3.0 * x * x], vec![3.0 * x * x, 0.0]];
    check_two(
        grad_recursive,
        grad_recursive,
        |p, v| recursive_jvp(p[0], p[1], 3, v[0], v[1]).1,
        &[x, y],
        &want,
    );
}

#[differentiable(forward)]
fn methods<T: Float>(x: T, y: T) -> T {
    (x * y).exp() + x.ln() * y * y
}

fn grad_methods<T: Float + UnitSeed>(p: &[T]) -> Vec<T> {
    let (gx, gy) = gradient(methods_vjp(p[0], p[1]));
    vec![gx, gy]
}

#[test]
fn methods_hessian() {
    // f = e^{xy} + y² ln x.
    let (x, y) = (0.8, 0.5);
    let e = (x * y).exp();
    let fxy = (1.0 + x * y) * e + 2.0 * y / x;
    let want = vec![
        vec![y * y * e - y * y / (x * x), fxy],
        vec![fxy, x * x * e + 2.0 * x.ln()],
    ];
    check_two(
        grad_methods,
        grad_methods,
        |p, v| methods_jvp(p[0], p[1], v[0], v[1]).1,
        &[x, y],
        &want,
    );
}

#[differentiable(forward)]
fn many_methods<T: Float>(x: T, y: T) -> T {
    let mut s = x.atan2(y) + x.hypot(y).sqrt() + y.powf(x) + x.cbrt() * y.log(T::from_f64(3.0));
    for _ in 0..2 {
        s = (s * x).tanh() + s.max(y) + (x * y).cos().powi(3);
    }
    s
}

fn grad_many<T: Float + UnitSeed>(p: &[T]) -> Vec<T> {
    let (gx, gy) = gradient(many_methods_vjp(p[0], p[1]));
    vec![gx, gy]
}

#[test]
fn many_methods_hessian_agrees_with_finite_differences_and_forward_over_forward() {
    let x = [0.6, 1.7];
    let h = hessian_fwd_rev(grad_many, &x, &grad_many(&x));
    assert_matrix_close(&h, &hessian_fd(grad_many, &x), 1e-6, "finite-difference H");
    assert_symmetric(&h);
    for i in 0..2 {
        for j in 0..2 {
            let e = |k: usize| D::constant(if k == i { 1.0 } else { 0.0 });
            let p = seeded(&x, j);
            let t = many_methods_jvp(p[0], p[1], e(0), e(1)).1;
            assert!(
                close(t.eps, h[i][j], 1e-12),
                "ff H[{i}][{j}]: {} vs {}",
                t.eps,
                h[i][j]
            );
        }
    }
}

#[test]
fn third_order_through_dual_of_dual() {
    // ∂³/∂x³ at x + ε₁ + ε₂: the ε₁ε₂ part of ∂f/∂x.
    let var = |a: f64| Dual::new(D::new(a, 1.0), D::new(1.0, 0.0));
    let cst = |a: f64| Dual::new(D::constant(a), D::constant(0.0));
    let (x, y) = (0.8, 0.5);
    let (gx, _) = gradient(rosen2_vjp(var(x), cst(y)));
    assert_eq!(gx.eps.eps, 2400.0 * x);
    assert_eq!(gx.re.eps, 2.0 - 400.0 * y + 1200.0 * x * x);
    assert_eq!(gx.eps.re, gx.re.eps, "the two first-order parts agree");
    let (gx, _) = gradient(methods_vjp(var(x), cst(y)));
    // f = e^{xy} + y² ln x: fxxx = y³ e^{xy} + 2y²/x³.
    let want = y.powi(3) * (x * y).exp() + 2.0 * y * y / x.powi(3);
    assert!(close(gx.eps.eps, want, 1e-12), "{} vs {want}", gx.eps.eps);
    // Forward-over-forward-over-forward: the jvp along eₓ at x + ε₁ + ε₂.
    let (_, t) = methods_jvp(
        var(x),
        cst(y),
        Dual::constant(D::constant(1.0)),
        Dual::constant(D::constant(0.0)),
    );
    assert!(close(t.eps.eps, want, 1e-12), "{} vs {want}", t.eps.eps);
}

#[test]
fn dual_arithmetic_and_formatting() {
    let (a0, a1, b0, b1) = (2.0, 3.0, -1.0, 0.5);
    let (a, b) = (D::new(a0, a1), D::new(b0, b1));
    assert_eq!((a * b).eps, a1 * b0 + a0 * b1);
    assert_eq!((a / b).eps, (a1 * b0 - a0 * b1) / (b0 * b0));
    assert_eq!((-a).eps, -a1);
    assert_eq!((a % D::constant(1.5)).eps, a1);
    // ∂(a % b)/∂b = −trunc(a/b) = −2 here.
    let r = a % D::new(0.75, 0.5);
    assert_eq!((r.re, r.eps), (a0 % 0.75, a1 - 2.0 * 0.5));
    assert!(
        b < a && a == D::new(a0, -7.0),
        "comparisons look at re only"
    );
    assert_eq!(a.powi(3).eps, a1 * 3.0 * a0 * a0);
    let c = D::new(1.0, 1.0);
    assert_eq!(a.mul_add(b, c).eps, a1 * b0 + b1 * a0 + c.eps);
    assert_eq!(format!("{a}"), "2 + 3ε");
    assert_eq!(format!("{:.1}", a), "2.0 + 3.0ε");
    assert_eq!(D::default(), D::ZERO);
    assert_eq!(
        (D::ONE.re, D::ONE.eps, D::from_f64(4.0).eps, a.to_f64()),
        (1.0, 0.0, 0.0, 2.0)
    );
}

#[test]
fn hessian_and_hvp_helpers_match_the_hand_hessian() {
    let x: Vec<f64> = (0..5).map(|i| 0.3 * i as f64 - 0.5).collect();
    let want = rosen_n_hessian(&x);
    let h = hessian(|p| gradient(rosen_n_vjp::<Dual<f64>>(p)), &x).unwrap();
    for (i, row) in want.iter().enumerate() {
        for (j, &w) in row.iter().enumerate() {
            let got = h.get(i, j).unwrap();
            assert!(
                (got - w).abs() <= 1e-12 * (1.0 + w.abs()),
                "H[{i}][{j}] = {got}, want {w}"
            );
        }
    }
    let v = vec![1.0, -0.5, 0.25, 2.0, 0.0];
    let (g, hv) = hvp(|p| gradient(rosen_n_vjp::<Dual<f64>>(p)), &x, &v).unwrap();
    let g0: Vec<f64> = gradient(rosen_n_vjp(&x[..]));
    assert_eq!(g, g0);
    for (i, row) in want.iter().enumerate() {
        let w: f64 = row.iter().zip(&v).map(|(a, b)| a * b).sum();
        assert!((hv[i] - w).abs() <= 1e-12 * (1.0 + w.abs()));
    }
    let err = hvp(|p| gradient(rosen_n_vjp::<Dual<f64>>(p)), &x, &v[..3]).unwrap_err();
    assert!(matches!(err, JacobianError::SeedShape { .. }), "{err:?}");
    let err = hessian(|p| gradient(rosen_n_vjp::<Dual<f64>>(p)), &[1.0, f64::NAN]).unwrap_err();
    assert!(
        matches!(err, JacobianError::NonFiniteInput { element: 1, .. }),
        "{err:?}"
    );
}
