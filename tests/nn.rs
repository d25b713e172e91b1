//! `adjoint::nn`: layer forwards against finite differences (w.r.t. parameters and input),
//! exact small cases, PyTorch's initialization, static chaining, and a tiny model trained with
//! a hand-written SGD step over `Parameters::visit_mut`.

use adjoint::nn::{
    Chain, Conv2d, Dropout, Embedding, Flatten, Gelu, GeluErf, Layer, LayerNorm, Linear, MaxPool2d,
    Relu, Sigmoid, Silu, Tanh,
};
mod common;

use adjoint::prelude::*;
use adjoint::{ParamPath, Parameters};
use common::layers::{check_layer, check_layer_with, params, probe_vjp};
use common::tensors::f64_tensor;

type ConvOptions = adjoint::ops::conv::Conv2d;

#[test]
fn linear_gradients_match_finite_differences() {
    let layer = Linear::new_on(4, 3, 1, DType::F64, &Cpu);
    assert_eq!(
        check_layer(&layer, &f64_tensor(&[5, 4], 2), true),
        ["weight", "bias"]
    );
    // Leading batch axes.
    check_layer(&layer, &f64_tensor(&[2, 3, 4], 3), true);
}

#[test]
fn linear_exact_small_case() {
    // W = [[1, 2], [3, 4]] ([out, in]), b = [0.5, −0.5], x = [[1, 2]]:
    // y = x Wᵀ + b = [1 + 4 + 0.5, 3 + 8 − 0.5] = [5.5, 10.5].
    let layer = Linear::from_parts(
        Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]),
        Some(Tensor::from_vec(vec![0.5, -0.5], &[2])),
    );
    let x = Tensor::from_vec(vec![1.0, 2.0], &[1, 2]);
    assert_eq!(layer.forward(&x).to_vec_f64(), [5.5, 10.5]);
    assert_eq!((layer.input_size(), layer.output_size()), (2, 2));
    // For Σ y: W̄ = ȳᵀ x = [[1, 2], [1, 2]], b̄ = [1, 1], x̄ = ȳ W = [4, 6].
    let ones = Tensor::ones_on(&[1, 2], DType::F64, &Cpu);
    let (dl, dx) = gradient(probe_vjp(&layer, &x, &ones));
    assert_eq!(dl.weight.unwrap().to_vec_f64(), [1.0, 2.0, 1.0, 2.0]);
    assert_eq!(dl.bias.unwrap().to_vec_f64(), [1.0, 1.0]);
    assert_eq!(dx.unwrap().to_vec_f64(), [4.0, 6.0]);
}

#[test]
fn conv2d_gradients_match_finite_differences() {
    // Groups, stride, padding and dilation together; with and without bias.
    let options = ConvOptions {
        stride: [2, 1],
        padding: [1, 1],
        dilation: [1, 2],
        groups: 2,
    };
    let x = f64_tensor(&[2, 4, 5, 5], 4);
    let layer = Conv2d::new_on(4, 6, [3, 2], options, true, 5, DType::F64, &Cpu);
    assert_eq!(layer.weight.shape(), [6, 2, 3, 2]);
    assert_eq!(check_layer(&layer, &x, true), ["weight", "bias"]);
    let no_bias = Conv2d::new_on(
        4,
        2,
        [2, 2],
        ConvOptions::default(),
        false,
        6,
        DType::F64,
        &Cpu,
    );
    assert_eq!(check_layer(&no_bias, &x, true), ["weight"]);
}

#[test]
fn conv2d_matches_the_tensor_op() {
    let layer = Conv2d::new(3, 4, [3, 3], 7);
    let x = Tensor::rand_normal(&[2, 3, 6, 6], 0.0, 1.0, 8);
    let expected = x.conv2d_with_bias(
        &layer.weight,
        layer.bias.as_ref().unwrap(),
        ConvOptions::default(),
    );
    assert_eq!(layer.forward(&x), expected);
    assert_eq!(layer.forward(&x).shape(), [2, 4, 4, 4]);
}

