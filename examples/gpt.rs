//! Trains a character-level GPT on tiny-shakespeare (nanoGPT's `shakespeare_char`), and
//! samples from it.
//!
//! ```sh
//! cargo run --release --example gpt                       # nanoGPT's CPU configuration
//! cargo run --release --example gpt -- --resume --sample 500 --prompt "ROMEO:"
//! cargo run --release --example gpt -- --device cuda --layers 6 --heads 6 --width 384 \
//!     --context 256 --batch-size 64 --dropout 0.2 --steps 5000
//! ```
//!
//! The defaults are nanoGPT's README run on a CPU (`config/train_shakespeare_char.py` with
//! `--block_size=64 --batch_size=12 --n_layer=4 --n_head=4 --n_embd=128 --max_iters=2000
//! --lr_decay_iters=2000 --dropout=0.0 --eval_iters=20`, no biases): AdamW (β = 0.9, 0.99,
//! weight decay 0.1 on the linear layers' matrices only), learning rate 10⁻³ warmed up over 100
//! steps and cosine-annealed to 10⁻⁴ at the last step, gradients clipped to norm 1. The first
//! 90% of the text trains, the rest validates; both losses are estimated every
//! `--eval-every` steps on `--eval-iters` random batches, and the weights are saved then
//! (safetensors, `--weights`; the step in `<weights>.step`). `--resume` starts from those
//! weights and that step (the optimizer's moments start again from zero).

mod common;

use adjoint::Parameters;
use adjoint::checkpoint;
use adjoint::data::text::{CharText, Windows};
use adjoint::nn::{Gpt, GptConfig, Sampling};
use adjoint::optim::{Adam, CosineWithWarmup, Groups, LrSchedule, Optimizer, clip_grad_norm};
use adjoint::prelude::*;
use clap::Parser;
use common::Device;
use indicatif::{ProgressBar, ProgressStyle};
use std::error::Error;
use std::process::ExitCode;
use std::time::Instant;

/// Command line.
#[derive(Parser, Debug)]
#[command(about = "Train a character-level GPT on tiny-shakespeare with adjoint")]
struct Args {
    /// The text to learn (UTF-8).
    #[arg(long, default_value = "data/text/tinyshakespeare.txt")]
    data: String,
    /// Optimizer steps in all (a resumed run counts the steps it resumes from).
    #[arg(long, default_value_t = 2000)]
    steps: usize,
    /// Sequences per step.
    #[arg(long, default_value_t = 12)]
    batch_size: usize,
    /// Blocks.
    #[arg(long, default_value_t = 4)]
    layers: usize,
    /// Attention heads per block.
    #[arg(long, default_value_t = 4)]
    heads: usize,
    /// Embedding width.
    #[arg(long, default_value_t = 128)]
    width: usize,
    /// Context length (characters a position sees).
    #[arg(long, default_value_t = 64)]
    context: usize,
    /// Dropout rate.
    #[arg(long, default_value_t = 0.0)]
    dropout: f64,
    /// Biases in the linear layers and norms.
    #[arg(long)]
    bias: bool,
    /// Peak learning rate.
    #[arg(long, default_value_t = 1e-3)]
    lr: f64,
    /// Final learning rate of the cosine schedule.
    #[arg(long, default_value_t = 1e-4)]
    min_lr: f64,
    /// Linear warm-up steps.
    #[arg(long, default_value_t = 100)]
    warmup: usize,
    /// AdamW's decoupled weight decay (matrices only).
    #[arg(long, default_value_t = 0.1)]
    weight_decay: f64,
    /// AdamW's β₂.
    #[arg(long, default_value_t = 0.99)]
    beta2: f64,
    /// Maximal global gradient norm (0 for none).
    #[arg(long, default_value_t = 1.0)]
    grad_clip: f64,
    /// Steps between evaluations (and checkpoints).
    #[arg(long, default_value_t = 250)]
    eval_every: usize,
    /// Batches per loss estimate.
    #[arg(long, default_value_t = 20)]
    eval_iters: usize,
    /// Seed of the initialization, the batches and the sampling.
    #[arg(long, default_value_t = 1337)]
    seed: u64,
    /// The checkpoint written (and read by `--resume`), safetensors.
    #[arg(long, default_value = "gpt.safetensors")]
    weights: String,
    /// Start from `--weights` and the step saved with them.
    #[arg(long)]
    resume: bool,
    /// Characters to sample after training (0 for none).
    #[arg(long, default_value_t = 0)]
    sample: usize,
    /// Sampling temperature (0 for the most likely character).
    #[arg(long, default_value_t = 0.8)]
    temperature: f64,
    /// Sample from the `k` most likely characters only (0 for all).
    #[arg(long, default_value_t = 200)]
    top_k: usize,
    /// The text the sample continues.
    #[arg(long, default_value = "\n")]
    prompt: String,
    /// Where to write the loss curves (SVG).
    #[arg(long, default_value = "gpt.svg")]
    plot: String,
    /// Where to train: `cpu`, or `cuda` (GPU 0).
    #[arg(long, value_enum, default_value_t = Device::Cpu)]
    device: Device,
}

