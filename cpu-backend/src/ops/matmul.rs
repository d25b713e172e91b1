//! Matrix products on `matrixmultiply` (threaded over both cores by its `threading` feature).
//!
//! Transposed operands are not copied: `op(A)` is read through swapped row/column strides.

use crate::{CpuStorage, MatmulSpec};

/// `C[b] = op(A[b]) · op(B[b])` for every batch `b` (see [`MatmulSpec`]).
pub fn matmul(lhs: &CpuStorage, rhs: &CpuStorage, spec: &MatmulSpec) -> CpuStorage {
    match (lhs, rhs) {
        (CpuStorage::F32(a), CpuStorage::F32(b)) => {
            let mut c = vec![0f32; spec.batch * spec.m * spec.n];
            run(
                spec,
                a,
                b,
                &mut c,
                |m, k, n, a, (ar, ac), b, (br, bc), c| unsafe {
                    // SAFETY: `run` passes pointers into buffers whose lengths were checked
                    // against these dimensions and strides.
                    matrixmultiply::sgemm(
                        m, k, n, 1.0, a, ar, ac, b, br, bc, 0.0, c, n as isize, 1,
                    );
                },
            );
            CpuStorage::F32(c)
        }
        (CpuStorage::F64(a), CpuStorage::F64(b)) => {
            let mut c = vec![0f64; spec.batch * spec.m * spec.n];
            run(
                spec,
                a,
                b,
                &mut c,
                |m, k, n, a, (ar, ac), b, (br, bc), c| unsafe {
                    // SAFETY: as above.
                    matrixmultiply::dgemm(
                        m, k, n, 1.0, a, ar, ac, b, br, bc, 0.0, c, n as isize, 1,
                    );
                },
            );
            CpuStorage::F64(c)
        }
        (a, b) => panic!(
            "matmul: dtypes {:?} and {:?} differ or are not float",
            a.dtype(),
            b.dtype()
        ),
    }
}

type Strides = (isize, isize);

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
