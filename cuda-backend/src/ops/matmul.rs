//! Matrix products through cuBLAS: plain GEMM for one product, strided batched GEMM for a
//! batch.
//!
//! cuBLAS is column-major; a row-major `C = A·B` is the column-major `Cᵀ = Bᵀ·Aᵀ`, so every
//! product passes the right operand first and swaps `m` and `n`. No operand is copied or
//! transposed in memory: transposition travels as cuBLAS's `op` flags.

use super::elementwise::bias_act_in_place;
use super::float_map2;
use crate::CudaStorage;
use crate::device::DeviceState;
use crate::storage::{Buffer, Float, alloc, zeros};
use adjoint_backend::{MatmulSpec, UnaryOp};
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{GemmConfig, StridedBatchedConfig};
use cudarc::driver::{CudaSlice, CudaView, CudaViewMut};
use std::ffi::c_int;

/// One row-major batched product `out[b] = β·out[b] + α·op(lhs[b])·op(rhs[b])` of
/// `[m, k]·[k, n]`, with the batch strides of each operand (0 repeats a matrix).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gemm {
    pub batch: usize,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    /// `lhs` is stored `[k, m]` (so it is used transposed).
    pub lhs_transposed: bool,
    /// `rhs` is stored `[n, k]`.
    pub rhs_transposed: bool,
    pub lhs_stride: usize,
    pub rhs_stride: usize,
    pub out_stride: usize,
    pub alpha: f64,
    pub beta: f64,
}

fn int(v: usize, what: &str) -> c_int {
    c_int::try_from(v).unwrap_or_else(|_| panic!("matmul: {what} = {v} exceeds cuBLAS's int"))
}

impl Gemm {
    /// The cuBLAS call of this product, as a strided batched configuration (a batch of one
    /// runs as a plain GEMM): `A` is [`Gemm::operands`]'s first, `B` its second.
    pub(crate) fn cublas<T: Float>(&self) -> StridedBatchedConfig<T> {
        let op = |t: bool| {
            if t {
                cublasOperation_t::CUBLAS_OP_T
            } else {
                cublasOperation_t::CUBLAS_OP_N
            }
        };
        StridedBatchedConfig {
            gemm: GemmConfig {
                transa: op(self.rhs_transposed),
                transb: op(self.lhs_transposed),
                m: int(self.n, "n"),
                n: int(self.m, "m"),
                k: int(self.k, "k"),
                alpha: T::from_f64(self.alpha),
                lda: int(if self.rhs_transposed { self.k } else { self.n }, "ld"),
                ldb: int(if self.lhs_transposed { self.m } else { self.k }, "ld"),
                beta: T::from_f64(self.beta),
                ldc: int(self.n, "ld"),
            },
            batch_size: int(self.batch, "batch"),
            stride_a: self.rhs_stride as i64,
            stride_b: self.lhs_stride as i64,
            stride_c: self.out_stride as i64,
        }
    }

    /// cuBLAS's `(A, B)` from the row-major `(lhs, rhs)`: the right operand goes first.
    pub(crate) fn operands<X>(lhs: X, rhs: X) -> (X, X) {
        (rhs, lhs)
    }

    /// Runs the product on the device's stream.
    pub(crate) fn run<T: Float>(
        &self,
        state: &DeviceState,
        lhs: &CudaView<'_, T>,
        rhs: &CudaView<'_, T>,
        out: &mut CudaViewMut<'_, T>,
    ) {
        let cfg = self.cublas::<T>();
        let (a, b) = Gemm::operands(lhs, rhs);
        // cuBLAS runs in the calling thread's current context, which must be the device's.
        crate::storage::check(state.stream.context().bind_to_thread(), "matmul");
        let blas = state.blas();
        // SAFETY: `m`, `n`, `k`, the leading dimensions and the batch strides describe
        // matrices inside `lhs`, `rhs` and `out` (checked by the callers' shape validation),
        // and cuBLAS runs on the device's stream, after the writes of its inputs.
        unsafe {
            if self.batch == 1 {
                T::gemm(&blas, cfg.gemm, a, b, out)
            } else {
                T::gemm_batched(&blas, cfg, a, b, out)
            }
        }
        .unwrap_or_else(|e| panic!("CUDA matmul ({self:?}): {e}"));
    }
}

/// The product described by `spec` as a [`Gemm`].
fn gemm_of(s: &MatmulSpec) -> Gemm {
    Gemm {
        batch: s.batch,
        m: s.m,
        k: s.k,
        n: s.n,
        lhs_transposed: s.lhs_transposed,
        rhs_transposed: s.rhs_transposed,
        lhs_stride: s.lhs_batch_stride,
        rhs_stride: s.rhs_batch_stride,
        out_stride: s.m * s.n,
        alpha: 1.0,
        beta: 0.0,
    }
}

/// The batched product described by `spec` (see [`MatmulSpec`]).
pub(crate) fn matmul(lhs: &CudaStorage, rhs: &CudaStorage, spec: &MatmulSpec) -> CudaStorage {
    float_map2!(lhs, rhs, "matmul", |a, b| {
        matmul_typed(lhs.device.state(), a, b, spec)
    })
}

fn matmul_typed<T: Float>(
    state: &DeviceState,
    lhs: &CudaSlice<T>,
    rhs: &CudaSlice<T>,
    s: &MatmulSpec,
) -> CudaSlice<T> {
    let len = s.batch * s.m * s.n;
    if s.k == 0 || len == 0 {
        return zeros(&state.stream, len, "matmul");
    }
    let mut out = alloc::<T>(&state.stream, len, "matmul");
    gemm_of(s).run(
        state,
        &lhs.as_view(),
        &rhs.as_view(),
        &mut out.as_view_mut(),
    );
    out
}