#[test]
fn embedding_gradient_matches_finite_differences() {
    let layer = Embedding::new_on(5, 3, 9, DType::F64, &Cpu);
    let ids = Tensor::from_vec(vec![4_u32, 0, 2, 2, 1, 4], &[2, 3]);
    assert_eq!(layer.forward(&ids).shape(), [2, 3, 3]);
    // Ids are data: only the table is checked.
    assert_eq!(check_layer(&layer, &ids, false), ["weight"]);
    // Row 3 is never looked up, so its gradient is zero; row 2 gets two rows of ȳ.
    let r = Tensor::ones_on(&[2, 3, 3], DType::F64, &Cpu);
    let (dl, dids) = gradient(probe_vjp(&layer, &ids, &r));
    let g = dl.weight.unwrap().to_vec_f64();
    assert_eq!(&g[9..12], [0.0; 3]);
    assert_eq!(&g[6..9], [2.0; 3]);
    assert!(dids.is_zero());
}

#[test]
fn layer_norm_gradients_match_finite_differences() {
    let mut layer = LayerNorm::new_on(4, DType::F64, &Cpu);
    assert_eq!(layer.weight.to_vec_f64(), [1.0; 4]);
    assert_eq!(layer.bias.as_ref().unwrap().to_vec_f64(), [0.0; 4]);
    assert_eq!(layer.eps, 1e-5);
    // Non-trivial γ and β.
    layer.weight = f64_tensor(&[4], 10);
    layer.bias = Some(f64_tensor(&[4], 11));
    assert_eq!(
        check_layer(&layer, &f64_tensor(&[2, 3, 4], 12), true),
        ["weight", "bias"]
    );
}

#[test]
fn layer_norm_normalizes_the_last_axis() {
    let layer = LayerNorm::new_on(3, DType::F64, &Cpu).with_eps(0.0);
    let y = layer.forward(&Tensor::from_vec(
        vec![1.0, 2.0, 3.0, 10.0, 10.0, 40.0],
        &[2, 3],
    ));
    let y = y.to_vec_f64();
    let s = (2.0_f64 / 3.0).sqrt();
    for (a, b) in y[..3].iter().zip([-1.0 / s, 0.0, 1.0 / s]) {
        assert!((a - b).abs() < 1e-12, "{y:?}");
    }
    assert!((y[3..].iter().sum::<f64>()).abs() < 1e-12);
}

#[test]
fn parameterless_layers_gradients_match_finite_differences() {
    let x = f64_tensor(&[2, 3, 4, 4], 13);
    assert!(check_layer(&Relu, &x, true).is_empty());
    check_layer(&Gelu, &x, true);
    check_layer(&GeluErf, &x, true);
    check_layer(&Tanh, &x, true);
    check_layer(&Sigmoid, &x, true);
    check_layer(&Silu, &x, true);
    check_layer(&Flatten::default(), &x, true);
    check_layer(&Flatten::new(2), &x, true);
    check_layer(&MaxPool2d::new([2, 2]), &x, true);
    let overlapping = ConvOptions {
        stride: [1, 1],
        padding: [1, 1],
        ..ConvOptions::default()
    };
    check_layer(&MaxPool2d::with_options([3, 3], overlapping), &x, true);
    assert_eq!(Flatten::default().forward(&x).shape(), [2, 48]);
    assert_eq!(MaxPool2d::new([2, 2]).forward(&x).shape(), [2, 3, 2, 2]);
    assert_eq!(Relu.forward(&x), x.relu());
}

#[test]
fn dropout_gradient_and_modes() {
    let x = f64_tensor(&[4, 6], 14);
    // A new layer per evaluation: the same seed counter, so the same mask.
    check_layer_with(&|| Dropout::new(0.5, 15), &x, true);
    let mut layer = Dropout::new(0.5, 15);
    // Successive training calls draw different masks; a layer with the same seed replays them.
    let replay = Dropout::new(0.5, 15);
    let a = layer.forward(&x);
    let b = layer.forward(&x);
    assert_ne!(a, b);
    assert_eq!(replay.forward(&x), a);
    assert_eq!(replay.forward(&x), b);
    // Kept elements are scaled by 1/(1 − p), and x̄ = ȳ · m/(1 − p) with the forward's mask.
    let r = f64_tensor(&[4, 6], 16);
    let ((), dx) = gradient(probe_vjp(&layer, &x, &r)); // the third mask
    let y = {
        let l = Dropout::new(0.5, 15);
        let _ = (l.forward(&x), l.forward(&x));
        l.forward(&x).to_vec_f64()
    };
    let dx = dx.unwrap().to_vec_f64();
    let (x, r) = (x.to_vec_f64(), r.to_vec_f64());
    for i in 0..x.len() {
        let kept = y[i] != 0.0;
        assert!(!kept || (y[i] - 2.0 * x[i]).abs() < 1e-12);
        assert_eq!(dx[i], if kept { 2.0 * r[i] } else { 0.0 });
    }
    // Evaluation mode: the identity, with x̄ = ȳ.
    layer.train(false);
    let x = f64_tensor(&[4, 6], 14);
    assert_eq!(layer.forward(&x), x);
    let r = f64_tensor(&[4, 6], 16);
    let ((), dx) = gradient(probe_vjp(&layer, &x, &r));
    assert_eq!(dx.unwrap(), r);
}

