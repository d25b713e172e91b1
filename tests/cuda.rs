//! `#[differentiable]` tensor code on the CUDA backend against the CPU backend: the same
//! functions, generic over the backend, run on both from the same host values, and their
//! values and gradients must agree (every tensor op, forward and backward, appears in one of
//! them; the RNN's loop accumulates weight tangents as sums of products). Tolerances: 1e-9
//! relative in `f64`, 1e-4 in `f32` (summation orders differ).
//!
//! Without a GPU each test prints `skipped: no CUDA device (<reason>)` and passes; without the
//! `cuda` feature (on by default) there are no tests here.

#![cfg(feature = "cuda")]

use adjoint::cuda::{Cuda, CudaDevice};
use adjoint::optim::{Optimizer, Sgd};
use adjoint::prelude::*;

fn gpu() -> Option<CudaDevice> {
    match CudaDevice::new(0) {
        Ok(device) => Some(device),
        Err(e) => {
            println!("skipped: no CUDA device ({e})");
            None
        }
    }
}

/// Seeded host values in `U[-1, 1)`.
fn host(shape: &[usize], seed: u64, dtype: DType) -> Tensor {
    Tensor::rand_uniform_on(shape, -1.0, 1.0, seed, dtype, &Cpu)
}

/// `host` on backend `B`.
fn on<B: Backend>(device: &B::Device, host: &[Tensor]) -> Vec<Tensor<B>> {
    host.iter().map(|t| t.to_device::<B>(device)).collect()
}

/// Host copies of a value and its gradients.
fn flat<B: Backend>(
    value: Tensor<B>,
    grads: Vec<TensorTangent<B>>,
    like: &[Tensor<B>],
) -> Vec<Vec<f64>> {
    let mut out = vec![value.to_vec_f64()];
    out.extend(
        grads
            .into_iter()
            .zip(like)
            .map(|(g, x)| g.to_tensor_like(x).to_vec_f64()),
    );
    out
}

#[track_caller]
fn agree(name: &str, cpu: &[Vec<f64>], cuda: &[Vec<f64>], rel: f64) {
    assert_eq!(cpu.len(), cuda.len());
    for (k, (want, got)) in cpu.iter().zip(cuda).enumerate() {
        assert_eq!(want.len(), got.len(), "{name}: output {k} length");
        for (i, (w, g)) in want.iter().zip(got).enumerate() {
            assert!(
                (w - g).abs() <= rel * (1.0 + w.abs()),
                "{name}: output {k} (0 = value, then gradients) element {i}: CPU {w} vs CUDA {g}"
            );
        }
    }
}

/// Elementwise math, scalar arithmetic, broadcasting, reductions and softmax.
#[differentiable]
fn elementwise<B: Backend>(a: &Tensor<B>, b: &Tensor<B>) -> Tensor<B> {
    let p = a.abs() + 0.5;
    let smooth = p.ln() + p.sqrt() + p.rsqrt() + p.recip() + p.powf(1.5);
    let act = a.tanh() + a.sigmoid() + a.gelu() + a.silu() + a.leaky_relu(0.1) + a.relu();
    let trig = a.sin() * b.cos() + (a - b).exp() / (b.square() + 1.0);
    let minmax = a.maximum(b) - a.minimum(b) + a.clamp(-0.3, 0.4);
    let s = (smooth + act + trig + minmax).softmax(-1);
    s.max(&[1], false).sum_all() + s.mean(&[0], false).sum_all() * 2.0 - (a * b).mse(&a.neg())
}

/// A ReLU MLP with softmax cross-entropy on integer labels.
#[differentiable]
fn mlp<B: Backend>(
    w1: &Tensor<B>,
    b1: &Tensor<B>,
    w2: &Tensor<B>,
    #[no_derivative] x: &Tensor<B>,
    #[no_derivative] labels: &Tensor<B>,
) -> Tensor<B> {
    let h = (x.matmul(w1) + b1).relu();
    h.matmul(w2).cross_entropy(labels)
}

/// Convolution (grouped, strided, padded), max pooling and a linear head.
#[differentiable]
fn conv<B: Backend>(
    w: &Tensor<B>,
    b: &Tensor<B>,
    head: &Tensor<B>,
    #[no_derivative] x: &Tensor<B>,
    #[no_derivative] labels: &Tensor<B>,
) -> Tensor<B> {
    let h = x
        .conv2d_with_bias(w, b, Conv2d::stride(1).padding(1))
        .relu();
    let p = h.max_pool2d([2, 2], Conv2d::stride(2));
    p.flatten_from(1).matmul(head).log_softmax(-1).mean_all()
        + p.flatten_from(1).matmul(head).cross_entropy(labels)
}

