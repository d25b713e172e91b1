//! One full training step of each workload of issue 6, timed against `bench/` (PyTorch eager,
//! JAX jit) by `bench/run.sh`. Shapes, dtypes and FLOP counts as in `BASELINES.md`:
//!
//! * `mlp`: one SGD step (forward, softmax cross-entropy, backward, the fused in-place update
//!   of [`Sgd`](adjoint::optim::Sgd), as PyTorch's `p.add_(g, alpha=-lr)`) of the
//!   784-512-512-10 ReLU MLP at batch 128 (410.8 MFLOP), run through `Backend::install`;
//!   `mlp_on_caller` the same step on the calling thread; `mlp_fields` / `mlp_layers` the same
//!   step of the MLP written as a struct of three `Linear` layers, its weights read through
//!   nested fields (`self.l1.w`) or through each layer's `forward` method;
//! * `cnn`: one SGD step of the PyTorch `examples/mnist` net without dropout at batch 64
//!   (conv 1→32 3×3, ReLU, conv 32→64 3×3, ReLU, max-pool 2, linear 9216→128, ReLU,
//!   linear 128→10; 4.58 GFLOP);
//! * `gpt`: one AdamW step (forward, cross-entropy over `[B, T, V]`, backward, the update in
//!   two groups, weight decay 0.1 on the linear layers' matrices only) of the tiny GPT of
//!   `BASELINES.md`, [`adjoint::nn::Gpt`] with 2 layers, 4 heads, width 128, context 64, vocab
//!   65, no biases, no dropout, at batch 16 (random ids; 2.67 GFLOP);
//! * `rnn`: the gradient w.r.t. W, U, b of Σ h_T² for the Elman RNN h ← tanh(h·W + x_t·U + b),
//!   hidden 32, input 16, 100 steps, batch 1 (502 tensor ops in the forward pass), and, to
//!   see where its time goes, `rnn_value` (the function alone) and `rnn_recorded_forward`
//!   (the forward pass of the gradient, its pullback dropped unused);
//! * `rosen2` / `rosen100`: the 2-D and 100-D Rosenbrock gradients in f64, scalar code;
//! * `sgemm1024` / `sgemm2048`: `n × n` `f32` products, the machine's SGEMM rate for the table.
//!
//! Before timing, the MLP and CNN steps print the bytes the forward pass keeps alive for the
//! backward pass (measured by a counting global allocator: live heap bytes after `loss_vjp`
//! minus before) next to the activations strictly needed by a hand-written backward pass.
//!
//! Run with `cargo bench --bench steps` (`bench/run.sh` runs it next to PyTorch and JAX).
//! With `ADJOINT_BENCH_DEVICE=cuda` the MLP, CNN and GPT steps run on GPU 0 instead (no memory
//! report: the tensors are in device memory); `scripts/gpu-check.sh` runs them next to
//! `bench/steps_torch.py --device cuda`; `ADJOINT_BENCH_TF32=1` lets their products use TF32
//! tensor cores (`steps_torch.py --tf32` likewise). The other workloads always run on the CPU.

use adjoint::nn::{Gpt, GptConfig};
use adjoint::optim::{Adam, Groups, Optimizer, Sgd};
use adjoint::prelude::*;
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, SamplingMode, Throughput};
use criterion::{criterion_group, criterion_main};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// Sampling: the Python side's rule
// ---------------------------------------------------------------------------------------------

/// The shortest sample: each sample times as many back-to-back calls as make it last at least
/// this long (`min_sample` of `bench/common.py`, whose median the PyTorch and JAX figures are).
const MIN_SAMPLE: Duration = Duration::from_millis(5);

/// Sets `group` to take `samples` samples of equal length, each the mean of
/// ⌈`MIN_SAMPLE` / t⌉ calls for a call of t (criterion's flat sampling), so that its median
/// is the statistic `bench/common.py` takes of PyTorch and JAX. Criterion's default (linear)
/// sampling times 1, 2, …, `samples` calls per sample: the median of those means counts the
/// host's stalls in most samples, which the Python side's median of single 5 ms steps leaves
/// out; on a noisy VM that put adjoint's MLP step 10–20% above its own median step.
fn sample_like_python(group: &mut BenchmarkGroup<'_, WallTime>, samples: u32) {
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(samples as usize)
        .measurement_time(MIN_SAMPLE * samples);
}

