//! Loops that are one recurrence (`macros/src/recurrence.rs`, `core/src/ops/recurrence.rs`):
//! `for x in xs { h = f(h·W + x·U + b) }` as one rule, run by the CPU backend's kernel in the
//! Elman form and step by step otherwise. Each form against the same loop written so that the
//! macro does not see a recurrence (the step's value bound to a name first: a taped loop of
//! fused ops), against finite differences, and against hand-computed values; and the loop of
//! the step's unfused rules for operands that are not tensors.

mod common;

use adjoint::prelude::*;
use common::affine1::Affine1;
use common::tensors::{assert_same, check_against_fd, f64_tensor as t64};
use common::{assert_close, check_gradient};

/// Checks a recurrence's value and gradient against the taped loop's (the value to the last
/// bit: the kernel runs the fused op's kernels) and against finite differences of `f`.
fn check<const S: usize>(
    name: &str,
    params: &[Tensor; S],
    recurrence: (Tensor, Vec<TensorTangent>),
    taped: (Tensor, Vec<TensorTangent>),
    f: impl Fn(&[Tensor]) -> f64,
) {
    let ((value, g), (want, h)) = (recurrence, taped);
    assert_eq!(value.to_vec_f64(), want.to_vec_f64(), "{name}: value");
    let dense = |g: Vec<TensorTangent>| -> Vec<Tensor> {
        g.into_iter()
            .zip(params)
            .map(|(t, p)| t.to_tensor_like(p))
            .collect()
    };
    let (g, h) = (dense(g), dense(h));
    assert_same(name, &g, &h);
    check_against_fd(&f, params, &g);
}

/// The loss `Σ h ⊙ c` for a fixed `c`, so that every element of `h_T` has its own seed.
#[differentiable]
fn weigh(h: Tensor) -> Tensor {
    let c = t64(h.shape(), 99);
    (h * c).sum_all()
}

// The Elman form with a batch of 3 rows, a learned initial state and a bias per unit.

#[differentiable(wrt(h0, w, u, b))]
fn elman(h0: &Tensor, w: &Tensor, u: &Tensor, b: &Tensor, xs: &[Tensor]) -> Tensor {
    let mut h = h0.clone();
    for x in xs {
        h = (h.matmul(w) + x.matmul(u) + b).tanh();
    }
    weigh(h)
}

#[differentiable(wrt(h0, w, u, b))]
fn elman_taped(h0: &Tensor, w: &Tensor, u: &Tensor, b: &Tensor, xs: &[Tensor]) -> Tensor {
    let mut h = h0.clone();
    for x in xs {
        let next = (h.matmul(w) + x.matmul(u) + b).tanh();
        h = next;
    }
    weigh(h)
}

type Four = (TensorTangent, TensorTangent, TensorTangent, TensorTangent);

/// The tangents of four slots as a list.
fn four((y, g): (Tensor, Four)) -> (Tensor, Vec<TensorTangent>) {
    (y, vec![g.0, g.1, g.2, g.3])
}

/// `h₀: [3, 4]`, `W: [4, 4]`, `U: [2, 4]`, `b: [4]`, and six inputs `[3, 2]`.
fn elman_problem() -> ([Tensor; 4], Vec<Tensor>) {
    let params = [
        t64(&[3, 4], 1),
        t64(&[4, 4], 2),
        t64(&[2, 4], 3),
        t64(&[4], 4),
    ];
    (params, inputs(6, &[3, 2], 10))
}

fn inputs(steps: usize, shape: &[usize], seed: u64) -> Vec<Tensor> {
    (0..steps).map(|t| t64(shape, seed + t as u64)).collect()
}

#[test]
fn elman_form_matches_the_taped_loop_and_finite_differences() {
    let (params, xs) = elman_problem();
    let [h0, w, u, b] = &params;
    check(
        "elman",
        &params,
        four(value_with_gradient(elman_vjp(h0, w, u, b, &xs))),
        four(value_with_gradient(elman_taped_vjp(h0, w, u, b, &xs))),
        |p| elman(&p[0], &p[1], &p[2], &p[3], &xs).to_scalar(),
    );
}

// The same loop in `f32`, with the loss `Σ h²`.

#[differentiable(wrt(h0, w, u, b))]
fn elman_f32(h0: &Tensor, w: &Tensor, u: &Tensor, b: &Tensor, xs: &[Tensor]) -> Tensor {
    let mut h = h0.clone();
    for x in xs {
        h = (h.matmul(w) + x.matmul(u) + b).tanh();
    }
    h.square().sum_all()
}

