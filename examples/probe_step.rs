#[path = "common/models.rs"]
mod models;
use adjoint::optim::{Optimizer, Sgd};
use adjoint::prelude::*;
use models::Mlp;
use std::time::Instant;
fn stats(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (v[v.len() / 2] * 1e6, v[v.len() / 10] * 1e6)
}
fn main() {
    adjoint::tensor::keep_freed_memory();
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let mut mlp = Mlp::<Cpu>::new_on(0, &Cpu);
    let mut opt = Sgd::new(0.01);
    let x = Tensor::<Cpu>::rand_uniform(&[128, 784], 0.0, 1.0, 99);
    let labels = Tensor::<Cpu>::from_vec((0..128u32).map(|i| i % 10).collect(), &[128]);
    let (mut f, mut fb, mut full) = (vec![], vec![], vec![]);
    for i in 0..reps + 50 {
        if std::env::var_os("FULL").is_some() {
            Cpu::install(|| {
                let (l, g) = value_with_gradient(mlp.loss_vjp(&x, &labels));
                opt.step(&mut mlp, &g);
                l.to_scalar()
            });
            continue;
        }
        let t0 = Instant::now();
        Cpu::install(|| {
            let (l, pb) = mlp.loss_vjp(&x, &labels);
            drop(pb);
            l.to_scalar()
        });
        let t1 = Instant::now();
        Cpu::install(|| {
            let (l, g) = value_with_gradient(mlp.loss_vjp(&x, &labels));
            drop(g);
            l.to_scalar()
        });
        let t2 = Instant::now();
        Cpu::install(|| {
            let (l, g) = value_with_gradient(mlp.loss_vjp(&x, &labels));
            opt.step(&mut mlp, &g);
            l.to_scalar()
        });
        let t3 = Instant::now();
        if i >= 50 {
            f.push((t1 - t0).as_secs_f64());
            fb.push((t2 - t1).as_secs_f64());
            full.push((t3 - t2).as_secs_f64());
        }
    }
    if f.is_empty() {
        return;
    }
    let (a, b, c) = (stats(f), stats(fb), stats(full));
    println!(
        "forward {:.0} (p10 {:.0})  fwd+bwd {:.0} (p10 {:.0})  step {:.0} (p10 {:.0}) us",
        a.0, a.1, b.0, b.1, c.0, c.1
    );
}
