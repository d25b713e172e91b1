//! Tensor op benchmarks on the CPU backend (f32):
//!
//! * `conv2d`: forward + backward (input and weight tangents) of the two convolutions of the
//!   PyTorch MNIST example net at batch 64: `[64, 1, 28, 28] * [32, 1, 3, 3]` and
//!   `[64, 32, 26, 26] * [64, 32, 3, 3]`; throughput in GFLOP/s (3 GEMM-sized passes, or 2 for
//!   conv1 whose input needs no tangent).
//! * `softmax_cross_entropy`: forward + backward of `cross_entropy` at `[128, 10]` and
//!   `[64, 1000]`.
//! * `elementwise`: `relu(x · 2 + 1)` forward and its pullback on 2²⁰ elements, in GB/s of
//!   memory traffic (each op reads its inputs and writes its output once).
//!
//! * `mlp_step`: one SGD step of the 784-512-512-10 ReLU MLP of `BASELINES.md` at batch 128
//!   (forward, softmax cross-entropy, backward through `#[differentiable]`, update); 410.8 MFLOP.
//!
//! Run with `cargo bench --bench tensor_ops`.

use adjoint::prelude::*;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn conv2d(c: &mut Criterion) {
    adjoint::tensor::keep_freed_memory();
    let mut group = c.benchmark_group("conv2d_fwd_bwd");
    group.sample_size(20);
    // (input shape, weight shape, whether the input needs a tangent)
    let cases = [
        ([64, 1, 28, 28], [32, 1, 3, 3], false),
        ([64, 32, 26, 26], [64, 32, 3, 3], true),
    ];
    for (i, (xs, ws, input_grad)) in cases.into_iter().enumerate() {
        let x = Tensor::rand_uniform(&xs, -1.0, 1.0, 1);
        let w = Tensor::rand_uniform(&ws, -0.1, 0.1, 2);
        let out = [xs[0], ws[0], xs[2] - 2, xs[3] - 2];
        let macs = (out.iter().product::<usize>() * ws[1] * 9) as u64;
        group.throughput(Throughput::Elements(
            2 * macs * if input_grad { 3 } else { 2 },
        ));
        group.bench_function(format!("conv{}", i + 1), |b| {
            b.iter(|| {
                let (y, pb) = x.conv2d_vjp_full(&w, Conv2d::default(), [input_grad, true, false]);
                black_box(pb(TensorTangent::Dense(y.ones_like())))
            })
        });
    }
    group.finish();
}

fn softmax_cross_entropy(c: &mut Criterion) {
    let mut group = c.benchmark_group("softmax_cross_entropy_fwd_bwd");
    for (n, classes) in [(128, 10), (64, 1000)] {
        let logits = Tensor::rand_normal(&[n, classes], 0.0, 1.0, 3);
        let labels = Tensor::from_vec(
            (0..n as u32)
                .map(|i| i * 7 % classes as u32)
                .collect::<Vec<_>>(),
            &[n],
        );
        group.bench_function(format!("{n}x{classes}"), |b| {
            b.iter(|| black_box(gradient(cross_entropy_vjp(&logits, &labels))))
        });
    }
    group.finish();
}

#[differentiable]
fn chain(x: &Tensor) -> Tensor {
    (x * 2.0 + 1.0).relu()
}

fn elementwise(c: &mut Criterion) {
    let mut group = c.benchmark_group("elementwise");
    let n = 1 << 20;
    let x = Tensor::rand_uniform(&[n], -1.0, 1.0, 4);
    let bytes = (n * 4) as u64;
    // Forward: three ops, each reading and writing n floats.
    group.throughput(Throughput::Bytes(3 * 2 * bytes));
    group.bench_function("relu(x*2+1) forward", |b| {
        b.iter(|| black_box(chain(black_box(&x))))
    });
    // Forward + backward: + relu grad (3n) + mul-by-scalar (2n).
    group.throughput(Throughput::Bytes(6 * bytes + 5 * bytes));
    let seed = TensorTangent::Dense(x.ones_like());
    group.bench_function("relu(x*2+1) forward+backward", |b| {
        b.iter(|| {
            let (_, pb) = chain_vjp(black_box(&x));
            black_box(pb(seed.clone()))
        })
    });
    group.finish();
}

#[differentiable]
#[allow(clippy::too_many_arguments)]
fn mlp_loss(
    w1: &Tensor,
    b1: &Tensor,
    w2: &Tensor,
    b2: &Tensor,
    w3: &Tensor,
    b3: &Tensor,
    #[no_derivative] x: &Tensor,
    #[no_derivative] labels: &Tensor,
) -> Tensor {
    let h1 = (x.matmul(w1) + b1).relu();
    let h2 = (h1.matmul(w2) + b2).relu();
    let logits = h2.matmul(w3) + b3;
    logits.cross_entropy(labels)
}

fn mlp_step(c: &mut Criterion) {
    let mut group = c.benchmark_group("mlp_step");
    group.throughput(Throughput::Elements(410_800_000));
    let dims = [784, 512, 512, 10];
    let mut params: Vec<Tensor> = Vec::new();
    for (i, d) in dims.windows(2).enumerate() {
        let scale = (1.0 / d[0] as f64).sqrt();
        params.push(Tensor::rand_uniform(
            &[d[0], d[1]],
            -scale,
            scale,
            10 + i as u64,
        ));
        params.push(Tensor::zeros(&[d[1]]));
    }
    let x = Tensor::rand_uniform(&[128, 784], 0.0, 1.0, 20);
    let labels = Tensor::from_vec((0..128_u32).map(|i| i % 10).collect::<Vec<_>>(), &[128]);
    group.bench_function("784-512-512-10 batch 128", |b| {
        b.iter(|| {
            let p = &params;
            let (loss, g) = value_with_gradient(mlp_loss_vjp(
                &p[0], &p[1], &p[2], &p[3], &p[4], &p[5], &x, &labels,
            ));
            let grads = [g.0, g.1, g.2, g.3, g.4, g.5];
            for (p, g) in params.iter_mut().zip(grads) {
                p.move_by(&g.scaled(-0.01));
            }
            black_box(loss)
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    conv2d,
    softmax_cross_entropy,
    elementwise,
    mlp_step
);
criterion_main!(benches);
