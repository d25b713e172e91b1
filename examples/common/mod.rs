//! What the MNIST examples share: the models, the `--device` choice that runs a training
//! written once for every backend, turning a batch into tensors on the device, the training
//! epoch with its progress bar, test accuracy and the training-curve plot.

// Each example uses one of the two models.
#![allow(dead_code)]

pub mod models;
#[cfg(feature = "mpi")]
pub mod mpi;

use adjoint::Parameters;
use adjoint::data::{BatchSampler, DataError, Normalization, Split};
use adjoint::prelude::*;
use indicatif::{ProgressBar, ProgressStyle};
use std::error::Error;
use std::process::ExitCode;
use std::time::Instant;

/// Where to train (`--device`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Device {
    /// The CPU backend.
    Cpu,
    /// The CUDA backend, on GPU 0.
    Cuda,
}

/// A training run written once, generic over the backend; [`run`] starts it on a device.
pub trait Train {
    /// Trains on `device`, a device of backend `B`.
    fn train<B: Backend>(&self, device: &B::Device) -> Result<(), Box<dyn Error>>;
}

/// Runs `job` on `device`, after [`keep_freed_memory`](adjoint::tensor::keep_freed_memory)
/// as training programs do. An error (a missing GPU among them) is printed, and the exit
/// status is then a failure.
pub fn run(device: Device, job: &impl Train) -> ExitCode {
    adjoint::tensor::keep_freed_memory();
    let result = match device {
        Device::Cpu => job.train::<Cpu>(&Cpu),
        Device::Cuda => train_on_cuda(job),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `job` on GPU 0 with the CUDA backend.
#[cfg(feature = "cuda")]
fn train_on_cuda(job: &impl Train) -> Result<(), Box<dyn Error>> {
    use adjoint::cuda::{Cuda, CudaDevice};
    let device = CudaDevice::new(0).map_err(|e| format!("--device cuda: {e}"))?;
    job.train::<Cuda>(&device)
}

/// Without the `cuda` feature there is no CUDA backend to run `job` on.
#[cfg(not(feature = "cuda"))]
fn train_on_cuda(_job: &impl Train) -> Result<(), Box<dyn Error>> {
    Err(
        "--device cuda: CUDA support was not compiled in (build with the `cuda` feature of \
         adjoint, on by default)"
            .into(),
    )
}

/// The images of a batch as a tensor `[n, ..image]` on `device` — `image` is `[784]` for an
/// MLP, `[1, 28, 28]` for a CNN — and the labels on the host.
fn images<B: Backend>(
    split: &Split,
    indices: &[usize],
    image: &[usize],
    device: &B::Device,
) -> Result<(Tensor<B>, Vec<u32>), DataError> {
    let batch = split.batch(indices, Normalization::Standard)?;
    let shape: Vec<usize> = std::iter::once(batch.shape[0])
        .chain(image.iter().copied())
        .collect();
    let labels = batch.labels.iter().map(|&l| u32::from(l)).collect();
    Ok((Tensor::from_vec_on(batch.images, &shape, device), labels))
}

/// A batch as tensors on `device`, each uploaded once: the images (f32) of shape
/// `[n, ..image]` and the labels `[n]` (u32).
pub fn tensors<B: Backend>(
    split: &Split,
    indices: &[usize],
    image: &[usize],
    device: &B::Device,
) -> Result<(Tensor<B>, Tensor<B>), DataError> {
    let (x, labels) = images(split, indices, image, device)?;
    let n = labels.len();
    Ok((x, Tensor::from_vec_on(labels, &[n], device)))
}

/// Steps between two readings of the loss for the progress bar, as the `log_interval` of
/// PyTorch's MNIST example: reading a value from a GPU waits for the work queued before it.
const REPORT_EVERY: usize = 10;

/// One pass over the training set: `step(indices)` trains on a batch and returns its loss.
/// Shows a progress bar with the running mean loss and throughput, and returns the epoch's
/// mean loss.
pub fn epoch<B: Backend>(
    number: usize,
    sampler: &mut BatchSampler,
    batch_size: usize,
    step: impl FnMut(&[usize]) -> Result<Tensor<B>, Box<dyn Error>>,
) -> Result<f64, Box<dyn Error>> {
    epoch_over(number, sampler.epoch(), true, batch_size, step)
}

/// [`epoch`] over the batches `batches` (one rank's share under data parallelism), with the
/// progress bar only if `show` (rank 0).
///
/// The losses are summed on the device and read every [`REPORT_EVERY`] steps, so that the
/// host can prepare the next batches while a GPU still computes.
pub fn epoch_over<B: Backend, I: AsRef<[usize]>>(
    number: usize,
    batches: impl ExactSizeIterator<Item = I>,
    show: bool,
    batch_size: usize,
    mut step: impl FnMut(&[usize]) -> Result<Tensor<B>, Box<dyn Error>>,
) -> Result<f64, Box<dyn Error>> {
    let bar = if show {
        ProgressBar::new(batches.len() as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("epoch {prefix} [{bar:30}] {pos}/{len} {msg}")?
            .progress_chars("=> "),
    );
    bar.set_prefix(number.to_string());
    let started = Instant::now();
    let mut total: Option<Tensor<B>> = None;
    let mut count = 0;
    for indices in batches {
        let loss = step(indices.as_ref())?;
        total = Some(match total {
            Some(sum) => sum + loss,
            None => loss,
        });
        count += 1;
        if show && count % REPORT_EVERY == 0 {
            let mean = mean_of(total.as_ref(), count);
            let rate = (count * batch_size) as f64 / started.elapsed().as_secs_f64();
            bar.set_message(format!("loss {mean:.4}  {rate:.0} img/s"));
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(mean_of(total.as_ref(), count))
}

/// `total / count` read from the device; NaN for no steps.
fn mean_of<B: Backend>(total: Option<&Tensor<B>>, count: usize) -> f64 {
    total.map_or(f64::NAN, |sum| sum.to_scalar() / count as f64)
}

/// Fraction of the test set that `logits` classifies correctly, in chunks of `chunk` images
/// of shape `image` uploaded to `device`.
pub fn accuracy<B: Backend>(
    test: &Split,
    chunk: usize,
    image: &[usize],
    device: &B::Device,
    logits: impl Fn(&Tensor<B>) -> Tensor<B>,
) -> Result<f64, DataError> {
    let mut correct = 0;
    let indices: Vec<usize> = (0..test.len()).collect();
    for chunk in indices.chunks(chunk) {
        let (x, labels) = images(test, chunk, image, device)?;
        let predicted = logits(&x).argmax(-1).to_vec_u32();
        correct += predicted
            .iter()
            .zip(&labels)
            .filter(|(p, l)| p == l)
            .count();
    }
    Ok(correct as f64 / test.len() as f64)
}

/// The per-epoch training loss and test accuracy of a run.
pub struct History {
    losses: Vec<f64>,
    accuracies: Vec<f64>,
    started: Instant,
}

impl History {
    /// An empty history; the run's clock starts now.
    pub fn start() -> History {
        History {
            losses: Vec::new(),
            accuracies: Vec::new(),
            started: Instant::now(),
        }
    }

    /// Records epoch `epoch` (mean training loss, test accuracy in %, started at `since`) and
    /// prints it.
    pub fn record(&mut self, epoch: usize, loss: f64, accuracy: f64, since: Instant) {
        self.losses.push(loss);
        self.accuracies.push(accuracy);
        println!(
            "epoch {epoch:2}  train loss {loss:.4}  test accuracy {accuracy:.2}%  ({:.1} s)",
            since.elapsed().as_secs_f64()
        );
    }

    /// Prints the total time, plots the curves to `plot` (SVG) and saves `model` to
    /// `weights` (safetensors).
    pub fn finish<B: Backend>(
        &self,
        model: &impl Parameters<B>,
        plot: &str,
        weights: &str,
    ) -> Result<(), Box<dyn Error>> {
        println!(
            "trained {} epochs in {:.1} s",
            self.losses.len(),
            self.started.elapsed().as_secs_f64()
        );
        self::plot(plot, &self.losses, &self.accuracies)?;
        adjoint::checkpoint::save(model, weights)?;
        println!("training curve written to {plot}, weights to {weights}");
        Ok(())
    }
}

/// Writes the per-epoch training loss and test accuracy (%) as an SVG line chart.
fn plot(path: &str, losses: &[f64], accuracies: &[f64]) -> Result<(), Box<dyn Error>> {
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
