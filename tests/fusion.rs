//! Fused affine expressions (`macros/src/fusion.rs`, `core/src/ops/affine.rs`): each form
//! against the same math written one op per statement (which the macro does not fuse), against
//! finite differences, and against hand-computed values; and the fallback to the unfused rules
//! for operands that are not tensors.

mod common;

use adjoint::prelude::*;
use common::affine1::Affine1;
use common::check_gradient;
use common::tensors::{assert_same, check_against_fd, f64_tensor as t64};

/// The loss `Σ y ⊙ c` for a fixed `c`, so that every element of `y` has its own seed.
#[differentiable]
fn weigh(y: Tensor) -> Tensor {
    let c = t64(y.shape(), 99);
    (y * c).sum_all()
}

// Two products and two biases (`[n]` and `[m, 1]`), one pair of functions per epilogue: the
// fused expression, and the same math one op per statement (an op on a local alone is one op,
// which the macro does not fuse).

#[differentiable]
fn tanh_fused(a: &Tensor, w: &Tensor, x: &Tensor, u: &Tensor, b: &Tensor, r: &Tensor) -> Tensor {
    weigh((a.matmul(w) + x.matmul(u) + b + r).tanh())
}

#[differentiable]
fn tanh_unfused(a: &Tensor, w: &Tensor, x: &Tensor, u: &Tensor, b: &Tensor, r: &Tensor) -> Tensor {
    let p = a.matmul(w);
    let q = x.matmul(u);
    let s = p + q;
    let s = s + b;
    let s = s + r;
    let y = s.tanh();
    weigh(y)
}

#[differentiable]
fn sigmoid_fused(a: &Tensor, w: &Tensor, x: &Tensor, u: &Tensor, b: &Tensor, r: &Tensor) -> Tensor {
    weigh((a.matmul(w) + x.matmul(u) + b + r).sigmoid())
}

#[differentiable]
fn sigmoid_unfused(
    a: &Tensor,
    w: &Tensor,
    x: &Tensor,
    u: &Tensor,
    b: &Tensor,
    r: &Tensor,
) -> Tensor {
    let p = a.matmul(w);
    let q = x.matmul(u);
    let s = p + q;
    let s = s + b;
    let s = s + r;
    let y = s.sigmoid();
    weigh(y)
}

#[differentiable]
fn relu_fused(a: &Tensor, w: &Tensor, x: &Tensor, u: &Tensor, b: &Tensor, r: &Tensor) -> Tensor {
    weigh((a.matmul(w) + x.matmul(u) + b + r).relu())
}

#[differentiable]
fn relu_unfused(a: &Tensor, w: &Tensor, x: &Tensor, u: &Tensor, b: &Tensor, r: &Tensor) -> Tensor {
    let p = a.matmul(w);
    let q = x.matmul(u);
    let s = p + q;
    let s = s + b;
    let s = s + r;
    let y = s.relu();
    weigh(y)
}

#[differentiable]
fn sum_fused(a: &Tensor, w: &Tensor, x: &Tensor, u: &Tensor, b: &Tensor, r: &Tensor) -> Tensor {
    weigh(a.matmul(w) + x.matmul(u) + b + r)
}

#[differentiable]
fn sum_unfused(a: &Tensor, w: &Tensor, x: &Tensor, u: &Tensor, b: &Tensor, r: &Tensor) -> Tensor {
    let p = a.matmul(w);
    let q = x.matmul(u);
    let s = p + q;
    let s = s + b;
    let s = s + r;
    let y = s;
    weigh(y)
}

type Tangents6 = (
    TensorTangent,
    TensorTangent,
    TensorTangent,
    TensorTangent,
    TensorTangent,
    TensorTangent,
);

/// The operands: `a·w + x·u + b + r` is `[3, 5]`, `b` broadcast over rows, `r` over columns.
fn six() -> [Tensor; 6] {
    [
        t64(&[3, 4], 1),
        t64(&[4, 5], 2),
        t64(&[3, 2], 3),
        t64(&[2, 5], 4),
        t64(&[5], 5),
        t64(&[3, 1], 6),
    ]
}

