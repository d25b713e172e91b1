//! CPU backend of adjoint: [`Cpu`] implements [`Backend`] on `ndarray` buffers.
//!
//! * Matrix products run single-threaded kernels: `f32` on CPUs with AVX-512F or AVX2 and FMA
//!   the backend's own (`ops::gemm::packed`, written once over the vector extension: 8 × 32
//!   tiles on AVX-512F, 6 × 16 on AVX2, the epilogue applied as the tiles write), everything
//!   else the `gemm` crate's; all threading is rayon's, in one pool (a large product is split into row or column blocks, the
//!   convolution runs one image per task); `docs/tensors.md` has the measurements behind this.
//! * Elementwise ops and reductions are one monomorphic loop per op over the buffers, split
//!   across the threads from 2¹⁸ elements; `select` and layout changes are `ndarray` zips
//!   over (broadcast) views.
//! * Convolution at stride 1 in `f32` on CPUs with AVX2 and FMA but not AVX-512F reads the
//!   image in place (`ops::conv::direct`: register tiles load the image through a table of
//!   tap offsets, with no unfolded columns); any other is `im2col` + one serial GEMM per image
//!   and group (`ops::conv::gemm`). Both spread the images over the threads. Max pooling and
//!   its tangent are single passes (`ops::pool`).
//!
//! [`matmul_calls`] counts the matrix products run by the current thread, so tests can check
//! that a pullback skips the products of inputs that need no tangent.

#![warn(missing_docs)]

mod alloc;
mod install;
mod ops;
mod storage;

pub use adjoint_backend::{
    Backend, BinaryOp, Conv2dGeometry, Conv2dSpec, DType, MatmulSpec, RecurrenceNeeds,
    RecurrenceSpec, RecurrenceTangents, ReduceOp, UnaryOp, UpdateOp,
};
pub use alloc::keep_freed_memory;
pub use storage::CpuStorage;

#[cfg(test)]
mod tests;

use std::cell::Cell;

thread_local! {
    static MATMUL_CALLS: Cell<usize> = const { Cell::new(0) };
}

/// The number of matrix products run so far by the current thread: one per
/// [`Backend::matmul`] or [`Backend::matmul_acc`] call (however many batches it holds), and
/// one per product a [`Backend::recurrence`] kernel or its backward pass runs.
pub fn matmul_calls() -> usize {
    MATMUL_CALLS.with(Cell::get)
}

/// The CPU backend (a unit type: there is one CPU device).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Cpu;

impl Backend for Cpu {
    type Device = Cpu;
    type Storage = CpuStorage;

