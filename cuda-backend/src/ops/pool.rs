//! Max pooling in one pass over the windows, and its tangent as one gather
//! ([`Backend::max_pool2d`](adjoint_backend::Backend::max_pool2d) and
//! [`max_pool2d_backward`](adjoint_backend::Backend::max_pool2d_backward)).
//!
//! Composed from primitives, pooling unfolds the windows (`im2col`), reduces them, searches
//! them again for the winning tap, and folds a mask of the winners times the tangent back
//! (`col2im`): six passes over buffers the size of the windows. These kernels read each
//! input once and write each input tangent once: a thread per window, or, for the tangent of
//! overlapping windows, a thread per input element gathering from the windows that hold it.

use super::conv::{Geometry, KERNELS};
use super::{float_map, float_map_with_ids};
use crate::device::{DeviceState, grid};
use crate::launch::{count, launch};
use crate::storage::{Float, alloc};
use crate::{CudaStorage, storage};
use adjoint_backend::Conv2dGeometry;
use cudarc::driver::CudaSlice;

/// The maximum of each window of `g` (`[P, oh·ow]`) and the row-major index of its first
/// maximal tap (`U32`, the same shape).
pub(crate) fn max_pool2d(x: &CudaStorage, g: &Conv2dGeometry) -> (CudaStorage, CudaStorage) {
    let geometry = Geometry::new(g);
    let state = x.device.state();
    float_map_with_ids!(x, "max_pool2d", |v| forward(state, v, &geometry))
}

fn forward<T: Float>(
    state: &DeviceState,
    v: &CudaSlice<T>,
    g: &Geometry,
) -> (CudaSlice<T>, CudaSlice<u32>) {
    let windows = g.planes() * g.pixels();
    let mut y = alloc::<T>(&state.stream, windows, "max_pool2d");
    let mut winners = alloc::<u32>(&state.stream, windows, "max_pool2d");
    let n = count(windows, "max_pool2d");
    if n > 0 {
        // max_pool_T(const T* x, T* y, u32* winners, Geometry g)
        launch!(state, &KERNELS, "max_pool", T::SUFFIX, grid(n), "max_pool2d";
            v, &mut y, &mut winners, g);
    }
    (y, winners)
}

/// The input tangent of [`max_pool2d`]: `dy` of each window at its winning tap, summed where
/// windows overlap, zeros elsewhere (`[P, H, W]`).
pub(crate) fn max_pool2d_backward(
    dy: &CudaStorage,
    winners: &CudaStorage,
    g: &Conv2dGeometry,
) -> CudaStorage {
    let geometry = Geometry::new(g);
    let (state, winners) = (dy.device.state(), winners.ids("max_pool2d_backward"));
    float_map!(dy, "max_pool2d_backward", |v| backward(
        state, v, winners, &geometry
    ))
}

fn backward<T: Float>(
    state: &DeviceState,
    v: &CudaSlice<T>,
    winners: &CudaSlice<u32>,
    g: &Geometry,
) -> CudaSlice<T> {
    let total = g.planes() * g.image();
    let n = count(total, "max_pool2d_backward");
    if n == 0 || g.pixels() == 0 {
        return storage::zeros(&state.stream, total, "max_pool2d_backward");
    }
    if g.windows_overlap() {
        let mut dx = alloc::<T>(&state.stream, total, "max_pool2d_backward");
        // max_pool_backward_T(const T* dy, const u32* winners, T* dx, Geometry g)
        launch!(state, &KERNELS, "max_pool_backward", T::SUFFIX, grid(n),
            "max_pool2d_backward"; v, winners, &mut dx, g);
        return dx;
    }
    let mut dx = storage::zeros::<T>(&state.stream, total, "max_pool2d_backward");
    let windows = count(g.planes() * g.pixels(), "max_pool2d_backward");
    // max_pool_scatter_T(const T* dy, const u32* winners, T* dx, Geometry g)
    launch!(state, &KERNELS, "max_pool_scatter", T::SUFFIX, grid(windows),
        "max_pool2d_backward"; v, winners, &mut dx, g);
    dx
}