// ---------------------------------------------------------------------------------------------
// Live heap bytes
// ---------------------------------------------------------------------------------------------

/// The system allocator, counting the bytes currently allocated.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to `System` with the same arguments.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(new_size, Ordering::Relaxed);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Prints the heap bytes held between the end of `forward` (its result kept alive) and the
/// start, against `needed` bytes, as a `memory:` line that `bench/run.sh` collects. What
/// persists across steps (the CPU GEMM's per-thread packing buffers, at most 576 KiB a
/// thread) is not residuals, but a pass grows it on whichever pool thread first runs a part
/// of a product: one warm-up pass left 0.53–0.64 MB over runs of the same MLP. So the line
/// reports the least of several passes, each measured after the one before was dropped.
fn report_residuals<R>(name: &str, needed: usize, forward: impl Fn() -> R) {
    drop(forward());
    let held = (0..8)
        .map(|_| {
            let before = LIVE.load(Ordering::SeqCst);
            let kept = forward();
            let held = LIVE.load(Ordering::SeqCst).saturating_sub(before);
            drop(kept);
            held
        })
        .min()
        .expect("eight passes");
    println!(
        "memory: {name} residuals at the end of the forward pass {:.2} MB, strictly needed {:.2} MB ({:.1}x)",
        held as f64 / 1e6,
        needed as f64 / 1e6,
        held as f64 / needed as f64
    );
}

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/// The MLP and CNN of the MNIST examples, the same definitions.
#[path = "../examples/common/models.rs"]
mod models;

use models::{Cnn, Mlp};

/// One affine layer, x·w + b, for the MLP written as a struct of layers (`Clone`: a nested
/// field read from an active value clones the struct it is read from, a reference count per
/// tensor).
#[derive(Clone, Differentiable)]
struct Linear<B: Backend> {
    w: Tensor<B>,
    b: Tensor<B>,
}

#[differentiable]
impl<B: Backend> Linear<B> {
    /// A layer initialized as `nn.Linear` (the draws of `Mlp::new_on`'s layer with `seeds`).
    fn new_on(inputs: usize, outputs: usize, seeds: (u64, u64), device: &B::Device) -> Self {
        let bound = 1.0 / (inputs as f64).sqrt();
        let draw = |shape: &[usize], seed| {
            Tensor::rand_uniform(shape, -bound, bound, seed).to_device(device)
        };
        Linear {
            w: draw(&[inputs, outputs], seeds.0),
            b: draw(&[outputs], seeds.1),
        }
    }

    /// x·w + b.
    #[differentiable]
    fn forward(&self, x: &Tensor<B>) -> Tensor<B> {
        x.matmul(&self.w) + &self.b
    }
}

/// `Mlp` as a struct of three layers (issue 39: a struct-of-fields model must cost what the
/// flat one costs), with the same weights.
#[derive(Differentiable)]
struct LayeredMlp<B: Backend> {
    l1: Linear<B>,
    l2: Linear<B>,
    l3: Linear<B>,
}

#[differentiable]
impl<B: Backend> LayeredMlp<B> {
    fn new_on(device: &B::Device) -> Self {
        LayeredMlp {
            l1: Linear::new_on(784, 512, (1, 6), device),
            l2: Linear::new_on(512, 512, (2, 7), device),
            l3: Linear::new_on(512, 10, (3, 8), device),
        }
    }

    /// `Mlp::loss` with the weights read through nested fields (`self.l1.w`).
    #[differentiable]
    fn loss_by_fields(
        &self,
        #[no_derivative] x: &Tensor<B>,
        #[no_derivative] labels: &Tensor<B>,
    ) -> Tensor<B> {
        let h1 = (x.matmul(&self.l1.w) + &self.l1.b).relu();
        let h2 = (h1.matmul(&self.l2.w) + &self.l2.b).relu();
        (h2.matmul(&self.l3.w) + &self.l3.b).cross_entropy(labels)
    }

    /// The same through the layers' `forward` methods (the ReLU outside the call, so not
    /// fused into the product's epilogue).
    #[differentiable]
    fn loss_by_layers(
        &self,
        #[no_derivative] x: &Tensor<B>,
        #[no_derivative] labels: &Tensor<B>,
    ) -> Tensor<B> {
        let h1 = self.l1.forward(x).relu();
        let h2 = self.l2.forward(&h1).relu();
        self.l3.forward(&h2).cross_entropy(labels)
    }
}