/// The fused and unfused gradients agree up to rounding and match finite differences.
fn check_epilogue(
    name: &str,
    params: &[Tensor; 6],
    fused_vjp: (Tensor, impl FnOnce(TensorTangent) -> Tangents6),
    unfused_vjp: (Tensor, impl FnOnce(TensorTangent) -> Tangents6),
    fused: impl Fn(&[Tensor]) -> f64,
) {
    let (value, g) = value_with_gradient(fused_vjp);
    let (want, h) = value_with_gradient(unfused_vjp);
    let g = [g.0, g.1, g.2, g.3, g.4, g.5].map(TensorTangent::unwrap);
    let h = [h.0, h.1, h.2, h.3, h.4, h.5].map(TensorTangent::unwrap);
    assert!(
        (value.to_scalar() - want.to_scalar()).abs() < 1e-12,
        "{name}"
    );
    assert_same(name, &g, &h);
    check_against_fd(&fused, params, &g);
}

// One test per epilogue. (The `#[differentiable]` functions above are written out: the macro
// does not yet take functions that `macro_rules!` generates.)
macro_rules! epilogue_tests {
    ($($test:ident: $fused:ident, $fused_vjp:ident, $unfused_vjp:ident;)*) => {$(
        #[test]
        fn $test() {
            let params = six();
            let [a, w, x, u, b, r] = &params;
            check_epilogue(
                stringify!($fused),
                &params,
                $fused_vjp(a, w, x, u, b, r),
                $unfused_vjp(a, w, x, u, b, r),
                |p| $fused(&p[0], &p[1], &p[2], &p[3], &p[4], &p[5]).to_scalar(),
            );
        }
    )*};
}

epilogue_tests! {
    tanh_epilogue: tanh_fused, tanh_fused_vjp, tanh_unfused_vjp;
    sigmoid_epilogue: sigmoid_fused, sigmoid_fused_vjp, sigmoid_unfused_vjp;
    relu_epilogue: relu_fused, relu_fused_vjp, relu_unfused_vjp;
    sum_epilogue: sum_fused, sum_fused_vjp, sum_unfused_vjp;
}

/// `y = tanh(x·w + b)` for `x = [1 2]`, `w = [0.5 −0.25]ᵀ`, `b = [0.1]`: `z = 0.5 − 0.5 + 0.1
/// = 0.1`, and with `g = 1 − tanh² 0.1`: `x̄ = g·wᵀ`, `w̄ = g·xᵀ`, `b̄ = g`.
#[differentiable]
fn cell(x: &Tensor, w: &Tensor, b: &Tensor) -> Tensor {
    (x.matmul(w) + b).tanh().sum_all()
}

#[test]
fn hand_computed_cell() {
    let x = Tensor::from_vec(vec![1.0_f64, 2.0], &[1, 2]);
    let w = Tensor::from_vec(vec![0.5_f64, -0.25], &[2, 1]);
    let b = Tensor::from_vec(vec![0.1_f64], &[1]);
    let (y, (gx, gw, gb)) = value_with_gradient(cell_vjp(&x, &w, &b));
    let g = 1.0 - 0.1_f64.tanh().powi(2);
    assert!((y.to_scalar() - 0.1_f64.tanh()).abs() < 1e-15);
    let close = |got: Vec<f64>, want: Vec<f64>| {
        assert_eq!(got.len(), want.len());
        for (a, b) in got.into_iter().zip(want) {
            assert!((a - b).abs() < 1e-15, "{a} vs {b}");
        }
    };
    close(gx.unwrap().to_vec_f64(), vec![0.5 * g, -0.25 * g]);
    close(gw.unwrap().to_vec_f64(), vec![g, 2.0 * g]);
    close(gb.unwrap().to_vec_f64(), vec![g]);
}

/// Shapes the fused kernel does not take: a batched product and a bias that widens the sum
/// (`[2, 3, 4]·[4, 5] + [3, 5]·... + [2, 1, 5]`), computed by the unfused ops; the products'
/// tangents are summed back over the axes the sum broadcast them along.
#[differentiable]
fn widened(a: &Tensor, w: &Tensor, x: &Tensor, u: &Tensor, c: &Tensor) -> Tensor {
    weigh((a.matmul(w) + x.matmul(u) + c).tanh())
}

