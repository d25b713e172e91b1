//! SGEMM through `Tensor::matmul` on the CPU backend at 512, 1024 and 2048, reported as GFLOP/s
//! (2n³ FLOPs) and as a fraction of OpenBLAS.
//!
//! Criterion times the full op (allocation of the result included). After the groups, a
//! summary prints the median GFLOP/s of each size and its ratio to the OpenBLAS figure: taken
//! from `OPENBLAS_GFLOPS="512:GF,1024:GF,2048:GF"` when set (measure it in the same run with
//! `bench/gemm_numpy.py`), else the 2-thread figures of `BASELINES.md` (196 / 183 / 196).
//! Run with `cargo bench --bench gemm`.

use adjoint::prelude::*;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Instant;

const SIZES: [usize; 3] = [512, 1024, 2048];

fn openblas_reference(n: usize) -> f64 {
    let fallback = match n {
        512 => 196.0,
        1024 => 183.0,
        _ => 196.0,
    };
    std::env::var("OPENBLAS_GFLOPS")
        .ok()
        .and_then(|s| {
            s.split(',').find_map(|kv| {
                let (k, v) = kv.split_once(':')?;
                (k.trim().parse::<usize>().ok()? == n).then(|| v.trim().parse::<f64>().ok())?
            })
        })
        .unwrap_or(fallback)
}

fn operands(n: usize) -> (Tensor, Tensor) {
    (
        Tensor::rand_uniform(&[n, n], -1.0, 1.0, 1),
        Tensor::rand_uniform(&[n, n], -1.0, 1.0, 2),
    )
}

fn gemm(c: &mut Criterion) {
    adjoint::tensor::keep_freed_memory();
    let mut group = c.benchmark_group("sgemm");
    group.sample_size(20);
    for n in SIZES {
        let (a, b) = operands(n);
        group.bench_function(format!("{n}"), |bench| {
            bench.iter(|| black_box(a.matmul(black_box(&b))))
        });
    }
    group.finish();
}

/// Median-of-samples GFLOP/s, printed as a table against OpenBLAS.
fn summary(_: &mut Criterion) {
    println!("\n| n | adjoint GFLOP/s | OpenBLAS GFLOP/s | ratio |\n|---|---:|---:|---:|");
    for n in SIZES {
        let (a, b) = operands(n);
        let reps = if n == 2048 { 10 } else { 30 };
        let _ = a.matmul(&b);
        let mut times: Vec<f64> = (0..reps)
            .map(|_| {
                let t = Instant::now();
                black_box(a.matmul(black_box(&b)));
                t.elapsed().as_secs_f64()
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let gflops = 2.0 * (n as f64).powi(3) / times[reps / 2] / 1e9;
        let reference = openblas_reference(n);
        println!(
            "| {n} | {gflops:.0} | {reference:.0} | {:.0}% |",
            100.0 * gflops / reference
        );
    }
}

criterion_group!(benches, gemm, summary);
criterion_main!(benches);
