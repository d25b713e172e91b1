//! Matrix products on `matrixmultiply` (threaded over both cores by its `threading` feature).
//!
//! Transposed operands are not copied: `op(A)` is read through swapped row/column strides.

use crate::{CpuStorage, MatmulSpec};

/// `C[b] = op(A[b]) · op(B[b])` for every batch `b` (see [`MatmulSpec`]).
pub fn matmul(lhs: &CpuStorage, rhs: &CpuStorage, spec: &MatmulSpec) -> CpuStorage {
    match (lhs, rhs) {
        (CpuStorage::F32(a), CpuStorage::F32(b)) => CpuStorage::F32(product(spec, a, b)),
        (CpuStorage::F64(a), CpuStorage::F64(b)) => CpuStorage::F64(product(spec, a, b)),
        (a, b) => panic!(
            "matmul: dtypes {:?} and {:?} differ or are not float",
            a.dtype(),
            b.dtype()
        ),
    }
}

type Strides = (isize, isize);

/// A float type with a `matrixmultiply` kernel.
trait Gemm: Copy + Default {
    /// `C = A · B` for one batch.
    ///
    /// # Safety
    /// The pointers must address buffers that cover `m × k`, `k × n` and `m × n` elements
    /// under the given strides (`C` row-major with row stride `n`).
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        a_strides: Strides,
        b: *const Self,
        b_strides: Strides,
        c: *mut Self,
    );
}

macro_rules! gemm {
    ($t:ty, $kernel:ident) => {
        impl Gemm for $t {
            unsafe fn gemm(
                m: usize,
                k: usize,
                n: usize,
                a: *const $t,
                (ar, ac): Strides,
                b: *const $t,
                (br, bc): Strides,
                c: *mut $t,
            ) {
                // SAFETY: the caller's contract covers exactly what the kernel reads and writes.
                unsafe {
                    matrixmultiply::$kernel(
                        m, k, n, 1.0, a, ar, ac, b, br, bc, 0.0, c, n as isize, 1,
                    );
                }
            }
        }
    };
}
gemm!(f32, sgemm);
gemm!(f64, dgemm);

/// The batched product of two buffers of one float type.
fn product<T: Gemm>(spec: &MatmulSpec, a: &[T], b: &[T]) -> Vec<T> {
    let mut c = vec![T::default(); spec.batch * spec.m * spec.n];
    run(
        spec,
        a,
        b,
        &mut c,
        |m, k, n, a, a_strides, b, b_strides, c| unsafe {
            // SAFETY: `run` passes pointers into buffers whose lengths were checked
            // against these dimensions and strides.
            T::gemm(m, k, n, a, a_strides, b, b_strides, c)
        },
    );
    c
}

/// Calls `kernel` once per batch with raw pointers and (row, column) strides.
#[allow(clippy::type_complexity)]
fn run<T>(
    spec: &MatmulSpec,
    a: &[T],
    b: &[T],
    c: &mut [T],
    kernel: impl Fn(usize, usize, usize, *const T, Strides, *const T, Strides, *mut T),
) {
    let MatmulSpec { batch, m, k, n, .. } = *spec;
    let a_strides = if spec.lhs_transposed {
        (1, m as isize)
    } else {
        (k as isize, 1)
    };
    let b_strides = if spec.rhs_transposed {
        (1, k as isize)
    } else {
        (n as isize, 1)
    };
    let last = batch.saturating_sub(1);
    assert!(
        a.len() >= last * spec.lhs_batch_stride + m * k,
        "matmul: lhs buffer too short"
    );
    assert!(
        b.len() >= last * spec.rhs_batch_stride + k * n,
        "matmul: rhs buffer too short"
    );
    if m == 0 || n == 0 {
        return;
    }
    for i in 0..batch {
        let a_ptr = a[i * spec.lhs_batch_stride..].as_ptr();
        let b_ptr = b[i * spec.rhs_batch_stride..].as_ptr();
        let c_ptr = c[i * m * n..].as_mut_ptr();
        kernel(m, k, n, a_ptr, a_strides, b_ptr, b_strides, c_ptr);
    }
}
