//! Reductions over any set of axes, argmax along one axis, and the largest id.

use super::float_map;
use crate::compile::Module;
use crate::device::{DeviceState, grid};
use crate::launch::{Strided, contiguous, count, launch};
use crate::storage::{Float, alloc, check, zeros};
use crate::{CudaStorage, codes};
use adjoint_backend::ReduceOp;
use cudarc::driver::{CudaSlice, LaunchConfig};

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
    // One block per output (grid-stride beyond 2^20 outputs), as many threads as the reduced
    // length needs up to the kernel's 256.
    let cfg = LaunchConfig {
        grid_dim: (outputs.min(1 << 20), 1, 1),
        block_dim: (reduced_len.next_power_of_two().clamp(32, 256), 1, 1),
        shared_mem_bytes: 0,
    };
    // reduce_T(const T* x, T* y, u32 outputs, u32 reduced_len, u32 op, Strided kept,
    //          Strided reduced)
    launch!(state, Module::Reduce, "reduce", T::SUFFIX, cfg, "reduce";
        x, &mut y, &outputs, &reduced_len, &plan.code, &plan.kept, &plan.reduced);
    y
}

/// The index of the first maximum along `axis` (the first NaN if any), as `u32`.
pub(crate) fn argmax(x: &CudaStorage, shape: &[usize], axis: usize) -> CudaStorage {
    let outer: usize = shape[..axis].iter().product();
    let len = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let state = x.device.state();
    let ids = if len == 0 {
        zeros::<u32>(&state.stream, outer * inner, "argmax")
    } else {
        let mut ids = alloc::<u32>(&state.stream, outer * inner, "argmax");
        let (o, l, i) = (
            count(outer, "argmax"),
            count(len, "argmax"),
            count(inner, "argmax"),
        );
        let n = count(outer * inner, "argmax");
        match &x.buf {
            // argmax_T(const T* x, u32* y, u32 outer, u32 len, u32 inner)
            crate::storage::Buffer::F32(v) => {
                launch!(state, Module::Reduce, "argmax", "f32", grid(n), "argmax";
                    v, &mut ids, &o, &l, &i)
            }
            crate::storage::Buffer::F64(v) => {
                launch!(state, Module::Reduce, "argmax", "f64", grid(n), "argmax";
                    v, &mut ids, &o, &l, &i)
            }
            crate::storage::Buffer::U32(_) => panic!("argmax: expected a float tensor, got u32"),
        }
        ids
    };
    CudaStorage::new(x.device, crate::storage::Buffer::U32(ids))
}

/// The softmax (or log-softmax when `log`) along `axis`, one block per lane.
pub(crate) fn softmax(x: &CudaStorage, shape: &[usize], axis: usize, log: bool) -> CudaStorage {
    let outer: usize = shape[..axis].iter().product();
    let len = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let sizes = [
        count(outer, "softmax"),
        count(len, "softmax"),
        count(inner, "softmax"),
    ];
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
    let lanes = outer as usize * inner as usize;
    if lanes == 0 || len == 0 {
        return y;
    }
    let cfg = LaunchConfig {
        grid_dim: (count(lanes.min(1 << 20), "softmax"), 1, 1),
        block_dim: (len.next_power_of_two().clamp(32, 256), 1, 1),
        shared_mem_bytes: 0,
    };
    // softmax_T(const T* x, T* y, u32 outer, u32 len, u32 inner, u32 take_log)
    launch!(state, Module::Reduce, "softmax", T::SUFFIX, cfg, "softmax";
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