/// The shape of an MLP batch.
const MLP_BATCH: [usize; 2] = [128, 784];
/// The shape of a CNN batch.
const CNN_BATCH: [usize; 4] = [64, 1, 28, 28];

const F32: usize = 4;

/// A batch of synthetic data on `device`: inputs in [0, 1) and labels `i mod 10`.
fn batch<B: Backend>(shape: &[usize], device: &B::Device) -> (Tensor<B>, Tensor<B>) {
    let n = shape[0];
    let labels: Vec<u32> = (0..n as u32).map(|i| i % 10).collect();
    (
        Tensor::rand_uniform(shape, 0.0, 1.0, 99).to_device(device),
        Tensor::from_vec_on(labels, &[n], device),
    )
}

/// The MLP and CNN steps on the device that `ADJOINT_BENCH_DEVICE` names: `cuda` for GPU 0,
/// `cpu` (the default) for the CPU, where the host memory the forward passes keep is printed
/// first.
fn model_steps(c: &mut Criterion) {
    adjoint::tensor::keep_freed_memory();
    match std::env::var("ADJOINT_BENCH_DEVICE").as_deref() {
        Err(_) | Ok("cpu") => {
            report_model_residuals();
            model_steps_on::<Cpu>(c, &Cpu);
        }
        Ok("cuda") => model_steps_on_cuda(c),
        Ok(other) => panic!("ADJOINT_BENCH_DEVICE={other}: expected `cpu` or `cuda`"),
    }
}

/// The MLP and CNN steps on GPU 0.
#[cfg(feature = "cuda")]
fn model_steps_on_cuda(c: &mut Criterion) {
    use adjoint::cuda::{Cuda, CudaDevice};
    let device = CudaDevice::new(0).unwrap_or_else(|e| panic!("ADJOINT_BENCH_DEVICE=cuda: {e}"));
    // `ADJOINT_BENCH_TF32=1`: products on TF32 tensor cores (`CudaDevice::set_tf32`), as
    // PyTorch's convolutions run by default (`torch.backends.cudnn.allow_tf32`).
    if std::env::var("ADJOINT_BENCH_TF32").as_deref() == Ok("1") {
        device
            .set_tf32(true)
            .unwrap_or_else(|e| panic!("ADJOINT_BENCH_TF32=1: {e}"));
    }
    model_steps_on::<Cuda>(c, &device);
}

/// Without the `cuda` feature there is no GPU to time the steps on.
#[cfg(not(feature = "cuda"))]
fn model_steps_on_cuda(_: &mut Criterion) {
    panic!("ADJOINT_BENCH_DEVICE=cuda: CUDA support was not compiled in (the `cuda` feature)");
}

/// Prints the heap bytes the MLP and CNN forward passes keep for their backward passes, on
/// the CPU, against those a hand-written backward pass needs.
fn report_model_residuals() {
    let (mlp, (x, labels)) = (Mlp::<Cpu>::new_on(0, &Cpu), batch(&MLP_BATCH, &Cpu));
    // A hand-written backward pass keeps the two hidden ReLU outputs (inputs of the next
    // matmuls, and their own masks) and the softmax probabilities; `x` is the caller's.
    report_residuals("mlp", (2 * 128 * 512 + 128 * 10) * F32, || {
        mlp.loss_vjp(&x, &labels)
    });
    let (cnn, (x, labels)) = (Cnn::<Cpu>::new_on(0, &Cpu), batch(&CNN_BATCH, &Cpu));
    // Strictly needed: the first ReLU output (input of conv2, and its own mask), the pooled
    // maxima (input of fc1; with a one-byte argmax per window they give the pool and second
    // ReLU gradients), the fc1 ReLU output and the softmax probabilities.
    let needed = (64 * 32 * 26 * 26 + 64 * 9216 + 64 * 128 + 64 * 10) * F32 + 64 * 9216;
    report_residuals("cnn", needed, || cnn.loss_vjp(&x, &labels));
}