#[differentiable(wrt(h0, w, u, b))]
fn elman_f32_taped(h0: &Tensor, w: &Tensor, u: &Tensor, b: &Tensor, xs: &[Tensor]) -> Tensor {
    let mut h = h0.clone();
    for x in xs {
        let next = (h.matmul(w) + x.matmul(u) + b).tanh();
        h = next;
    }
    h.square().sum_all()
}

/// In `f32` the kernel's value is the taped loop's to the last bit, its gradient theirs up to
/// the order of the sums over steps.
#[test]
fn elman_form_in_f32_gives_the_taped_loops_value() {
    let f32s = |t: &Tensor| t.to_dtype(DType::F32);
    let params = [
        t64(&[1, 8], 5),
        t64(&[8, 8], 6),
        t64(&[3, 8], 7),
        t64(&[8], 8),
    ]
    .map(|t| f32s(&t));
    let xs: Vec<Tensor> = inputs(20, &[1, 3], 30).iter().map(f32s).collect();
    let [h0, w, u, b] = &params;
    let (y, g) = value_with_gradient(elman_f32_vjp(h0, w, u, b, &xs));
    let (want, h) = value_with_gradient(elman_f32_taped_vjp(h0, w, u, b, &xs));
    assert_eq!(y.to_vec_f32(), want.to_vec_f32());
    let g = [g.0, g.1, g.2, g.3];
    let h = [h.0, h.1, h.2, h.3];
    for (i, ((g, h), p)) in g.into_iter().zip(h).zip(&params).enumerate() {
        let (g, h) = (
            g.to_tensor_like(p).to_vec_f64(),
            h.to_tensor_like(p).to_vec_f64(),
        );
        for (a, b) in g.into_iter().zip(h) {
            assert!(
                (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                "tangent {i}: {a} vs {b}"
            );
        }
    }
}

// The input product first, a bias per element of `h` and one per unit, `sigmoid`.

#[differentiable(wrt(h0, w, u, c, b))]
fn input_first(
    h0: &Tensor,
    w: &Tensor,
    u: &Tensor,
    c: &Tensor,
    b: &Tensor,
    xs: &[Tensor],
) -> Tensor {
    let mut h = h0.clone();
    for x in xs {
        h = (x.matmul(u) + h.matmul(w) + c + b).sigmoid();
    }
    weigh(h)
}

#[differentiable(wrt(h0, w, u, c, b))]
fn input_first_taped(
    h0: &Tensor,
    w: &Tensor,
    u: &Tensor,
    c: &Tensor,
    b: &Tensor,
    xs: &[Tensor],
) -> Tensor {
    let mut h = h0.clone();
    for x in xs {
        let next = (x.matmul(u) + h.matmul(w) + c + b).sigmoid();
        h = next;
    }
    weigh(h)
}

type Five = (
    TensorTangent,
    TensorTangent,
    TensorTangent,
    TensorTangent,
    TensorTangent,
);

fn five((y, g): (Tensor, Five)) -> (Tensor, Vec<TensorTangent>) {
    (y, vec![g.0, g.1, g.2, g.3, g.4])
}

#[test]
fn input_first_with_two_biases_matches_the_taped_loop_and_finite_differences() {
    let params = [
        t64(&[2, 3], 11),
        t64(&[3, 3], 12),
        t64(&[4, 3], 13),
        t64(&[2, 3], 14),
        t64(&[1, 3], 15),
    ];
    let xs = inputs(5, &[2, 4], 20);
    let [h0, w, u, c, b] = &params;
    check(
        "input first",
        &params,
        five(value_with_gradient(input_first_vjp(h0, w, u, c, b, &xs))),
        five(value_with_gradient(input_first_taped_vjp(
            h0, w, u, c, b, &xs,
        ))),
        |p| input_first(&p[0], &p[1], &p[2], &p[3], &p[4], &xs).to_scalar(),
    );
}

// Weights read transposed (`nn::Linear`'s layout), `relu`, and no bias.

#[differentiable(wrt(h0, w, u))]
fn transposed(h0: &Tensor, w: &Tensor, u: &Tensor, xs: &[Tensor]) -> Tensor {
    let mut h = h0.clone();
    for x in xs {
        h = (h.matmul(&w.t()) + x.matmul(&u.t())).relu();
    }
    weigh(h)
}

#[differentiable(wrt(h0, w, u))]
fn transposed_taped(h0: &Tensor, w: &Tensor, u: &Tensor, xs: &[Tensor]) -> Tensor {
    let mut h = h0.clone();
    for x in xs {
        let next = (h.matmul(&w.t()) + x.matmul(&u.t())).relu();
        h = next;
    }
    weigh(h)
}

#[test]
fn transposed_weights_match_the_taped_loop_and_finite_differences() {
    // Positive weights and inputs keep most units active (a dead unit's tangent is 0 either
    // way, which would test little).
    let positive = |t: Tensor| (t + 1.5) * 0.5;
    let params = [
        positive(t64(&[2, 3], 21)),
        positive(t64(&[3, 3], 22)) * 0.5,
        positive(t64(&[3, 2], 23)),
    ];
    let xs = inputs(4, &[2, 2], 40);
    let [h0, w, u] = &params;
    let three =
        |(y, g): (Tensor, (TensorTangent, TensorTangent, TensorTangent))| (y, vec![g.0, g.1, g.2]);
    check(
        "transposed",
        &params,
        three(value_with_gradient(transposed_vjp(h0, w, u, &xs))),
        three(value_with_gradient(transposed_taped_vjp(h0, w, u, &xs))),
        |p| transposed(&p[0], &p[1], &p[2], &xs).to_scalar(),
    );
}

// Not the Elman form, run step by step: the carried value as a term, `h = tanh(x·W + h)`.

#[differentiable(wrt(h0, w))]
fn residual(h0: &Tensor, w: &Tensor, xs: &[Tensor]) -> Tensor {
    let mut h = h0.clone();
    for x in xs {
        h = (x.matmul(w) + h).tanh();
    }
    weigh(h)
}

#[differentiable(wrt(h0, w))]
fn residual_taped(h0: &Tensor, w: &Tensor, xs: &[Tensor]) -> Tensor {
    let mut h = h0.clone();
    for x in xs {
        let next = (x.matmul(w) + h).tanh();
        h = next;
    }
    weigh(h)
}

#[test]
fn another_form_runs_step_by_step_with_the_same_results() {
    let params = [t64(&[2, 3], 31), t64(&[4, 3], 32)];
    let xs = inputs(5, &[2, 4], 50);
    let [h0, w] = &params;
    let two = |(y, g): (Tensor, (TensorTangent, TensorTangent))| (y, vec![g.0, g.1]);
    check(
        "residual",
        &params,
        two(value_with_gradient(residual_vjp(h0, w, &xs))),
        two(value_with_gradient(residual_taped_vjp(h0, w, &xs))),
        |p| residual(&p[0], &p[1], &xs).to_scalar(),
    );
}

/// Only `U` differentiated: the kernel computes no `W̄` and no bias tangent, and `h₀`
/// (data) gets none.
#[differentiable(wrt(u))]
fn only_u(h0: &Tensor, w: &Tensor, u: &Tensor, b: &Tensor, xs: &[Tensor]) -> Tensor {
    let mut h = h0.clone();
    for x in xs {
        h = (h.matmul(w) + x.matmul(u) + b).tanh();
    }
    weigh(h)
}

#[test]
fn only_the_needed_tangents_are_computed() {
    let [h0, w, u, b] = [
        t64(&[1, 4], 41),
        t64(&[4, 4], 42),
        t64(&[2, 4], 43),
        t64(&[4], 44),
    ];
    let xs = inputs(7, &[1, 2], 60);
    let before = adjoint::tensor::matmul_calls();
    let gu = gradient(only_u_vjp(&h0, &w, &u, &b, &xs)).unwrap();
    // 2 products per step forward; backward the tangent of h for steps 7..2 and `Ū`.
    assert_eq!(adjoint::tensor::matmul_calls() - before, 2 * 7 + 6 + 1);
    let f = |p: &[Tensor]| only_u(&h0, &w, &p[0], &b, &xs).to_scalar();
    check_against_fd(&f, std::slice::from_ref(&u), &[gu]);
}

/// No elements: the loop leaves `h₀` as it is, and only `h₀` has a tangent (`2·h₀` for the
/// loss `Σ h²`).
#[differentiable(wrt(h0, w, u))]
fn squared_state(h0: &Tensor, w: &Tensor, u: &Tensor, xs: &[Tensor]) -> Tensor {
    let mut h = h0.clone();
    for x in xs {
        h = (h.matmul(w) + x.matmul(u)).tanh();
    }
    h.square().sum_all()
}

#[test]
fn no_elements_leave_the_initial_value() {
    let (h0, w, u) = (t64(&[1, 3], 51), t64(&[3, 3], 52), t64(&[2, 3], 53));
    let (y, (g0, gw, gu)) = value_with_gradient(squared_state_vjp(&h0, &w, &u, &[]));
    assert_eq!(y.to_scalar(), h0.square().sum_all().to_scalar());
    assert_same("h₀", &[g0.unwrap()], &[h0.clone() * 2.0]);
    assert!(gw.is_zero() && gu.is_zero());
}

/// Two steps of one unit, by hand: `h₁ = tanh(h₀w + x₁u + b)`, `h₂ = tanh(h₁w + x₂u + b)`, loss
/// `h₂`. With `g₂ = 1 − h₂²` and `g₁ = 1 − h₁²`: `∂/∂w = g₂(h₁ + w·g₁h₀)`,
/// `∂/∂u = g₂(x₂ + w·g₁x₁)`, `∂/∂b = g₂(1 + w·g₁)`, `∂/∂h₀ = g₂·w·g₁·w`.
#[differentiable(wrt(h0, w, u, b))]
fn two_steps(h0: &Tensor, w: &Tensor, u: &Tensor, b: &Tensor, xs: &[Tensor]) -> Tensor {
    let mut h = h0.clone();
    for x in xs {
        h = (h.matmul(w) + x.matmul(u) + b).tanh();
    }
    h.sum_all()
}

#[test]
fn hand_computed_two_steps() {
    let (h0, w, u, b, x1, x2) = (0.3_f64, -0.7, 0.4, 0.1, 0.9, -1.2);
    let t = |v: f64| Tensor::from_vec(vec![v], &[1, 1]);
    let (y, g) = value_with_gradient(two_steps_vjp(&t(h0), &t(w), &t(u), &t(b), &[t(x1), t(x2)]));
    let h1 = (h0 * w + x1 * u + b).tanh();
    let h2 = (h1 * w + x2 * u + b).tanh();
    let (g1, g2) = (1.0 - h1 * h1, 1.0 - h2 * h2);
    assert_close("value", y.to_scalar(), h2);
    let got = [g.0, g.1, g.2, g.3].map(|g| g.unwrap().to_scalar());
    let want = [
        g2 * w * g1 * w,
        g2 * (h1 + w * g1 * h0),
        g2 * (x2 + w * g1 * x1),
        g2 * (1.0 + w * g1),
    ];
    for (i, (got, want)) in got.into_iter().zip(want).enumerate() {
        assert_close(&format!("tangent {i}"), got, want);
    }
}

/// A user type whose `matmul` is its own `#[differentiable]` method (`Affine1(k, m).matmul(x)
/// = k·x + m`, floats, `tests/common/affine1.rs`): the loop takes the step's unfused rules, the
/// shared operand's tangents summed over the steps.
#[differentiable(wrt(p, h0))]
fn scalar_recurrence(p: Affine1, h0: f64, xs: [f64; 3]) -> f64 {
    let mut h = h0;
    for x in xs {
        h = (p.matmul(x) + h).tanh();
    }
    h
}

#[test]
fn other_types_take_the_steps_unfused_rules() {
    let xs = [0.5, -1.1, 0.8];
    let (p, h0) = (Affine1(0.6, -0.2), 0.3);
    let (y, ((gk, gm), g0)) = value_with_gradient(scalar_recurrence_vjp(p, h0, xs));
    let mut h = h0;
    for &x in &xs {
        h = (p.0 * x + p.1 + h).tanh();
    }
    assert_eq!(y, h);
    check_gradient(
        "scalar recurrence",
        |((k, m), h0)| scalar_recurrence(Affine1(k, m), h0, xs),
        ((p.0, p.1), h0),
        ((gk, gm), g0),
    );
}

/// An iterator that reads the carried value (here its shape) is made before the loop runs,
/// where the recurrence would already have taken `h`: such a loop stays a taped loop, with the
/// same results.
#[differentiable(wrt(h0, w, u, b))]
fn iterator_reads_h(h0: &Tensor, w: &Tensor, u: &Tensor, b: &Tensor, xs: &[Tensor]) -> Tensor {
    let mut h = h0.clone();
    for x in xs.iter().take(h.shape()[1]) {
        h = (h.matmul(w) + x.matmul(u) + b).tanh();
    }
    weigh(h)
}

#[test]
fn a_loop_whose_iterator_reads_the_carried_value_stays_taped() {
    let (params, xs) = elman_problem();
    let [h0, w, u, b] = &params;
    check(
        "iterator reads h",
        &params,
        four(value_with_gradient(iterator_reads_h_vjp(h0, w, u, b, &xs))),
        four(value_with_gradient(elman_taped_vjp(h0, w, u, b, &xs[..4]))),
        |p| iterator_reads_h(&p[0], &p[1], &p[2], &p[3], &xs).to_scalar(),
    );
}
