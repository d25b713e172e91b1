//! [`SingleProcess`]: the world of one process.

use super::{Communicator, DistError, ReduceOp};
use crate::{Backend, Tensor};

/// The communicator of a world of one process (rank 0 of 1): every collective is the
/// identity (a sum or mean over one rank is the value itself; an all-gather stacks the one
/// tensor to `[1, ..shape]`). For tests, and for a training loop written once that runs
/// alone or under `mpirun`.
///
/// ```
/// use adjoint::distributed::{Communicator, SingleProcess};
/// use adjoint::prelude::*;
///
/// let mut world = SingleProcess;
/// let mut t = Tensor::from_vec(vec![1.0_f32, 2.0], &[2]);
/// Communicator::<Cpu>::all_reduce_mean(&mut world, &mut t)?;
/// assert_eq!(t.to_vec_f32(), [1.0, 2.0]);
/// assert_eq!(world.all_gather(&t)?.shape(), [1, 2]);
/// # Ok::<(), adjoint::distributed::DistError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SingleProcess;

impl<B: Backend> Communicator<B> for SingleProcess {
    fn rank(&self) -> usize {
        0
    }

    fn world_size(&self) -> usize {
        1
    }

    fn all_reduce(&mut self, tensors: &mut [Tensor<B>], op: ReduceOp) -> Result<(), DistError> {
        if op == ReduceOp::Mean
            && let Some(t) = tensors.iter().find(|t| !t.dtype().is_float())
        {
            return Err(DistError::InvalidArgument {
                op: "all_reduce",
                detail: format!("the mean of {:?} tensors is not defined", t.dtype()),
            });
        }
        Ok(())
    }

    fn broadcast(&mut self, _: &mut [Tensor<B>], root: usize) -> Result<(), DistError> {
        if root != 0 {
            return Err(DistError::InvalidArgument {
                op: "broadcast",
                detail: format!("root {root} is not a rank of a world of 1"),
            });
        }
        Ok(())
    }

    fn all_gather(&mut self, tensor: &Tensor<B>) -> Result<Tensor<B>, DistError> {
        let shape: Vec<usize> = std::iter::once(1)
            .chain(tensor.shape().iter().copied())
            .collect();
        Ok(tensor.reshape(&shape))
    }

    fn barrier(&mut self) -> Result<(), DistError> {
        Ok(())
    }
}
