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
    let var = std::env::var("AB_VAR").unwrap();
    let vals: Vec<String> = std::env::var("AB_VALS")
        .unwrap()
        .split(',')
        .map(String::from)
        .collect();
    let mut mlp = Mlp::<Cpu>::new_on(0, &Cpu);
    let mut opt = Sgd::new(0.01);
    let x = Tensor::<Cpu>::rand_uniform(&[128, 784], 0.0, 1.0, 99);
    let labels = Tensor::<Cpu>::from_vec((0..128u32).map(|i| i % 10).collect(), &[128]);
    let mut times = vec![vec![]; vals.len()];
    for i in 0..reps + 20 {
        for (v, val) in vals.iter().enumerate() {
            unsafe { std::env::set_var(&var, val) };
            let t = Instant::now();
            for _ in 0..5 {
                Cpu::install(|| {
                    let (l, g) = value_with_gradient(mlp.loss_vjp(&x, &labels));
                    opt.step(&mut mlp, &g);
                    l.to_scalar()
                });
            }
            if i >= 20 {
                times[v].push(t.elapsed().as_secs_f64() / 5.0);
            }
        }
    }
    for (v, t) in vals.iter().zip(times) {
        let (m, p) = stats(t);
        print!("{var}={v}: {m:.0} (p10 {p:.0})   ");
    }
    println!();
}
