//! [`DataParallel`]: the parameters made equal at start, the gradients averaged in buckets.

use super::signature::{self, ParamInfo};
use super::{Communicator, DistError, ReduceOp};
use crate::{Backend, DType, ParamPath, Parameters, Tensor, TensorTangent};
use std::ops::Range;

/// The default bucket size, in bytes: PyTorch's `bucket_cap_mb = 25` (25 MiB).
pub const DEFAULT_BUCKET_BYTES: usize = 25 * 1024 * 1024;

/// Data parallelism with the semantics of PyTorch's `DistributedDataParallel`, over a
/// [`Communicator`] `C`.
///
/// * [`new`](DataParallel::new) checks that every rank's model has the same parameters (the
///   same dotted paths, shapes and dtypes, in the same order: an error names the first
///   parameter that differs) and copies rank 0's parameters to every rank, so that all ranks
///   start from the same model whatever their initialization.
/// * [`average_gradients`](DataParallel::average_gradients), between the backward pass and
///   the optimizer step, replaces each rank's gradient `g_r` by the mean `(1/N) Σ_r g_r`:
///   the gradients are flattened in the order of
///   [`Parameters::visit_grad_mut`] (last layer first, as PyTorch's buckets) into buckets
///   of at most `bucket_bytes` (one dtype per bucket; a larger tensor is a bucket of its
///   own), one all-reduce per bucket. With the loss a mean over each rank's batch of `b`
///   examples, the averaged gradient is that of the mean loss over the `N·b` examples of all
///   ranks: the gradient one process would compute on the concatenated batch.
/// * The optimizer step is the ordinary one, on every rank: with equal parameters and equal
///   gradients, every rank takes the same step.
///
/// In a world of one process, `average_gradients` returns at once and leaves the gradient
/// as it is (a weight's gradient may stay an unevaluated product, which plain SGD applies
/// with one GEMM).
#[derive(Debug)]
pub struct DataParallel<C> {
    comm: C,
    rank: usize,
    world_size: usize,
    /// The bytes and dtype of each gradient, in `visit_grad_mut`'s order.
    layout: Vec<(usize, DType)>,
    /// Ranges of `layout`, one all-reduce each.
    buckets: Vec<Range<usize>>,
}

impl<C> DataParallel<C> {
    /// Starts data parallelism on `model` with buckets of [`DEFAULT_BUCKET_BYTES`]: see
    /// [`with_bucket_bytes`](DataParallel::with_bucket_bytes).
    pub fn new<B: Backend, M: Parameters<B>>(comm: C, model: &mut M) -> Result<Self, DistError>
    where
        C: Communicator<B>,
    {
        Self::with_bucket_bytes(comm, model, DEFAULT_BUCKET_BYTES)
    }

    /// Starts data parallelism on `model`: checks that every rank has the same parameters
    /// ([`DistError::ParameterMismatch`] otherwise, on every rank) and broadcasts rank 0's
    /// parameters to all (in buckets of `bucket_bytes` too). Every rank must call it.
    ///
    /// # Panics
    /// If `bucket_bytes` is zero.
    pub fn with_bucket_bytes<B: Backend, M: Parameters<B>>(
        mut comm: C,
        model: &mut M,
        bucket_bytes: usize,
    ) -> Result<Self, DistError>
    where
        C: Communicator<B>,
    {
        assert!(
            bucket_bytes > 0,
            "data parallel: the bucket size must be positive"
        );
        let mut infos = Vec::new();
        let mut device = None;
        model.visit(&mut ParamPath::new(), &mut |name, t| {
            device.get_or_insert_with(|| t.device());
            infos.push(ParamInfo {
                name: name.to_owned(),
                shape: t.shape().to_vec(),
                dtype: t.dtype(),
            });
        });
        signature::check(&mut comm, &infos, &device.unwrap_or_default())?;
        broadcast_parameters(&mut comm, model, bucket_bytes)?;
        let mut layout = Vec::new();
        model.visit_grad_mut(
            &mut model.zero_tangent(),
            &mut ParamPath::new(),
            &mut |_, p, _| {
                layout.push((p.len() * p.dtype().size_in_bytes(), p.dtype()));
            },
        );
        let buckets = buckets(&layout, bucket_bytes);
        Ok(DataParallel {
            rank: comm.rank(),
            world_size: comm.world_size(),
            comm,
            layout,
            buckets,
        })
    }

