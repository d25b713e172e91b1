//! Whole `#[differentiable]` tensor functions against finite differences, and the check that
//! a pullback does no work for inputs that need no tangent.

mod common;

use adjoint::prelude::*;
use common::tensors::{check_against_fd, f64_tensor};

/// Softmax cross-entropy of a 2-layer ReLU MLP.
#[differentiable]
fn mlp_loss(
    w1: &Tensor,
    b1: &Tensor,
    w2: &Tensor,
    b2: &Tensor,
    #[no_derivative] x: &Tensor,
    #[no_derivative] labels: &Tensor,
) -> Tensor {
    let h = (x.matmul(w1) + b1).relu();
    let logits = h.matmul(w2) + b2;
    cross_entropy(&logits, labels)
}

/// Mixed ops: scalar arithmetic, broadcasting, reductions, layout.
#[differentiable]
fn mixed(a: &Tensor, b: &Tensor) -> Tensor {
    let c = a.tanh() * 2.0 - b;
    let d = c.t().matmul(&a.sigmoid()).mean(&[0], false);
    let e = (d.exp() + 1.0).ln() / 3.0;
    e.sum_all() + a.softmax(-1).max(&[1], false).sum_all() + b.mse(&a.relu())
}

#[test]
fn mlp_gradient_matches_finite_differences() {
    let (w1, b1, w2, b2) = (
        f64_tensor(&[5, 4], 1),
        f64_tensor(&[4], 2),
        f64_tensor(&[4, 3], 3),
        f64_tensor(&[3], 4),
    );
    let x = f64_tensor(&[6, 5], 5);
    let labels = Tensor::from_vec(vec![0_u32, 2, 1, 1, 0, 2], &[6]);
    let (loss, (gw1, gb1, gw2, gb2)) =
        value_with_gradient(mlp_loss_vjp(&w1, &b1, &w2, &b2, &x, &labels));
    assert_eq!(
        loss.to_scalar(),
        mlp_loss(&w1, &b1, &w2, &b2, &x, &labels).to_scalar()
    );
    let grads = [gw1.unwrap(), gb1.unwrap(), gw2.unwrap(), gb2.unwrap()];
    let f = |p: &[Tensor]| mlp_loss(&p[0], &p[1], &p[2], &p[3], &x, &labels).to_scalar();
    check_against_fd(&f, &[w1, b1, w2, b2], &grads);
}

#[test]
fn mixed_ops_gradient_matches_finite_differences() {
    let (a, b) = (f64_tensor(&[3, 4], 6), f64_tensor(&[3, 4], 7));
    let (ga, gb) = gradient(mixed_vjp(&a, &b));
    let f = |p: &[Tensor]| mixed(&p[0], &p[1]).to_scalar();
    check_against_fd(&f, &[a, b], &[ga.unwrap(), gb.unwrap()]);
}

#[differentiable]
fn layer(x: &Tensor, w: &Tensor) -> Tensor {
    x.matmul(w).sum_all()
}

#[test]
fn inactive_input_costs_no_gemm() {
    let x = Tensor::ones(&[8, 4]);
    let w = Tensor::ones(&[4, 2]);
    // `x` is data (not differentiated): forward GEMM + one GEMM for dw.
    let before = adjoint_cpu_matmul_calls();
    let (_, pullback) = layer_x_data_vjp(&x, &w);
    let dw = pullback(TensorTangent::Dense(Tensor::scalar(1.0)));
    // `dw = xᵀ·ȳ` is returned as its operands and computed when read.
    assert!(matches!(dw, TensorTangent::Outer(_)));
    assert_eq!(dw.unwrap().to_vec_f32(), vec![8.0; 8]);
    assert_eq!(adjoint_cpu_matmul_calls() - before, 2);
    // Both differentiated: forward + dx + dw.
    let before = adjoint_cpu_matmul_calls();
    let (dx, dw) = gradient(layer_vjp(&x, &w));
    assert_eq!((dx.unwrap().len(), dw.unwrap().len()), (32, 8));
    assert_eq!(adjoint_cpu_matmul_calls() - before, 3);
}

