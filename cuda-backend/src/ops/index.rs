//! Gather and scatter-add along one axis, and one-hot encoding.

use super::{by_dtype, float_map};
use crate::CudaStorage;
use crate::compile::Module;
use crate::device::{DeviceState, grid};
use crate::launch::{STRIDED, count, launch, split};
use crate::storage::{Float, alloc, zeros};
use adjoint_backend::DType;
use cudarc::driver::CudaSlice;

/// `kernels/index.cu`: `index_select`, `index_add` and `one_hot`.
pub(crate) const KERNELS: Module = Module {
    file: "index.cu",
    text: include_str!("../../kernels/index.cu"),
    mirrors: &[STRIDED],
};

/// `out[o, j, i] = x[o, ids[j], i]` along `axis` of `x` (shape `shape`).
pub(crate) fn index_select(
    x: &CudaStorage,
    shape: &[usize],
    axis: usize,
    ids: &CudaStorage,
) -> CudaStorage {
    let ids = ids.ids("index_select");
    let sizes = split(shape, axis, "index_select");
    float_map!(x, "index_select", |v| {
        gather_typed(x.device.state(), v, ids, sizes)
    })
}

fn gather_typed<T: Float>(
    state: &DeviceState,
    x: &CudaSlice<T>,
    ids: &CudaSlice<u32>,
    [outer, len, inner]: [u32; 3],
) -> CudaSlice<T> {
    let m = count(ids.len(), "index_select");
    let total = outer as usize * m as usize * inner as usize;
    let mut y = alloc::<T>(&state.stream, total, "index_select");
    let n = count(total, "index_select");
    if n > 0 {
        // index_select_T(const T* x, const u32* ids, T* y, u32 outer, u32 len, u32 inner, u32 m)
        launch!(state, &KERNELS, "index_select", T::SUFFIX, grid(n), "index_select";
            x, ids, &mut y, &outer, &len, &inner, &m);
    }
    y
}

/// Zeros of `shape` with `src[o, j, i]` added at `[o, ids[j], i]` along `axis` (repeated
/// ids accumulate; atomics make the order of additions, and so the last bits, vary).
pub(crate) fn index_add(
    src: &CudaStorage,
    shape: &[usize],
    axis: usize,
    ids: &CudaStorage,
) -> CudaStorage {
    let ids = ids.ids("index_add");
    let sizes = split(shape, axis, "index_add");
    let len = shape.iter().product();
    float_map!(src, "index_add", |v| {
        scatter_typed(src.device.state(), v, ids, sizes, len)
    })
}

fn scatter_typed<T: Float>(
    state: &DeviceState,
    src: &CudaSlice<T>,
    ids: &CudaSlice<u32>,
    [outer, len, inner]: [u32; 3],
    out_len: usize,
) -> CudaSlice<T> {
    let m = count(ids.len(), "index_add");
    let mut y = zeros::<T>(&state.stream, out_len, "index_add");
    let n = count(src.len(), "index_add");
    if n > 0 {
        // index_add_T(const T* src, const u32* ids, T* y, u32 outer, u32 len, u32 inner, u32 m)
        launch!(state, &KERNELS, "index_add", T::SUFFIX, grid(n), "index_add";
            src, ids, &mut y, &outer, &len, &inner, &m);
    }
    y
}

/// `out[r, c] = (ids[r] == c)` as `dtype`, `classes` columns.
///
/// # Panics
/// If `dtype` is `u32`.
pub(crate) fn one_hot(ids: &CudaStorage, classes: usize, dtype: DType) -> CudaStorage {
    assert!(
        dtype.is_float(),
        "one_hot: dtype must be float, got {dtype:?}"
    );
    let v = ids.ids("one_hot");
    let state = ids.device.state();
    let buf = by_dtype!(dtype, one_hot_typed(state, v, classes));
    CudaStorage::new(ids.device, buf)
}

fn one_hot_typed<T: crate::storage::Element>(
    state: &DeviceState,
    ids: &CudaSlice<u32>,
    classes: usize,
) -> CudaSlice<T> {
    let mut y = alloc::<T>(&state.stream, ids.len() * classes, "one_hot");
    let (rows, cols) = (count(ids.len(), "one_hot"), count(classes, "one_hot"));
    let n = count(ids.len() * classes, "one_hot");
    if n > 0 {
        // one_hot_T(const u32* ids, T* y, u32 rows, u32 classes)
        launch!(state, &KERNELS, "one_hot", T::SUFFIX, grid(n), "one_hot";
            ids, &mut y, &rows, &cols);
    }
    y
}
