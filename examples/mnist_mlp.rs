//! Trains an MLP 784-512-512-10 (ReLU, softmax cross-entropy) on MNIST with SGD, and saves
//! the trained weights as safetensors.
//!
//! ```sh
//! cargo run --release --example mnist_mlp -- --epochs 10
//! ```
//!
//! The data ships in `data/mnist/`; `--data DIR` reads any folder of the four IDX files
//! (Fashion-MNIST too).

use adjoint::data::{Mnist, Normalization};
use adjoint::optim::{Optimizer, Sgd};
use adjoint::prelude::*;
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use std::time::Instant;

/// Command line.
#[derive(Parser, Debug)]
#[command(about = "Train a 784-512-512-10 MLP on MNIST with adjoint")]
struct Args {
    /// Passes over the training set.
    #[arg(long, default_value_t = 10)]
    epochs: usize,
    /// Examples per SGD step.
    #[arg(long, default_value_t = 128)]
    batch_size: usize,
    /// Learning rate.
    #[arg(long, default_value_t = 0.1)]
    lr: f64,
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
    #[arg(long, default_value = "mnist_mlp.svg")]
    plot: String,
    /// Where to save the trained weights (safetensors).
    #[arg(long, default_value = "mnist_mlp.safetensors")]
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
    let low = accuracies.iter().copied().fold(100.0, f64::min).min(98.0) - 0.5;
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

/// The model: three affine layers.
#[derive(Differentiable)]
struct Mlp {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
    w3: Tensor,
    b3: Tensor,
}

#[differentiable]
impl Mlp {
    /// PyTorch's default initialization of `nn.Linear`: uniform in ±1/√fan_in.
    fn new(seed: u64) -> Mlp {
        let layer = |fan_in: usize, fan_out: usize, k: u64| {
            let bound = 1.0 / (fan_in as f64).sqrt();
            (
                Tensor::rand_uniform(&[fan_in, fan_out], -bound, bound, seed * 10 + k),
                Tensor::rand_uniform(&[fan_out], -bound, bound, seed * 10 + k + 5),
            )
        };
        let ((w1, b1), (w2, b2), (w3, b3)) =
            (layer(784, 512, 1), layer(512, 512, 2), layer(512, 10, 3));
        Mlp {
            w1,
            b1,
            w2,
            b2,
            w3,
            b3,
        }
    }

    /// Class scores for a batch `x` of shape `[n, 784]`.
    #[differentiable]
    fn logits(&self, x: &Tensor) -> Tensor {
        let h1 = (x.matmul(&self.w1) + &self.b1).relu();
        let h2 = (h1.matmul(&self.w2) + &self.b2).relu();
        h2.matmul(&self.w3) + &self.b3
    }
}

/// Mean softmax cross-entropy of the model on a batch.
#[differentiable]
fn loss(model: &Mlp, #[no_derivative] x: &Tensor, #[no_derivative] labels: &Tensor) -> Tensor {
    cross_entropy(&model.logits(x), labels)
}

/// A batch as tensors: images `[n, 784]` (f32) and labels `[n]` (u32).
fn tensors(
    mnist_split: &adjoint::data::Split,
    indices: &[usize],
) -> Result<(Tensor, Tensor), adjoint::data::DataError> {
    let batch = mnist_split.batch(indices, Normalization::Standard)?;
    let n = batch.shape[0];
    let labels: Vec<u32> = batch.labels.iter().map(|&l| u32::from(l)).collect();
    Ok((
        Tensor::from_vec(batch.images, &[n, batch.shape[1] * batch.shape[2]]),
        Tensor::from_vec(labels, &[n]),
    ))
}

/// Fraction of the test set classified correctly.
fn accuracy(model: &Mlp, test: &adjoint::data::Split) -> Result<f64, adjoint::data::DataError> {
    let mut correct = 0;
    let indices: Vec<usize> = (0..test.len()).collect();
    for chunk in indices.chunks(1000) {
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
    let mut model = Mlp::new(args.seed);
    let mut optimizer = Sgd::new(args.lr);
    let mut sampler = mnist.train.sampler(args.batch_size, args.seed)?;
    let steps = sampler.batches_per_epoch() as u64;
    let started = Instant::now();
    let (mut losses, mut accuracies) = (Vec::new(), Vec::new());
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
            optimizer.step(&mut model, &grad);
            total += value.to_scalar();
            count += 1;
            if count % 20 == 0 {
                let rate = (count * args.batch_size) as f64 / epoch_start.elapsed().as_secs_f64();
                bar.set_message(format!("loss {:.4}  {rate:.0} img/s", total / count as f64));
            }
            bar.inc(1);
        }
        bar.finish_and_clear();
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