/// An Elman RNN over tensors, h ← tanh(h·W + x·U + b) from h = 0, loss Σ h²: W, U and b are
/// used in every step.
#[differentiable(wrt(w, u, b))]
fn tensor_rnn(w: &Tensor, u: &Tensor, b: &Tensor, xs: &[Tensor]) -> Tensor {
    let mut h = Tensor::zeros_on(&[1, w.shape()[0]], DType::F64, &Cpu);
    for x in xs {
        h = (h.matmul(w) + x.matmul(u) + b).tanh();
    }
    h.square().sum_all()
}

fn rnn_problem(steps: usize) -> ([Tensor; 3], Vec<Tensor>) {
    let weights = [
        f64_tensor(&[4, 4], 31),
        f64_tensor(&[3, 4], 32),
        f64_tensor(&[4], 33),
    ];
    let xs = (0..steps)
        .map(|t| f64_tensor(&[1, 3], 40 + t as u64))
        .collect();
    (weights, xs)
}

#[test]
fn rnn_weight_gradients_match_finite_differences() {
    let ([w, u, b], xs) = rnn_problem(7);
    let (gw, gu, gb) = gradient(tensor_rnn_vjp(&w, &u, &b, &xs));
    // The public companion returns settled tangents: dense tensors, not sums of products.
    assert!(matches!(gw, TensorTangent::Dense(_)) && matches!(gu, TensorTangent::Dense(_)));
    let f = |p: &[Tensor]| tensor_rnn(&p[0], &p[1], &p[2], &xs).to_scalar();
    check_against_fd(&f, &[w, u, b], &[gw.unwrap(), gu.unwrap(), gb.unwrap()]);
}

#[test]
fn the_loops_backward_pass_costs_one_product_per_step_and_one_per_weight() {
    let steps = 9;
    let ([w, u, b], xs) = rnn_problem(steps);
    let before = adjoint_cpu_matmul_calls();
    let (_, pullback) = tensor_rnn_vjp(&w, &u, &b, &xs);
    // Forward, the loop as one kernel (`core/src/ops/recurrence.rs`): the two products of
    // each step.
    assert_eq!(adjoint_cpu_matmul_calls() - before, 2 * steps);
    let before = adjoint_cpu_matmul_calls();
    let (gw, gu, _) = pullback(TensorTangent::Dense(Tensor::ones_on(&[], DType::F64, &Cpu)));
    // Backward: the tangent of h for every step but the first (h₀ is data), then one product
    // for each of W and U over all the steps' rows; none for the inputs x, which need no
    // tangent.
    assert_eq!(adjoint_cpu_matmul_calls() - before, steps - 1 + 2);
    assert_eq!(
        (gw.unwrap().shape(), gu.unwrap().shape()),
        (&[4, 4][..], &[3, 4][..])
    );
}

/// Weights computed from a parameter before a product: the products' weight tangents (sums
/// of products) flow into the pullbacks of `* 2.0` and `sigmoid`.
#[differentiable(wrt(w))]
fn weight_through_ops(w: &Tensor, xs: &[Tensor]) -> Tensor {
    let (doubled, squashed) = (w.exp() * 2.0, w.sigmoid());
    let mut total = Tensor::zeros_on(&[], DType::F64, &Cpu);
    for x in xs {
        total = total + x.matmul(&doubled).sum_all() + x.matmul(&squashed).tanh().sum_all();
    }
    total
}

#[test]
fn weight_tangents_through_other_ops_match_finite_differences() {
    let w = f64_tensor(&[3, 2], 51);
    let xs: Vec<Tensor> = (0..4).map(|t| f64_tensor(&[2, 3], 60 + t)).collect();
    let g = gradient(weight_through_ops_vjp(&w, &xs)).unwrap();
    let f = |p: &[Tensor]| weight_through_ops(&p[0], &xs).to_scalar();
    check_against_fd(&f, &[w], &[g]);
}

