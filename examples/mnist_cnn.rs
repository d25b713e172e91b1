//! Trains the PyTorch `examples/mnist` convolutional network (without dropout) on MNIST with
//! SGD and momentum, and saves the trained weights as safetensors:
//!
//! conv 1→32 3×3, ReLU, conv 32→64 3×3, ReLU, max-pool 2×2, flatten (9216),
//! linear 9216→128, ReLU, linear 128→10, softmax cross-entropy; batch 64.
//!
//! ```sh
//! cargo run --release --example mnist_cnn -- --epochs 4
//! ```
//!
//! The data ships in `data/mnist/`; `--data DIR` reads any folder of the four IDX files
//! (Fashion-MNIST too). The optimizer is written inline (heavy-ball momentum, as
//! `torch.optim.SGD(momentum=m)`): `v ← m·v + g`, `θ ← θ − lr·v`, with the learning rate
//! multiplied by `--gamma` after each epoch.

use adjoint::data::{Mnist, Normalization};
use adjoint::prelude::*;
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use std::time::Instant;

/// Command line.
#[derive(Parser, Debug)]
#[command(about = "Train the PyTorch MNIST example CNN (without dropout) with adjoint")]
struct Args {
    /// Passes over the training set.
    #[arg(long, default_value_t = 4)]
    epochs: usize,
    /// Examples per SGD step.
    #[arg(long, default_value_t = 64)]
    batch_size: usize,
    /// Learning rate of the first epoch.
    #[arg(long, default_value_t = 0.02)]
    lr: f64,
    /// Factor applied to the learning rate after each epoch (PyTorch's `StepLR(gamma)`).
    #[arg(long, default_value_t = 0.7)]
    gamma: f64,
    /// Momentum of SGD (0 for plain SGD).
    #[arg(long, default_value_t = 0.9)]
    momentum: f64,
    /// Seed of the initialization and of the shuffling.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Folder with the four IDX files (gzipped or plain).
    #[arg(long, default_value = "data/mnist")]
    data: String,
    /// `cpu`, or `cuda` once the CUDA backend exists.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Where to write the training curve (SVG).
    #[arg(long, default_value = "mnist_cnn.svg")]
    plot: String,
    /// Where to save the trained weights (safetensors).
    #[arg(long, default_value = "mnist_cnn.safetensors")]
    weights: String,
}

