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
//! * `transcendental`: the elementwise ops built on `exp`, `tanh`, `ln` and `erf` (and the
//!   GELUs' and SiLU's pullbacks, one pass each) on `[1024, 512]` activations, the MLP hidden
//!   layer of the tiny GPT of `../shared/BASELINES.md` (batch 16 × context 64, width 4·128),
//!   in elements per second.
//! * `small_ops`: the ops of one step of the Elman RNN of `benches/steps.rs` on their own
//!   (`[1, 32]` tensors: `tanh`, a same-shape `+`, `[1, 32]·[32, 32]`), whose cost is mostly
//!   the fixed cost per op, and the CNN's 2×2 max pooling of `[64, 64, 24, 24]`.
//!
//! Whole training steps (the MNIST MLP and CNN) are in `benches/steps.rs`, next to PyTorch.
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

fn transcendental(c: &mut Criterion) {
    let mut group = c.benchmark_group("transcendental");
    let shape = [1024, 512];
    group.throughput(Throughput::Elements((shape[0] * shape[1]) as u64));
    let x = Tensor::rand_normal(&shape, 0.0, 1.5, 9);
    let positive = x.abs() + 0.01;
    /// An op, named.
    type Op<'a> = (&'a str, fn(&Tensor) -> Tensor);
    let forward: [Op; 7] = [
        ("exp", Tensor::exp),
        ("tanh", Tensor::tanh),
        ("sigmoid", Tensor::sigmoid),
        ("silu", Tensor::silu),
        ("gelu", Tensor::gelu),
        ("gelu_erf", Tensor::gelu_erf),
        ("ln", Tensor::ln),
    ];
    for (name, f) in forward {
        let x = if name == "ln" { &positive } else { &x };
        group.bench_function(name, |b| b.iter(|| black_box(f(black_box(x)))));
    }
    let seed = TensorTangent::Dense(x.ones_like());
    type Rule =
        fn(&Tensor, [bool; 1]) -> (Tensor, Box<dyn FnOnce(TensorTangent) -> (TensorTangent,)>);
    let pullbacks: [(&str, Rule); 3] = [
        ("gelu pullback", |x, n| boxed(x.gelu_vjp_full(n))),
        ("gelu_erf pullback", |x, n| boxed(x.gelu_erf_vjp_full(n))),
        ("silu pullback", |x, n| boxed(x.silu_vjp_full(n))),
    ];
    for (name, rule) in pullbacks {
        // The pullback alone: the forward pass runs once, outside the timing.
        group.bench_function(name, |b| {
            b.iter_batched(
                || rule(&x, [true]).1,
                |pb| black_box(pb(seed.clone())),
                criterion::BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

/// A rule's pullback boxed, so that rules of different closure types share one table.
fn boxed<P: FnOnce(TensorTangent) -> (TensorTangent,) + 'static>(
    (y, pb): (Tensor, P),
) -> (Tensor, Box<dyn FnOnce(TensorTangent) -> (TensorTangent,)>) {
    (y, Box::new(pb))
}

fn small_ops(c: &mut Criterion) {
    let mut group = c.benchmark_group("small_ops");
    let h = Tensor::rand_uniform(&[1, 32], -1.0, 1.0, 5);
    let x = Tensor::rand_uniform(&[1, 32], -1.0, 1.0, 6);
    let w = Tensor::rand_uniform(&[32, 32], -1.0, 1.0, 7);
    group.bench_function("tanh [1,32]", |b| {
        b.iter(|| black_box(black_box(&h).tanh()))
    });
    group.bench_function("add [1,32]", |b| {
        b.iter(|| black_box(black_box(&h) + black_box(&x)))
    });
    group.bench_function("matmul [1,32]x[32,32]", |b| {
        b.iter(|| black_box(black_box(&h).matmul(black_box(&w))))
    });
    let maps = Tensor::rand_uniform(&[64, 64, 24, 24], -1.0, 1.0, 8);
    group.bench_function("max_pool2d 2x2 [64,64,24,24]", |b| {
        b.iter(|| black_box(black_box(&maps).max_pool2d([2, 2], Conv2d::stride(2))))
    });
    group.finish();
}

criterion_group!(
    benches,
    conv2d,
    softmax_cross_entropy,
    elementwise,
    transcendental,
    small_ops
);
criterion_main!(benches);
