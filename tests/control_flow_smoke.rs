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
    assert_eq!(gradient(assign_in_branch_vjp(0.5, -2.0)), (2.0 * 0.5f64.cos(), 2.0));
    assert_eq!(gradient(powloop_vjp(2.0, 5)), 80.0);
    let g = gradient(rosen_vjp([1.0, 1.0, 1.0, 1.0]));
    assert_eq!(g, [0.0; 4]);
    let g = gradient(rosen_vjp([0.5, 1.0, -1.0, 2.0]));
    println!("{g:?}");
    assert_eq!(gradient(matchy_vjp(2.0, 1)), 4.0);
    assert_eq!(gradient(matchy_vjp(0.0, 7)), 1.0);
}
