//! The primitives of [`Cpu`](crate::Cpu), one module per family.

pub mod bits;
pub mod conv;
pub mod cross_entropy;
pub mod elementwise;
mod float;
mod gemm;
pub mod index;
pub mod layout;
pub mod math;
pub mod matmul;
pub mod pool;
pub mod random;
pub mod recurrence;
pub mod reduce;
pub(crate) mod simd;
pub mod softmax;
pub mod update;

use adjoint_backend::Real;
use ndarray::{ArrayD, ArrayViewD, IxDyn};
use std::mem::MaybeUninit;

/// A read-only `ndarray` view of a contiguous row-major buffer.
pub(crate) fn view<'a, T>(data: &'a [T], shape: &[usize]) -> ArrayViewD<'a, T> {
    ArrayViewD::from_shape(IxDyn(shape), data).expect("buffer length matches its shape")
}

/// The elements of an array in row-major order (a copy only if it is not standard layout).
pub(crate) fn into_vec<T: Clone>(a: ArrayD<T>) -> Vec<T> {
    if a.is_standard_layout() {
        let (v, offset) = a.into_raw_vec_and_offset();
        debug_assert!(offset.unwrap_or(0) == 0);
        v
    } else {
        a.iter().cloned().collect()
    }
}

/// `block` filled with zeros, as initialized elements: an output that is summed into, zeroed
/// by the task that sums into it just before it does, while the block is in its cache (a
/// zeroed allocation of the whole output writes it all out to memory first: `memset` was
/// 3.9% of the MNIST CNN step's samples, 2.3% once the convolution's outputs were no longer
/// zeroed that way, about half of which was then the max-pool tangent's).
pub(crate) fn zeroed<T: Real>(block: &mut [MaybeUninit<T>]) -> &mut [T] {
    block.fill(MaybeUninit::new(T::zero()));
    // SAFETY: every element was just written, and `MaybeUninit<T>` has `T`'s layout.
    unsafe { &mut *(std::ptr::from_mut(block) as *mut [T]) }
}
