//! `adjoint::distributed` on real MPI processes (feature `mpi`; `harness = false`: MPI is
//! initialized once per process and every rank must run the same collectives in the same
//! order, so the checks run one after the other from `main`). Run under a launcher:
//!
//! ```sh
//! CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER='mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,tcp --mca btl_tcp_if_include lo' \
//!     cargo test --features mpi --test distributed_mpi
//! ```
//!
//! Alone (`cargo test --features mpi --test distributed_mpi`) it is a world of one process.
//! With `ADJOINT_MPI_FAULT=die` the last rank exits in the middle of an all-reduce instead,
//! and the job must end (`.ci/run` checks that `mpirun` fails, fast).

use adjoint::data::BatchSampler;
use adjoint::distributed::mpi::{Mpi, MpiCommunicator};
use adjoint::distributed::{Communicator, DataParallel, DistError, DistributedSampler, ReduceOp};
use adjoint::optim::{Optimizer, Sgd};
use adjoint::prelude::*;
use adjoint::{ParamPath, Parameters};
use std::time::{Duration, Instant};

/// A small MLP `d-h-c` with ReLU, in the dtype it is built with.
#[derive(Clone, Differentiable)]
struct Net {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
}

impl Net {
    fn new(sizes: [usize; 3], dtype: DType, seed: u64) -> Net {
        let [d, h, c] = sizes;
        let u = |shape: &[usize], fan: usize, s: u64| {
            let bound = 1.0 / (fan as f64).sqrt();
            Tensor::rand_uniform(shape, -bound, bound, seed * 10 + s).to_dtype(dtype)
        };
        Net {
            w1: u(&[d, h], d, 1),
            b1: u(&[h], d, 2),
            w2: u(&[h, c], h, 3),
            b2: u(&[c], h, 4),
        }
    }

    #[differentiable]
    fn loss(&self, #[no_derivative] x: &Tensor, #[no_derivative] labels: &Tensor) -> Tensor {
        let h = (x.matmul(&self.w1) + &self.b1).relu();
        (h.matmul(&self.w2) + &self.b2).cross_entropy(labels)
    }
}

/// The parameters of a model, in `visit`'s order.
fn values(model: &Net) -> Vec<(String, Vec<f64>)> {
    let mut out = Vec::new();
    model.visit(&mut ParamPath::new(), &mut |name, t| {
        out.push((name.to_owned(), t.to_vec_f64()))
    });
    out
}

/// A model's gradient as vectors, in `visit`'s order.
fn grad_values(model: &Net, grad: &NetTangent) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    model
        .clone()
        .visit_mut(grad, &mut ParamPath::new(), &mut |_, p, g| {
            out.push(g.clone().to_tensor_like(p).to_vec_f64())
        });
    out.reverse();
    out
}

/// The largest `|a - b|` over all elements, and the largest `|b|`.
fn max_diff(a: &[Vec<f64>], b: &[Vec<f64>]) -> (f64, f64) {
    let pairs = a.iter().flatten().zip(b.iter().flatten());
    pairs.fold((0.0, 0.0), |(d, m), (x, y)| {
        (d.max((x - y).abs()), m.max(y.abs()))
    })
}

/// `n` synthetic examples of `d` features and labels in `0..c`, the same on every rank.
fn dataset(n: usize, d: usize, c: usize, dtype: DType) -> (Tensor, Vec<u32>) {
    let x = Tensor::rand_uniform(&[n, d], -1.0, 1.0, 99).to_dtype(dtype);
    let labels = (0..n).map(|i| ((i * 7 + i / 3) % c) as u32).collect();
    (x, labels)
}

/// The rows `indices` of `x` and their labels.
fn batch(x: &Tensor, labels: &[u32], indices: &[usize]) -> (Tensor, Tensor) {
    let ids = Tensor::from_vec(
        indices.iter().map(|&i| i as u32).collect(),
        &[indices.len()],
    );
    let y: Vec<u32> = indices.iter().map(|&i| labels[i]).collect();
    (
        x.index_select(0, &ids),
        Tensor::from_vec(y, &[indices.len()]),
    )
}

