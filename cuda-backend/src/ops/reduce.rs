//! Reductions over any set of axes, argmax along one axis, and the largest id.

use super::float_map;
use crate::compile::Module;
use crate::device::{DeviceState, grid};
use crate::launch::{Strided, contiguous, count, launch, per_lane, split};
use crate::storage::{Buffer, Float, alloc, check, zeros};
use crate::{CudaStorage, codes};
use adjoint_backend::ReduceOp;
use cudarc::driver::CudaSlice;

/// `op` over `axes` of `x` (shape `shape`); the result holds the kept axes in order.
pub(crate) fn reduce(
    op: ReduceOp,
    x: &CudaStorage,
    shape: &[usize],
    axes: &[usize],
) -> CudaStorage {
    let strides = contiguous(shape);
    let split = |reduced: bool| -> (Vec<usize>, Vec<usize>) {
        (0..shape.len())
            .filter(|d| axes.contains(d) == reduced)
            .map(|d| (shape[d], strides[d]))
            .unzip()
    };
    let (kept_dims, kept_strides) = split(false);
    let (reduced_dims, reduced_strides) = split(true);
    let plan = Plan {
        outputs: kept_dims.iter().product(),
        reduced_len: reduced_dims.iter().product(),
        kept: Strided::new(&kept_dims, &[&kept_strides]),
        reduced: Strided::new(&reduced_dims, &[&reduced_strides]),
        code: codes::reduce(op),
    };
    float_map!(x, "reduce", |v| reduce_typed(x.device.state(), v, &plan))
}

/// The index maps and sizes of one reduction.
struct Plan {
    outputs: usize,
    reduced_len: usize,
    kept: Strided,
    reduced: Strided,
    code: u32,
}

fn reduce_typed<T: Float>(state: &DeviceState, x: &CudaSlice<T>, plan: &Plan) -> CudaSlice<T> {
    let mut y = alloc::<T>(&state.stream, plan.outputs, "reduce");
    if plan.outputs == 0 {
        return y;
    }
    let outputs = count(plan.outputs, "reduce");
    let reduced_len = count(plan.reduced_len, "reduce");
    let cfg = per_lane(outputs, reduced_len);
    // reduce_T(const T* x, T* y, u32 outputs, u32 reduced_len, u32 op, Strided kept,
    //          Strided reduced)
    launch!(state, Module::Reduce, "reduce", T::SUFFIX, cfg, "reduce";
        x, &mut y, &outputs, &reduced_len, &plan.code, &plan.kept, &plan.reduced);
    y
}

/// The index of the first maximum along `axis` (the first NaN if any), as `u32`.
pub(crate) fn argmax(x: &CudaStorage, shape: &[usize], axis: usize) -> CudaStorage {
    let sizes = split(shape, axis, "argmax");
    let state = x.device.state();
    let ids = match &x.buf {
        Buffer::F32(v) => argmax_typed(state, v, sizes),
        Buffer::F64(v) => argmax_typed(state, v, sizes),
        Buffer::U32(_) => panic!("argmax: expected a float tensor, got u32"),
    };
    CudaStorage::new(x.device, Buffer::U32(ids))
}

fn argmax_typed<T: Float>(
    state: &DeviceState,
    x: &CudaSlice<T>,
    [outer, len, inner]: [u32; 3],
) -> CudaSlice<u32> {
    let lanes = outer as usize * inner as usize;
    if len == 0 {
        return zeros(&state.stream, lanes, "argmax");
    }
    let mut ids = alloc::<u32>(&state.stream, lanes, "argmax");
    let n = count(lanes, "argmax");
    // argmax_T(const T* x, u32* y, u32 outer, u32 len, u32 inner)
    launch!(state, Module::Reduce, "argmax", T::SUFFIX, grid(n), "argmax";
        x, &mut ids, &outer, &len, &inner);
    ids
}

/// The softmax (or log-softmax when `log`) along `axis`, one block per lane.
pub(crate) fn softmax(x: &CudaStorage, shape: &[usize], axis: usize, log: bool) -> CudaStorage {
    let sizes = split(shape, axis, "softmax");
    float_map!(x, "softmax", |v| {
        softmax_typed(x.device.state(), v, sizes, u32::from(log))
    })
}

fn softmax_typed<T: Float>(
    state: &DeviceState,
    x: &CudaSlice<T>,
    [outer, len, inner]: [u32; 3],
    log: u32,
) -> CudaSlice<T> {
    let mut y = alloc::<T>(&state.stream, x.len(), "softmax");
    let lanes = count(outer as usize * inner as usize, "softmax");
    if lanes == 0 || len == 0 {
        return y;
    }
    // softmax_T(const T* x, T* y, u32 outer, u32 len, u32 inner, u32 take_log)
    launch!(state, Module::Reduce, "softmax", T::SUFFIX, per_lane(lanes, len), "softmax";
        x, &mut y, &outer, &len, &inner, &log);
    y
}

/// The largest id, `None` for no ids: known without the device for ids uploaded from the
/// host, else reduced on the device and read back (which waits for the device).
pub(crate) fn max_id(ids: &CudaStorage) -> Option<u32> {
    let v = ids.ids("max_id");
    if v.is_empty() {
        return None;
    }
    if let Some(max) = ids.uploaded_max {
        return Some(max);
    }
    let state = ids.device.state();
    let n = count(v.len(), "max_id");
    let mut out = zeros::<u32>(&state.stream, 1, "max_id");
    // max_id(const u32* ids, u32 n, u32* out)
    launch!(state, Module::Reduce, "max_id", "", grid(n), "max_id"; v, &n, &mut out);
    check(state.stream.clone_dtoh(&out), "max_id")
        .first()
        .copied()
}
