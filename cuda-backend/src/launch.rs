//! Kernel arguments shared by several ops: the strided-index map, the element-count check,
//! and the `launch!` macro.

use crate::compile::Mirror;
use cudarc::driver::{DeviceRepr, LaunchConfig};

/// The largest rank the kernels' index maps take (after merging axes).
const MAX_RANK: usize = 8;

/// Maps the linear index of an element of an iteration space to its offsets in up to three
/// strided buffers. Mirrors `struct Strided` in `kernels/common.cuh` field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Strided {
    rank: u32,
    dims: [u32; MAX_RANK],
    strides: [[u32; MAX_RANK]; 3],
}

// SAFETY: a `#[repr(C)]` struct of `u32`s with no padding, laid out as the kernels' `Strided`
// (the kernel compilation asserts the size and alignment, see `compile::layout_asserts`).
unsafe impl DeviceRepr for Strided {}

/// [`Strided`] as the kernels must see it: every kernel file includes `common.cuh`, which
/// defines it, so every [`Module`](crate::compile::Module) lists it.
pub(crate) const STRIDED: Mirror = Mirror::of::<Strided>("Strided");

impl Strided {
    /// The map of the row-major iteration space `dims` into buffers with the given strides
    /// (one list per buffer, each as long as `dims`). Axes of extent 1 are dropped and
    /// neighbouring axes that are contiguous in every buffer are merged, so a plain
    /// elementwise op has rank 1.
    ///
    /// # Panics
    /// With more than 3 buffers, or a rank above 8 after merging.
    pub(crate) fn new(dims: &[usize], strides: &[&[usize]]) -> Strided {
        assert!(strides.len() <= 3, "a strided map has at most 3 buffers");
        let mut map = Strided::default();
        let mut rank = 0;
        for (d, &extent) in dims.iter().enumerate() {
            if extent == 1 {
                continue;
            }
            let merges = rank > 0
                && strides
                    .iter()
                    .enumerate()
                    .all(|(k, s)| map.strides[k][rank - 1] as usize == s[d] * extent);
            if !merges {
                assert!(
                    rank < MAX_RANK,
                    "the CUDA kernels index at most {MAX_RANK} axes after merging, shape \
                     {dims:?} needs more"
                );
                map.dims[rank] = 1;
                rank += 1;
            }
            map.dims[rank - 1] = count(map.dims[rank - 1] as usize * extent, "a strided map");
            for (k, s) in strides.iter().enumerate() {
                map.strides[k][rank - 1] = count(s[d], "a strided map");
            }
        }
        map.rank = rank as u32;
        map
    }
}

/// Row-major strides of `shape`.
pub(crate) fn contiguous(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// Strides that read a contiguous buffer of `shape` as `out` (NumPy broadcasting: `shape` is
/// aligned to the right of `out`, and its extent-1 axes repeat).
pub(crate) fn broadcast(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let own = contiguous(shape);
    let lead = out.len() - shape.len();
    (0..out.len())
        .map(|d| match d.checked_sub(lead) {
            Some(i) if shape[i] != 1 => own[i],
            _ => 0,
        })
        .collect()
}

/// `shape` split around `axis` into `[outer, axis extent, inner]`, as kernel sizes.
pub(crate) fn split(shape: &[usize], axis: usize, op: &str) -> [u32; 3] {
    [
        count(shape[..axis].iter().product(), op),
        count(shape[axis], op),
        count(shape[axis + 1..].iter().product(), op),
    ]
}

/// One block per lane (grid-stride beyond 2²⁰ lanes) of as many threads as a lane of `len`
/// elements needs, from one warp up to the reduction kernels' 256.
pub(crate) fn per_lane(lanes: u32, len: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (lanes.clamp(1, 1 << 20), 1, 1),
        block_dim: (len.min(256).next_power_of_two().max(32), 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `n` as the kernels' 32-bit size.
///
/// # Panics
/// If `n` does not fit in 32 bits.
pub(crate) fn count(n: usize, op: &str) -> u32 {
    u32::try_from(n).unwrap_or_else(|_| {
        panic!("{op}: {n} elements exceed the CUDA kernels' 32-bit indices (at most 2^32 - 1)")
    })
}

/// Launches kernel `name` (with the element-type suffix, `""` for none) of a module on the
/// device's stream: `launch!(state, &KERNELS, "name", suffix, config, "op"; args...)`, with
/// the [`Module`](crate::compile::Module) that declares the kernel.
/// The arguments must match the kernel's parameter list in order and type: each call site
/// quotes the signature it launches.
macro_rules! launch {
    ($state:expr, $module:expr, $name:literal, $suffix:expr, $cfg:expr, $op:expr; $($arg:expr),* $(,)?) => {{
        use cudarc::driver::PushKernelArg as _;
        let state = $state;
        let function = state.function($module, $name, $suffix);
        let mut builder = state.stream.launch_builder(&function);
        $( builder.arg($arg); )*
        // SAFETY: the arguments follow the kernel's signature (quoted at the call site), the
        // buffers hold at least the elements the sizes passed along describe, and the launch
        // is ordered after the writes of its inputs on the device's single stream.
        $crate::storage::check(unsafe { builder.launch($cfg) }.map(|_| ()), $op);
    }};
}
pub(crate) use launch;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_contiguous_axes_and_drops_unit_axes() {
        let s = contiguous(&[2, 3, 4]);
        let map = Strided::new(&[2, 3, 4], &[&s, &s]);
        assert_eq!((map.rank, map.dims[0], map.strides[0][0]), (1, 24, 1));
        // A bias [4] broadcast over [2, 3, 4]: the batch axes merge, the inner one stays.
        let b = broadcast(&[4], &[2, 3, 4]);
        assert_eq!(b, vec![0, 0, 1]);
        let map = Strided::new(&[2, 3, 4], &[&s, &b]);
        assert_eq!(map.rank, 2);
        assert_eq!((map.dims[0], map.dims[1]), (6, 4));
        assert_eq!((map.strides[0][0], map.strides[0][1]), (4, 1));
        assert_eq!((map.strides[1][0], map.strides[1][1]), (0, 1));
        let map = Strided::new(&[1, 5, 1], &[&[9, 1, 1]]);
        assert_eq!((map.rank, map.dims[0], map.strides[0][0]), (1, 5, 1));
    }

    #[test]
    fn permuted_strides_do_not_merge() {
        // The transpose of [3, 4]: iterate [4, 3] reading strides (1, 4).
        let map = Strided::new(&[4, 3], &[&[1, 4], &[3, 1]]);
        assert_eq!(map.rank, 2);
    }
}
