//! CUDA backend of adjoint: [`Cuda`] implements [`Backend`] on NVIDIA GPUs through `cudarc`.
//!
//! * **No CUDA at build time.** The driver, cuBLAS and NVRTC are loaded when a device is
//!   opened; [`CudaDevice::new`] returns a [`CudaError`] naming what is missing ("no CUDA
//!   device: libcuda.so not found") instead of panicking, so this crate builds and its tests
//!   pass on machines without a GPU (the device tests print `skipped: no CUDA device`).
//! * **Kernels** are the `.cu` files of `kernels/`, one module per op family, compiled by
//!   NVRTC for the device's architecture when it is opened and cached for the process.
//!   Elementwise and reduction ops share one table of scalar rules (`kernels/ops.cuh`) driven
//!   by op codes generated from the Rust enums; softmax and log-softmax are one fused kernel. [`compile_kernels`] compiles them all without
//!   a GPU; CI runs it for `sm_80` and `sm_90` and rejects errors and register spills.
//! * **Matrix products** (and convolutions, as `im2col` + GEMM) run on cuBLAS's strided
//!   batched GEMM, in full `f32`/`f64` precision unless [`CudaDevice::set_tf32`] allows TF32.
//! * **Memory** is allocated in stream order from the device's pool (`cuMemAllocAsync`),
//!   which keeps freed blocks for reuse. All work of a device is queued on one stream, so a
//!   training step runs without host synchronization; the host waits only where it reads
//!   values back (a download, such as reading the loss). Ids are validated without a round
//!   trip when they were uploaded from the host ([`Backend::max_id`] then answers from the
//!   maximum taken during the upload); ids computed on the device are read back to check.
//!
//! The [`Backend`] trait is infallible: a driver failure in the middle of an op (out of
//! memory, a faulted kernel) panics with the op's name and the driver's error.
//!
//! ```no_run
//! use adjoint_cuda::{Backend, Cuda, CudaDevice, DType};
//!
//! let gpu = CudaDevice::new(0)?;
//! let x = Cuda::upload_f32(&gpu, &[1.0, -2.0, 3.0]);
//! let y = Cuda::unary(adjoint_cuda::UnaryOp::Relu, &x);
//! assert_eq!(Cuda::download_f32(&y), [1.0, 0.0, 3.0]);
//! # Ok::<(), adjoint_cuda::CudaError>(())
//! ```

#![warn(missing_docs)]

mod codes;
mod compile;
mod device;
mod error;
mod kernels;
mod launch;
mod ops;
mod storage;

pub use adjoint_backend::{
    Backend, BinaryOp, Conv2dGeometry, Conv2dSpec, DType, MatmulSpec, ReduceOp, UnaryOp, UpdateOp,
};
pub use compile::{CompiledKernels, nvrtc_available};
pub use device::{CudaDevice, host_waits};
pub use error::CudaError;
pub use kernels::compile_kernels;
pub use storage::CudaStorage;

use ops::{conv, elementwise, index, layout, matmul, pool, random, reduce, update};
use storage::{Buffer, Element, check};

/// The CUDA backend (a unit type: tensors carry their [`CudaDevice`] in their storage).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Cuda;

fn upload<T: Element>(device: &CudaDevice, data: &[T]) -> CudaStorage {
    let stream = &device.state().stream;
    let slice = if data.is_empty() {
        check(stream.null(), "upload")
    } else {
        check(stream.clone_htod(data), "upload")
    };
    CudaStorage::new(*device, T::wrap(slice))
}

fn download<T: Element>(slice: &cudarc::driver::CudaSlice<T>, storage: &CudaStorage) -> Vec<T> {
    if slice.is_empty() {
        return Vec::new();
    }
    let state = storage.device.state();
    state.waited();
    check(state.stream.clone_dtoh(slice), "download")
}

impl Backend for Cuda {
    type Device = CudaDevice;
    type Storage = CudaStorage;