/// Times one SGD step of the MLP and of the CNN on `device`, run through `Backend::install` as
/// the MNIST examples run theirs. Each timed step ends by reading the loss, which waits for
/// the step's work (the update included) on a GPU.
fn model_steps_on<B: Backend>(c: &mut Criterion, device: &B::Device) {
    let mut group = c.benchmark_group("steps");

    let mut mlp = Mlp::<B>::new_on(0, device);
    let mut optimizer = Sgd::new(0.01);
    let (x, labels) = batch(&MLP_BATCH, device);
    sample_like_python(&mut group, 100);
    group.throughput(Throughput::Elements(410_800_000));
    let mut mlp_step = || {
        let (loss, grad) = value_with_gradient(mlp.loss_vjp(&x, &labels));
        optimizer.step(&mut mlp, &grad);
        loss
    };
    group.bench_function("mlp", |b| {
        b.iter(|| black_box(B::install(&mut mlp_step).to_scalar()))
    });
    // The same step run on the calling thread, not through `install`: what `install` saves
    // (`bench/table.py` prints the two side by side).
    group.bench_function("mlp_on_caller", |b| {
        b.iter(|| black_box(mlp_step().to_scalar()))
    });

    // The same step of the MLP written as a struct of layers: nested field reads, and calls
    // of the layers' methods.
    let mut layered = LayeredMlp::<B>::new_on(device);
    let mut optimizer = Sgd::new(0.01);
    for (name, by_fields) in [("mlp_fields", true), ("mlp_layers", false)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let step = || {
                    let (loss, grad) = if by_fields {
                        value_with_gradient(layered.loss_by_fields_vjp(&x, &labels))
                    } else {
                        value_with_gradient(layered.loss_by_layers_vjp(&x, &labels))
                    };
                    optimizer.step(&mut layered, &grad);
                    loss
                };
                black_box(B::install(step).to_scalar())
            })
        });
    }

    let mut cnn = Cnn::<B>::new_on(0, device);
    let mut optimizer = Sgd::new(0.01);
    let (x, labels) = batch(&CNN_BATCH, device);
    sample_like_python(&mut group, 30);
    group.throughput(Throughput::Elements(4_580_000_000));
    group.bench_function("cnn", |b| {
        b.iter(|| {
            let loss = B::install(|| {
                let (loss, grad) = value_with_gradient(cnn.loss_vjp(&x, &labels));
                optimizer.step(&mut cnn, &grad);
                loss
            });
            black_box(loss.to_scalar())
        })
    });

    gpt_step::<B>(&mut group, device);
    group.finish();
}

/// The tiny GPT of `BASELINES.md`.
const GPT: GptConfig = GptConfig {
    layers: 2,
    heads: 4,
    width: 128,
    context: 64,
    vocab: 65,
    dropout: 0.0,
    bias: false,
};
/// Sequences per GPT step.
const GPT_BATCH: usize = 16;

/// Times one AdamW step of the tiny GPT on `device` (as `examples/gpt.rs` trains it, without
/// the clipping), on random ids and targets.
fn gpt_step<B: Backend>(group: &mut BenchmarkGroup<'_, WallTime>, device: &B::Device) {
    let mut model = Gpt::<B>::new_on(GPT, 0, DType::F32, device);
    let adamw = |decay| Adam::adamw(1e-3).betas(0.9, 0.99).weight_decay(decay);
    let mut optimizer = Groups::new([adamw(0.1), adamw(0.0)]).by(Gpt::<B>::decay_group);
    let shape = [GPT_BATCH, GPT.context];
    let ids = |seed| {
        let t = Tensor::rand_uniform(&shape, 0.0, GPT.vocab as f64, seed).to_vec_f32();
        Tensor::<B>::from_vec_on(
            t.iter()
                .map(|&v| (v as u32).min(GPT.vocab as u32 - 1))
                .collect(),
            &shape,
            device,
        )
    };
    let (x, y) = (ids(41), ids(42));
    sample_like_python(group, 30);
    group.throughput(Throughput::Elements(2_670_000_000));
    group.bench_function("gpt", |b| {
        b.iter(|| {
            let loss = B::install(|| {
                let (loss, grad) = value_with_gradient(model.loss_vjp(&x, &y));
                optimizer.step(&mut model, &grad);
                loss
            });
            black_box(loss.to_scalar())
        })
    });
}

// ---------------------------------------------------------------------------------------------
// Elman RNN
// ---------------------------------------------------------------------------------------------

const HIDDEN: usize = 32;
const INPUT: usize = 16;
const STEPS: usize = 100;