#[test]
fn batched_and_widened_shapes_match_finite_differences() {
    let params = [
        t64(&[2, 3, 4], 11),
        t64(&[4, 5], 12),
        t64(&[3, 2], 13),
        t64(&[2, 5], 14),
        t64(&[2, 1, 5], 15),
    ];
    let [a, w, x, u, c] = &params;
    let (y, g) = value_with_gradient(widened_vjp(a, w, x, u, c));
    let g = [g.0, g.1, g.2, g.3, g.4].map(TensorTangent::unwrap);
    let f = |p: &[Tensor]| widened(&p[0], &p[1], &p[2], &p[3], &p[4]).to_scalar();
    assert_eq!(y.to_scalar(), f(&params));
    check_against_fd(&f, &params, &g);
}

/// Only some leaves differentiated (`wrt(w)`): the others get no work, and the fused op runs
/// two products forward (the second added into the first's buffer) and one backward (`w̄`;
/// `x̄` is not needed).
#[differentiable(wrt(w))]
fn only_w(x: &Tensor, w: &Tensor, v: &Tensor, u: &Tensor, b: &Tensor) -> Tensor {
    weigh((x.matmul(w) + v.matmul(u) + b).sigmoid())
}

#[test]
fn only_the_needed_tangents_are_computed() {
    let params = [
        t64(&[3, 4], 21),
        t64(&[4, 2], 22),
        t64(&[3, 5], 23),
        t64(&[5, 2], 24),
        t64(&[2], 25),
    ];
    let [x, w, v, u, b] = &params;
    let before = adjoint::tensor::matmul_calls();
    let (_, pullback) = only_w_vjp(x, w, v, u, b);
    assert_eq!(adjoint::tensor::matmul_calls() - before, 2);
    let gw = pullback(TensorTangent::Dense(Tensor::ones_on(&[], DType::F64, &Cpu))).unwrap();
    assert_eq!(adjoint::tensor::matmul_calls() - before, 3);
    let f =
        |p: &[Tensor]| only_w(&params[0], &p[0], &params[2], &params[3], &params[4]).to_scalar();
    check_against_fd(&f, std::slice::from_ref(w), &[gw]);
}

/// A user type whose `matmul` is its own `#[differentiable]` method (`Affine1(k, m).matmul(x)
/// = k·x + m`, a float, `tests/common/affine1.rs`), so `tanh(p.matmul(x) + c)` is not a tensor
/// expression and takes the unfused rules. With `y = tanh(k·x + m + c)` and `g = 1 − y²`:
/// `∂y/∂k = g·x`, `∂y/∂m = g`, `∂y/∂x = g·k`, `∂y/∂c = g`.
#[differentiable]
fn scaled(p: Affine1, x: f64, c: f64) -> f64 {
    (p.matmul(x) + c).tanh()
}

#[test]
fn other_types_take_the_unfused_rules() {
    let (k, m, x, c) = (0.7, 0.2, -1.3, 0.4);
    let (y, ((gk, gm), gx, gc)) = value_with_gradient(scaled_vjp(Affine1(k, m), x, c));
    let want = (k * x + m + c).tanh();
    let g = 1.0 - want * want;
    assert!((y - want).abs() < 1e-15);
    for (got, want) in [(gk, g * x), (gm, g), (gx, g * k), (gc, g)] {
        assert!((got - want).abs() < 1e-15, "{got} vs {want}");
    }
    check_gradient(
        "scaled",
        |((k, m), x, c)| scaled(Affine1(k, m), x, c),
        ((k, m), x, c),
        ((gk, gm), gx, gc),
    );
}

/// A layer as `nn::Linear` writes it, `x·Wᵀ + b` with `W: [out, in]`: the fused op reads `W`
/// transposed in place, and `W̄ = z̄ᵀ·x` comes out in `W`'s own layout.
#[differentiable]
fn layer_fused(x: &Tensor, w: &Tensor, v: &Tensor, u: &Tensor, b: &Tensor) -> Tensor {
    weigh((x.matmul(&w.t()) + v.matmul(&u.t()) + b).relu())
}

#[differentiable]
fn layer_unfused(x: &Tensor, w: &Tensor, v: &Tensor, u: &Tensor, b: &Tensor) -> Tensor {
    let wt = w.t();
    let ut = u.t();
    let p = x.matmul(&wt);
    let q = v.matmul(&ut);
    let s = p + q;
    let s = s + b;
    let y = s.relu();
    weigh(y)
}