/// A weight that is the sum of two parameters (as in weight tying or low-rank adapters).
#[differentiable]
fn summed_weight(x: &Tensor, w: &Tensor, v: &Tensor) -> Tensor {
    x.matmul(&(w + v)).sum_all()
}

#[test]
fn a_weight_tangent_read_by_two_operands_is_computed_once() {
    let (x, w, v) = (
        Tensor::ones(&[4, 3]),
        Tensor::ones(&[3, 2]),
        Tensor::ones(&[3, 2]),
    );
    let before = adjoint_cpu_matmul_calls();
    let (gx, gw, gv) = gradient(summed_weight_vjp(&x, &w, &v));
    let (gx, gw, gv) = (gx.unwrap(), gw.unwrap(), gv.unwrap());
    // The forward product, x̄ (returned as its operands and computed by `unwrap`), and
    // (w + v)‾ = xᵀ·ȳ once for both w̄ and v̄.
    assert_eq!(adjoint_cpu_matmul_calls() - before, 3);
    // ȳ = 1: x̄ = ȳ·(w + v)ᵀ = 2 + 2 per element, w̄ = v̄ = xᵀ·ȳ = 4 (four rows of ones).
    assert_eq!(gx.to_vec_f32(), vec![4.0; 12]);
    assert_eq!(gw.to_vec_f32(), vec![4.0; 6]);
    assert_eq!(gv.to_vec_f32(), vec![4.0; 6]);
}

#[differentiable(wrt(w))]
fn layer_x_data(x: &Tensor, w: &Tensor) -> Tensor {
    layer(x, w)
}

fn adjoint_cpu_matmul_calls() -> usize {
    adjoint::tensor::matmul_calls()
}

#[test]
fn symbolic_zero_tangent_for_unused_parameter() {
    #[differentiable]
    fn ignores_b(a: &Tensor, b: &Tensor) -> Tensor {
        let _ = b.shape();
        a.sum_all()
    }
    let (ga, gb) = gradient(ignores_b_vjp(&Tensor::ones(&[2]), &Tensor::ones(&[3])));
    assert_eq!(ga.unwrap().to_vec_f32(), vec![1.0, 1.0]);
    assert!(gb.is_zero());
}

/// A conv block: convolution with bias, ReLU, max pooling, a linear head and cross-entropy.
#[differentiable]
fn conv_block_loss(
    w: &Tensor,
    b: &Tensor,
    head: &Tensor,
    #[no_derivative] x: &Tensor,
    #[no_derivative] labels: &Tensor,
) -> Tensor {
    let h = x
        .conv2d_with_bias(w, b, Conv2d::stride(1).padding(1))
        .relu();
    let p = h.max_pool2d([2, 2], Conv2d::stride(2));
    let logits = p.flatten_from(1).matmul(head);
    logits.cross_entropy(labels)
}

#[test]
fn conv_block_gradient_matches_finite_differences() {
    let (w, b, head) = (
        f64_tensor(&[3, 2, 3, 3], 1),
        f64_tensor(&[3], 2),
        f64_tensor(&[12, 4], 3),
    );
    let x = f64_tensor(&[2, 2, 4, 4], 4);
    let labels = Tensor::from_vec(vec![3_u32, 1], &[2]);
    let (gw, gb, gh) = gradient(conv_block_loss_vjp(&w, &b, &head, &x, &labels));
    let f = |p: &[Tensor]| conv_block_loss(&p[0], &p[1], &p[2], &x, &labels).to_scalar();
    check_against_fd(&f, &[w, b, head], &[gw.unwrap(), gb.unwrap(), gh.unwrap()]);
}

/// Layout ops, selection, joins and normalisation in one function.
#[differentiable]
fn plumbing(a: &Tensor, g: &Tensor, #[no_derivative] ids: &Tensor) -> Tensor {
    let n = a.layer_norm(g, &g.sin(), 1e-5);
    let mask = a.gt(&n);
    let s = mask.where_(&n, &a.square());
    let joined = Tensor::cat(&[s.clone(), a.exp()], 0);
    let picked = joined.index_select(0, ids).narrow(1, 1, 2);
    let e = a.embedding(ids).unsqueeze(0).squeeze(0).permute(&[1, 0]);
    picked.sum_all() + e.log_softmax(0).mean_all() + a.var(&[1], false).sum_all()
}