/// `out += α·op(lhs)·op(rhs)` for the products of `spec`: one GEMM with `β = 1` into `out`.
pub(crate) fn matmul_acc(
    lhs: &CudaStorage,
    rhs: &CudaStorage,
    spec: &MatmulSpec,
    alpha: f64,
    out: &mut CudaStorage,
) {
    let state = lhs.device.state();
    let len = spec.batch * spec.m * spec.n;
    assert_eq!(
        out.len(),
        len,
        "matmul_acc: the accumulator holds {} elements, the products {len}",
        out.len()
    );
    if spec.k == 0 || len == 0 {
        return;
    }
    let gemm = Gemm {
        alpha,
        beta: 1.0,
        ..gemm_of(spec)
    };
    match (&lhs.buf, &rhs.buf, &mut out.buf) {
        (Buffer::F32(a), Buffer::F32(b), Buffer::F32(c)) => {
            gemm.run(state, &a.as_view(), &b.as_view(), &mut c.as_view_mut())
        }
        (Buffer::F64(a), Buffer::F64(b), Buffer::F64(c)) => {
            gemm.run(state, &a.as_view(), &b.as_view(), &mut c.as_view_mut())
        }
        _ => panic!(
            "matmul_acc: dtypes {:?}, {:?} and accumulator {:?} differ or are not float",
            lhs.dtype(),
            rhs.dtype(),
            out.dtype()
        ),
    }
}

/// `act(op(lhs)·op(rhs) + bias)`: the products, then one in-place pass adding the bias to
/// every row and applying the activation (the same scalar rules as `binary(Add)` and
/// `unary(act)`, so the default's bits, in one launch where it takes two).
pub(crate) fn matmul_epilogue(
    lhs: &CudaStorage,
    rhs: &CudaStorage,
    spec: &MatmulSpec,
    bias: &CudaStorage,
    act: Option<UnaryOp>,
) -> CudaStorage {
    let mut z = matmul(lhs, rhs, spec);
    let state = lhs.device.state();
    match (&mut z.buf, &bias.buf) {
        (Buffer::F32(y), Buffer::F32(b)) => bias_act_in_place(state, y, b, spec.n, act),
        (Buffer::F64(y), Buffer::F64(b)) => bias_act_in_place(state, y, b, spec.n, act),
        _ => panic!(
            "matmul_epilogue: the product is {:?}, the bias {:?}",
            z.dtype(),
            bias.dtype()
        ),
    }
    z
}

/// cuBLAS's column-major strided batched GEMM on host slices: the oracle that checks, without
/// a GPU, that the configurations this crate builds compute the row-major products it means.
#[cfg(test)]
pub(crate) fn emulate(cfg: &StridedBatchedConfig<f64>, a: &[f64], b: &[f64], c: &mut [f64]) {
    let g = &cfg.gemm;
    let (m, n, k) = (g.m as usize, g.n as usize, g.k as usize);
    let (lda, ldb, ldc) = (g.lda as usize, g.ldb as usize, g.ldc as usize);
    let t = |op: cublasOperation_t| op == cublasOperation_t::CUBLAS_OP_T;
    for batch in 0..cfg.batch_size as usize {
        let (sa, sb, sc) = (
            batch * cfg.stride_a as usize,
            batch * cfg.stride_b as usize,
            batch * cfg.stride_c as usize,
        );
        for i in 0..m {
            for j in 0..n {
                let sum: f64 = (0..k)
                    .map(|l| {
                        let x = if t(g.transa) {
                            a[sa + l + i * lda]
                        } else {
                            a[sa + i + l * lda]
                        };
                        let y = if t(g.transb) {
                            b[sb + j + l * ldb]
                        } else {
                            b[sb + l + j * ldb]
                        };
                        x * y
                    })
                    .sum();
                let out = &mut c[sc + i + j * ldc];
                *out = g.alpha * sum + g.beta * *out;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adjoint_backend::{Backend, DType};
    use adjoint_cpu::Cpu;

    #[test]
    fn cublas_configurations_compute_the_row_major_products() {
        let (batch, m, k, n) = (3, 5, 4, 6);
        for (lt, rt, lhs_stride) in [
            (false, false, m * k),
            (true, false, 0),
            (false, true, m * k),
            (true, true, 0),
        ] {
            let spec = MatmulSpec {
                batch,
                m,
                k,
                n,
                lhs_batch_stride: lhs_stride,
                rhs_batch_stride: k * n,
                lhs_transposed: lt,
                rhs_transposed: rt,
            };
            let lhs = Cpu::random(&Cpu, batch * m * k, 1, (-1.0, 1.0), false, DType::F64);
            let rhs = Cpu::random(&Cpu, batch * k * n, 2, (-1.0, 1.0), false, DType::F64);
            let want = Cpu::matmul(&lhs, &rhs, &spec).to_f64();
            let (lhs, rhs) = (lhs.to_f64(), rhs.to_f64());
            let (a, b) = Gemm::operands(&lhs, &rhs);
            // `C = α·op(A)·op(B) + β·C` from `C = 1`: the plain product, and an update's.
            for (alpha, beta) in [(1.0, 0.0), (-0.75, 1.0)] {
                let mut got = vec![1.0; batch * m * n];
                let gemm = Gemm {
                    alpha,
                    beta,
                    ..gemm_of(&spec)
                };
                emulate(&gemm.cublas(), a, b, &mut got);
                for (g, w) in got.iter().zip(&want) {
                    let w = alpha * w + beta;
                    assert!(
                        (g - w).abs() < 1e-12,
                        "{spec:?} α={alpha} β={beta}: {g} vs {w}"
                    );
                }
            }
        }
    }
}
