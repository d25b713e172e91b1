//! Reductions over any set of axes, argmax along one axis, and the largest id.

use super::float_map;
use crate::compile::Module;
use crate::device::{DeviceState, grid};
use crate::launch::{STRIDED, Strided, contiguous, count, launch, per_lane, split};
use crate::storage::{Buffer, Float, alloc, check, zeros};
use crate::{CudaStorage, codes};
use adjoint_backend::ReduceOp;
use cudarc::driver::CudaSlice;

/// `kernels/reduce.cu`: the reductions, `argmax`, the softmax and the largest id.
pub(crate) const KERNELS: Module = Module {
    file: "reduce.cu",
    text: include_str!("../../kernels/reduce.cu"),
    mirrors: &[STRIDED],
};

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
        lanes: count(kept_dims.iter().product(), "reduce"),
        len: count(reduced_dims.iter().product(), "reduce"),
        kept: Strided::new(&kept_dims, &[&kept_strides]),
        reduced: Strided::new(&reduced_dims, &[&reduced_strides]),
        code: codes::reduce(op),
    };
    float_map!(x, "reduce", |v| reduce_typed(x.device.state(), v, &plan))
}

/// One reduction: `lanes` results, each `code` over the `len` elements of its lane, the lane
/// of result `o` at offset `kept(o)` and its `r`-th element `reduced(r)` further on.
struct Plan {
    lanes: u32,
    len: u32,
    kept: Strided,
    reduced: Strided,
    code: u32,
}

/// Lanes at most this long get a thread each ([`Shape::Threads`]).
const SHORT_LANE: u32 = 32;
/// Elements a block folds at least when a long lane is cut into runs ([`Shape::Runs`]).
const RUN_LEN: u32 = 4096;
/// Blocks per multiprocessor that a cut into runs aims at.
const BLOCKS_PER_SM: u32 = 4;

/// How a reduction is spread over the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// One thread per lane: short lanes, where a block per lane would leave most of its
    /// threads idle (a pooling window, a lane of partial results).
    Threads,
    /// One block per lane.
    Blocks,
    /// Few long lanes (a bias tangent: a handful of channels, each summed over the batch and
    /// the pixels): each lane cut into `runs` runs of `run_len`, a block per run, then the
    /// lanes of partial results reduced by a second launch, so that every multiprocessor
    /// has work. The order of the sum is fixed by the shape, not by the schedule.
    Runs { runs: u32, run_len: u32 },
}

impl Shape {
    /// The shape for `lanes` lanes of `len` elements on a device of `multiprocessors`.
    fn of(lanes: u32, len: u32, multiprocessors: u32) -> Shape {
        if len <= SHORT_LANE {
            return Shape::Threads;
        }
        let target = multiprocessors.saturating_mul(BLOCKS_PER_SM);
        let runs = target.div_ceil(lanes).min(len.div_ceil(RUN_LEN));
        if runs < 2 {
            return Shape::Blocks;
        }
        Shape::Runs {
            runs,
            run_len: len.div_ceil(runs),
        }
    }
}

fn reduce_typed<T: Float>(state: &DeviceState, x: &CudaSlice<T>, plan: &Plan) -> CudaSlice<T> {
    let mut y = alloc::<T>(&state.stream, plan.lanes as usize, "reduce");
    if plan.lanes == 0 {
        return y;
    }
    match Shape::of(plan.lanes, plan.len, state.multiprocessors) {
        Shape::Threads => {
            // reduce_lanes_T(const T* x, T* y, u32 lanes, u32 reduced_len, u32 op,
            //                Strided kept, Strided reduced)
            launch!(state, &KERNELS, "reduce_lanes", T::SUFFIX, grid(plan.lanes), "reduce";
                x, &mut y, &plan.lanes, &plan.len, &plan.code, &plan.kept, &plan.reduced);
        }
        Shape::Blocks => run_blocks(state, x, &mut y, plan, 1, plan.len),
        Shape::Runs { runs, run_len } => {
            let lanes = plan.lanes as usize;
            let mut partial = alloc::<T>(&state.stream, lanes * runs as usize, "reduce");
            run_blocks(state, x, &mut partial, plan, runs, run_len);
            // The partial results as `[lanes, runs]`, reduced along their rows.
            let rows = Plan {
                lanes: plan.lanes,
                len: runs,
                kept: Strided::new(&[lanes], &[&[runs as usize]]),
                reduced: Strided::new(&[runs as usize], &[&[1]]),
                code: plan.code,
            };
            y = reduce_typed(state, &partial, &rows);
        }
    }
    y
}

/// The block kernel: `runs` blocks per lane, each folding `run_len` elements, into `out`
/// (`lanes·runs` results).
fn run_blocks<T: Float>(
    state: &DeviceState,
    x: &CudaSlice<T>,
    out: &mut CudaSlice<T>,
    plan: &Plan,
    runs: u32,
    run_len: u32,
) {
    let blocks = count(plan.lanes as usize * runs as usize, "reduce");
    // reduce_T(const T* x, T* y, u32 lanes, u32 reduced_len, u32 runs, u32 run_len, u32 op,
    //          Strided kept, Strided reduced)
    launch!(state, &KERNELS, "reduce", T::SUFFIX, per_lane(blocks, run_len), "reduce";
        x, out, &plan.lanes, &plan.len, &runs, &run_len, &plan.code, &plan.kept, &plan.reduced);
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
    launch!(state, &KERNELS, "argmax", T::SUFFIX, grid(n), "argmax";
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
    launch!(state, &KERNELS, "softmax", T::SUFFIX, per_lane(lanes, len), "softmax";
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
    launch!(state, &KERNELS, "max_id", "", grid(n), "max_id"; v, &n, &mut out);
    state.waited();
    check(state.stream.clone_dtoh(&out), "max_id")
        .first()
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lanes_take_a_thread_each() {
        // The MNIST CNN's pooling windows, and lanes of partial results.
        assert_eq!(Shape::of(589_824, 4, 132), Shape::Threads);
        assert_eq!(Shape::of(64, 9, 132), Shape::Threads);
        assert_eq!(Shape::of(1, 32, 132), Shape::Threads);
    }

    #[test]
    fn many_long_lanes_take_a_block_each() {
        assert_eq!(Shape::of(10_000, 512, 132), Shape::Blocks);
        // Too short to be worth cutting, however few.
        assert_eq!(Shape::of(1, 4096, 132), Shape::Blocks);
    }

    #[test]
    fn few_long_lanes_are_cut_into_runs_covering_each_lane() {
        // The CNN's bias tangent: 64 channels, each over 64 images of 24 × 24 pixels.
        assert_eq!(
            Shape::of(64, 36_864, 132),
            Shape::Runs {
                runs: 9,
                run_len: 4096
            }
        );
        for (lanes, len) in [(1, 4097), (1, 1 << 30), (3, 100_000), (200, 10_000)] {
            let Shape::Runs { runs, run_len } = Shape::of(lanes, len, 132) else {
                panic!("{lanes} lanes of {len}: expected runs");
            };
            assert!(
                (2..=132 * BLOCKS_PER_SM).contains(&runs),
                "{lanes} x {len}: {runs}"
            );
            // Every element in one run, and no run empty.
            assert!(
                runs * run_len >= len && (runs - 1) * run_len < len,
                "{runs} x {run_len}"
            );
            // The second pass over the partial results is not cut again.
            assert!(!matches!(Shape::of(lanes, runs, 132), Shape::Runs { .. }));
        }
    }
}