type Check = Result<(), String>;

/// A check run on the world communicator.
type CheckFn = dyn Fn(&mut MpiCommunicator) -> Check;

fn ensure(ok: bool, what: impl FnOnce() -> String) -> Check {
    if ok { Ok(()) } else { Err(what()) }
}

fn dist<T>(r: Result<T, DistError>) -> Result<T, String> {
    r.map_err(|e| e.to_string())
}

/// Sum, mean, coalesced tensors, broadcast from the last rank, all-gather, barrier, with
/// exact values: rank `r` holds `[r + 1, 2(r + 1)]`.
fn collectives(comm: &mut MpiCommunicator) -> Check {
    let (r, n) = (comm.rank() as f64, comm.world_size() as f64);
    let mine = |dtype| Tensor::from_vec(vec![r + 1.0, 2.0 * (r + 1.0)], &[2]).to_dtype(dtype);
    let total = n * (n + 1.0) / 2.0;
    for dtype in [DType::F32, DType::F64] {
        let mut pair = [mine(dtype), mine(dtype) * 10.0];
        dist(comm.all_reduce(&mut pair, ReduceOp::Sum))?;
        let got = [pair[0].to_vec_f64(), pair[1].to_vec_f64()];
        ensure(
            got == [vec![total, 2.0 * total], vec![10.0 * total, 20.0 * total]],
            || format!("{dtype:?} sum: {got:?}"),
        )?;
        let mut t = mine(dtype);
        dist(comm.all_reduce_mean(&mut t))?;
        let mean = total / n;
        ensure(t.to_vec_f64() == [mean, 2.0 * mean], || {
            format!("mean: {t:?}")
        })?;
    }
    let last = comm.world_size() - 1;
    let mut t = [mine(DType::F64)];
    dist(comm.broadcast(&mut t, last))?;
    ensure(t[0].to_vec_f64() == [n, 2.0 * n], || {
        format!("broadcast: {:?}", t[0])
    })?;
    let all = dist(comm.all_gather(&mine(DType::F32)))?;
    let rows: Vec<f64> = (0..comm.world_size())
        .flat_map(|i| [i as f64 + 1.0, 2.0 * (i as f64 + 1.0)])
        .collect();
    ensure(
        all.shape() == [comm.world_size(), 2] && all.to_vec_f64() == rows,
        || format!("all_gather: {all:?}"),
    )?;
    dist(comm.barrier())?;
    let mut ids = Tensor::from_vec(vec![1u32], &[1]);
    ensure(comm.all_reduce_mean(&mut ids).is_err(), || {
        "a mean of u32 was accepted".into()
    })
}

/// Rank `r` starts from the model of seed `r`; after `DataParallel::new` every rank holds
/// rank 0's. Then the averaged gradient of `N` shards of `b` rows equals the gradient of
/// one process on the `N·b` rows (f64: only the order of the sums differs).
fn start_and_average(comm: &mut MpiCommunicator, bucket_bytes: usize) -> Check {
    let (rank, n) = (comm.rank(), comm.world_size());
    let sizes = [12, 16, 5];
    let mut model = Net::new(sizes, DType::F64, rank as u64);
    let mut ddp = dist(DataParallel::with_bucket_bytes(
        &mut *comm,
        &mut model,
        bucket_bytes,
    ))?;
    let reference = Net::new(sizes, DType::F64, 0);
    ensure(values(&model) == values(&reference), || {
        "parameters not rank 0's".into()
    })?;
    let (x, labels) = dataset(8 * n, sizes[0], sizes[2], DType::F64);
    let all: Vec<usize> = (0..8 * n).collect();
    let mine: Vec<usize> = all.iter().copied().skip(rank).step_by(n).collect();
    let (xs, ys) = batch(&x, &labels, &mine);
    let mut grad = gradient(model.loss_vjp(&xs, &ys));
    dist(ddp.average_gradients(&model, &mut grad))?;
    let (xa, ya) = batch(&x, &labels, &all);
    let whole = gradient(reference.loss_vjp(&xa, &ya));
    let (d, m) = max_diff(
        &grad_values(&model, &grad),
        &grad_values(&reference, &whole),
    );
    // Each element is a sum of 8·N products in f64 summed in another order: |error| is a
    // few ulps of the largest partial sum, far below 1e-13 for gradients of order 0.1.
    ensure(m > 1e-3 && d <= 1e-15, || {
        format!(
            "averaged gradient vs whole batch: max |diff| {d:e} (max |g| {m:e}), {} buckets",
            ddp.bucket_count()
        )
    })
}