    /// Replaces `grad`, the gradient of `model` from this rank's batch, by the mean of the
    /// ranks' gradients, `g ← (1/N) Σ_r g_r`, one all-reduce per bucket. Every rank must call
    /// it once per step. A parameter without a gradient (the symbolic zero) counts as zeros.
    ///
    /// On an error the gradient is left as it was where the all-reduce had not run yet.
    pub fn average_gradients<B: Backend, M: Parameters<B>>(
        &mut self,
        model: &M,
        grad: &mut M::Tangent,
    ) -> Result<(), DistError>
    where
        C: Communicator<B>,
    {
        if self.world_size == 1 {
            return Ok(());
        }
        let mut grads = Vec::with_capacity(self.layout.len());
        model.visit_grad_mut(grad, &mut ParamPath::new(), &mut |_, p, g| {
            let g = std::mem::replace(g, TensorTangent::Zero);
            grads.push(g.dense().unwrap_or_else(|| p.zeros_like()));
        });
        let result = self.check_layout(&grads).and_then(|()| {
            self.buckets.iter().try_for_each(|range| {
                self.comm
                    .all_reduce(&mut grads[range.clone()], ReduceOp::Mean)
            })
        });
        let mut averaged = grads.into_iter();
        model.visit_grad_mut(grad, &mut ParamPath::new(), &mut |_, _, g| {
            if let Some(t) = averaged.next() {
                *g = TensorTangent::Dense(t);
            }
        });
        result
    }

