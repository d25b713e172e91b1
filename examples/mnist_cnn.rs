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
//! (Fashion-MNIST too). The optimizer is [`Sgd`] with heavy-ball momentum, as
//! `torch.optim.SGD(momentum=m)`: `v ← m·v + g`, `θ ← θ − lr·v`, with the learning rate
//! multiplied by `--gamma` after each epoch ([`StepLr`], as PyTorch's `StepLR`).

mod common;

use adjoint::data::Mnist;
use adjoint::optim::{LrSchedule, Optimizer, Sgd, StepLr};
use adjoint::prelude::*;
use clap::Parser;
use common::models::Cnn;
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

/// The shape of one image as the CNN reads it.
const IMAGE: [usize; 3] = [1, 28, 28];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    common::check_device(&args.device)?;
    adjoint::tensor::keep_freed_memory();
    let mnist = Mnist::load(&args.data)?;
    let mut model = Cnn::new(args.seed);
    let mut sampler = mnist.train.sampler(args.batch_size, args.seed)?;
    let schedule = StepLr::new(args.lr, sampler.batches_per_epoch(), args.gamma);
    let mut optimizer = Sgd::new(args.lr).momentum(args.momentum);
    let mut step = 0;
    let mut history = common::History::start();
    for epoch in 1..=args.epochs {
        let epoch_start = Instant::now();
        let loss = common::epoch(epoch, &mut sampler, args.batch_size, |indices| {
            let (x, labels) = common::tensors(&mnist.train, indices, &IMAGE)?;
            let (value, grad) = value_with_gradient(model.loss_vjp(&x, &labels));
            schedule.apply(&mut optimizer, step);
            optimizer.step(&mut model, &grad);
            step += 1;
            Ok(value.to_scalar())
        })?;
        let acc = 100.0 * common::accuracy(&mnist.test, 500, &IMAGE, |x| model.logits(x))?;
        history.record(epoch, loss, acc, epoch_start);
    }
    history.finish(&model, &args.plot, &args.weights)?;
    Ok(())
}
