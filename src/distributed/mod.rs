//! Data-parallel training across processes, with the semantics of PyTorch's
//! `DistributedDataParallel`: every process (a *rank*) holds the whole model, trains on its
//! own shard of each batch, and the ranks average their gradients before the (unchanged)
//! optimizer step, so that they all take the same step and stay identical.
//!
//! * [`Communicator`]: rank, world size and the collectives (all-reduce sum or mean in place,
//!   broadcast, all-gather, barrier) over tensors. [`SingleProcess`] is the world of one
//!   process (every collective is the identity); `mpi::MpiCommunicator` (feature `mpi`)
//!   runs them on an MPI library (Open MPI, MPICH) over `Tensor<Cpu>`.
//! * [`DataParallel`]: at start, checks that every rank has the same parameters (names,
//!   shapes, dtypes; an error names the first parameter that differs) and copies rank 0's
//!   values to all; after each backward pass,
//!   [`average_gradients`](DataParallel::average_gradients) replaces the gradient by its mean
//!   over the ranks, one all-reduce per bucket of about 25 MiB (PyTorch's `bucket_cap_mb`).
//! * [`DistributedSampler`]: each rank's share of every batch of a seeded shuffle, so that
//!   `N` ranks with batches of `b` see exactly the batches of `N·b` that one process would.
//!
//! ```
//! use adjoint::distributed::{DataParallel, DistributedSampler, SingleProcess};
//! use adjoint::optim::{Optimizer, Sgd};
//! use adjoint::prelude::*;
//!
//! #[derive(Differentiable)]
//! struct Line {
//!     w: Tensor,
//!     b: Tensor,
//! }
//!
//! #[differentiable]
//! fn loss(m: &Line, x: &Tensor, y: &Tensor) -> Tensor {
//!     mse(&(x * &m.w + &m.b), y)
//! }
//!
//! let xs: Vec<f32> = (0..8).map(|i| i as f32).collect();
//! let mut model = Line { w: Tensor::zeros(&[1]), b: Tensor::zeros(&[1]) };
//! // `MpiCommunicator` in place of `SingleProcess` runs the same loop on every MPI rank.
//! let mut ddp = DataParallel::new(SingleProcess, &mut model)?;
//! let mut sampler = DistributedSampler::new(xs.len(), 4, 0, ddp.rank(), ddp.world_size())?;
//! let mut opt = Sgd::new(0.02);
//! for _ in 0..200 {
//!     for batch in sampler.epoch() {
//!         let x: Vec<f32> = batch.iter().map(|&i| xs[i]).collect();
//!         let x = Tensor::from_vec(x, &[batch.len()]);
//!         let y = &x * 2.0 + 1.0;
//!         let (mut grad, _, _) = gradient(loss_vjp(&model, &x, &y));
//!         ddp.average_gradients(&model, &mut grad)?;
//!         opt.step(&mut model, &grad);
//!     }
//! }
//! assert!((model.w.to_scalar() - 2.0).abs() < 1e-2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The gradients are averaged after the pullback has returned, not while it runs: a pullback
//! is one closure that returns the whole tangent at its end, with no signal when one
//! parameter's gradient is final, so PyTorch's overlap of the all-reduce of the last layers
//! with the backward pass of the first is not possible yet (see `docs/distributed.md`).

mod ddp;
mod error;
#[cfg(feature = "mpi")]
pub mod mpi;
mod sampler;
mod signature;
mod single;

pub use ddp::{DEFAULT_BUCKET_BYTES, DataParallel};
pub use error::DistError;
pub use sampler::DistributedSampler;
pub use single::SingleProcess;

use crate::{Backend, Cpu, Tensor};

/// How [`Communicator::all_reduce`] combines the ranks' values, element by element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// `x ← Σ_r x_r` over the ranks `r`.
    Sum,
    /// `x ← (1/N) Σ_r x_r` over the `N` ranks (float tensors only).
    Mean,
}

/// A group of processes that run the same program, each identified by its rank
/// `0..world_size()`, and the collective operations among them.
///
/// Every rank must call the same collectives in the same order with tensors of the same
/// shapes and dtypes (as in MPI and NCCL); a rank that does not arrive within the
/// implementation's timeout makes the others fail with [`DistError::Timeout`], naming it.
///
/// The slice arguments are *coalesced*: the tensors travel as one message (a bucket), and all
/// of them must have the same dtype.
pub trait Communicator<B: Backend = Cpu> {
    /// This process's rank, in `0..world_size()`.
    fn rank(&self) -> usize;

    /// The number of processes.
    fn world_size(&self) -> usize;

    /// Replaces each tensor by the sum (or the mean) over the ranks of that tensor, in place:
    /// `x ← Σ_r x_r` or `x ← (1/N) Σ_r x_r`. The result is the same on every rank.
    fn all_reduce(&mut self, tensors: &mut [Tensor<B>], op: ReduceOp) -> Result<(), DistError>;

    /// Replaces each tensor by rank `root`'s tensor, in place (`x ← x_root`).
    fn broadcast(&mut self, tensors: &mut [Tensor<B>], root: usize) -> Result<(), DistError>;

    /// Every rank's `tensor`, stacked along a new leading axis: shape `[N, ..shape]`, row `r`
    /// from rank `r`. Every rank must pass the same shape.
    fn all_gather(&mut self, tensor: &Tensor<B>) -> Result<Tensor<B>, DistError>;

    /// Returns when every rank has called it.
    fn barrier(&mut self) -> Result<(), DistError>;

    /// [`all_reduce`](Communicator::all_reduce) of one tensor with [`ReduceOp::Sum`].
    fn all_reduce_sum(&mut self, tensor: &mut Tensor<B>) -> Result<(), DistError> {
        self.all_reduce(std::slice::from_mut(tensor), ReduceOp::Sum)
    }

    /// [`all_reduce`](Communicator::all_reduce) of one tensor with [`ReduceOp::Mean`].
    fn all_reduce_mean(&mut self, tensor: &mut Tensor<B>) -> Result<(), DistError> {
        self.all_reduce(std::slice::from_mut(tensor), ReduceOp::Mean)
    }

    /// Whether this is rank 0 (the one that logs and saves, by convention).
    fn is_root(&self) -> bool {
        self.rank() == 0
    }
}

/// A communicator lent for a while (to a [`DataParallel`], a check) is a communicator.
impl<B: Backend, C: Communicator<B> + ?Sized> Communicator<B> for &mut C {
    fn rank(&self) -> usize {
        (**self).rank()
    }

    fn world_size(&self) -> usize {
        (**self).world_size()
    }

    fn all_reduce(&mut self, tensors: &mut [Tensor<B>], op: ReduceOp) -> Result<(), DistError> {
        (**self).all_reduce(tensors, op)
    }

    fn broadcast(&mut self, tensors: &mut [Tensor<B>], root: usize) -> Result<(), DistError> {
        (**self).broadcast(tensors, root)
    }

    fn all_gather(&mut self, tensor: &Tensor<B>) -> Result<Tensor<B>, DistError> {
        (**self).all_gather(tensor)
    }

    fn barrier(&mut self) -> Result<(), DistError> {
        (**self).barrier()
    }
}
