//! The checker on hand-written `(value, pullback)` pairs: right ones pass with the exact
//! count of comparisons, wrong ones are named by input and element.

use super::*;
use crate::TangentVector;
use crate::tensor::{Cpu, DType, Tensor, TensorTangent};

/// A boxed pullback from a scalar seed to `T`.
type Pullback<T> = Box<dyn FnOnce(f64) -> T>;

/// `f(x, y) = x²·y`, with `∂x = 2xy` and `∂y = x²`; `wrong_y` adds 1 to `∂y`.
fn product(wrong_y: bool) -> impl Fn((f64, f64)) -> (f64, Pullback<(f64, f64)>) {
    let extra = if wrong_y { 1.0 } else { 0.0 };
    move |(x, y)| {
        let pullback = move |d| (d * 2.0 * x * y, d * (x * x + extra));
        (x * x * y, Box::new(pullback))
    }
}

#[test]
fn a_right_gradient_passes_with_one_comparison_per_element() {
    let report = check_gradient(product(false), &(1.5, -0.5)).unwrap();
    assert_eq!(report.checked, 2);
    assert!(report.worst.unwrap().passes(&report.tolerance));
    assert_eq!(report.tolerance, Tolerance::default());
}

#[test]
fn a_wrong_gradient_names_its_input_and_element() {
    let err = check_gradient(product(true), &(1.5, -0.5)).unwrap_err();
    let CheckError::Mismatch {
        worst,
        failures,
        checked,
        ..
    } = err.clone()
    else {
        panic!("expected a mismatch, got {err:?}");
    };
    assert_eq!(
        (worst.input, worst.element, failures, checked),
        (1, Some(0), 1, 2)
    );
    assert_eq!(worst.analytic, 1.5 * 1.5 + 1.0);
    assert!((worst.numeric - 2.25).abs() < 1e-8, "{}", worst.numeric);
    let text = err.to_string();
    assert!(text.contains("input 1, element 0"), "{text}");
    assert!(text.contains("1 of 2"), "{text}");
}

/// `f(v) = Σ vᵢ³` over a `Vec`, whose pullback returns a wrong derivative at element `bad`.
fn cubes(bad: Option<usize>) -> impl Fn(Vec<f64>) -> (f64, Pullback<Vec<f64>>) {
    move |v| {
        let y = v.iter().map(|x| x * x * x).sum();
        (
            y,
            Box::new(move |d| {
                let mut g: Vec<f64> = v.iter().map(|x| d * 3.0 * x * x).collect();
                if let Some(i) = bad {
                    g[i] *= 1.01;
                }
                g
            }),
        )
    }
}

#[test]
fn vec_inputs_are_checked_element_by_element() {
    let v = vec![0.5, -1.0, 2.0, 0.25];
    assert_eq!(check_gradient(cubes(None), &v).unwrap().checked, 4);
    let Err(CheckError::Mismatch { worst, .. }) = check_gradient(cubes(Some(2)), &v) else {
        panic!("a 1% error at element 2 must fail");
    };
    assert_eq!((worst.input, worst.element), (0, Some(2)));
    assert_eq!(worst.analytic, 3.0 * 4.0 * 1.01);
}

#[test]
fn the_dot_product_identity_catches_a_wrong_element() {
    let v = vec![0.5, -1.0, 2.0, 0.25];
    let report = check_dot_product(cubes(None), &v).unwrap();
    assert_eq!(report.checked, 1);
    let Err(CheckError::Mismatch { worst, .. }) = check_dot_product(cubes(Some(2)), &v) else {
        panic!("a 1% error at element 2 must fail the dot-product test");
    };
    assert_eq!((worst.input, worst.element), (0, None));
}

#[test]
fn an_empty_vec_tangent_is_the_zero_and_a_longer_one_is_an_error() {
    let zero = |v: Vec<f64>| (0.0 * v[0], move |_d: f64| Vec::<f64>::new());
    let report = check_gradient(zero, &vec![1.0, 2.0]).unwrap();
    assert_eq!(report.checked, 2);
    let long = |v: Vec<f64>| (v[0], move |d: f64| vec![d, 0.0, 0.0]);
    let err = check_gradient(long, &vec![1.0, 2.0]).unwrap_err();
    assert!(matches!(err, CheckError::TangentShape { .. }), "{err:?}");
}

#[test]
fn tensor_inputs_and_vector_values_use_a_random_cotangent() {
    let x = Tensor::from_vec(vec![0.5, -1.0, 2.0, 0.1, 0.0, -0.3], &[2, 3]);
    let w = Tensor::from_vec(vec![0.2, -0.7, 1.1], &[3, 1]);
    let f = |(x, w): (Tensor, Tensor)| x.matmul_vjp_full(&w, [true, true]);
    let report = check_gradient(f, &(x.clone(), w.clone())).unwrap();
    assert_eq!(report.checked, 9);
    assert_eq!(
        check_dot_product(f, &(x.clone(), w.clone()))
            .unwrap()
            .checked,
        2
    );
    // The transpose of the right tangent is the wrong shape; a scaled one the wrong value.
    let transposed = |(x, w): (Tensor, Tensor)| {
        let (y, pb) = x.matmul_vjp_full(&w, [true, true]);
        (y, move |d| {
            let (dx, dw) = pb(d);
            (dx, TensorTangent::Dense(dw.unwrap().t()))
        })
    };
    let err = check_gradient(transposed, &(x.clone(), w.clone())).unwrap_err();
    let CheckError::TangentShape { message } = err else {
        panic!("{err:?}")
    };
    assert!(
        message.contains("part 1") && message.contains("[1, 3]"),
        "{message}"
    );
    let scaled = |(x, w): (Tensor, Tensor)| {
        let (y, pb) = x.matmul_vjp_full(&w, [true, true]);
        (y, move |d| {
            let (dx, dw) = pb(d);
            (dx.scaled(1.001), dw)
        })
    };
    let Err(CheckError::Mismatch {
        worst, failures, ..
    }) = check_gradient(scaled, &(x, w))
    else {
        panic!("a 0.1% error in every element of x̄ must fail");
    };
    assert_eq!(worst.input, 0);
    assert!(failures >= 5, "{failures}");
}

#[test]
fn f32_tensors_are_refused_with_the_fix() {
    let x = Tensor::from_vec(vec![1.0_f32, 2.0], &[2]);
    let err =
        check_gradient(|(x,): (Tensor<Cpu>,)| x.exp_vjp_full([true]), &(x.clone(),)).unwrap_err();
    let CheckError::Precision { message } = err else {
        panic!("{err:?}")
    };
    assert!(
        message.contains("F32") && message.contains("DType::F64"),
        "{message}"
    );
    let x = x.to_dtype(DType::F64);
    assert!(check_gradient(|(x,): (Tensor<Cpu>,)| x.exp_vjp_full([true]), &(x,)).is_ok());
}

#[test]
fn nan_never_passes() {
    let c = Comparison {
        derivative: Derivative::Pullback,
        input: 0,
        element: Some(0),
        analytic: f64::NAN,
        numeric: 1.0,
    };
    assert!(!c.passes(&Tolerance::default()));
    let nan_grad = |x: f64| (x, move |_d: f64| f64::NAN);
    assert!(check_gradient(nan_grad, &1.0).is_err());
}