#[test]
fn transposed_weights_match_the_unfused_ops_and_finite_differences() {
    let params = [
        t64(&[3, 4], 41),
        t64(&[5, 4], 42),
        t64(&[3, 2], 43),
        t64(&[5, 2], 44),
        t64(&[5], 45),
    ];
    let [x, w, v, u, b] = &params;
    let (value, g) = value_with_gradient(layer_fused_vjp(x, w, v, u, b));
    let (want, h) = value_with_gradient(layer_unfused_vjp(x, w, v, u, b));
    let g = [g.0, g.1, g.2, g.3, g.4].map(TensorTangent::unwrap);
    let h = [h.0, h.1, h.2, h.3, h.4].map(TensorTangent::unwrap);
    assert!((value.to_scalar() - want.to_scalar()).abs() < 1e-12);
    assert_same("layer", &g, &h);
    let f = |p: &[Tensor]| layer_fused(&p[0], &p[1], &p[2], &p[3], &p[4]).to_scalar();
    check_against_fd(&f, &params, &g);
}

/// A batched input with a transposed weight takes the unfused ops (`[2, 3, 4]·[5, 4]ᵀ`), and its
/// weight tangent is still summed over the batch.
#[differentiable]
fn batched_layer(x: &Tensor, w: &Tensor, b: &Tensor) -> Tensor {
    weigh((x.matmul(&w.t()) + b).tanh())
}

#[test]
fn batched_input_with_a_transposed_weight_matches_finite_differences() {
    let params = [t64(&[2, 3, 4], 51), t64(&[5, 4], 52), t64(&[5], 53)];
    let [x, w, b] = &params;
    let (_, g) = value_with_gradient(batched_layer_vjp(x, w, b));
    let g = [g.0, g.1, g.2].map(TensorTangent::unwrap);
    let f = |p: &[Tensor]| batched_layer(&p[0], &p[1], &p[2]).to_scalar();
    check_against_fd(&f, &params, &g);
}

/// Two layers: the first one's pullback is handed the second's `z̄·W₂ᵀ` as its operands and
/// takes its bias's tangent from the op that writes `z̄₁` (`Backend::matmul_grad_sums`), for a
/// bias `[n]` or `[1, n]`.
#[differentiable]
fn two_layers(x: &Tensor, w1: &Tensor, b1: &Tensor, w2: &Tensor, b2: &Tensor) -> Tensor {
    weigh((x.matmul(w1) + b1).tanh().matmul(w2) + b2)
}

#[differentiable]
fn two_layers_unfused(x: &Tensor, w1: &Tensor, b1: &Tensor, w2: &Tensor, b2: &Tensor) -> Tensor {
    let p = x.matmul(w1);
    let s = p + b1;
    let h = s.tanh();
    let q = h.matmul(w2);
    let y = q + b2;
    weigh(y)
}

#[test]
fn a_layer_under_another_takes_its_bias_tangent_with_its_input_tangent() {
    for b1_shape in [&[5][..], &[1, 5]] {
        let params = [
            t64(&[3, 4], 61),
            t64(&[4, 5], 62),
            t64(b1_shape, 63),
            t64(&[5, 2], 64),
            t64(&[2], 65),
        ];
        let [x, w1, b1, w2, b2] = &params;
        let (value, g) = value_with_gradient(two_layers_vjp(x, w1, b1, w2, b2));
        let (want, h) = value_with_gradient(two_layers_unfused_vjp(x, w1, b1, w2, b2));
        let g = [g.0, g.1, g.2, g.3, g.4].map(TensorTangent::unwrap);
        let h = [h.0, h.1, h.2, h.3, h.4].map(TensorTangent::unwrap);
        assert!((value.to_scalar() - want.to_scalar()).abs() < 1e-12);
        assert_eq!(
            g[2].shape(),
            b1_shape,
            "the bias tangent keeps the bias's shape"
        );
        assert_same("two layers", &g, &h);
        let f = |p: &[Tensor]| two_layers(&p[0], &p[1], &p[2], &p[3], &p[4]).to_scalar();
        check_against_fd(&f, &params, &g);
    }
}