#[test]
fn dropout_inside_a_chain_draws_a_fresh_mask_per_call() {
    // Differentiable code clones the chain's layers; clones share the counter.
    let model = Linear::new_on(3, 64, 26, DType::F64, &Cpu).then(Dropout::new(0.5, 27));
    let x = f64_tensor(&[2, 3], 28);
    let (a, _) = model.forward_vjp(&x);
    let (b, _) = model.forward_vjp(&x);
    assert_ne!(a, b);
    assert_ne!(model.forward(&x), b);
    let mut eval = model.clone();
    eval.second.train(false);
    assert_eq!(eval.forward(&x), eval.first.forward(&x));
}

#[test]
fn chained_layers_keep_static_types_and_nested_names() {
    let model: Chain<Chain<Linear, Tanh>, Linear> = Linear::new_on(3, 5, 17, DType::F64, &Cpu)
        .then(Tanh)
        .then(Linear::new_on(5, 2, 18, DType::F64, &Cpu));
    let names = check_layer(&model, &f64_tensor(&[4, 3], 19), true);
    assert_eq!(
        names,
        [
            "first.first.weight",
            "first.first.bias",
            "second.weight",
            "second.bias"
        ]
    );
    assert_eq!(model.parameter_count(), 3 * 5 + 5 + 5 * 2 + 2);
}

#[test]
fn conv_net_gradients_match_finite_differences() {
    let model = Conv2d::new_on(
        2,
        3,
        [3, 3],
        ConvOptions::stride(1).padding(1),
        true,
        20,
        DType::F64,
        &Cpu,
    )
    .then(Relu)
    .then(MaxPool2d::new([2, 2]))
    .then(Flatten::default())
    .then(LayerNorm::new_on(12, DType::F64, &Cpu))
    .then(Linear::new_on(12, 3, 21, DType::F64, &Cpu));
    let names = check_layer(&model, &f64_tensor(&[2, 2, 4, 4], 22), true);
    assert_eq!(names.len(), 6);
    assert_eq!(names[0], "first.first.first.first.first.weight");
}

#[test]
fn initialization_follows_pytorch() {
    // Kaiming-uniform with a = √5 is U(−1/√fan_in, 1/√fan_in).
    assert!((adjoint::nn::init::kaiming_uniform_bound(64, 5f64.sqrt()) - 0.125).abs() < 1e-15);
    assert!((adjoint::nn::init::kaiming_uniform_bound(3, 0.0) - 2.0_f64.sqrt()).abs() < 1e-15);
    let check_uniform = |t: &Tensor, bound: f64| {
        let v = t.to_vec_f64();
        let n = v.len() as f64;
        assert!(v.iter().all(|x| x.abs() <= bound), "outside ±{bound}");
        let max = v.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        assert!(max > 0.98 * bound, "max {max} of ±{bound}");
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        assert!(mean.abs() < 0.05 * bound, "mean {mean}");
        // Var U(−a, a) = a²/3.
        assert!(
            (var / (bound * bound / 3.0) - 1.0).abs() < 0.05,
            "var {var}"
        );
    };
    let linear = Linear::new(100, 200, 0);
    assert_eq!(linear.weight.shape(), [200, 100]);
    assert_eq!(linear.weight.dtype(), DType::F32);
    check_uniform(&linear.weight, 0.1);
    let linear_b = Linear::new(4, 5000, 0);
    check_uniform(linear_b.bias.as_ref().unwrap(), 0.5);
    // Same seed, same parameters; another seed, others; weight and bias drawn independently.
    assert_eq!(Linear::new(100, 200, 0).weight, linear.weight);
    assert_ne!(Linear::new(100, 200, 1).weight, linear.weight);
    let conv = Conv2d::new_on(
        6,
        3000,
        [3, 3],
        ConvOptions {
            groups: 3,
            ..ConvOptions::default()
        },
        true,
        1,
        DType::F64,
        &Cpu,
    );
    // fan_in = 6/3 · 3 · 3 = 18.
    check_uniform(&conv.weight, 1.0 / 18f64.sqrt());
    check_uniform(conv.bias.as_ref().unwrap(), 1.0 / 18f64.sqrt());
    let emb = Embedding::<Cpu>::new_on(500, 100, 2, DType::F64, &Cpu)
        .weight
        .to_vec_f64();
    let n = emb.len() as f64;
    let mean = emb.iter().sum::<f64>() / n;
    let var = emb.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    assert!(
        mean.abs() < 0.02 && (var - 1.0).abs() < 0.03,
        "N(0, 1): {mean} {var}"
    );
}

