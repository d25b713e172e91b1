//! Layout changes as one strided copy (permute, broadcast, narrow, cat), and casts, fills and
//! ranges.

use super::{any_map, by_dtype};
use crate::compile::Module;
use crate::device::{DeviceState, grid};
use crate::launch::{STRIDED, Strided, broadcast as broadcast_strides, contiguous, count, launch};
use crate::storage::{Buffer, Element, alloc, check, zeros};
use crate::{CudaDevice, CudaStorage};
use adjoint_backend::DType;
use cudarc::driver::CudaSlice;

/// `kernels/layout.cu`: copies under strides, casts, fills and `arange`.
pub(crate) const KERNELS: Module = Module {
    file: "layout.cu",
    text: include_str!("../../kernels/layout.cu"),
    mirrors: &[STRIDED],
};

/// One strided copy: `dims` iterated in row-major order, read at `src_offset + Σ i·src_strides`,
/// written at `dst_offset + Σ i·dst_strides`.
struct StridedCopy<'a> {
    dims: &'a [usize],
    src_strides: &'a [usize],
    dst_strides: &'a [usize],
    src_offset: usize,
    dst_offset: usize,
}

impl StridedCopy<'_> {
    fn run<T: Element>(&self, state: &DeviceState, src: &CudaSlice<T>, dst: &mut CudaSlice<T>) {
        let n = count(self.dims.iter().product(), "copy");
        if n == 0 {
            return;
        }
        let map = Strided::new(self.dims, &[self.src_strides, self.dst_strides]);
        let (src_offset, dst_offset) = (
            count(self.src_offset, "copy"),
            count(self.dst_offset, "copy"),
        );
        // copy_T(const T* src, T* dst, u32 n, Strided s, u32 src_offset, u32 dst_offset)
        launch!(state, &KERNELS, "copy", T::SUFFIX, grid(n), "copy";
            src, dst, &n, &map, &src_offset, &dst_offset);
    }

    /// The copy into a new contiguous buffer of `dims`.
    fn to_new<T: Element>(&self, state: &DeviceState, src: &CudaSlice<T>) -> CudaSlice<T> {
        let mut dst = alloc::<T>(&state.stream, self.dims.iter().product(), "copy");
        self.run(state, src, &mut dst);
        dst
    }
}

/// `x` (shape `shape`) with its axes reordered: output axis `i` is input axis `perm[i]`.
pub(crate) fn permute(x: &CudaStorage, shape: &[usize], perm: &[usize]) -> CudaStorage {
    let own = contiguous(shape);
    let dims: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let src_strides: Vec<usize> = perm.iter().map(|&p| own[p]).collect();
    let copy = StridedCopy {
        dims: &dims,
        src_strides: &src_strides,
        dst_strides: &contiguous(&dims),
        src_offset: 0,
        dst_offset: 0,
    };
    any_map!(x, |v| copy.to_new(x.device.state(), v))
}

/// `x` (shape `shape`) repeated along its extent-1 axes (and new leading axes) to `out_shape`.
pub(crate) fn broadcast(x: &CudaStorage, shape: &[usize], out_shape: &[usize]) -> CudaStorage {
    let copy = StridedCopy {
        dims: out_shape,
        src_strides: &broadcast_strides(shape, out_shape),
        dst_strides: &contiguous(out_shape),
        src_offset: 0,
        dst_offset: 0,
    };
    any_map!(x, |v| copy.to_new(x.device.state(), v))
}

/// Elements `start..start + len` of `x` along `axis`.
pub(crate) fn narrow(
    x: &CudaStorage,
    shape: &[usize],
    axis: usize,
    start: usize,
    len: usize,
) -> CudaStorage {
    let own = contiguous(shape);
    let mut dims = shape.to_vec();
    dims[axis] = len;
    let copy = StridedCopy {
        dims: &dims,
        src_strides: &own,
        dst_strides: &contiguous(&dims),
        src_offset: start * own[axis],
        dst_offset: 0,
    };
    any_map!(x, |v| copy.to_new(x.device.state(), v))
}

