//! Seeded uniform and normal draws, generated on the device.

use super::by_dtype;
use crate::compile::Module;
use crate::device::{DeviceState, grid};
use crate::launch::{STRIDED, count, launch};
use crate::storage::{Element, alloc};
use crate::{CudaDevice, CudaStorage};
use adjoint_backend::DType;
use cudarc::driver::CudaSlice;

/// `kernels/random.cu`: the random fills.
pub(crate) const KERNELS: Module = Module {
    file: "random.cu",
    text: include_str!("../../kernels/random.cu"),
    mirrors: &[STRIDED],
};

/// `len` draws from `U[a, b)` (or `N(a, b²)` when `normal`): element `i` is a function of
/// `(seed, i)` only (a counter-based generator), so a draw is reproducible on any GPU; it is
/// not the CPU backend's sequence for the same seed.
///
/// # Panics
/// If `dtype` is `u32`.
pub(crate) fn random(
    device: &CudaDevice,
    len: usize,
    seed: u64,
    params: (f64, f64),
    normal: bool,
    dtype: DType,
) -> CudaStorage {
    assert!(
        dtype.is_float(),
        "random: dtype must be float, got {dtype:?}"
    );
    let buf = by_dtype!(dtype, draw(device.state(), len, seed, params, normal));
    CudaStorage::new(*device, buf)
}

fn draw<T: Element>(
    state: &DeviceState,
    len: usize,
    seed: u64,
    (a, b): (f64, f64),
    normal: bool,
) -> CudaSlice<T> {
    let mut y = alloc::<T>(&state.stream, len, "random");
    let n = count(len, "random");
    let normal = u32::from(normal);
    if n > 0 {
        // random_T(T* y, u32 n, u64 seed, double a, double b, u32 normal)
        launch!(state, &KERNELS, "random", T::SUFFIX, grid(n), "random";
            &mut y, &n, &seed, &a, &b, &normal);
    }
    y
}