/// The issue's equivalence: `N` ranks with batch 64 each give, after 20 SGD steps with
/// momentum, the parameters of one process with batch `64·N` (f32).
fn twenty_steps(comm: &mut MpiCommunicator) -> Check {
    let (rank, n) = (comm.rank(), comm.world_size());
    let (sizes, steps, per_rank, seed) = ([32, 64, 10], 20, 64, 3);
    let (x, labels) = dataset(steps * per_rank * n, sizes[0], sizes[2], DType::F32);
    let mut model = Net::new(sizes, DType::F32, 1);
    let mut ddp = dist(DataParallel::new(&mut *comm, &mut model))?;
    let mut sampler = DistributedSampler::new(x.shape()[0], per_rank, seed, rank, n)
        .map_err(|e| e.to_string())?;
    let mut opt = Sgd::new(0.1).momentum(0.9);
    for indices in sampler.epoch() {
        let (xb, yb) = batch(&x, &labels, &indices);
        let mut grad = gradient(model.loss_vjp(&xb, &yb));
        dist(ddp.average_gradients(&model, &mut grad))?;
        opt.step(&mut model, &grad);
    }
    let mut alone = Net::new(sizes, DType::F32, 1);
    let mut whole =
        BatchSampler::new(x.shape()[0], per_rank * n, seed).map_err(|e| e.to_string())?;
    let mut opt = Sgd::new(0.1).momentum(0.9);
    for indices in whole.epoch() {
        let (xb, yb) = batch(&x, &labels, indices);
        let grad = gradient(alone.loss_vjp(&xb, &yb));
        opt.step(&mut alone, &grad);
    }
    let a: Vec<Vec<f64>> = values(&model).into_iter().map(|(_, v)| v).collect();
    let b: Vec<Vec<f64>> = values(&alone).into_iter().map(|(_, v)| v).collect();
    let (d, m) = max_diff(&a, &b);
    // f32: the per-step gradients differ by the reordering of sums of 64·N products (a few
    // ulps, ~1e-7 relative) and 20 momentum steps carry those differences along; 1e-5 is
    // ~100 ulps of parameters of order 0.2, while a wrong average (a sum, a missing shard)
    // moves them by more than 1e-2.
    ensure(d <= 1e-6, || {
        format!("20 steps: max |diff| {d:e} (max |θ| {m:e})")
    })
}

/// A rank whose model differs is an error on every rank, naming the parameter.
fn mismatch(comm: &mut MpiCommunicator) -> Check {
    let last = comm.world_size() - 1;
    let hidden = if comm.rank() == last && last > 0 {
        17
    } else {
        16
    };
    let mut model = Net::new([12, hidden, 5], DType::F32, 0);
    match DataParallel::new(&mut *comm, &mut model) {
        Err(e @ DistError::ParameterMismatch { .. }) if last > 0 => {
            let text = e.to_string();
            ensure(
                text.contains("`w1` is [12, 16] (f32) on rank 0 and [12, 17] (f32) on rank"),
                || text,
            )
        }
        Ok(_) if last == 0 => Ok(()),
        other => Err(format!(
            "expected a mismatch naming `w1`, got {:?}",
            other.map(|_| ())
        )),
    }
}