/// The parts joined along `axis` (their other extents agree).
///
/// # Panics
/// With no parts, or parts of different dtypes.
pub(crate) fn cat(parts: &[(&CudaStorage, &[usize])], axis: usize) -> CudaStorage {
    let (first, first_shape) = parts.first().expect("cat: no parts");
    let mut out_shape = first_shape.to_vec();
    out_shape[axis] = parts.iter().map(|(_, s)| s[axis]).sum();
    let out_strides = contiguous(&out_shape);
    let state = first.device.state();
    let len = out_shape.iter().product();
    let mut out = by_dtype!(first.dtype(), alloc(&state.stream, len, "cat"));
    let mut at = 0;
    for (part, shape) in parts {
        let copy = StridedCopy {
            dims: shape,
            src_strides: &contiguous(shape),
            dst_strides: &out_strides,
            src_offset: 0,
            dst_offset: at * out_strides[axis],
        };
        match (&part.buf, &mut out) {
            (Buffer::F32(s), Buffer::F32(d)) => copy.run(state, s, d),
            (Buffer::F64(s), Buffer::F64(d)) => copy.run(state, s, d),
            (Buffer::U32(s), Buffer::U32(d)) => copy.run(state, s, d),
            _ => panic!(
                "cat: parts have dtypes {:?} and {:?}",
                first.dtype(),
                part.dtype()
            ),
        }
        at += shape[axis];
    }
    CudaStorage::new(first.device, out)
}

/// `x` converted to `dtype` (float to `u32` saturates, as Rust's `as`).
pub(crate) fn cast(x: &CudaStorage, dtype: DType) -> CudaStorage {
    let state = x.device.state();
    if x.dtype() == dtype {
        return any_map!(x, |v| check(state.stream.clone_dtod(v), "cast"));
    }
    let n = count(x.len(), "cast");
    let len = x.len();
    macro_rules! cast_to {
        ($src:expr, $from:literal) => {
            match dtype {
                DType::F32 => Buffer::F32(cast_kernel($src, concat!($from, "_f32"), state, n, len)),
                DType::F64 => Buffer::F64(cast_kernel($src, concat!($from, "_f64"), state, n, len)),
                DType::U32 => Buffer::U32(cast_kernel($src, concat!($from, "_u32"), state, n, len)),
            }
        };
    }
    let buf = match &x.buf {
        Buffer::F32(v) => cast_to!(v, "f32"),
        Buffer::F64(v) => cast_to!(v, "f64"),
        Buffer::U32(v) => cast_to!(v, "u32"),
    };
    CudaStorage::new(x.device, buf)
}

fn cast_kernel<F: Element, T: Element>(
    x: &CudaSlice<F>,
    suffix: &'static str,
    state: &DeviceState,
    n: u32,
    len: usize,
) -> CudaSlice<T> {
    let mut y = alloc::<T>(&state.stream, len, "cast");
    // cast_F_T(const F* x, T* y, u32 n)
    launch!(state, &KERNELS, "cast", suffix, grid(n), "cast"; x, &mut y, &n);
    y
}

/// `len` copies of `value` as `dtype`.
pub(crate) fn fill(device: &CudaDevice, len: usize, value: f64, dtype: DType) -> CudaStorage {
    let buf = by_dtype!(dtype, fill_typed(device.state(), len, value));
    CudaStorage::new(*device, buf)
}

fn fill_typed<T: Element>(state: &DeviceState, len: usize, value: f64) -> CudaSlice<T> {
    if value == 0.0 {
        return zeros(&state.stream, len, "fill");
    }
    let mut y = alloc::<T>(&state.stream, len, "fill");
    let n = count(len, "fill");
    if n > 0 {
        // fill_T(T* y, u32 n, double value)
        launch!(state, &KERNELS, "fill", T::SUFFIX, grid(n), "fill"; &mut y, &n, &value);
    }
    y
}

/// `start, start + step, …` (`len` values) as `dtype`.
pub(crate) fn arange(
    device: &CudaDevice,
    start: f64,
    step: f64,
    len: usize,
    dtype: DType,
) -> CudaStorage {
    let buf = by_dtype!(dtype, arange_typed(device.state(), start, step, len));
    CudaStorage::new(*device, buf)
}

fn arange_typed<T: Element>(
    state: &DeviceState,
    start: f64,
    step: f64,
    len: usize,
) -> CudaSlice<T> {
    let mut y = alloc::<T>(&state.stream, len, "arange");
    let n = count(len, "arange");
    if n > 0 {
        // arange_T(T* y, u32 n, double start, double step)
        launch!(state, &KERNELS, "arange", T::SUFFIX, grid(n), "arange";
            &mut y, &n, &start, &step);
    }
    y
}
