//! Trains an MLP 784-512-512-10 (ReLU, softmax cross-entropy) on MNIST with SGD, and saves
//! the trained weights as safetensors.
//!
//! ```sh
//! cargo run --release --example mnist_mlp -- --epochs 10
//! ```
//!
//! The data ships in `data/mnist/`; `--data DIR` reads any folder of the four IDX files
//! (Fashion-MNIST too).

mod common;

use adjoint::data::Mnist;
use adjoint::optim::{Optimizer, Sgd};
use adjoint::prelude::*;
use clap::Parser;
use common::models::Mlp;
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

/// The shape of one image as the MLP reads it.
const IMAGE: [usize; 1] = [784];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    common::check_device(&args.device)?;
    adjoint::tensor::keep_freed_memory();
    let mnist = Mnist::load(&args.data)?;
    let mut model = Mlp::new(args.seed);
    let mut optimizer = Sgd::new(args.lr);
    let mut sampler = mnist.train.sampler(args.batch_size, args.seed)?;
    let mut history = common::History::start();
    for epoch in 1..=args.epochs {
        let epoch_start = Instant::now();
        let loss = common::epoch(epoch, &mut sampler, args.batch_size, |indices| {
            let (x, labels) = common::tensors(&mnist.train, indices, &IMAGE)?;
            let (value, grad) = value_with_gradient(model.loss_vjp(&x, &labels));
            optimizer.step(&mut model, &grad);
            Ok(value.to_scalar())
        })?;
        let acc = 100.0 * common::accuracy(&mnist.test, 1000, &IMAGE, |x| model.logits(x))?;
        history.record(epoch, loss, acc, epoch_start);
    }
    history.finish(&model, &args.plot, &args.weights)?;
    Ok(())
}
