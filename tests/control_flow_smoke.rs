//! Control-flow constructs of #[differentiable] code, each with an exact gradient.

#![allow(
    clippy::assign_op_pattern,
    clippy::needless_range_loop,
    clippy::useless_vec,
    reason = "these spellings are the constructs under test"
)]

use adjoint::prelude::*;

#[differentiable]
fn relu_like(x: f64) -> f64 {
    if x > 0.0 { x * x } else { 0.1 * x }
}

#[differentiable]
fn assign_in_branch(x: f64, y: f64) -> f64 {
    let mut z = x;
    if y > 1.0 {
        z = z * y;
    } else if y < -1.0 {
        z = z.sin() + y;
    }
    z * 2.0
}

#[differentiable]
fn powloop(x: f64, n: usize) -> f64 {
    let mut acc = 1.0;
    for _ in 0..n {
        acc = acc * x;
    }
    acc
}

#[differentiable]
fn rosen(x: [f64; 4]) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

#[differentiable]
fn matchy(x: f64, k: u8) -> f64 {
    match k {
        0 => x,
        1 => x * x,
        _ => x.exp(),
    }
}

#[test]
fn control_flow() {
    assert_eq!(gradient(relu_like_vjp(3.0)), 6.0);
    assert_eq!(gradient(relu_like_vjp(-3.0)), 0.1);
    assert_eq!(gradient(assign_in_branch_vjp(3.0, 2.0)), (4.0, 6.0));
    assert_eq!(gradient(assign_in_branch_vjp(3.0, 0.0)), (2.0, 0.0));
    assert_eq!(
        gradient(assign_in_branch_vjp(0.5, -2.0)),
        (2.0 * 0.5f64.cos(), 2.0)
    );
    assert_eq!(gradient(powloop_vjp(2.0, 5)), 80.0);
    let g = gradient(rosen_vjp([1.0, 1.0, 1.0, 1.0]));
    assert_eq!(g, [0.0; 4]);
    let g = gradient(rosen_vjp([0.5, 1.0, -1.0, 2.0]));
    println!("{g:?}");
    assert_eq!(gradient(matchy_vjp(2.0, 1)), 4.0);
    assert_eq!(gradient(matchy_vjp(0.0, 7)), 1.0);
}

#[differentiable]
fn fact_like(x: f64, n: u32) -> f64 {
    if n == 0 { 1.0 } else { x * fact_like(x, n - 1) }
}

#[differentiable]
fn writes(x: f64) -> f64 {
    let mut v = [0.0; 3];
    v[0] = x;
    v[1] = x * x;
    v[2] += v[1] * 3.0;
    v[0] + v[1] + v[2]
}

#[differentiable]
fn pushes(x: f64, n: usize) -> f64 {
    let mut v = Vec::new();
    for i in 0..n {
        v.push(x * (i as f64));
    }
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i] * v[i];
    }
    s
}

#[differentiable]
fn literals(x: f64, y: f64) -> f64 {
    let a = [x, y, 2.0];
    let v = vec![x * y, y];
    a[0] * a[1] + v[0] + v[1]
}

#[differentiable]
fn long_loop(x: f64, n: usize) -> f64 {
    let mut s = x;
    for _ in 0..n {
        s = 0.5 * s + 0.5 * x;
    }
    s
}

#[test]
fn more_control_flow() {
    assert_eq!(gradient(fact_like_vjp(2.0, 3)), 12.0);
    // d/dx (x + x² + 3x²) = 1 + 8x
    assert_eq!(gradient(writes_vjp(2.0)), 17.0);
    // s = Σ (x i)² = x² Σ i², ds/dx = 2x Σ i² = 2·1.5·(0+1+4) = 15
    assert_eq!(gradient(pushes_vjp(1.5, 3)), 15.0);
    // d/dx = y + y, d/dy = x + x + 1
    assert_eq!(gradient(literals_vjp(2.0, 3.0)), (6.0, 5.0));
    let g = gradient(long_loop_vjp(1.0, 1_000_000));
    assert!((g - 1.0).abs() < 1e-12);
}

#[differentiable]
fn iter_sum(xs: &Vec<f64>, w: f64) -> f64 {
    let mut s = 0.0;
    for x in xs.iter() {
        s += x * w;
    }
    for &x in xs {
        s += x;
    }
    s
}

