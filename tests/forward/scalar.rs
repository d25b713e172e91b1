//! Forward mode on scalar code: each function's `_jvp` against its hand-computed derivative,
//! against central finite differences in f64, and against the gradient from `_vjp`
//! (⟨∇f, v⟩ = ∂f·v).

use adjoint::prelude::*;

/// Central finite difference of `f` at `x` along `v`.
fn fd(f: impl Fn(&[f64]) -> f64, x: &[f64], v: &[f64]) -> f64 {
    let h = 1e-6;
    let plus: Vec<f64> = x.iter().zip(v).map(|(a, b)| a + h * b).collect();
    let minus: Vec<f64> = x.iter().zip(v).map(|(a, b)| a - h * b).collect();
    (f(&plus) - f(&minus)) / (2.0 * h)
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

#[differentiable(forward)]
fn poly(x: f64, y: f64) -> f64 {
    let z = x * y + 3.0 * x;
    z * z - y.sin()
}

#[test]
fn straight_line_matches_hand_derivative() {
    let (x, y) = (1.5, -0.5);
    let (v, t) = poly_jvp(x, y, 1.0, 0.0);
    let z: f64 = x * y + 3.0 * x;
    assert_eq!(v, poly(x, y));
    assert!(close(t, 2.0 * z * (y + 3.0), 1e-14));
    let (_, t) = poly_jvp(x, y, 0.0, 1.0);
    assert!(close(t, 2.0 * z * x - y.cos(), 1e-14));
    let (_, t) = poly_jvp(x, y, 0.3, -0.7);
    let f = |p: &[f64]| poly(p[0], p[1]);
    assert!(close(t, fd(f, &[x, y], &[0.3, -0.7]), 1e-8));
    let (gx, gy) = gradient(poly_vjp(x, y));
    assert!(close(t, 0.3 * gx - 0.7 * gy, 1e-13));
}

#[differentiable(forward)]
fn piecewise(x: f64) -> f64 {
    let mut y = x;
    if x > 1.0 {
        y = x * x;
    } else if x < -1.0 {
        y = -x.exp();
    }
    let s = if y > 0.5 { y.sqrt() } else { 2.0 * y };
    s + 1.0
}

#[test]
fn branches_take_the_derivative_of_the_branch_taken() {
    // x = 2: y = 4, s = 2, ds/dx = 1/(2·2) · 2x = 1.
    assert_eq!(piecewise_jvp(2.0, 1.0), (3.0, 1.0));
    // x = -2: y = -e^-2 ≤ 0.5, s = 2y, ds/dx = -2 e^-2.
    let (_, t) = piecewise_jvp(-2.0, 1.0);
    assert!(close(t, -2.0 * (-2.0f64).exp(), 1e-15));
    // x = 0.3: y = x, s = 2x.
    assert_eq!(piecewise_jvp(0.3, 1.0).1, 2.0);
}

#[differentiable(forward)]
fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

#[test]
fn loop_over_a_slice_matches_gradient_and_finite_differences() {
    let x: Vec<f64> = (0..8).map(|i| 0.1 * i as f64 - 0.3).collect();
    let v: Vec<f64> = (0..8).map(|i| ((i * 7 % 5) as f64) - 2.0).collect();
    let (value, t) = rosenbrock_jvp(&x, &v);
    assert_eq!(value, rosenbrock(&x));
    assert!(close(t, fd(rosenbrock, &x, &v), 1e-7));
    let g: Vec<f64> = gradient(rosenbrock_vjp(&x));
    let dot: f64 = g.iter().zip(&v).map(|(a, b)| a * b).sum();
    assert!(close(t, dot, 1e-12));
}

#[differentiable(forward)]
fn logistic(r: f64, x0: f64) -> f64 {
    let mut x = x0;
    let mut k = 0;
    while k < 20 {
        x = r * x * (1.0 - x);
        k += 1;
    }
    x
}

#[test]
fn while_loop_carries_the_tangent() {
    let (r, x0) = (3.1, 0.25);
    let (_, tr) = logistic_jvp(r, x0, 1.0, 0.0);
    let (_, tx) = logistic_jvp(r, x0, 0.0, 1.0);
    let (gr, gx) = gradient(logistic_vjp(r, x0));
    assert!(close(tr, gr, 1e-12) && close(tx, gx, 1e-12));
    let f = |p: &[f64]| logistic(p[0], p[1]);
    assert!(close(tr, fd(f, &[r, x0], &[1.0, 0.0]), 1e-6));
}

#[differentiable(forward)]
fn cumulative(x: &[f64]) -> f64 {
    let mut v = vec![0.0; x.len()];
    let mut acc = 0.0;
    for i in 0..x.len() {
        acc += x[i] * x[i];
        v[i] = acc;
    }
    let mut total = 0.0;
    for &vi in v.iter() {
        total += vi.ln_1p();
    }
    total
}

#[test]
fn element_writes_and_iteration_over_an_active_vec() {
    let x = vec![0.5, -1.0, 2.0];
    let v = vec![1.0, 0.5, -0.25];
    let (_, t) = cumulative_jvp(&x, &v);
    assert!(close(t, fd(cumulative, &x, &v), 1e-8));
    let g: Vec<f64> = gradient(cumulative_vjp(&x));
    assert!(close(t, g.iter().zip(&v).map(|(a, b)| a * b).sum(), 1e-12));
}

#[differentiable(forward)]
fn power(x: f64, n: u32) -> f64 {
    if n == 0 { 1.0 } else { x * power(x, n - 1) }
}

#[test]
fn recursion() {
    // d/dx x^5 = 5 x^4.
    assert_eq!(power_jvp(2.0, 5, 1.0), (32.0, 80.0));
}

#[differentiable(forward)]
fn uses_call(x: f64, y: f64) -> f64 {
    let p = poly(x, y);
    p.tanh() + power(y, 3)
}

#[test]
fn calls_to_differentiable_functions() {
    let (x, y) = (0.2, 0.7);
    let (_, t) = uses_call_jvp(x, y, 0.4, -1.0);
    let f = |p: &[f64]| uses_call(p[0], p[1]);
    assert!(close(t, fd(f, &[x, y], &[0.4, -1.0]), 1e-8));
    let (gx, gy) = gradient(uses_call_vjp(x, y));
    assert!(close(t, 0.4 * gx - gy, 1e-13));
}

#[differentiable(forward)]
fn scale_in_place(v: &mut Vec<f64>, a: f64) -> f64 {
    for i in 0..v.len() {
        v[i] *= a;
    }
    v[0] + a
}

#[test]
fn inout_parameter_leaves_the_tangent_of_its_final_value() {
    let mut v = vec![1.0, 2.0];
    let mut dv = vec![0.5, -1.0];
    let (value, t) = scale_in_place_jvp(&mut v, 3.0, &mut dv, 2.0);
    assert_eq!(v, vec![3.0, 6.0]);
    // v_i ← a v_i: dv_i ← a dv_i + v_i da.
    assert_eq!(dv, vec![3.0 * 0.5 + 1.0 * 2.0, -3.0 + 2.0 * 2.0]);
    assert_eq!((value, t), (6.0, dv[0] + 2.0));
}

#[differentiable(forward)]
fn tuples_and_early_return(x: f64) -> f64 {
    let (a, b) = (x.sin(), x * 2.0);
    if a > 10.0 {
        return b;
    }
    let arr = [a, b, 1.0];
    arr[0] * arr[1] + arr[2]
}

#[test]
fn tuples_arrays_and_return() {
    let x = 0.8_f64;
    let (_, t) = tuples_and_early_return_jvp(x, 1.0);
    // d/dx (2x sin x) = 2 sin x + 2x cos x.
    assert!(close(t, 2.0 * x.sin() + 2.0 * x * x.cos(), 1e-15));
}

/// Sorting two values by `mem::swap`, then `replace` and `take`: the tangents move with them.
/// lo = min(x, y), hi = max(x, y); f = lo·hi² + old + taken with old = lo, taken = 2hi.
#[differentiable(forward)]
fn swapped(x: f64, y: f64) -> f64 {
    let mut lo = x;
    let mut hi = y;
    if lo > hi {
        std::mem::swap(&mut lo, &mut hi);
    }
    let mut spare = 2.0 * hi;
    let old = std::mem::replace(&mut spare, lo);
    let taken = std::mem::take(&mut spare);
    lo * hi * hi + old + taken
}

#[test]
fn mem_swap_replace_take_move_the_tangents() {
    // x = 3 > y = 1: lo = y, hi = x; f = y x² + 2x + y: ∂x = 2xy + 2, ∂y = x² + 1.
    assert_eq!(swapped_jvp(3.0, 1.0, 1.0, 0.0).1, 2.0 * 3.0 + 2.0);
    assert_eq!(swapped_jvp(3.0, 1.0, 0.0, 1.0).1, 9.0 + 1.0);
    // x = 1 < y = 3: lo = x, hi = y: f = x y² + 2y + x: ∂x = y² + 1.
    assert_eq!(swapped_jvp(1.0, 3.0, 1.0, 0.0).1, 10.0);
}

/// Σ (i + 1)·vᵢ over v = [x, y, xy] built by `push`: ∂x = 1 + 3y, ∂y = 2 + 3x.
#[differentiable(forward)]
fn pushed(x: f64, y: f64) -> f64 {
    let mut v = Vec::new();
    v.push(x);
    v.push(y);
    v.push(x * y);
    let mut s = 0.0;
    for i in 0..v.len() {
        s += (i + 1) as f64 * v[i];
    }
    s
}

#[test]
fn push_and_a_parenthesised_cast() {
    let (x, y) = (0.5, -2.0);
    assert_eq!(pushed_jvp(x, y, 1.0, 0.0).1, 1.0 + 3.0 * y);
    assert_eq!(pushed_jvp(x, y, 0.0, 1.0).1, 2.0 + 3.0 * x);
}

/// A reference local read through `*`, and a final `return`: f = (*r)² eˣ with r = &x.
#[differentiable(forward)]
#[allow(clippy::needless_return)]
fn through_ref(x: f64) -> f64 {
    let r = &x;
    let y = *r * *r;
    return y * x.exp();
}

#[test]
fn reference_locals_and_a_final_return() {
    let x = 0.7_f64;
    // d/dx x² eˣ = (2x + x²) eˣ.
    let want = (2.0 * x + x * x) * x.exp();
    assert!(close(through_ref_jvp(x, 1.0).1, want, 1e-15));
}

/// A function returning `()` that writes its inout parameter: x ← x·y + y.
#[differentiable(forward)]
fn step(x: &mut f64, y: f64) {
    *x = *x * y + y;
}

#[test]
fn unit_function_with_an_inout_parameter() {
    let (mut x, mut dx) = (2.0, 1.0);
    let ((), ()) = step_jvp(&mut x, 3.0, &mut dx, 0.5);
    // dx ← dx·y + x·dy + dy = 3 + 2·0.5 + 0.5.
    assert_eq!((x, dx), (9.0, 4.5));
}

/// Σ xᵢ² three ways of iterating a slice parameter: ∂ = 2xᵢ each, so J·v = 6 Σ xᵢvᵢ.
#[differentiable(forward)]
fn iterate_slice(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for a in x {
        s += a * a;
    }
    for a in x.iter() {
        s += a * a;
    }
    for &a in x.iter() {
        s += a * a;
    }
    s
}

#[test]
fn every_way_of_iterating_a_slice_carries_its_tangent() {
    let (x, v) = (vec![1.0, -2.0, 0.5], vec![0.5, 1.0, -1.0]);
    let want = 6.0 * (0.5 - 2.0 - 0.5);
    assert_eq!(iterate_slice_jvp(&x, &v).1, want);
}

/// An `Option` of an active value, matched and `if let`-ed: f = √x·2 + y for x > 0 (else y).
#[differentiable(forward)]
fn optional(x: f64, y: f64) -> f64 {
    let r = if x > 0.0 { Some(x.sqrt()) } else { None };
    let doubled = match r {
        Some(v) => v * 2.0,
        None => 0.0,
    };
    if let Some(v) = r {
        doubled + v * 0.0 + y
    } else {
        y
    }
}

#[test]
fn options_of_active_values() {
    // ∂x = 1/√x at x = 4: 0.5; ∂y = 1.
    assert_eq!(optional_jvp(4.0, 1.0, 1.0, 0.0), (5.0, 0.5));
    assert_eq!(optional_jvp(4.0, 1.0, 0.0, 1.0).1, 1.0);
    assert_eq!(optional_jvp(-1.0, 1.0, 1.0, 1.0), (1.0, 1.0));
}

/// Writes through `let r = &mut a`: a = x² through r, then a += x through a reborrow:
/// f = x² + x, f' = 2x + 1.
#[differentiable(forward)]
fn through_mut_ref(x: f64) -> f64 {
    let mut a = 1.0;
    let r = &mut a;
    *r = x * x;
    *r += x;
    a
}

#[test]
fn writes_through_a_mut_reference_local() {
    assert_eq!(through_mut_ref_jvp(3.0, 1.0), (12.0, 7.0));
}