#[test]
fn plumbing_gradient_matches_finite_differences() {
    let (a, g) = (f64_tensor(&[3, 4], 8), f64_tensor(&[4], 9));
    let ids = Tensor::from_vec(vec![4_u32, 0, 2, 2], &[4]);
    let (ga, gg) = gradient(plumbing_vjp(&a, &g, &ids.narrow(0, 1, 3)));
    let ids = ids.narrow(0, 1, 3);
    let f = |p: &[Tensor]| plumbing(&p[0], &p[1], &ids).to_scalar();
    check_against_fd(&f, &[a, g], &[ga.unwrap(), gg.unwrap()]);
}

/// The pieces of a GPT block as a user writes them: the projections split into query, key
/// and value, a causal mask filled with −∞ before the softmax, the exact GELU, the lower
/// triangle, a constant made from an active value, a split into chunks, and the
/// cross-entropy of `[B, T, V]` scores with an ignored label.
#[differentiable]
fn gpt_pieces(x: &Tensor, w: &Tensor, #[no_derivative] labels: &Tensor) -> Tensor {
    let qkv = x.matmul(w).split(&[2, 2, 2], -1);
    let scores = qkv[0].matmul(&qkv[1].transpose(-2, -1));
    let causal = scores.ones_like().triu(1);
    let p = scores.masked_fill(&causal, f64::NEG_INFINITY).softmax(-1);
    let h = Tensor::cat(&[p.matmul(&qkv[2]).gelu_erf(), qkv[2].tanh()], -1);
    let logits = h + scores.tril(0).sum(&[-1], true) + x.full_like(0.5);
    let halves = logits.chunk(2, -1);
    (&halves[0] * &halves[1]).cross_entropy_ignoring(labels, 9)
}

#[test]
fn gpt_pieces_gradient_matches_finite_differences() {
    let (x, w) = (f64_tensor(&[2, 3, 4], 21), f64_tensor(&[4, 6], 22));
    let labels = Tensor::from_vec(vec![0_u32, 1, 9, 1, 9, 0], &[2, 3]);
    let (loss, (gx, gw)) = value_with_gradient(gpt_pieces_vjp(&x, &w, &labels));
    assert_eq!(loss.to_scalar(), gpt_pieces(&x, &w, &labels).to_scalar());
    let f = |p: &[Tensor]| gpt_pieces(&p[0], &p[1], &labels).to_scalar();
    check_against_fd(&f, &[x, w], &[gx.unwrap(), gw.unwrap()]);
}

/// Method forms of the arithmetic on locals, and operators on owned values.
#[differentiable]
fn locals(a: &Tensor, b: &Tensor) -> Tensor {
    let h = a.tanh();
    let s = h.add(b).mul(&h).sub(&a.neg()).div(&(b.square() + 1.0));
    let t = &h * 3.0 + &s;
    let u = &t + &h;
    u.mul_scalar(0.5).add_scalar(1.0).sum_all() - &(-&s).sum_all()
}

#[test]
fn locals_gradient_matches_finite_differences() {
    let (a, b) = (f64_tensor(&[2, 3], 10), f64_tensor(&[3], 11));
    let (ga, gb) = gradient(locals_vjp(&a, &b));
    let f = |p: &[Tensor]| locals(&p[0], &p[1]).to_scalar();
    check_against_fd(&f, &[a, b], &[ga.unwrap(), gb.unwrap()]);
}

/// Broadcasting arithmetic and a batched matmul on random shapes.
#[differentiable]
fn broadcast_mix(a: &Tensor, b: &Tensor) -> Tensor {
    let c = (a * b + a) / (b.square() + 1.0);
    (c.exp() - b).mean_all()
}

#[differentiable]
fn batched_matmul(a: &Tensor, b: &Tensor) -> Tensor {
    a.matmul(b).tanh().sum_all()
}