#[test]
fn iterating_active_collections() {
    let xs = vec![1.0, 2.0, 3.0];
    let (dxs, dw) = gradient(iter_sum_vjp(&xs, 0.5));
    assert_eq!(dxs, vec![1.5, 1.5, 1.5]);
    assert_eq!(dw, 6.0);
}

#[differentiable]
fn early(x: f64) -> f64 {
    let y = x * x;
    if x > 1.0 {
        return y;
    }
    let z = y * x;
    if x < -1.0 {
        return -z;
    }
    z + x
}

#[differentiable]
fn skip_and_stop(x: f64, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        if i % 2 == 1 {
            continue;
        }
        if i >= 6 {
            break;
        }
        s += x * (i as f64);
    }
    s
}

#[differentiable]
fn until_big(x: f64) -> f64 {
    let mut y = x;
    loop {
        y = y * x;
        if y > 100.0 {
            break;
        }
    }
    y
}

/// `until_big` left by `return` from inside the `loop`, which is the body's last statement
/// (the Euler loop of GradBench's particle): the first xᵏ > 100 is returned as xᵏ − 100/x.
#[differentiable]
fn return_from_loop(x: f64) -> f64 {
    let mut y = x;
    loop {
        y = y * x;
        if y > 100.0 {
            return y - 100.0 / x;
        }
    }
}

#[differentiable]
fn match_return(x: f64, k: u8) -> f64 {
    match k {
        0 => return x,
        1 => {}
        _ => return x * x,
    }
    x.sin()
}

#[test]
fn exits() {
    assert_eq!(gradient(early_vjp(2.0)), 4.0);
    assert_eq!(gradient(early_vjp(-2.0)), -12.0);
    assert_eq!(gradient(early_vjp(0.5)), 3.0 * 0.25 + 1.0);
    // i = 0, 2, 4 contribute (6 breaks): s = x (0 + 2 + 4)
    assert_eq!(gradient(skip_and_stop_vjp(1.0, 100)), 6.0);
    // y = x^k for the first k with x^k > 100: x = 3 → 3^5 = 243, dy/dx = 5 · 3^4
    assert_eq!(gradient(until_big_vjp(3.0)), 405.0);
    // x = 3: y = 3⁵ = 243 is returned as 243 − 100/3; d/dx = 5 · 3⁴ + 100/9
    let (value, dx) = value_with_gradient(return_from_loop_vjp(3.0));
    assert_eq!((value, dx), (243.0 - 100.0 / 3.0, 405.0 + 100.0 / 9.0));
    assert_eq!(gradient(match_return_vjp(2.0, 0)), 1.0);
    assert_eq!(gradient(match_return_vjp(2.0, 5)), 4.0);
    assert_eq!(gradient(match_return_vjp(2.0, 1)), 2f64.cos());
}

#[differentiable]
fn step(x: &mut f64, y: f64) {
    *x = *x * y + y;
}

#[differentiable]
fn scale_and_report(x: &mut f64, k: f64) -> f64 {
    let old = *x;
    *x *= k;
    old * k
}

#[test]
fn inout() {
    let mut x = 2.0;
    let ((), pullback) = step_vjp(&mut x, 3.0);
    assert_eq!(x, 9.0);
    // x₁ = x₀ y + y: ∂x₁/∂x₀ = y = 3, ∂x₁/∂y = x₀ + 1 = 3
    let mut dx = 1.0;
    let dy = pullback((), (&mut dx,));
    assert_eq!((dx, dy), (3.0, 3.0));

    let mut x = 2.0;
    let (r, pullback) = scale_and_report_vjp(&mut x, 5.0);
    assert_eq!((r, x), (10.0, 10.0));
    // seeds: r̄ = 1, x̄₁ = 1; r = x₀ k, x₁ = x₀ k → x̄₀ = 2k = 10, k̄ = 2 x₀ = 4
    let mut dx = 1.0;
    let dk = pullback(1.0, (&mut dx,));
    assert_eq!((dx, dk), (10.0, 4.0));
}

#[differentiable]
fn checked_sqrt(x: f64) -> Result<f64, String> {
    if x < 0.0 {
        return Err(format!("negative input {x}"));
    }
    Ok(x.sqrt())
}

#[differentiable]
fn uses_try(x: f64, y: f64) -> Result<f64, String> {
    let r = checked_sqrt(x)? * y;
    Ok(r + checked_sqrt(y)?)
}

