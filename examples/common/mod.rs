//! What the MNIST examples share: the models, turning a batch into tensors, the training
//! epoch with its progress bar, test accuracy and the training-curve plot.

// Each example uses one of the two models.
#![allow(dead_code)]

pub mod models;

use adjoint::data::{BatchSampler, DataError, Normalization, Split};
use adjoint::prelude::*;
use indicatif::{ProgressBar, ProgressStyle};
use std::error::Error;
use std::time::Instant;

/// A batch as tensors: the images (f32) reshaped to `[n, ..image]` — `image` is `[784]` for an
/// MLP, `[1, 28, 28]` for a CNN — and the labels `[n]` (u32).
pub fn tensors(
    split: &Split,
    indices: &[usize],
    image: &[usize],
) -> Result<(Tensor, Tensor), DataError> {
    let batch = split.batch(indices, Normalization::Standard)?;
    let n = batch.shape[0];
    let labels: Vec<u32> = batch.labels.iter().map(|&l| u32::from(l)).collect();
    let shape: Vec<usize> = std::iter::once(n).chain(image.iter().copied()).collect();
    Ok((
        Tensor::from_vec(batch.images, &shape),
        Tensor::from_vec(labels, &[n]),
    ))
}

/// One pass over the training set: `step(indices)` trains on a batch and returns its loss.
/// Shows a progress bar with the running mean loss and throughput, and returns the epoch's
/// mean loss.
pub fn epoch(
    number: usize,
    sampler: &mut BatchSampler,
    batch_size: usize,
    mut step: impl FnMut(&[usize]) -> Result<f64, Box<dyn Error>>,
) -> Result<f64, Box<dyn Error>> {
    let bar = ProgressBar::new(sampler.batches_per_epoch() as u64);
    bar.set_style(
        ProgressStyle::with_template("epoch {prefix} [{bar:30}] {pos}/{len} {msg}")?
            .progress_chars("=> "),
    );
    bar.set_prefix(number.to_string());
    let started = Instant::now();
    let (mut total, mut count) = (0.0, 0);
    for indices in sampler.epoch() {
        total += step(indices)?;
        count += 1;
        if count % 10 == 0 {
            let rate = (count * batch_size) as f64 / started.elapsed().as_secs_f64();
            bar.set_message(format!("loss {:.4}  {rate:.0} img/s", total / count as f64));
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(total / count as f64)
}

/// Fraction of the test set that `logits` classifies correctly, in chunks of `chunk` images
/// of shape `image`.
pub fn accuracy(
    test: &Split,
    chunk: usize,
    image: &[usize],
    logits: impl Fn(&Tensor) -> Tensor,
) -> Result<f64, DataError> {
    let mut correct = 0;
    let indices: Vec<usize> = (0..test.len()).collect();
    for chunk in indices.chunks(chunk) {
        let (x, labels) = tensors(test, chunk, image)?;
        let predicted = logits(&x).argmax(-1).to_vec_u32();
        correct += predicted
            .iter()
            .zip(labels.to_vec_u32())
            .filter(|(p, l)| **p == *l)
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
    pub fn finish(
        &self,
        model: &impl adjoint::Parameters,
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

/// Rejects any `--device` but `cpu`: the CUDA backend is not implemented yet.
pub fn check_device(device: &str) -> Result<(), String> {
    if device == "cpu" {
        Ok(())
    } else {
        Err(format!(
            "--device {device}: only `cpu` is available in this build (the CUDA backend is not implemented yet)"
        ))
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