mod random_shapes {
    use super::*;
    use proptest::prelude::*;

    /// Two shapes that broadcast: each axis of the second is the first's size or 1, and the
    /// second may have fewer axes.
    fn broadcast_pair() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
        prop::collection::vec((1_usize..4, any::<bool>()), 1..4).prop_flat_map(|axes| {
            let a: Vec<usize> = axes.iter().map(|&(n, _)| n).collect();
            let b: Vec<usize> = axes
                .iter()
                .map(|&(n, keep)| if keep { n } else { 1 })
                .collect();
            (Just(a), 0..b.len()).prop_map(move |(a, drop)| (a, b[drop..].to_vec()))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn broadcasting_gradients((sa, sb) in broadcast_pair(), seed in 0_u64..1000) {
            let (a, b) = (f64_tensor(&sa, seed), f64_tensor(&sb, seed + 1));
            let (ga, gb) = gradient(broadcast_mix_vjp(&a, &b));
            let f = |p: &[Tensor]| broadcast_mix(&p[0], &p[1]).to_scalar();
            // Both operand orders: the broadcast one on either side.
            check_against_fd(&f, &[a.clone(), b.clone()], &[ga.unwrap(), gb.unwrap()]);
            let (gb2, ga2) = gradient(broadcast_mix_vjp(&b, &a));
            let f = |p: &[Tensor]| broadcast_mix(&p[0], &p[1]).to_scalar();
            check_against_fd(&f, &[b, a], &[gb2.unwrap(), ga2.unwrap()]);
        }

        #[test]
        fn matmul_gradients(batch in prop::collection::vec(1_usize..3, 0..3), m in 1_usize..4, k in 1_usize..4, n in 1_usize..4, rhs_batch in any::<bool>(), seed in 0_u64..1000) {
            let mut sa = batch.clone();
            sa.extend([m, k]);
            let mut sb = if rhs_batch { batch.clone() } else { Vec::new() };
            sb.extend([k, n]);
            let (a, b) = (f64_tensor(&sa, seed), f64_tensor(&sb, seed + 1));
            let (ga, gb) = gradient(batched_matmul_vjp(&a, &b));
            let f = |p: &[Tensor]| batched_matmul(&p[0], &p[1]).to_scalar();
            check_against_fd(&f, &[a, b], &[ga.unwrap(), gb.unwrap()]);
        }
    }
}

#[test]
fn bad_input_panics_at_the_callers_line_and_try_forms_return_errors() {
    use std::sync::{Arc, Mutex};
    let a = Tensor::zeros(&[2, 3]);
    let b = Tensor::zeros(&[4]);
    let d = Tensor::zeros_on(&[2, 3], DType::F64, &Cpu);
    let err = a.try_add(&b).unwrap_err();
    assert_eq!(
        err.to_string(),
        "add: shapes [2, 3] and [4] do not broadcast (sizes must match or be 1, aligned at the last axis)"
    );
    assert_eq!(
        a.try_add(&d).unwrap_err().to_string(),
        "add: dtypes differ: F32 [2, 3] and F64 [2, 3]"
    );
    assert!(a.try_matmul(&b.reshape(&[4, 1])).is_err());
    assert!(a.try_reshape(&[5]).is_err());

    let seen = Arc::new(Mutex::new(None));
    let hook_seen = Arc::clone(&seen);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        *hook_seen.lock().unwrap() = info
            .location()
            .map(|l| (l.file().to_string(), info.to_string()));
    }));
    let result = std::panic::catch_unwind(|| a.matmul(&b.reshape(&[4, 1])));
    std::panic::set_hook(previous);
    assert!(result.is_err());
    let (file, message) = seen.lock().unwrap().clone().expect("a panic was recorded");
    assert!(
        file.ends_with("tensors.rs"),
        "panic located in {file}, not the caller's file"
    );
    assert!(
        message.contains("matmul: inner dimensions differ: [2, 3] · [4, 1]"),
        "{message}"
    );
}