/// Writes the per-epoch training loss and test accuracy as an SVG line chart.
fn plot(path: &str, losses: &[f64], accuracies: &[f64]) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;
    let root = SVGBackend::new(path, (800, 400)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(400);
    let epochs = losses.len() as f64;
    let max_loss = losses.iter().copied().fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(&left)
        .caption("training loss", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(1.0..epochs.max(2.0), 0.0..max_loss * 1.05)?;
    chart.configure_mesh().x_desc("epoch").draw()?;
    chart.draw_series(LineSeries::new(
        losses.iter().enumerate().map(|(i, &l)| (i as f64 + 1.0, l)),
        &BLUE,
    ))?;
    let low = accuracies.iter().copied().fold(100.0, f64::min).min(99.0) - 0.5;
    let mut chart = ChartBuilder::on(&right)
        .caption("test accuracy (%)", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(1.0..epochs.max(2.0), low..100.0)?;
    chart.configure_mesh().x_desc("epoch").draw()?;
    chart.draw_series(LineSeries::new(
        accuracies
            .iter()
            .enumerate()
            .map(|(i, &a)| (i as f64 + 1.0, a)),
        &RED,
    ))?;
    root.present()?;
    Ok(())
}

/// The model: two convolutions and two affine layers.
#[derive(Differentiable)]
struct Cnn {
    conv1_w: Tensor,
    conv1_b: Tensor,
    conv2_w: Tensor,
    conv2_b: Tensor,
    fc1_w: Tensor,
    fc1_b: Tensor,
    fc2_w: Tensor,
    fc2_b: Tensor,
}

#[differentiable]
impl Cnn {
    /// PyTorch's default initialization of `nn.Conv2d` and `nn.Linear`: uniform in
    /// ±1/√fan_in, where fan_in counts the inputs of one output unit.
    fn new(seed: u64) -> Cnn {
        let init = |shape: &[usize], fan_in: usize, k: u64| {
            let bound = 1.0 / (fan_in as f64).sqrt();
            Tensor::rand_uniform(shape, -bound, bound, seed * 100 + k)
        };
        Cnn {
            conv1_w: init(&[32, 1, 3, 3], 9, 1),
            conv1_b: init(&[32], 9, 2),
            conv2_w: init(&[64, 32, 3, 3], 32 * 9, 3),
            conv2_b: init(&[64], 32 * 9, 4),
            fc1_w: init(&[9216, 128], 9216, 5),
            fc1_b: init(&[128], 9216, 6),
            fc2_w: init(&[128, 10], 128, 7),
            fc2_b: init(&[10], 128, 8),
        }
    }

    /// Class scores for a batch `x` of shape `[n, 1, 28, 28]`.
    #[differentiable]
    fn logits(&self, x: &Tensor) -> Tensor {
        let h1 = x
            .conv2d_with_bias(&self.conv1_w, &self.conv1_b, Conv2d::default())
            .relu();
        let h2 = h1
            .conv2d_with_bias(&self.conv2_w, &self.conv2_b, Conv2d::default())
            .relu();
        let pooled = h2.max_pool2d([2, 2], Conv2d::stride(2)).flatten_from(1);
        let h3 = (pooled.matmul(&self.fc1_w) + &self.fc1_b).relu();
        h3.matmul(&self.fc2_w) + &self.fc2_b
    }
}

/// Mean softmax cross-entropy of the model on a batch.
#[differentiable]
fn loss(model: &Cnn, #[no_derivative] x: &Tensor, #[no_derivative] labels: &Tensor) -> Tensor {
    cross_entropy(&model.logits(x), labels)
}

/// A batch as tensors: images `[n, 1, 28, 28]` (f32) and labels `[n]` (u32).
fn tensors(
    mnist_split: &adjoint::data::Split,
    indices: &[usize],
) -> Result<(Tensor, Tensor), adjoint::data::DataError> {
    let batch = mnist_split.batch(indices, Normalization::Standard)?;
    let [n, h, w] = batch.shape;
    let labels: Vec<u32> = batch.labels.iter().map(|&l| u32::from(l)).collect();
    Ok((
        Tensor::from_vec(batch.images, &[n, 1, h, w]),
        Tensor::from_vec(labels, &[n]),
    ))
}

/// Fraction of the test set classified correctly.
fn accuracy(model: &Cnn, test: &adjoint::data::Split) -> Result<f64, adjoint::data::DataError> {
    let mut correct = 0;
    let indices: Vec<usize> = (0..test.len()).collect();
    for chunk in indices.chunks(500) {
        let (x, labels) = tensors(test, chunk)?;
        let predicted = model.logits(&x).argmax(-1).to_vec_u32();
        correct += predicted
            .iter()
            .zip(labels.to_vec_u32())
            .filter(|(p, l)| **p == *l)
            .count();
    }
    Ok(correct as f64 / test.len() as f64)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    if args.device != "cpu" {
        return Err(format!("--device {}: only `cpu` is available in this build (the CUDA backend is not implemented yet)", args.device).into());
    }
    adjoint::tensor::keep_freed_memory();
    let mnist = Mnist::load(&args.data)?;
    let mut model = Cnn::new(args.seed);
    // The momentum buffer, a tangent of the model: zero (symbolic) until the first step.
    let mut velocity = model.zero_tangent();
    let mut sampler = mnist.train.sampler(args.batch_size, args.seed)?;
    let steps = sampler.batches_per_epoch() as u64;
    let started = Instant::now();
    let (mut losses, mut accuracies) = (Vec::new(), Vec::new());
    let mut lr = args.lr;
    for epoch in 1..=args.epochs {
        let bar = ProgressBar::new(steps);
        bar.set_style(
            ProgressStyle::with_template("epoch {prefix} [{bar:30}] {pos}/{len} {msg}")?
                .progress_chars("=> "),
        );
        bar.set_prefix(epoch.to_string());
        let epoch_start = Instant::now();
        let (mut total, mut count) = (0.0, 0);
        for indices in sampler.epoch() {
            let (x, labels) = tensors(&mnist.train, indices)?;
            let (value, grad) = value_with_gradient(loss_vjp(&model, &x, &labels));
            velocity = velocity.scaled(args.momentum).plus(grad);
            model.move_by(&velocity.clone().scaled(-lr));
            total += value.to_scalar();
            count += 1;
            if count % 10 == 0 {
                let rate = (count * args.batch_size) as f64 / epoch_start.elapsed().as_secs_f64();
                bar.set_message(format!("loss {:.4}  {rate:.0} img/s", total / count as f64));
            }
            bar.inc(1);
        }
        bar.finish_and_clear();
        lr *= args.gamma;
        let acc = accuracy(&model, &mnist.test)?;
        losses.push(total / count as f64);
        accuracies.push(100.0 * acc);
        println!(
            "epoch {epoch:2}  train loss {:.4}  test accuracy {:.2}%  ({:.1} s)",
            total / count as f64,
            100.0 * acc,
            epoch_start.elapsed().as_secs_f64()
        );
    }
    println!(
        "trained {} epochs in {:.1} s",
        args.epochs,
        started.elapsed().as_secs_f64()
    );
    plot(&args.plot, &losses, &accuracies)?;
    adjoint::checkpoint::save(&model, &args.weights)?;
    println!(
        "training curve written to {}, weights to {}",
        args.plot, args.weights
    );
    Ok(())
}