fn main() -> ExitCode {
    let args = Args::parse();
    common::run(args.device, &args)
}

impl Args {
    fn config(&self, vocab: usize) -> GptConfig {
        GptConfig {
            layers: self.layers,
            heads: self.heads,
            width: self.width,
            context: self.context,
            vocab,
            dropout: self.dropout,
            bias: self.bias,
        }
    }

    /// AdamW in two groups: decay on the linear layers' matrices, none on the rest.
    fn optimizer<B: Backend>(&self) -> Groups<Adam<B>, B> {
        let adamw = |decay| {
            Adam::adamw(self.lr)
                .betas(0.9, self.beta2)
                .weight_decay(decay)
        };
        Groups::new([adamw(self.weight_decay), adamw(0.0)]).by(Gpt::<B>::decay_group)
    }

    /// The file holding the step of the checkpoint.
    fn step_file(&self) -> String {
        format!("{}.step", self.weights)
    }

    /// Saves `model` and `step`.
    fn save<B: Backend>(&self, model: &Gpt<B>, step: usize) -> Result<(), Box<dyn Error>> {
        checkpoint::save(model, &self.weights)?;
        std::fs::write(self.step_file(), format!("{step}\n"))
            .map_err(|e| format!("{}: {e}", self.step_file()))?;
        Ok(())
    }

    /// The step saved with the checkpoint, after loading its weights into `model`.
    fn resume<B: Backend>(&self, model: &mut Gpt<B>) -> Result<usize, Box<dyn Error>> {
        checkpoint::load(model, &self.weights)?;
        let file = self.step_file();
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{file}: {e}"))?;
        let step = text
            .trim()
            .parse()
            .map_err(|e| format!("{file}: {e} ({text:?} is not a step)"))?;
        println!("resumed from {} at step {step}", self.weights);
        Ok(step)
    }
}

/// The inputs and targets of the next batch of `windows`, on `device`.
fn batch<B: Backend>(windows: &mut Windows<'_>, device: &B::Device) -> (Tensor<B>, Tensor<B>) {
    let shape = windows.shape();
    let (x, y) = windows.next_batch();
    (
        Tensor::from_vec_on(x, &shape, device),
        Tensor::from_vec_on(y, &shape, device),
    )
}

/// The mean loss of `model` (in evaluation mode) over `iters` batches of `windows`.
fn estimate<B: Backend>(
    model: &Gpt<B>,
    windows: &mut Windows<'_>,
    iters: usize,
    device: &B::Device,
) -> f64 {
    let total: f64 = (0..iters)
        .map(|_| {
            let (x, y) = batch(windows, device);
            model.loss(&x, &y).to_scalar()
        })
        .sum();
    total / iters as f64
}

/// The losses of the evaluations: `(step, train, validation)`.
type Curve = Vec<(usize, f64, f64)>;

impl common::Train for Args {
    fn train<B: Backend>(&self, device: &B::Device) -> Result<(), Box<dyn Error>> {
        if self.warmup >= self.steps || self.eval_every == 0 || self.eval_iters == 0 {
            return Err(format!(
                "--warmup {} must be below --steps {}, and --eval-every and --eval-iters above 0",
                self.warmup, self.steps
            )
            .into());
        }
        let text = CharText::load(&self.data)?;
        let (train_ids, val_ids) = text.split(0.9);
        let config = self.config(text.vocab_size());
        let mut model = Gpt::<B>::new_on(config, self.seed, DType::F32, device);
        let start = if self.resume {
            self.resume(&mut model)?
        } else {
            0
        };
        println!(
            "{} characters ({} train, {} validation), vocabulary {}; {config:?}: {:.2} M parameters",
            text.ids().len(),
            train_ids.len(),
            val_ids.len(),
            text.vocab_size(),
            model.parameter_count() as f64 / 1e6
        );
        if start < self.steps {
            let eval = Evaluation {
                train: Windows::new(train_ids, self.context, self.batch_size, self.seed ^ 1)?,
                val: Windows::new(val_ids, self.context, self.batch_size, self.seed ^ 2)?,
                curve: Vec::new(),
            };
            let windows = Windows::new(train_ids, self.context, self.batch_size, self.seed)?;
            let curve = self.fit(&mut model, start, windows, eval, device)?;
            plot(&self.plot, &curve)?;
            println!(
                "loss curves written to {}, weights to {}",
                self.plot, self.weights
            );
        }
        if self.sample > 0 {
            let sampling = Sampling {
                temperature: self.temperature,
                top_k: (self.top_k > 0).then_some(self.top_k),
                seed: self.seed,
            };
            let prompt = text.encode(&self.prompt)?;
            let out = model.generate(&prompt, self.sample, sampling);
            println!("{}{}", self.prompt, text.decode(&out));
        }
        Ok(())
    }
}

