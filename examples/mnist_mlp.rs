//! Trains an MLP 784-512-512-10 (ReLU, softmax cross-entropy) on MNIST with SGD, and saves
//! the trained weights as safetensors.
//!
//! ```sh
//! cargo run --release --example mnist_mlp -- --epochs 10
//! cargo run --release --example mnist_mlp -- --device cuda
//! # data parallel on 2 MPI processes, batches of 64 each (128 in all):
//! cargo build --release --features mpi --example mnist_mlp
//! mpirun -np 2 target/release/examples/mnist_mlp --distributed --batch-size 64
//! ```
//!
//! The data ships in `data/mnist/`; `--data DIR` reads any folder of the four IDX files
//! (Fashion-MNIST too).

mod common;

use adjoint::data::Mnist;
use adjoint::distributed::{
    Communicator, DataParallel, DistError, DistributedSampler, SingleProcess,
};
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
    /// Examples per SGD step (per process with `--distributed`, as in PyTorch's DDP).
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
    /// Train data parallel as one rank of an MPI job (`mpirun -np N`; feature `mpi`, CPU).
    #[arg(long)]
    distributed: bool,
    /// With `--distributed`: seconds a rank waits in a collective before it fails.
    #[arg(long, default_value_t = 300.0)]
    timeout: f64,
}

/// The shape of one image as the MLP reads it.
const IMAGE: [usize; 1] = [784];

fn main() -> ExitCode {
    let args = Args::parse();
    if args.distributed {
        return distributed(&args);
    }
    common::run(args.device, &args)
}

/// `--distributed`: this process is one rank of an MPI job, training on the CPU.
#[cfg(feature = "mpi")]
fn distributed(args: &Args) -> ExitCode {
    common::mpi::share_cores();
    if args.device != Device::Cpu {
        eprintln!("error: --distributed trains on the CPU (MPI); drop --device");
        return ExitCode::FAILURE;
    }
    adjoint::tensor::keep_freed_memory();
    let timeout = std::time::Duration::from_secs_f64(args.timeout);
    common::mpi::run(timeout, |comm| args.train_on::<Cpu, _>(&Cpu, comm))
}

/// Without the `mpi` feature there is no MPI to run on.
#[cfg(not(feature = "mpi"))]
fn distributed(_: &Args) -> ExitCode {
    eprintln!(
        "error: --distributed needs MPI: build with `--features mpi` and start with `mpirun -np N`"
    );
    ExitCode::FAILURE
}

impl common::Train for Args {
    fn train<B: Backend>(&self, device: &B::Device) -> Result<(), Box<dyn Error>> {
        self.train_on::<B, _>(device, SingleProcess)
    }
}

impl Args {
    /// Trains as one rank of `comm` (alone with [`SingleProcess`]): rank 0's parameters
    /// broadcast at start, each rank on its shard of every batch, the gradients averaged
    /// before each SGD step; rank 0 logs, evaluates and saves.
    fn train_on<B: Backend, C: Communicator<B> + Send>(
        &self,
        device: &B::Device,
        comm: C,
    ) -> Result<(), Box<dyn Error>> {
        let mnist = Mnist::load(&self.data)?;
        let mut model = Mlp::<B>::new_on(self.seed, device);
        let mut ddp = DataParallel::new(comm, &mut model)?;
        let (rank, world) = (ddp.rank(), ddp.world_size());
        let mut optimizer = Sgd::new(self.lr);
        let mut sampler =
            DistributedSampler::new(mnist.train.len(), self.batch_size, self.seed, rank, world)?;
        let mut history = common::History::start();
        for epoch in 1..=self.epochs {
            let epoch_start = Instant::now();
            let mut averaging = std::time::Duration::ZERO;
            let batches = sampler.epoch().into_iter();
            let loss = common::epoch_over(epoch, batches, rank == 0, self.batch_size, |indices| {
                let (x, labels) = common::tensors(&mnist.train, indices, &IMAGE, device)?;
                let step = B::install(|| {
                    let (loss, mut grad) = value_with_gradient(model.loss_vjp(&x, &labels));
                    let started = Instant::now();
                    ddp.average_gradients(&model, &mut grad)?;
                    averaging += started.elapsed();
                    optimizer.step(&mut model, &grad);
                    Ok::<_, DistError>(loss)
                });
                Ok(step?)
            })?;
            // The epoch's loss averaged over the ranks, for the log.
            let mut loss = Tensor::<B>::from_vec_on(vec![loss as f32], &[1], device);
            ddp.comm_mut().all_reduce_mean(&mut loss)?;
            if rank == 0 {
                let acc = common::accuracy(&mnist.test, 1000, &IMAGE, device, |x| model.logits(x))?;
                history.record(epoch, loss.to_scalar(), 100.0 * acc, epoch_start);
                if world > 1 {
                    let steps = sampler.batches_per_epoch();
                    println!(
                        "          averaging gradients: {:.2} s of the epoch ({:.2} ms a step)",
                        averaging.as_secs_f64(),
                        1e3 * averaging.as_secs_f64() / steps as f64
                    );
                }
            }
        }
        if rank == 0 {
            history.finish(&model, &self.plot, &self.weights)?;
        }
        Ok(())
    }
}
