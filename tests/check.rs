//! `adjoint::check` as users meet it: companions written by `#[differentiable]`, a rule
//! registered with `#[derivative_of]` that is deliberately wrong, and inputs of several kinds
//! (scalars, `Vec`s, tensors) in one tuple.

use adjoint::check::{
    CheckError, Tolerance, check_dot_product, check_dot_product_by, check_gradient,
    check_gradient_by, check_gradient_with,
};
use adjoint::prelude::*;

/// `softplus(x) = ln(1 + eˣ)`.
fn softplus(x: f64) -> f64 {
    x.exp().ln_1p()
}

/// A wrong rule: `σ(x)` is the derivative, this one returns `σ(x)²`.
#[derivative_of(softplus)]
fn softplus_vjp(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
    let s = 1.0 / (1.0 + (-x).exp());
    (softplus(x), move |d| d * s * s)
}

/// Uses the wrong rule on its third input only.
#[differentiable]
fn mixed(a: f64, w: Tensor, b: f64) -> Tensor {
    (w * a).tanh().sum_all() * b + softplus(b)
}

#[differentiable]
fn mixed_right(a: f64, w: Tensor, b: f64) -> Tensor {
    (w * a).tanh().sum_all() * b + b.exp().ln_1p()
}

fn weights() -> Tensor {
    Tensor::from_vec(vec![0.3_f64, -0.8, 1.2, 0.05], &[2, 2])
}

#[test]
fn a_wrong_derivative_of_rule_is_reported_at_its_input() {
    let inputs = (0.7, weights(), 0.4);
    let err = check_gradient(|(a, w, b)| mixed_vjp(a, w, b), &inputs).unwrap_err();
    let CheckError::Mismatch {
        worst,
        failures,
        checked,
        ..
    } = &err
    else {
        panic!("expected a mismatch, got {err:?}");
    };
    // a, the 4 elements of w, then b: only b's derivative uses the wrong rule.
    assert_eq!(
        (worst.input, worst.element, *failures, *checked),
        (2, Some(0), 1, 6)
    );
    let s = 1.0 / (1.0 + (-0.4_f64).exp());
    assert!(
        (worst.numeric - worst.analytic - (s - s * s)).abs() < 1e-8,
        "{err}"
    );
    assert!(err.to_string().contains("input 2, element 0"), "{err}");
    // The dot-product test along a random direction of b fails too, and only for b.
    let Err(CheckError::Mismatch {
        worst,
        failures,
        checked,
        ..
    }) = check_dot_product(|(a, w, b)| mixed_vjp(a, w, b), &inputs)
    else {
        panic!("the dot-product test must catch the wrong rule");
    };
    assert_eq!((worst.input, failures, checked), (2, 1, 3));
}

#[test]
fn the_same_function_with_a_right_rule_passes() {
    let inputs = (0.7, weights(), 0.4);
    let report = check_gradient(|(a, w, b)| mixed_right_vjp(a, w, b), &inputs).unwrap();
    assert_eq!(report.checked, 6);
    assert_eq!(report.tolerance, Tolerance::default());
    check_dot_product(|(a, w, b)| mixed_right_vjp(a, w, b), &inputs).unwrap();
}

/// `Σᵢ xᵢ²·yᵢ` over two `Vec`s.
#[differentiable]
fn weighted(xs: Vec<f64>, ys: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..xs.len() {
        s += xs[i] * xs[i] * ys[i];
    }
    s
}

#[test]
fn vec_inputs_of_a_companion() {
    let inputs = (vec![0.5, -1.5, 2.0], vec![1.0, 0.25, -0.75]);
    let report = check_gradient(|(x, y)| weighted_vjp(x, y), &inputs).unwrap();
    assert_eq!(report.checked, 6);
}

#[test]
fn a_tolerance_too_tight_for_the_step_fails_and_says_so() {
    // With h = 1e-2 the central difference of x³ is off by h² = 1e-4: caught at 1e-6.
    let tight = Tolerance {
        step: 1e-2,
        atol: 1e-6,
        rtol: 0.0,
        seed: 0,
    };
    let cube = |x: f64| (x * x * x, move |d: f64| d * 3.0 * x * x);
    let err = check_gradient_with(tight, cube, &1.0).unwrap_err();
    assert!(err.to_string().contains("step 1e-2"), "{err}");
}

/// Takes its tensors by reference.
#[differentiable]
fn by_reference(x: &Tensor, w: &Tensor) -> Tensor {
    (x * w).sin().sum_all()
}

#[test]
fn a_companion_of_reference_parameters() {
    let (x, w) = (weights(), weights().t());
    // The pullback borrows `x` and `w`: the checker gets the value and the pullback apart.
    let value = |(x, w): &(Tensor, Tensor)| by_reference(x, w);
    let vjp = |(x, w): &(Tensor, Tensor), seed| by_reference_vjp(x, w).1(seed);
    let report = check_gradient_by(Tolerance::default(), value, vjp, &(x.clone(), w.clone()));
    assert_eq!(report.unwrap().checked, 8);
    let report = check_dot_product_by(Tolerance::default(), value, vjp, &(x, w));
    assert_eq!(report.unwrap().checked, 2);
}