/// The batches of the loss estimates, and the estimates so far.
struct Evaluation<'a> {
    train: Windows<'a>,
    val: Windows<'a>,
    curve: Curve,
}

impl Evaluation<'_> {
    /// Estimates both losses of `model` at `step` (in evaluation mode), prints and records
    /// them.
    fn run<B: Backend>(&mut self, model: &Gpt<B>, step: usize, iters: usize, device: &B::Device) {
        let mut eval = model.clone();
        eval.train(false);
        let train = estimate(&eval, &mut self.train, iters, device);
        let val = estimate(&eval, &mut self.val, iters, device);
        self.curve.push((step, train, val));
        println!("step {step:5}: train loss {train:.4}, val loss {val:.4}");
    }
}

impl Args {
    /// Trains `model` from step `start` to `--steps`, evaluating and saving every
    /// `--eval-every` steps and at the end; returns the loss curve.
    fn fit<B: Backend>(
        &self,
        model: &mut Gpt<B>,
        start: usize,
        mut windows: Windows<'_>,
        mut eval: Evaluation<'_>,
        device: &B::Device,
    ) -> Result<Curve, Box<dyn Error>> {
        let schedule = CosineWithWarmup::new(self.lr, self.warmup, self.steps).min_lr(self.min_lr);
        let mut optimizer = self.optimizer::<B>();
        let bar = ProgressBar::new((self.steps - start) as u64);
        bar.set_style(
            ProgressStyle::with_template("[{bar:30}] {pos}/{len} {msg}")?.progress_chars("=> "),
        );
        let tokens_per_step = (self.batch_size * self.context) as f64;
        let (started, mut training_time) = (Instant::now(), 0.0);
        for step in start..self.steps {
            if step % self.eval_every == 0 {
                bar.suspend(|| eval.run(model, step, self.eval_iters, device));
                self.save(model, step)?;
            }
            let step_start = Instant::now();
            let (x, y) = batch(&mut windows, device);
            let lr = schedule.apply(&mut optimizer, step);
            let loss = B::install(|| {
                let (loss, mut grad) = value_with_gradient(model.loss_vjp(&x, &y));
                if self.grad_clip > 0.0 {
                    clip_grad_norm(model, &mut grad, self.grad_clip);
                }
                optimizer.step(model, &grad);
                loss
            });
            let loss = loss.to_scalar();
            training_time += step_start.elapsed().as_secs_f64();
            let done = step + 1 - start;
            bar.set_message(format!(
                "loss {loss:.4}  lr {lr:.2e}  {:.0} tokens/s",
                done as f64 * tokens_per_step / training_time
            ));
            bar.inc(1);
        }
        bar.finish_and_clear();
        eval.run(model, self.steps, self.eval_iters, device);
        self.save(model, self.steps)?;
        let steps = self.steps - start;
        println!(
            "{steps} steps in {:.1} s ({:.1} s training: {:.1} ms a step, {:.0} tokens/s)",
            started.elapsed().as_secs_f64(),
            training_time,
            1e3 * training_time / steps as f64,
            steps as f64 * tokens_per_step / training_time
        );
        Ok(eval.curve)
    }
}

/// Writes the training and validation losses against the step as an SVG line chart.
fn plot(path: &str, curve: &Curve) -> Result<(), Box<dyn Error>> {
    use plotters::prelude::*;
    let root = SVGBackend::new(path, (600, 400)).into_drawing_area();
    root.fill(&WHITE)?;
    let last = curve.last().map_or(1, |c| c.0.max(1)) as f64;
    let top = curve.iter().map(|c| c.1.max(c.2)).fold(0.0, f64::max);
    let bottom = curve.iter().map(|c| c.1.min(c.2)).fold(top, f64::min);
    let mut chart = ChartBuilder::on(&root)
        .caption("GPT on tiny-shakespeare", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..last, (bottom * 0.95)..(top * 1.02))?;
    chart
        .configure_mesh()
        .x_desc("step")
        .y_desc("loss")
        .draw()?;
    let series = |f: fn(&(usize, f64, f64)) -> f64| curve.iter().map(move |c| (c.0 as f64, f(c)));
    chart
        .draw_series(LineSeries::new(series(|c| c.1), &BLUE))?
        .label("train")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLUE));
    chart
        .draw_series(LineSeries::new(series(|c| c.2), &RED))?
        .label("validation")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], RED));
    chart.configure_series_labels().border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}