/// PyTorch's default initialization of `nn.Linear` / `nn.Conv2d`: uniform in ±1/√fan_in.
fn init(shape: &[usize], fan_in: usize, seed: u64) -> Tensor {
    let bound = 1.0 / (fan_in as f64).sqrt();
    Tensor::rand_uniform(shape, -bound, bound, seed)
}

/// h ← tanh(h·W + x_t·U + b) from h = 0 over the rows of `xs`; the loss is Σ h_T².
#[differentiable(wrt(w, u, b))]
fn rnn_loss(w: &Tensor, u: &Tensor, b: &Tensor, xs: &[Tensor]) -> Tensor {
    let mut h = Tensor::zeros(&[1, HIDDEN]);
    for x in xs {
        h = (h.matmul(w) + x.matmul(u) + b).tanh();
    }
    h.square().sum_all()
}

fn rnn(c: &mut Criterion) {
    let w = init(&[HIDDEN, HIDDEN], HIDDEN, 21);
    let u = init(&[INPUT, HIDDEN], INPUT, 22);
    let b = init(&[HIDDEN], HIDDEN, 23);
    let xs: Vec<Tensor> = (0..STEPS)
        .map(|t| Tensor::rand_uniform(&[1, INPUT], -1.0, 1.0, 100 + t as u64))
        .collect();
    let mut group = c.benchmark_group("steps");
    sample_like_python(&mut group, 50);
    group.throughput(Throughput::Elements(840_000));
    group.bench_function("rnn", |bench| {
        bench.iter(|| black_box(gradient(rnn_loss_vjp(&w, &u, &b, &xs))))
    });
    // Where the gradient's time goes: the function alone (the same ops, nothing recorded),
    // and the forward pass that records the pullbacks (dropped unused, which frees what
    // they hold, as the backward pass does).
    group.bench_function("rnn_value", |bench| {
        bench.iter(|| black_box(rnn_loss(&w, &u, &b, &xs)))
    });
    group.bench_function("rnn_recorded_forward", |bench| {
        bench.iter(|| black_box(rnn_loss_vjp(&w, &u, &b, &xs).0))
    });
    group.finish();
}

// ---------------------------------------------------------------------------------------------
// Rosenbrock, f64 scalar code (as in `benches/rosenbrock.rs`)
// ---------------------------------------------------------------------------------------------

/// The functions of `benches/rosenbrock.rs`, the same definitions.
#[path = "common/rosenbrock.rs"]
mod rosenbrock_fns;

use rosenbrock_fns::{N, rosen_vjp, rosen2_vjp};

fn rosenbrock(c: &mut Criterion) {
    let mut group = c.benchmark_group("steps");
    sample_like_python(&mut group, 50);
    group.bench_function("rosen2", |b| {
        b.iter(|| gradient(rosen2_vjp(black_box(-1.2), black_box(1.0))))
    });
    let x: [f64; N] = std::array::from_fn(|i| -1.2 + 0.037 * i as f64);
    group.bench_function("rosen100", |b| b.iter(|| gradient(rosen_vjp(black_box(x)))));
    group.finish();
}

// ---------------------------------------------------------------------------------------------
// SGEMM: the machine's rate, for the table's "% SGEMM"
// ---------------------------------------------------------------------------------------------

/// `A·B` of two `n × n` `f32` matrices at n = 1024 and 2048 through `Tensor::matmul` (the
/// result's allocation included), as `bench/steps_torch.py` times `a @ b`: `bench/table.py`
/// takes the better of the two libraries' rates as the machine's SGEMM rate (PyTorch's MKL
/// reached 209–213 GFLOP/s on a Zen 5 host where adjoint's MLP step ran at 424, so its rate
/// alone did not bound what the machine does).
fn sgemm(c: &mut Criterion) {
    let mut group = c.benchmark_group("steps");
    sample_like_python(&mut group, 10);
    for n in [1024, 2048] {
        let a = Tensor::rand_uniform(&[n, n], 0.0, 1.0, 1);
        let b = Tensor::rand_uniform(&[n, n], 0.0, 1.0, 2);
        group.throughput(Throughput::Elements(2 * (n as u64).pow(3)));
        group.bench_function(format!("sgemm{n}"), |bench| {
            bench.iter(|| black_box(a.matmul(black_box(&b))))
        });
    }
    group.finish();
}

criterion_group!(benches, model_steps, rnn, rosenbrock, sgemm);
criterion_main!(benches);
