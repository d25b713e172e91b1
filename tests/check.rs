//! `adjoint::check` as users meet it: companions written by `#[differentiable]`, a rule
//! registered with `#[derivative_of]` that is deliberately wrong, and inputs of several kinds
//! (scalars, `Vec`s, tensors) in one tuple, and second derivatives by forward-over-reverse.

use adjoint::check::{
    CheckError, Derivative, Tolerance, check_dot_product, check_dot_product_by, check_gradient,
    check_gradient_by, check_gradient_with, check_hessian, check_hvp,
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

/// `f = x₀²·sin x₁ + x₁³`, generic over the float type so that its gradient runs on dual
/// numbers: H = [[2 sin x₁, 2x₀ cos x₁], [2x₀ cos x₁, −x₀² sin x₁ + 6x₁]].
#[differentiable]
fn curved<T: Float>(x: &[T]) -> T {
    x[0] * x[0] * x[1].sin() + x[1] * x[1] * x[1]
}

/// The gradient of [`curved`] on dual numbers, as `check_hessian` takes it.
fn curved_gradient(p: &[Dual<f64>]) -> Vec<Dual<f64>> {
    gradient(curved_vjp::<Dual<f64>>(p))
}

#[test]
fn a_forward_over_reverse_hessian_passes_its_check() {
    let x = [0.7, -1.3];
    let report = check_hessian(curved_gradient, &x).unwrap();
    assert_eq!(report.checked, 4);
    let worst = report.worst.expect("four comparisons");
    assert_eq!(worst.derivative, Derivative::Hessian);
    // The Hessian the checker compared, by hand: its entries against the exact ones.
    let h = hessian(curved_gradient, &x).unwrap();
    let exact = [
        2.0 * x[1].sin(),
        2.0 * x[0] * x[1].cos(),
        2.0 * x[0] * x[1].cos(),
        -x[0] * x[0] * x[1].sin() + 6.0 * x[1],
    ];
    for (got, want) in h.as_slice().iter().zip(exact) {
        assert!((got - want).abs() < 1e-12, "{got} against {want}");
    }
    // Along one direction: n comparisons from three gradients.
    assert_eq!(
        check_hvp(curved_gradient, &x, &[0.5, -2.0])
            .unwrap()
            .checked,
        2
    );
}

#[test]
fn a_wrong_second_derivative_is_reported_at_its_row_and_column() {
    // The right gradient values, but the dual part of ∂f/∂x₁ loses its x₀ term:
    // H[1][0] = 2x₀ cos x₁ becomes 0, H[1][1] stays right.
    let wrong = |p: &[Dual<f64>]| {
        let mut g = curved_gradient(p);
        let x0 = p[0].re;
        g[1] = Dual::new(g[1].re, g[1].eps - 2.0 * x0 * p[1].re.cos() * p[0].eps);
        g
    };
    match check_hessian(wrong, &[0.7, -1.3]) {
        Err(CheckError::Mismatch {
            worst,
            failures,
            checked,
            ..
        }) => {
            assert_eq!((failures, checked), (1, 4));
            assert_eq!((worst.element, worst.input), (Some(1), 0));
            assert!(worst.analytic.abs() < 1e-12, "{worst}");
            assert!(
                (worst.numeric - 2.0 * 0.7 * (-1.3f64).cos()).abs() < 1e-6,
                "{worst}"
            );
        }
        other => panic!("the wrong Hessian was not caught: {other:?}"),
    }
}

#[test]
fn second_order_checks_name_bad_inputs() {
    assert!(matches!(
        check_hessian(curved_gradient, &[f64::NAN, 1.0]),
        Err(CheckError::NonFinite { .. })
    ));
    assert!(matches!(
        check_hvp(curved_gradient, &[1.0, 1.0], &[1.0]),
        Err(CheckError::TangentShape { .. })
    ));
    let short = |p: &[Dual<f64>]| curved_gradient(p)[..1].to_vec();
    match check_hessian(short, &[1.0, 1.0]) {
        Err(CheckError::TangentShape { message }) => {
            assert!(message.contains("1 elements, the input 2"), "{message}")
        }
        other => panic!("a short gradient was not reported: {other:?}"),
    }
}