    fn device(s: &CudaStorage) -> CudaDevice {
        s.device
    }
    fn dtype(s: &CudaStorage) -> DType {
        s.dtype()
    }
    fn len(s: &CudaStorage) -> usize {
        s.len()
    }
    fn upload_f64(device: &CudaDevice, data: &[f64], dtype: DType) -> CudaStorage {
        match dtype {
            DType::F64 => upload(device, data),
            DType::F32 => upload(device, &data.iter().map(|&v| v as f32).collect::<Vec<_>>()),
            DType::U32 => {
                Self::upload_u32(device, &data.iter().map(|&v| v as u32).collect::<Vec<_>>())
            }
        }
    }
    fn upload_f32(device: &CudaDevice, data: &[f32]) -> CudaStorage {
        upload(device, data)
    }
    fn upload_u32(device: &CudaDevice, data: &[u32]) -> CudaStorage {
        CudaStorage {
            uploaded_max: data.iter().copied().max(),
            ..upload(device, data)
        }
    }
    fn download_f64(s: &CudaStorage) -> Vec<f64> {
        match &s.buf {
            Buffer::F64(v) => download(v, s),
            Buffer::F32(v) => download(v, s).into_iter().map(f64::from).collect(),
            Buffer::U32(v) => download(v, s).into_iter().map(f64::from).collect(),
        }
    }
    fn download_f32(s: &CudaStorage) -> Vec<f32> {
        match &s.buf {
            Buffer::F32(v) => download(v, s),
            Buffer::F64(v) => download(v, s).into_iter().map(|x| x as f32).collect(),
            Buffer::U32(v) => download(v, s).into_iter().map(|x| x as f32).collect(),
        }
    }
    fn download_u32(s: &CudaStorage) -> Vec<u32> {
        match &s.buf {
            Buffer::U32(v) => download(v, s),
            Buffer::F32(v) => download(v, s).into_iter().map(|x| x as u32).collect(),
            Buffer::F64(v) => download(v, s).into_iter().map(|x| x as u32).collect(),
        }
    }
    fn fill(device: &CudaDevice, len: usize, value: f64, dtype: DType) -> CudaStorage {
        layout::fill(device, len, value, dtype)
    }
    fn arange(device: &CudaDevice, start: f64, step: f64, len: usize, dtype: DType) -> CudaStorage {
        layout::arange(device, start, step, len, dtype)
    }
    fn random(
        device: &CudaDevice,
        len: usize,
        seed: u64,
        params: (f64, f64),
        normal: bool,
        dtype: DType,
    ) -> CudaStorage {
        random::random(device, len, seed, params, normal, dtype)
    }
    fn cast(s: &CudaStorage, dtype: DType) -> CudaStorage {
        layout::cast(s, dtype)
    }
    fn unary(op: UnaryOp, x: &CudaStorage) -> CudaStorage {
        elementwise::unary(op, x)
    }
    fn binary(
        op: BinaryOp,
        lhs: (&CudaStorage, &[usize]),
        rhs: (&CudaStorage, &[usize]),
        out_shape: &[usize],
    ) -> CudaStorage {
        elementwise::binary(op, lhs, rhs, out_shape)
    }
    /// A sum runs the in-place update kernel ([`UpdateOp::Accumulate`]; `a + b = b + a`
    /// exactly); the other ops compute into a new buffer (the default).
    fn binary_assign(op: BinaryOp, out: &mut CudaStorage, other: &CudaStorage, out_is_lhs: bool) {
        if op == BinaryOp::Add {
            return update::update(UpdateOp::Accumulate, out, other, &mut []);
        }
        adjoint_backend::binary_assign_by_copy::<Self>(op, out, other, out_is_lhs)
    }
    fn relu_with_bits(x: &CudaStorage) -> (CudaStorage, CudaStorage) {
        elementwise::relu_with_bits(x)
    }
    fn mask_by_bits(d: &CudaStorage, bits: &CudaStorage) -> CudaStorage {
        elementwise::mask_by_bits(d, bits)
    }
    fn select(
        mask: (&CudaStorage, &[usize]),
        on_true: (&CudaStorage, &[usize]),
        on_false: (&CudaStorage, &[usize]),
        out_shape: &[usize],
    ) -> CudaStorage {
        elementwise::select(mask, on_true, on_false, out_shape)
    }
    fn reduce(op: ReduceOp, x: &CudaStorage, shape: &[usize], axes: &[usize]) -> CudaStorage {
        reduce::reduce(op, x, shape, axes)
    }
    fn argmax(x: &CudaStorage, shape: &[usize], axis: usize) -> CudaStorage {
        reduce::argmax(x, shape, axis)
    }
    fn softmax(x: &CudaStorage, shape: &[usize], axis: usize, log: bool) -> Option<CudaStorage> {
        Some(reduce::softmax(x, shape, axis, log))
    }
    fn matmul(lhs: &CudaStorage, rhs: &CudaStorage, spec: &MatmulSpec) -> CudaStorage {
        matmul::matmul(lhs, rhs, spec)
    }
    fn matmul_acc(
        lhs: &CudaStorage,
        rhs: &CudaStorage,
        spec: &MatmulSpec,
        alpha: f64,
        out: &mut CudaStorage,
    ) {
        matmul::matmul_acc(lhs, rhs, spec, alpha, out)
    }
    fn matmul_epilogue(
        lhs: &CudaStorage,
        rhs: &CudaStorage,
        spec: &MatmulSpec,
        bias: Option<&CudaStorage>,
        act: Option<UnaryOp>,
    ) -> CudaStorage {
        match bias {
            Some(bias) => matmul::matmul_epilogue(lhs, rhs, spec, bias, act),
            // Without a bias the default is already the product and one activation pass.
            None => adjoint_backend::matmul_epilogue_by_ops::<Cuda>(lhs, rhs, spec, None, act),
        }
    }
    fn permute(x: &CudaStorage, shape: &[usize], perm: &[usize]) -> CudaStorage {
        layout::permute(x, shape, perm)
    }
    fn broadcast(x: &CudaStorage, shape: &[usize], out_shape: &[usize]) -> CudaStorage {
        layout::broadcast(x, shape, out_shape)
    }
    fn narrow(
        x: &CudaStorage,
        shape: &[usize],
        axis: usize,
        start: usize,
        len: usize,
    ) -> CudaStorage {
        layout::narrow(x, shape, axis, start, len)
    }
    fn cat(parts: &[(&CudaStorage, &[usize])], axis: usize) -> CudaStorage {
        layout::cat(parts, axis)
    }
    fn index_select(
        x: &CudaStorage,
        shape: &[usize],
        axis: usize,
        ids: &CudaStorage,
    ) -> CudaStorage {
        index::index_select(x, shape, axis, ids)
    }
    fn index_add(
        src: &CudaStorage,
        shape: &[usize],
        axis: usize,
        ids: &CudaStorage,
    ) -> CudaStorage {
        index::index_add(src, shape, axis, ids)
    }
    fn one_hot(ids: &CudaStorage, classes: usize, dtype: DType) -> CudaStorage {
        index::one_hot(ids, classes, dtype)
    }
    fn max_id(ids: &CudaStorage) -> Option<u32> {
        reduce::max_id(ids)
    }
    fn im2col(x: &CudaStorage, g: &Conv2dGeometry, fill: f64) -> CudaStorage {
        conv::im2col(x, g, fill)
    }
    fn col2im(cols: &CudaStorage, g: &Conv2dGeometry) -> CudaStorage {
        conv::col2im(cols, g)
    }
    fn conv2d(x: &CudaStorage, w: &CudaStorage, spec: &Conv2dSpec) -> CudaStorage {
        conv::conv2d(x, w, spec)
    }
    fn conv2d_backward_input(dy: &CudaStorage, w: &CudaStorage, spec: &Conv2dSpec) -> CudaStorage {
        conv::conv2d_backward_input(dy, w, spec)
    }
    fn conv2d_backward_weight(x: &CudaStorage, dy: &CudaStorage, spec: &Conv2dSpec) -> CudaStorage {
        conv::conv2d_backward_weight(x, dy, spec)
    }
    fn max_pool2d(x: &CudaStorage, g: &Conv2dGeometry) -> Option<(CudaStorage, CudaStorage)> {
        Some(pool::max_pool2d(x, g))
    }
    fn max_pool2d_backward(
        dy: &CudaStorage,
        winners: &CudaStorage,
        g: &Conv2dGeometry,
    ) -> Option<CudaStorage> {
        Some(pool::max_pool2d_backward(dy, winners, g))
    }
    fn update(
        op: UpdateOp,
        param: &mut CudaStorage,
        grad: &CudaStorage,
        state: &mut [&mut CudaStorage],
    ) {
        update::update(op, param, grad, state)
    }
}
