//! The primitives of [`Cpu`](crate::Cpu), one module per family.

pub mod bits;
pub mod conv;
#[cfg(target_arch = "x86_64")]
pub(crate) mod conv_direct;
pub mod conv_gemm;
mod dots;
pub mod elementwise;
mod float;
mod gemm;
#[cfg(target_arch = "x86_64")]
mod gemm_avx512;
pub mod index;
pub mod layout;
pub mod math;
pub mod matmul;
pub mod pool;
pub mod random;
pub mod recurrence;
pub mod reduce;
pub(crate) mod simd;
pub mod update;

use ndarray::{ArrayD, ArrayViewD, IxDyn};

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