/// Layout, selection, joins, gathers and normalisation.
#[differentiable]
fn plumbing<B: Backend>(
    a: &Tensor<B>,
    g: &Tensor<B>,
    #[no_derivative] ids: &Tensor<B>,
) -> Tensor<B> {
    let n = a.layer_norm(g, &g.sin(), 1e-5);
    let s = a.gt(&n).where_(&n, &a.square());
    let joined = Tensor::cat(&[s.clone(), a.exp()], 0);
    let picked = joined.index_select(0, ids).narrow(1, 1, 2);
    let e = a.embedding(ids).unsqueeze(0).squeeze(0).permute(&[1, 0]);
    let t = a.t().matmul(a).reshape(&[2, 8]);
    picked.sum_all() + e.log_softmax(0).mean_all() + a.var(&[1], false).sum_all() + t.sum_all()
}

/// An Elman RNN over the rows of `x`: the tangents of `w` and `u` are sums of products over
/// the steps (`TensorTangent::Outer`), added into their accumulators step by step and
/// computed when the gradient is read.
#[differentiable]
fn rnn<B: Backend>(
    w: &Tensor<B>,
    u: &Tensor<B>,
    b: &Tensor<B>,
    #[no_derivative] x: &Tensor<B>,
) -> Tensor<B> {
    let mut h = x.narrow(0, 0, 1).matmul(u).tanh();
    for t in 1..x.shape()[0] {
        h = (h.matmul(w) + x.narrow(0, t, 1).matmul(u) + b).tanh();
    }
    h.square().sum_all()
}

/// Runs a value-and-pullback function on CPU (always, so the test code itself is checked on
/// every machine) and, when there is a GPU, on CUDA from the same host inputs.
macro_rules! on_both {
    ($host:expr, $tol:expr, $name:literal, |$($x:ident),*| $call:expr) => {{
        fn run<B: Backend>(device: &B::Device, host: &[Tensor]) -> Vec<Vec<f64>> {
            let inputs = on::<B>(device, host);
            let [$($x),*] = &inputs[..] else { unreachable!() };
            let (value, grads) = $call;
            flat(value, grads, &inputs)
        }
        let cpu = run::<Cpu>(&Cpu, &$host);
        assert!(cpu.iter().flatten().all(|v| v.is_finite()), "{}: CPU values are finite", $name);
        if let Some(gpu) = gpu() {
            agree($name, &cpu, &run::<Cuda>(&gpu, &$host), $tol);
        }
    }};
}

#[test]
fn elementwise_math_agrees() {
    for (dtype, tol) in [(DType::F64, 1e-9), (DType::F32, 1e-4)] {
        let inputs = [host(&[5, 7], 1, dtype), host(&[7], 2, dtype)];
        on_both!(inputs, tol, "elementwise", |a, b| {
            let (y, (ga, gb)) = value_with_gradient(elementwise_vjp(a, b));
            (y, vec![ga, gb])
        });
    }
}

#[test]
fn mlp_loss_agrees() {
    let labels = Tensor::from_vec(vec![3_u32, 0, 9, 4, 4, 1], &[6]);
    for (dtype, tol) in [(DType::F64, 1e-9), (DType::F32, 1e-4)] {
        let inputs = [
            host(&[20, 16], 3, dtype),
            host(&[16], 4, dtype),
            host(&[16, 10], 5, dtype),
            host(&[6, 20], 6, dtype),
            labels.clone(),
        ];
        on_both!(inputs, tol, "mlp", |w1, b1, w2, x, labels| {
            let (y, (g1, gb, g2)) = value_with_gradient(mlp_vjp(w1, b1, w2, x, labels));
            (y, vec![g1, gb, g2])
        });
    }
}

#[test]
fn conv_block_agrees() {
    let labels = Tensor::from_vec(vec![2_u32, 0, 3], &[3]);
    for (dtype, tol) in [(DType::F64, 1e-9), (DType::F32, 1e-4)] {
        let inputs = [
            host(&[4, 2, 3, 3], 7, dtype),
            host(&[4], 8, dtype),
            host(&[36, 5], 9, dtype),
            host(&[3, 2, 6, 6], 10, dtype),
            labels.clone(),
        ];
        on_both!(inputs, tol, "conv", |w, b, head, x, labels| {
            let (y, (gw, gb, gh)) = value_with_gradient(conv_vjp(w, b, head, x, labels));
            (y, vec![gw, gb, gh])
        });
    }
}

#[test]
fn rnn_loop_agrees() {
    for (dtype, tol) in [(DType::F64, 1e-9), (DType::F32, 1e-4)] {
        let inputs = [
            host(&[8, 8], 13, dtype),
            host(&[5, 8], 14, dtype),
            host(&[8], 15, dtype),
            host(&[12, 5], 16, dtype),
        ];
        on_both!(inputs, tol, "rnn", |w, u, b, x| {
            let (y, (gw, gu, gb)) = value_with_gradient(rnn_vjp(w, u, b, x));
            (y, vec![gw, gu, gb])
        });
    }
}