    /// Runs `f` on a thread of rayon's pool (inline when called from one), so that the
    /// parallel ops inside start their work by work-stealing instead of waking the pool and
    /// sleeping until it is done; the other workers poll for work until `f` returns instead
    /// of sleeping between the ops (`install.rs`).
    fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
        install::install(f)
    }

    fn device(_: &CpuStorage) -> Cpu {
        Cpu
    }
    fn dtype(s: &CpuStorage) -> DType {
        s.dtype()
    }
    fn len(s: &CpuStorage) -> usize {
        s.len()
    }
    fn upload_f64(_: &Cpu, data: &[f64], dtype: DType) -> CpuStorage {
        CpuStorage::from_f64(data, dtype)
    }
    fn upload_f32(_: &Cpu, data: &[f32]) -> CpuStorage {
        CpuStorage::F32(data.to_vec())
    }
    fn upload_u32(_: &Cpu, data: &[u32]) -> CpuStorage {
        CpuStorage::U32(data.to_vec())
    }
    fn download_f64(s: &CpuStorage) -> Vec<f64> {
        s.to_f64()
    }
    fn download_f32(s: &CpuStorage) -> Vec<f32> {
        s.to_f64().into_iter().map(|v| v as f32).collect()
    }
    fn download_u32(s: &CpuStorage) -> Vec<u32> {
        match s {
            CpuStorage::U32(v) => v.clone(),
            other => other.to_f64().into_iter().map(|v| v as u32).collect(),
        }
    }
    fn fill(_: &Cpu, len: usize, value: f64, dtype: DType) -> CpuStorage {
        match dtype {
            DType::F32 => CpuStorage::F32(vec![value as f32; len]),
            DType::F64 => CpuStorage::F64(vec![value; len]),
            DType::U32 => CpuStorage::U32(vec![value as u32; len]),
        }
    }
    fn arange(_: &Cpu, start: f64, step: f64, len: usize, dtype: DType) -> CpuStorage {
        let v: Vec<f64> = (0..len).map(|i| start + step * i as f64).collect();
        CpuStorage::from_f64(&v, dtype)
    }
    fn random(
        _: &Cpu,
        len: usize,
        seed: u64,
        params: (f64, f64),
        normal: bool,
        dtype: DType,
    ) -> CpuStorage {
        ops::random::random(len, seed, params, normal, dtype)
    }
    fn cast(s: &CpuStorage, dtype: DType) -> CpuStorage {
        if s.dtype() == dtype {
            return s.clone();
        }
        match s {
            CpuStorage::F32(v) if dtype == DType::F64 => {
                CpuStorage::F64(v.iter().map(|&x| f64::from(x)).collect())
            }
            _ => CpuStorage::from_f64(&s.to_f64(), dtype),
        }
    }
    fn unary(op: UnaryOp, x: &CpuStorage) -> CpuStorage {
        ops::elementwise::unary(op, x)
    }
    fn unary_assign(op: UnaryOp, x: &mut CpuStorage) {
        ops::elementwise::unary_assign(op, x)
    }
    fn binary(
        op: BinaryOp,
        lhs: (&CpuStorage, &[usize]),
        rhs: (&CpuStorage, &[usize]),
        out_shape: &[usize],
    ) -> CpuStorage {
        ops::elementwise::binary(op, lhs, rhs, out_shape)
    }
    fn binary_assign(op: BinaryOp, out: &mut CpuStorage, other: &CpuStorage, out_is_lhs: bool) {
        ops::elementwise::binary_assign(op, out, other, out_is_lhs)
    }
    fn relu_with_bits(x: &CpuStorage) -> (CpuStorage, CpuStorage) {
        ops::bits::relu_with_bits(x)
    }
    fn mask_by_bits(d: &CpuStorage, bits: &CpuStorage) -> CpuStorage {
        ops::bits::mask_by_bits(d, bits)
    }
    fn select(
        mask: (&CpuStorage, &[usize]),
        on_true: (&CpuStorage, &[usize]),
        on_false: (&CpuStorage, &[usize]),
        out_shape: &[usize],
    ) -> CpuStorage {
        ops::elementwise::select(mask, on_true, on_false, out_shape)
    }
    fn reduce(op: ReduceOp, x: &CpuStorage, shape: &[usize], axes: &[usize]) -> CpuStorage {
        ops::reduce::reduce(op, x, shape, axes)
    }
    fn argmax(x: &CpuStorage, shape: &[usize], axis: usize) -> CpuStorage {
        ops::reduce::argmax(x, shape, axis)
    }
    fn softmax(x: &CpuStorage, shape: &[usize], axis: usize, log: bool) -> Option<CpuStorage> {
        Some(ops::softmax::softmax(x, shape, axis, log))
    }
    fn cross_entropy(
        z: &CpuStorage,
        labels: &CpuStorage,
        shape: [usize; 2],
        ignore: Option<u32>,
        grad: bool,
    ) -> Option<(CpuStorage, Option<CpuStorage>)> {
        Some(ops::cross_entropy::cross_entropy(
            z, labels, shape, ignore, grad,
        ))
    }
    fn matmul(lhs: &CpuStorage, rhs: &CpuStorage, spec: &MatmulSpec) -> CpuStorage {
        MATMUL_CALLS.with(|c| c.set(c.get() + 1));
        ops::matmul::matmul(lhs, rhs, spec)
    }
    fn matmul_acc(
        lhs: &CpuStorage,
        rhs: &CpuStorage,
        spec: &MatmulSpec,
        alpha: f64,
        out: &mut CpuStorage,
    ) {
        MATMUL_CALLS.with(|c| c.set(c.get() + 1));
        ops::matmul::matmul_acc(lhs, rhs, spec, alpha, out)
    }
    fn matmul_grad(
        lhs: &CpuStorage,
        rhs: &CpuStorage,
        spec: &MatmulSpec,
        y: &CpuStorage,
        grad: BinaryOp,
    ) -> CpuStorage {
        MATMUL_CALLS.with(|c| c.set(c.get() + 1));
        ops::matmul::matmul_grad(lhs, rhs, spec, y, grad)
    }
    fn matmul_grad_sums(
        lhs: &CpuStorage,
        rhs: &CpuStorage,
        spec: &MatmulSpec,
        y: &CpuStorage,
        grad: BinaryOp,
    ) -> (CpuStorage, CpuStorage) {
        MATMUL_CALLS.with(|c| c.set(c.get() + 1));
        ops::matmul::matmul_grad_sums(lhs, rhs, spec, y, grad)
    }
    fn matmul_epilogue(
        lhs: &CpuStorage,
        rhs: &CpuStorage,
        spec: &MatmulSpec,
        bias: Option<&CpuStorage>,
        act: Option<UnaryOp>,
    ) -> CpuStorage {
        MATMUL_CALLS.with(|c| c.set(c.get() + 1));
        ops::matmul::matmul_epilogue(lhs, rhs, spec, bias, act)
    }
    fn permute(x: &CpuStorage, shape: &[usize], perm: &[usize]) -> CpuStorage {
        ops::layout::permute(x, shape, perm)
    }
    fn broadcast(x: &CpuStorage, shape: &[usize], out_shape: &[usize]) -> CpuStorage {
        ops::layout::broadcast(x, shape, out_shape)
    }
    fn narrow(
        x: &CpuStorage,
        shape: &[usize],
        axis: usize,
        start: usize,
        len: usize,
    ) -> CpuStorage {
        ops::layout::narrow(x, shape, axis, start, len)
    }
    fn cat(parts: &[(&CpuStorage, &[usize])], axis: usize) -> CpuStorage {
        ops::layout::cat(parts, axis)
    }
    fn index_select(x: &CpuStorage, shape: &[usize], axis: usize, ids: &CpuStorage) -> CpuStorage {
        ops::index::index_select(x, shape, axis, ids)
    }
    fn index_add(src: &CpuStorage, shape: &[usize], axis: usize, ids: &CpuStorage) -> CpuStorage {
        ops::index::index_add(src, shape, axis, ids)
    }
    fn one_hot(ids: &CpuStorage, classes: usize, dtype: DType) -> CpuStorage {
        ops::index::one_hot(ids, classes, dtype)
    }
    fn max_id(ids: &CpuStorage) -> Option<u32> {
        ids.as_u32().iter().copied().max()
    }
    fn im2col(x: &CpuStorage, g: &Conv2dGeometry, fill: f64) -> CpuStorage {
        ops::conv::im2col(x, g, fill)
    }
    fn col2im(cols: &CpuStorage, g: &Conv2dGeometry) -> CpuStorage {
        ops::conv::col2im(cols, g)
    }
    fn conv2d(x: &CpuStorage, w: &CpuStorage, spec: &Conv2dSpec) -> CpuStorage {
        ops::conv::conv2d(x, w, spec)
    }
    fn conv2d_bias(
        x: &CpuStorage,
        w: &CpuStorage,
        bias: &CpuStorage,
        spec: &Conv2dSpec,
    ) -> Option<CpuStorage> {
        Some(ops::conv::conv2d_bias(x, w, bias, spec))
    }
    fn max_pool2d(x: &CpuStorage, geometry: &Conv2dGeometry) -> Option<(CpuStorage, CpuStorage)> {
        Some(ops::pool::max_pool2d(x, geometry))
    }
    fn max_pool2d_backward(
        dy: &CpuStorage,
        winners: &CpuStorage,
        geometry: &Conv2dGeometry,
    ) -> Option<CpuStorage> {
        Some(ops::pool::max_pool2d_backward(dy, winners, geometry))
    }
    fn conv2d_backward_input(dy: &CpuStorage, w: &CpuStorage, spec: &Conv2dSpec) -> CpuStorage {
        ops::conv::conv2d_backward_input(dy, w, spec)
    }
    fn conv2d_backward_weight(x: &CpuStorage, dy: &CpuStorage, spec: &Conv2dSpec) -> CpuStorage {
        ops::conv::conv2d_backward_weight(x, dy, spec)
    }
    fn update(
        op: UpdateOp,
        param: &mut CpuStorage,
        grad: &CpuStorage,
        state: &mut [&mut CpuStorage],
    ) {
        ops::update::update(op, param, grad, state)
    }
    fn recurrence(
        spec: &RecurrenceSpec,
        h0: &CpuStorage,
        w: &CpuStorage,
        input: Option<(&CpuStorage, &[&CpuStorage])>,
        biases: &[&CpuStorage],
    ) -> Option<CpuStorage> {
        let (states, products) = ops::recurrence::recurrence(spec, h0, w, input, biases)?;
        MATMUL_CALLS.with(|c| c.set(c.get() + products));
        Some(states)
    }
    fn recurrence_backward(
        spec: &RecurrenceSpec,
        states: &CpuStorage,
        w: &CpuStorage,
        input: Option<(&CpuStorage, &[&CpuStorage])>,
        dh: &CpuStorage,
        needs: RecurrenceNeeds,
    ) -> RecurrenceTangents<CpuStorage> {
        let (tangents, products) =
            ops::recurrence::recurrence_backward(spec, states, w, input, dh, needs);
        MATMUL_CALLS.with(|c| c.set(c.get() + products));
        tangents
    }
}
