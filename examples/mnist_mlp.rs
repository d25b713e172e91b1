//! Trains an MLP 784-512-512-10 (ReLU, softmax cross-entropy) on MNIST with SGD, and saves
//! the trained weights as safetensors.
//!
//! ```sh
//! cargo run --release --example mnist_mlp -- --epochs 10
//! cargo run --release --example mnist_mlp -- --device cuda
//! ```
//!
//! The data ships in `data/mnist/`; `--data DIR` reads any folder of the four IDX files
//! (Fashion-MNIST too).

mod common;

use adjoint::data::Mnist;
use adjoint::optim::{Optimizer, Sgd};
use adjoint::prelude::*;
use clap::Parser;
use common::Device;
use common::models::Mlp;
use std::error::Error;
use std::process::ExitCode;
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
    /// Where to train: `cpu`, or `cuda` (GPU 0).
    #[arg(long, value_enum, default_value_t = Device::Cpu)]
    device: Device,
    /// Where to write the training curve (SVG).
    #[arg(long, default_value = "mnist_mlp.svg")]
    plot: String,
    /// Where to save the trained weights (safetensors).
    #[arg(long, default_value = "mnist_mlp.safetensors")]
    weights: String,
}

/// The shape of one image as the MLP reads it.
const IMAGE: [usize; 1] = [784];

fn main() -> ExitCode {
    let args = Args::parse();
    common::run(args.device, &args)
}

impl common::Train for Args {
    fn train<B: Backend>(&self, device: &B::Device) -> Result<(), Box<dyn Error>> {
        let mnist = Mnist::load(&self.data)?;
        let mut model = Mlp::<B>::new_on(self.seed, device);
        let mut optimizer = Sgd::new(self.lr);
        let mut sampler = mnist.train.sampler(self.batch_size, self.seed)?;
        let mut history = common::History::start();
        for epoch in 1..=self.epochs {
            let epoch_start = Instant::now();
            let loss = common::epoch(epoch, &mut sampler, self.batch_size, |indices| {
                let (x, labels) = common::tensors(&mnist.train, indices, &IMAGE, device)?;
                Ok(B::install(|| {
                    let (loss, grad) = value_with_gradient(model.loss_vjp(&x, &labels));
                    optimizer.step(&mut model, &grad);
                    loss
                }))
            })?;
            let acc = common::accuracy(&mnist.test, 1000, &IMAGE, device, |x| model.logits(x))?;
            history.record(epoch, loss, 100.0 * acc, epoch_start);
        }
        history.finish(&model, &self.plot, &self.weights)
    }
}