/// `Σ (x·W) ⊙ y`: `W̄ = xᵀ·y`, returned as the product's operands.
#[differentiable]
fn weighted<B: Backend>(
    w: &Tensor<B>,
    #[no_derivative] x: &Tensor<B>,
    #[no_derivative] y: &Tensor<B>,
) -> Tensor<B> {
    (x.matmul(w) * y).sum_all()
}

/// Plain SGD adds `−γ·xᵀ·y` into the weight by one GEMM (`OuterSum::add_scaled_into`): the
/// stepped weight agrees across backends.
#[test]
fn sgd_on_a_weights_product_agrees() {
    for (dtype, tol) in [(DType::F64, 1e-9), (DType::F32, 1e-4)] {
        let inputs = [
            host(&[16, 10], 17, dtype),
            host(&[6, 16], 18, dtype),
            host(&[6, 10], 19, dtype),
        ];
        on_both!(inputs, tol, "sgd", |w, x, y| {
            let (value, gw) = value_with_gradient(weighted_vjp(w, x, y));
            assert!(matches!(gw, TensorTangent::Outer(_)), "W̄ is kept as xᵀ·y");
            let mut stepped = w.clone();
            Sgd::new(0.5).step(&mut stepped, &gw);
            (value, vec![TensorTangent::Dense(stepped)])
        });
    }
}

#[test]
fn plumbing_agrees() {
    let ids = Tensor::from_vec(vec![0_u32, 2, 2], &[3]);
    let inputs = [
        host(&[3, 4], 11, DType::F64),
        host(&[4], 12, DType::F64),
        ids,
    ];
    on_both!(inputs, 1e-9, "plumbing", |a, g, ids| {
        let (y, (ga, gg)) = value_with_gradient(plumbing_vjp(a, g, ids));
        (y, vec![ga, gg])
    });
}

#[test]
fn moving_between_devices_keeps_values() {
    let Some(gpu) = gpu() else { return };
    for dtype in [DType::F32, DType::F64] {
        let x = host(&[3, 5], 13, dtype);
        let back: Tensor = x.to_device::<Cuda>(&gpu).to_device(&Cpu);
        assert_eq!(back, x);
    }
    let ids = Tensor::from_vec(vec![7_u32, 0, 3], &[3]);
    assert_eq!(ids.to_device::<Cuda>(&gpu).to_device::<Cpu>(&Cpu), ids);
}

/// The MNIST examples' models.
#[path = "../examples/common/models.rs"]
#[allow(dead_code)]
mod models;

/// One SGD step of the MNIST examples' MLP and CNN on CUDA, from a batch uploaded from the
/// host to the loss read back, makes the host wait for the device once: reading the loss
/// (labels uploaded from the host are validated from their host copy).
#[test]
fn a_training_step_waits_for_the_device_once() {
    let Some(gpu) = gpu() else { return };
    let batch = |shape: &[usize], seed| {
        let labels: Vec<u32> = (0..shape[0] as u32).map(|i| (i * 7) % 10).collect();
        (
            Tensor::<Cpu>::rand_uniform_on(shape, 0.0, 1.0, seed, DType::F32, &Cpu).to_device(&gpu),
            Tensor::from_vec_on(labels, &[shape[0]], &gpu),
        )
    };
    let waits = |step: &mut dyn FnMut() -> f64| {
        let before = adjoint::cuda::host_waits();
        let loss = step();
        assert!(loss.is_finite(), "the loss is finite: {loss}");
        adjoint::cuda::host_waits() - before
    };

    let mut mlp = models::Mlp::<Cuda>::new_on(0, &gpu);
    let mut sgd = Sgd::new(0.01);
    for seed in 0..2 {
        let (x, labels) = batch(&[32, 784], seed);
        let mut step = || {
            let (loss, grad) = value_with_gradient(mlp.loss_vjp(&x, &labels));
            sgd.step(&mut mlp, &grad);
            loss.to_scalar()
        };
        assert_eq!(waits(&mut step), 1, "MLP step {seed}");
    }

    let mut cnn = models::Cnn::<Cuda>::new_on(0, &gpu);
    let mut sgd = Sgd::new(0.01);
    for seed in 0..2 {
        let (x, labels) = batch(&[8, 1, 28, 28], seed);
        let mut step = || {
            let (loss, grad) = value_with_gradient(cnn.loss_vjp(&x, &labels));
            sgd.step(&mut cnn, &grad);
            loss.to_scalar()
        };
        assert_eq!(waits(&mut step), 1, "CNN step {seed}");
    }
}