    /// That the gradients are those of the model data parallelism started with.
    fn check_layout<B: Backend>(&self, grads: &[Tensor<B>]) -> Result<(), DistError> {
        let got: Vec<(usize, DType)> = grads
            .iter()
            .map(|g| (g.len() * g.dtype().size_in_bytes(), g.dtype()))
            .collect();
        if got == self.layout {
            return Ok(());
        }
        Err(DistError::InvalidArgument {
            op: "average_gradients",
            detail: format!(
                "the gradient has {} parameter tensors ({} bytes), the model had {} ({} bytes) \
                 when data parallelism started",
                got.len(),
                got.iter().map(|g| g.0).sum::<usize>(),
                self.layout.len(),
                self.layout.iter().map(|g| g.0).sum::<usize>()
            ),
        })
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of processes.
    pub fn world_size(&self) -> usize {
        self.world_size
    }

    /// Whether this is rank 0, the rank that logs and saves.
    pub fn is_root(&self) -> bool {
        self.rank == 0
    }

    /// The number of all-reduces per step.
    pub fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    /// The communicator.
    pub fn comm(&self) -> &C {
        &self.comm
    }

    /// The communicator, for collectives of the caller's own (a loss to average for logging).
    pub fn comm_mut(&mut self) -> &mut C {
        &mut self.comm
    }

    /// The communicator back.
    pub fn into_inner(self) -> C {
        self.comm
    }
}

/// Copies rank 0's parameters to every rank, in buckets of `bucket_bytes`.
fn broadcast_parameters<B: Backend, C: Communicator<B>, M: Parameters<B>>(
    comm: &mut C,
    model: &mut M,
    bucket_bytes: usize,
) -> Result<(), DistError> {
    if comm.world_size() == 1 {
        return Ok(());
    }
    let mut params = Vec::new();
    model.visit(&mut ParamPath::new(), &mut |_, t| params.push(t.clone()));
    let layout: Vec<(usize, DType)> = params
        .iter()
        .map(|t| (t.len() * t.dtype().size_in_bytes(), t.dtype()))
        .collect();
    for range in buckets(&layout, bucket_bytes) {
        comm.broadcast(&mut params[range], 0)?;
    }
    let mut received = params.into_iter();
    model.visit_each_mut(&mut ParamPath::new(), &mut |_, t| {
        if let Some(r) = received.next() {
            *t = r;
        }
    });
    Ok(())
}

/// Consecutive ranges of `sizes` (bytes, dtype) of one dtype and at most `cap` bytes each; a
/// tensor larger than `cap` is a range of its own.
fn buckets(sizes: &[(usize, DType)], cap: usize) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut bytes = 0;
    for (i, &(size, dtype)) in sizes.iter().enumerate() {
        match out.last_mut() {
            Some(last) if sizes[last.start].1 == dtype && bytes + size <= cap => {
                last.end = i + 1;
                bytes += size;
            }
            _ => {
                out.push(i..i + 1);
                bytes = size;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cpu;

    /// Rank 0 of two whose peer holds zeros everywhere: a mean halves, a broadcast from 0
    /// keeps. Records the length of every all-reduce.
    #[derive(Default)]
    struct ZeroPeer {
        reduced: Vec<usize>,
    }

    impl Communicator<Cpu> for ZeroPeer {
        fn rank(&self) -> usize {
            0
        }
        fn world_size(&self) -> usize {
            2
        }
        fn all_reduce(&mut self, ts: &mut [Tensor], op: ReduceOp) -> Result<(), DistError> {
            assert_eq!(op, ReduceOp::Mean);
            self.reduced.push(ts.iter().map(Tensor::len).sum());
            ts.iter_mut().for_each(|t| *t = &*t * 0.5);
            Ok(())
        }
        fn broadcast(&mut self, _: &mut [Tensor], root: usize) -> Result<(), DistError> {
            assert_eq!(root, 0);
            Ok(())
        }
        fn all_gather(&mut self, t: &Tensor) -> Result<Tensor, DistError> {
            // The peer describes the same parameters as this rank.
            let v = t.to_vec_u32();
            Ok(Tensor::from_vec([v.clone(), v].concat(), &[2, t.len()]))
        }
        fn barrier(&mut self) -> Result<(), DistError> {
            Ok(())
        }
    }

    #[test]
    fn gradients_are_averaged_per_bucket_and_a_zero_counts_as_zeros() {
        let mut model = vec![Tensor::ones(&[2, 3]), Tensor::ones(&[3])];
        let g = Tensor::from_vec(vec![2.0_f32, 4.0, 6.0, 8.0, 10.0, 12.0], &[2, 3]);
        for (cap, reduced) in [(DEFAULT_BUCKET_BYTES, vec![9]), (8, vec![3, 6])] {
            let mut ddp =
                DataParallel::with_bucket_bytes(ZeroPeer::default(), &mut model, cap).unwrap();
            let mut grad = vec![TensorTangent::Dense(g.clone()), TensorTangent::Zero];
            ddp.average_gradients(&model, &mut grad).unwrap();
            assert_eq!(
                grad[0].dense_ref().unwrap().to_vec_f32(),
                [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
            );
            assert_eq!(grad[1].dense_ref().unwrap().to_vec_f32(), [0.0; 3]);
            // The last parameter first, as the backward pass finishes them.
            assert_eq!(ddp.into_inner().reduced, reduced);
        }
    }

    #[test]
    fn a_gradient_of_another_model_is_an_error() {
        let mut model = vec![Tensor::ones(&[2])];
        let mut ddp = DataParallel::new(ZeroPeer::default(), &mut model).unwrap();
        let other = vec![Tensor::ones(&[2]), Tensor::ones(&[1])];
        let mut grad = vec![TensorTangent::Zero, TensorTangent::Zero];
        let err = ddp.average_gradients(&other, &mut grad).unwrap_err();
        assert_eq!(
            err.to_string(),
            "average_gradients: the gradient has 2 parameter tensors (12 bytes), the model had \
             1 (8 bytes) when data parallelism started"
        );
    }

    #[test]
    fn buckets_split_at_the_cap_and_at_a_change_of_dtype() {
        let f = |n| (n, DType::F32);
        let sizes = [
            f(10),
            f(20),
            f(5),
            f(40),
            (8, DType::F64),
            (8, DType::F64),
            f(1),
        ];
        assert_eq!(buckets(&sizes, 30), [0..2, 2..3, 3..4, 4..6, 6..7]);
        assert_eq!(buckets(&sizes, 1000), [0..4, 4..6, 6..7]);
        assert_eq!(buckets(&sizes, 1).len(), sizes.len());
        assert!(buckets(&[], 30).is_empty());
    }
}