#[test]
fn layers_expose_pytorch_parameter_names() {
    let names = |p: Vec<(String, Tensor)>| {
        p.into_iter()
            .map(|(n, t)| (n, t.shape().to_vec()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(params(&Linear::new(3, 2, 0))),
        [("weight".into(), vec![2, 3]), ("bias".into(), vec![2])]
    );
    assert_eq!(
        names(params(&Conv2d::new(3, 8, [5, 5], 0))),
        [
            ("weight".into(), vec![8, 3, 5, 5]),
            ("bias".into(), vec![8])
        ]
    );
    assert!(params(&Relu).is_empty() && params(&Dropout::new(0.1, 0)).is_empty());
}

/// Fields, items of a `Vec` and of an array: `visit_mut` walks them all last first, the
/// reverse of `visit`'s order (optimizers update the last layer first).
#[derive(Clone, Differentiable)]
struct Nested {
    stem: Tensor,
    blocks: Vec<Linear>,
    pair: [Tensor; 2],
}

#[test]
fn visit_mut_walks_the_parameters_last_first() {
    let model = Nested {
        stem: f64_tensor(&[2], 40),
        blocks: vec![
            Linear::new_on(2, 2, 41, DType::F64, &Cpu),
            Linear::new_on(2, 2, 42, DType::F64, &Cpu),
        ],
        pair: [f64_tensor(&[1], 43), f64_tensor(&[1], 44)],
    };
    let forward: Vec<String> = params(&model).into_iter().map(|(name, _)| name).collect();
    assert_eq!(
        forward,
        [
            "stem",
            "blocks.0.weight",
            "blocks.0.bias",
            "blocks.1.weight",
            "blocks.1.bias",
            "pair.0",
            "pair.1"
        ]
    );
    let grad = NestedTangent {
        stem: TensorTangent::Dense(f64_tensor(&[2], 45)),
        blocks: vec![TangentVector::zero(); 2],
        pair: [TensorTangent::zero(), TensorTangent::zero()],
    };
    let mut backward = Vec::new();
    model
        .clone()
        .visit_mut(&grad, &mut ParamPath::new(), &mut |name, _, _| {
            backward.push(name.to_owned())
        });
    backward.reverse();
    assert_eq!(backward, forward);
}

/// `visit_grad_mut` walks in `visit_mut`'s order, gives every parameter a slot (the empty
/// gradient of a `Vec` is padded with zeros) and what it writes is what the optimizer reads.
#[test]
fn visit_grad_mut_writes_every_parameter_last_first() {
    let model = Nested {
        stem: f64_tensor(&[2], 40),
        blocks: vec![
            Linear::new_on(2, 2, 41, DType::F64, &Cpu),
            Linear::new_on(2, 2, 42, DType::F64, &Cpu),
        ],
        pair: [f64_tensor(&[1], 43), f64_tensor(&[1], 44)],
    };
    let mut grad = NestedTangent {
        stem: TensorTangent::Dense(f64_tensor(&[2], 45)),
        blocks: Vec::new(),
        pair: [TensorTangent::zero(), TensorTangent::zero()],
    };
    let mut order = Vec::new();
    model.visit_grad_mut(&mut grad, &mut ParamPath::new(), &mut |name, p, g| {
        order.push(name.to_owned());
        // Every gradient becomes `2·θ` (dense, the parameter's shape).
        *g = TensorTangent::Dense(p * 2.0);
    });
    let mut visit_mut_order = Vec::new();
    let mut updated = model.clone();
    updated.visit_mut(&grad, &mut ParamPath::new(), &mut |name, p, g| {
        visit_mut_order.push(name.to_owned());
        assert_eq!(
            g.dense_ref().unwrap().to_vec_f64(),
            (&*p * 2.0).to_vec_f64(),
            "{name}"
        );
    });
    assert_eq!(order, visit_mut_order);
    assert_eq!(order.len(), 7);
    assert_eq!(grad.blocks.len(), 2);
}

/// A model written by a user: a struct of layers with its own `forward`.
#[derive(Clone, Differentiable)]
struct Mlp {
    hidden: Linear,
    out: Linear,
}

// The companions the macro writes here capture less than the trait's declaration allows
// (nothing but `Self` is generic), which rustc reports as a refinement.
#[differentiable]
#[allow(refining_impl_trait)]
impl Layer for Mlp {
    #[differentiable]
    fn forward(&self, x: &Tensor) -> Tensor {
        let h = self.hidden.forward(x).tanh();
        self.out.forward(&h)
    }
}

#[test]
fn a_user_struct_of_layers_is_a_layer() {
    let model = Mlp {
        hidden: Linear::new_on(2, 3, 23, DType::F64, &Cpu),
        out: Linear::new_on(3, 2, 24, DType::F64, &Cpu),
    };
    let names = check_layer(&model, &f64_tensor(&[3, 2], 25), true);
    assert_eq!(
        names,
        ["hidden.weight", "hidden.bias", "out.weight", "out.bias"]
    );
}

#[differentiable]
fn mse_loss<L: Layer>(
    model: &L,
    #[no_derivative] x: &Tensor,
    #[no_derivative] y: &Tensor,
) -> Tensor {
    model.forward(x).mse(y)
}

#[test]
fn xor_trains_with_sgd_over_visit_mut() {
    let x = Tensor::from_vec(vec![0.0_f32, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], &[4, 2]);
    let y = Tensor::from_vec(vec![0.0_f32, 1.0, 1.0, 0.0], &[4, 1]);
    let mut model = Linear::new(2, 8, 3)
        .then(Tanh)
        .then(Linear::new(8, 1, 4))
        .then(Sigmoid);
    let lr = 2.0;
    let mut loss = f64::INFINITY;
    for _ in 0..3000 {
        let (l, grad) = value_with_gradient(mse_loss_vjp(&model, &x, &y));
        loss = l.to_scalar();
        model.visit_mut(&grad, &mut ParamPath::new(), &mut |_, p, g| {
            if let Some(g) = g.dense_ref() {
                *p = p.sub(&g.mul_scalar(lr));
            }
        });
    }
    assert!(loss < 0.01, "loss {loss}");
    let pred = model.forward(&x).to_vec_f32();
    for (p, t) in pred.iter().zip([0.0, 1.0, 1.0, 0.0]) {
        assert!((p - t).abs() < 0.25, "{pred:?}");
    }
}

/// A training step run through `Backend::install` runs on another thread (one of the CPU
/// backend's workers) and gives the bits of the same step run directly: products large
/// enough to be split across threads, and the optimizer's update, see the same blocks.
#[test]
fn a_step_through_install_runs_on_the_pool_and_gives_the_same_bits() {
    use adjoint::optim::{Optimizer, Sgd};
    let model = || Mlp {
        hidden: Linear::new(256, 512, 31),
        out: Linear::new(512, 10, 32),
    };
    let x = Tensor::rand_uniform(&[128, 256], -1.0, 1.0, 33);
    let y = Tensor::rand_uniform(&[128, 10], -1.0, 1.0, 34);
    let bits = |model: &Mlp| {
        [
            &model.hidden.weight,
            model.hidden.bias.as_ref().unwrap(),
            &model.out.weight,
        ]
        .map(|t| {
            t.to_vec_f32()
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>()
        })
    };
    let (mut direct, mut installed) = (model(), model());
    let (mut sgd, mut sgd_installed) = (Sgd::new(0.1), Sgd::new(0.1));
    let caller = std::thread::current().id();
    for _ in 0..2 {
        let (_, grad) = value_with_gradient(mse_loss_vjp(&direct, &x, &y));
        sgd.step(&mut direct, &grad);
        let ran_on = Cpu::install(|| {
            let (_, grad) = value_with_gradient(mse_loss_vjp(&installed, &x, &y));
            sgd_installed.step(&mut installed, &grad);
            std::thread::current().id()
        });
        assert_ne!(ran_on, caller, "install ran the step on the calling thread");
    }
    assert!(bits(&direct) == bits(&installed), "the steps differ");
    assert!(bits(&direct) != bits(&model()), "the steps changed nothing");
}