/// The last rank arrives 1.5 s late at an all-reduce with a 1 s timeout: the others fail
/// after about 1 s, naming it. (It then arrives, and the abandoned all-reduce completes
/// while the others drop their communicator, so the job still ends cleanly.)
fn hang(mpi: &Mpi) -> Check {
    let mut comm = dist(mpi.world(Duration::from_secs(1)))?;
    let last = comm.world_size() - 1;
    if last == 0 {
        return Ok(());
    }
    let mut t = Tensor::from_vec(vec![1.0f32], &[1]);
    if comm.rank() == last {
        std::thread::sleep(Duration::from_millis(1500));
        comm.set_timeout(Duration::from_secs(10));
        return dist(comm.all_reduce_sum(&mut t));
    }
    let start = Instant::now();
    let result = comm.all_reduce_sum(&mut t);
    let waited = start.elapsed();
    let expected = format!("rank {last} never reached it");
    match result {
        Err(e) if e.to_string().contains(&expected) && waited < Duration::from_millis(1400) => {
            let again = comm.barrier();
            ensure(matches!(again, Err(DistError::Failed { .. })), || {
                format!("after a timeout: {again:?}")
            })
        }
        other => Err(format!(
            "expected a timeout naming rank {last} within 1.4 s, got {other:?} after {waited:?}"
        )),
    }
}

/// `ADJOINT_MPI_FAULT=die`: the last rank exits while the others wait in an all-reduce.
fn die(comm: &mut MpiCommunicator) -> ! {
    if comm.rank() == comm.world_size() - 1 {
        eprintln!(
            "rank {}: exiting on purpose (ADJOINT_MPI_FAULT=die)",
            comm.rank()
        );
        std::process::exit(3);
    }
    let mut t = Tensor::from_vec(vec![1.0f32], &[1]);
    let result = comm.all_reduce_sum(&mut t);
    eprintln!("rank {}: the all-reduce returned {result:?}", comm.rank());
    std::process::exit(if result.is_err() { 4 } else { 0 })
}

fn main() {
    let mpi = Mpi::init().expect("MPI initializes");
    let mut comm = mpi
        .world(Duration::from_secs(60))
        .expect("a world communicator");
    if std::env::var("ADJOINT_MPI_FAULT").as_deref() == Ok("die") {
        die(&mut comm);
    }
    let (rank, n) = (comm.rank(), comm.world_size());
    let checks: [(&str, &CheckFn); 5] = [
        ("collectives", &collectives),
        ("start_and_average (one bucket)", &|c| {
            start_and_average(c, 1 << 25)
        }),
        ("start_and_average (64-byte buckets)", &|c| {
            start_and_average(c, 64)
        }),
        ("twenty_steps", &twenty_steps),
        ("mismatch", &mismatch),
    ];
    let mut results: Vec<(&str, Check)> = Vec::new();
    for (name, check) in checks {
        results.push((name, check(&mut comm)));
    }
    results.push(("hang", hang(&mpi)));
    // A check passes when it passes on every rank.
    let flags: Vec<f64> = results
        .iter()
        .map(|(_, r)| f64::from(u8::from(r.is_err())))
        .collect();
    let mut failures = Tensor::from_vec(flags, &[results.len()]);
    comm.all_reduce_sum(&mut failures)
        .expect("the failure flags all-reduce");
    for ((name, result), failed_on) in results.iter().zip(failures.to_vec_f64()) {
        if let Err(why) = result {
            eprintln!("rank {rank}: {name} FAILED: {why}");
        } else if rank == 0 && failed_on == 0.0 {
            println!("test {name} ... ok ({n} ranks)");
        }
    }
    let failed = failures.to_vec_f64().iter().filter(|&&f| f > 0.0).count();
    if rank == 0 {
        println!(
            "distributed_mpi: {} passed, {failed} failed",
            results.len() - failed
        );
    }
    drop(comm);
    drop(mpi);
    std::process::exit(i32::from(failed > 0));
}
