//! The ode and det gradients against central differences of their own primals (on sizes the
//! fixtures do not reach: ode with n > 4, where RK4 is no longer exact, and det at ℓ = 5 and 7,
//! through the recursion and the 3 × 3 base case), against hand-computed values, and the
//! errors for inputs they cannot take.

use adjoint_gradbench::evals::{self, EvalError};
use serde_json::{Value, json};

fn call(module: &str, function: &str, input: Value) -> Value {
    evals::evaluate(module, function, input)
        .unwrap_or_else(|e| panic!("{e}"))
        .output
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// Central differences of `f` at `x`, step 1e-6 scaled by |xᵢ|.
fn central(f: impl Fn(&[f64]) -> f64, x: &[f64]) -> Vec<f64> {
    (0..x.len())
        .map(|i| {
            let h = 1e-6 * x[i].abs().max(1.0);
            let (mut up, mut down) = (x.to_vec(), x.to_vec());
            up[i] += h;
            down[i] -= h;
            (f(&up) - f(&down)) / (2.0 * h)
        })
        .collect()
}

fn assert_close(got: &[f64], want: &[f64], tolerance: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let scale = want.iter().fold(0.0_f64, |m, w| m.max(w.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tolerance * scale,
            "{what}[{i}]: {g} against {w} (scale {scale})"
        );
    }
}

/// A fixed pseudo-random input in [0.1, 1.1) (a 64-bit linear congruential generator).
fn values(n: usize) -> Vec<f64> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            0.1 + (state >> 11) as f64 / (1u64 << 53) as f64
        })
        .collect()
}

#[test]
fn ode_gradient_matches_central_differences() {
    for (n, s) in [(8, 3), (12, 1), (6, 20)] {
        let x = values(n);
        let last = |x: &[f64]| {
            *numbers(&call("ode", "primal", json!({ "x": x, "s": s })))
                .last()
                .unwrap()
        };
        let got = numbers(&call("ode", "gradient", json!({ "x": x, "s": s })));
        assert_close(&got, &central(last, &x), 1e-7, &format!("ode n={n} s={s}"));
    }
}

#[test]
fn ode_is_exact_for_three_components() {
    // y₀ = x₀t, y₁ = x₀x₁t²/2, y₂ = x₀x₁x₂t³/6: at t = 2 with x = (1, 2, 3), y = (2, 4, 8) and
    // ∂y₂/∂x = y₂/x = (8, 4, 8/3), for any number of steps (RK4 is exact on cubics).
    for s in [1, 5] {
        let input = json!({ "x": [1.0, 2.0, 3.0], "s": s });
        assert_close(
            &numbers(&call("ode", "primal", input.clone())),
            &[2.0, 4.0, 8.0],
            1e-15,
            "ode primal",
        );
        assert_close(
            &numbers(&call("ode", "gradient", input)),
            &[8.0, 4.0, 8.0 / 3.0],
            1e-15,
            "ode gradient",
        );
    }
}

#[test]
fn det_gradient_matches_central_differences() {
    for ell in [4, 5, 7] {
        let a: Vec<f64> = values(ell * ell).iter().map(|v| v - 0.6).collect();
        let det = |a: &[f64]| {
            call("det", "primal", json!({ "A": a, "ell": ell }))
                .as_f64()
                .unwrap()
        };
        let got = numbers(&call("det", "gradient", json!({ "A": a, "ell": ell })));
        assert_close(&got, &central(det, &a), 1e-8, &format!("det ell={ell}"));
    }
}

#[test]
fn det_gradient_is_the_cofactor_matrix() {
    // [[a, b], [c, d]]: det = ad − bc, gradient (d, −c, −b, a).
    let two = json!({ "A": [1.0, 2.0, 3.0, 4.0], "ell": 2 });
    assert_eq!(call("det", "primal", two.clone()), json!(-2.0));
    assert_eq!(
        numbers(&call("det", "gradient", two)),
        [4.0, -3.0, -2.0, 1.0]
    );
    // [[2, 0, 1], [1, 3, 0], [0, 1, 4]]: det = 2·12 − 0 + 1·1 = 25; cofactors by hand.
    let three = json!({ "A": [2.0, 0.0, 1.0, 1.0, 3.0, 0.0, 0.0, 1.0, 4.0], "ell": 3 });
    assert_eq!(call("det", "primal", three.clone()), json!(25.0));
    assert_eq!(
        numbers(&call("det", "gradient", three)),
        [12.0, -4.0, 1.0, 1.0, 8.0, -2.0, -3.0, 1.0, 6.0]
    );
    // 1 × 1: det = a, gradient 1.
    let one = json!({ "A": [-3.5], "ell": 1 });
    assert_eq!(call("det", "primal", one.clone()), json!(-3.5));
    assert_eq!(numbers(&call("det", "gradient", one)), [1.0]);
}

fn reason(module: &str, function: &str, input: Value) -> String {
    match evals::evaluate(module, function, input) {
        Err(EvalError::BadInput { reason, .. }) => reason,
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("{module}::{function} accepted a bad input"),
    }
}

#[test]
fn bad_inputs_name_the_field_and_the_sizes() {
    for function in ["primal", "gradient"] {
        let r = reason("det", function, json!({ "A": [1.0, 2.0, 3.0], "ell": 2 }));
        assert!(
            r.contains("`A` has 3 entries") && r.contains("ell² = 4"),
            "{r}"
        );
        let r = reason("det", function, json!({ "A": [], "ell": 0 }));
        assert!(r.contains("`ell` is 0"), "{r}");
        let r = reason("ode", function, json!({ "x": [1.0, 2.0], "s": 0 }));
        assert!(
            r.contains("`s` is 0") && r.contains("2 coefficients"),
            "{r}"
        );
        let r = reason("ode", function, json!({ "x": [], "s": 3 }));
        assert!(r.contains("`x` is empty"), "{r}");
    }
}
