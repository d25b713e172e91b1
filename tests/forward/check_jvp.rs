//! `check_jvp` on the forward companions of `jacobian.rs`: right jvps pass with one
//! comparison per output element, wrong ones fail naming the output element.

use super::jacobian::{
    layer, layer_jvp, lifted, lifted_jvp, polar, polar_jvp, softmax, softmax_jvp,
};
use adjoint::check::{CheckError, Derivative, Tolerance, check_jvp, check_jvp_with};
use adjoint::prelude::*;

#[test]
fn right_jvps_pass_with_one_comparison_per_output_element() {
    let polar_jvp_f = |(r, t), (dr, dt)| polar_jvp(r, t, dr, dt);
    let report = check_jvp(polar_jvp_f, |(r, t)| polar(r, t), &(2.0, 0.7), &(0.3, -1.0)).unwrap();
    assert_eq!(report.checked, 2);
    let worst = report.worst.unwrap();
    assert_eq!(worst.derivative, Derivative::Jvp);
    assert!(worst.passes(&report.tolerance));
    for x in [(1.5, 0.5), (-0.5, 1.0)] {
        let f_jvp = |(x, y), (dx, dy)| lifted_jvp(x, y, dx, dy);
        let report = check_jvp(f_jvp, |(x, y)| lifted(x, y), &x, &(0.25, 1.0)).unwrap();
        assert_eq!(report.checked, 3);
    }
    let x = vec![0.5, -1.0, 2.0, 0.0];
    let f_jvp = |x: Vec<f64>, dx: Vec<f64>| softmax_jvp(&x, &dx);
    let report = check_jvp(
        f_jvp,
        |x: Vec<f64>| softmax(&x),
        &x,
        &vec![1.0, 0.5, -0.25, 2.0],
    );
    assert_eq!(report.unwrap().checked, 4);
    let w = Tensor::from_vec(vec![0.5_f64, -1.0, 2.0, 0.25], &[2, 2]);
    let x = Tensor::from_vec(vec![1.0_f64, -0.5, 0.75, 0.1, 0.3, -2.0], &[3, 2]);
    let v = (
        TensorTangent::Dense(Tensor::from_vec(vec![0.3_f64, 0.2, -0.1, 1.0], &[2, 2])),
        TensorTangent::Zero,
    );
    let f_jvp = |(w, x), (dw, dx)| layer_jvp(w, x, dw, dx);
    let report = check_jvp(f_jvp, |(w, x)| layer(w, x), &(w, x), &v).unwrap();
    assert_eq!(report.checked, 6);
}

/// softmax's jvp without the `−s ⟨s, v⟩` term: only the diagonal of the Jacobian.
fn diagonal_softmax_jvp(x: Vec<f64>, dx: Vec<f64>) -> (Vec<f64>, Vec<f64>) {
    let s = softmax(&x);
    let t = s.iter().zip(&dx).map(|(s, d)| s * d).collect();
    (s, t)
}

#[test]
fn a_wrong_jvp_fails_naming_the_worst_output_element() {
    let x = vec![0.5, -1.0, 2.0, 0.0];
    let v = vec![0.0, 0.0, 1.0, 0.0];
    let err = check_jvp(diagonal_softmax_jvp, |x: Vec<f64>| softmax(&x), &x, &v).unwrap_err();
    let CheckError::Mismatch {
        worst,
        failures,
        checked,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    // Along e₂ the missing term is −s·s₂, largest at element 2 itself (s₂ is the biggest).
    assert_eq!(
        (worst.derivative, worst.input, worst.element),
        (Derivative::Jvp, 0, Some(2))
    );
    assert_eq!((*failures, *checked), (4, 4));
    let s = softmax(&x);
    assert_eq!(worst.analytic, s[2]);
    assert!(
        (worst.numeric - s[2] * (1.0 - s[2])).abs() < 1e-8,
        "{}",
        worst.numeric
    );
    let text = err.to_string();
    assert!(
        text.contains("output 0, element 2: the jvp gives"),
        "{text}"
    );
}

#[test]
fn a_small_error_in_one_element_is_caught() {
    let w = Tensor::from_vec(vec![0.5_f64, -1.0, 2.0, 0.25], &[2, 2]);
    let x = Tensor::from_vec(vec![1.0_f64, -0.5, 0.75, 0.1, 0.3, -2.0], &[3, 2]);
    let v = (
        TensorTangent::Dense(Tensor::from_vec(vec![0.3_f64, 0.2, -0.1, 1.0], &[2, 2])),
        TensorTangent::Dense(Tensor::from_vec(
            vec![1.0_f64, 0.0, -1.0, 0.5, 0.25, 2.0],
            &[3, 2],
        )),
    );
    // The right jvp with element 4 of its tangent off by 1e-4, ten times the absolute
    // tolerance (that element is about 0.008).
    let nudged = |(w, x): (Tensor, Tensor), (dw, dx)| {
        let (y, t) = layer_jvp(w, x, dw, dx);
        let mut t = t.unwrap().to_vec_f64();
        t[4] += 1e-4;
        (y, TensorTangent::Dense(Tensor::from_vec(t, &[3, 2])))
    };
    let err = check_jvp(nudged, |(w, x)| layer(w, x), &(w, x), &v).unwrap_err();
    let CheckError::Mismatch {
        worst, failures, ..
    } = err
    else {
        panic!("{err:?}")
    };
    assert_eq!((worst.input, worst.element, failures), (0, Some(4), 1));
}

#[test]
fn a_tangent_that_does_not_fit_and_f32_values_are_refused() {
    let f_jvp = |x: Vec<f64>, dx: Vec<f64>| softmax_jvp(&x, &dx);
    let err = check_jvp(
        f_jvp,
        |x: Vec<f64>| softmax(&x),
        &vec![1.0, 2.0],
        &vec![1.0; 3],
    );
    let Err(CheckError::TangentShape { message }) = err else {
        panic!("{err:?}")
    };
    assert!(
        message.contains("tangent given does not fit the inputs"),
        "{message}"
    );
    let x = Tensor::from_vec(vec![1.0_f32, 2.0], &[2]);
    let sin_jvp = |x: Tensor, dx: TensorTangent| {
        let t = &dx.unwrap() * &x.cos();
        (x.sin(), TensorTangent::Dense(t))
    };
    let dx = TensorTangent::Dense(Tensor::from_vec(vec![1.0_f32, 1.0], &[2]));
    let err = check_jvp_with(Tolerance::default(), sin_jvp, |x: Tensor| x.sin(), &x, &dx);
    assert!(matches!(err, Err(CheckError::Precision { .. })), "{err:?}");
}