#[differentiable]
fn first_big(x: f64, n: usize) -> f64 {
    let mut y = x;
    for _ in 0..n {
        y = y * x;
        if y > 10.0 {
            return y * 2.0;
        }
    }
    y
}

#[differentiable]
fn maybe(x: f64, keep: bool) -> Option<f64> {
    let v = if keep { Some(x * x) } else { None };
    let w = v?;
    Some(w + x)
}

#[test]
fn try_and_loop_returns() {
    let (v, pb) = uses_try_vjp(4.0, 9.0);
    assert_eq!(v, Ok(2.0 * 9.0 + 3.0));
    // r = √x·y + √y: ∂x = y/(2√x) = 9/4, ∂y = √x + 1/(2√y) = 2 + 1/6
    let (dx, dy) = pb(1.0);
    assert_eq!(dx, 2.25);
    assert!((dy - (2.0 + 1.0 / 6.0)).abs() < 1e-15);
    let (v, _) = uses_try_vjp(-1.0, 9.0);
    assert!(v.is_err());
    // x = 2: y = 4, 8, 16 > 10 at the 3rd iteration: 2·x⁴, derivative 8x³ = 64
    assert_eq!(gradient(first_big_vjp(2.0, 10)), 64.0);
    // n too small to return: y = x³, derivative 3x² = 12
    assert_eq!(gradient(first_big_vjp(2.0, 2)), 12.0);
    let (v, pb) = maybe_vjp(3.0, true);
    assert_eq!(v, Some(12.0));
    assert_eq!(pb(1.0), 7.0);
}

#[differentiable]
fn calls_inout(x: f64, y: f64) -> f64 {
    let mut v = x * x;
    step(&mut v, y);
    step(&mut v, y);
    v * x
}

#[test]
fn inout_calls() {
    // v₀ = x², v₁ = v₀ y + y, v₂ = v₁ y + y = x² y² + y² + y; f = v₂ x
    let (x, y) = (1.5, 2.0);
    let (v, (dx, dy)) = value_with_gradient(calls_inout_vjp(x, y));
    assert_eq!(v, (x * x * y * y + y * y + y) * x);
    assert_eq!(dx, 3.0 * x * x * y * y + y * y + y);
    assert_eq!(dy, x * (2.0 * x * x * y + 2.0 * y + 1.0));
}

#[differentiable]
fn by_refs(x: &f64, y: &f64) -> f64 {
    x * y + -x
}

#[differentiable(wrt(x))]
fn data_ref(x: f64, w: &f64) -> f64 {
    w * x + &x * 2.0
}

#[differentiable]
fn alias_in_branch(x: f64) -> f64 {
    let a = x;
    if x > 0.0 { a * x } else { x }
}

#[differentiable]
fn last(v: Vec<f64>) -> f64 {
    let n = v.len();
    v[n - 1] * v[0]
}

#[differentiable]
fn g_read<T: Float>(x: [T; 2]) -> T {
    x[0] * x[1]
}

#[test]
fn helper_reported_bugs() {
    assert_eq!(gradient(by_refs_vjp(&2.0, &3.0)), (2.0, 2.0));
    assert_eq!(gradient(data_ref_vjp(2.0, &3.0)), 5.0);
    assert_eq!(gradient(alias_in_branch_vjp(3.0)), 6.0);
    assert_eq!(gradient(last_vjp(vec![2.0, 5.0, 7.0])), vec![7.0, 0.0, 2.0]);
    assert_eq!(gradient(g_read_vjp([2.0f32, 3.0])), [3.0, 2.0]);
}

#[differentiable]
fn mut_param(mut x: f64) -> f64 {
    x *= x;
    x
}

#[differentiable]
fn type_path_call(x: f64) -> f64 {
    f64::sin(x) * f64::powi(x, 2)
}

#[differentiable]
fn powf_at_zero(x: f64, p: f64) -> f64 {
    x.powf(p)
}

#[test]
fn more_reported_bugs() {
    assert_eq!(gradient(mut_param_vjp(3.0)), 6.0);
    let x = 0.7f64;
    assert!(
        (gradient(type_path_call_vjp(x)) - (x.cos() * x * x + x.sin() * 2.0 * x)).abs() < 1e-15
    );
    assert_eq!(gradient(powf_at_zero_vjp(0.0, 0.0)), (0.0, 0.0));
}
