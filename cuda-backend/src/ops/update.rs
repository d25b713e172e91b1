//! Fused in-place optimizer steps.

use crate::CudaStorage;
use crate::compile::{Mirror, Module};
use crate::device::{DeviceState, grid};
use crate::launch::{STRIDED, count, launch};
use crate::storage::{Buffer, Float};
use adjoint_backend::UpdateOp;
use cudarc::driver::{CudaSlice, DevicePtrMut, DeviceRepr};

/// The parameters of one step. Mirrors `struct UpdateParams` in `kernels/update.cu`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct UpdateParams {
    kind: u32,
    flags: u32,
    lr: f64,
    momentum: f64,
    dampening: f64,
    weight_decay: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    bias_correction1: f64,
    bias_correction2: f64,
}

// SAFETY: a `#[repr(C)]` struct of two `u32`s then `f64`s (no padding), laid out as the
// kernel's `UpdateParams` (the kernel compilation asserts the size and alignment, see
// `compile::layout_asserts`).
unsafe impl DeviceRepr for UpdateParams {}

/// `kernels/update.cu`: the optimizer steps, taking their parameters by value.
pub(crate) const KERNELS: Module = Module {
    file: "update.cu",
    text: include_str!("../../kernels/update.cu"),
    mirrors: &[STRIDED, Mirror::of::<UpdateParams>("UpdateParams")],
};

const FLAG_NESTEROV: u32 = 1;
const FLAG_FIRST_STEP: u32 = 2;
const FLAG_DECOUPLED: u32 = 4;

impl UpdateParams {
    fn new(op: UpdateOp) -> UpdateParams {
        match op {
            UpdateOp::Sgd {
                lr,
                momentum,
                dampening,
                weight_decay,
                nesterov,
                first_step,
            } => UpdateParams {
                kind: 0,
                flags: if nesterov { FLAG_NESTEROV } else { 0 }
                    | if first_step { FLAG_FIRST_STEP } else { 0 },
                lr,
                momentum,
                dampening,
                weight_decay,
                ..UpdateParams::default()
            },
            UpdateOp::Adam {
                lr,
                beta1,
                beta2,
                eps,
                weight_decay,
                decoupled,
                bias_correction1,
                bias_correction2,
            } => UpdateParams {
                kind: 1,
                flags: if decoupled { FLAG_DECOUPLED } else { 0 },
                lr,
                weight_decay,
                beta1,
                beta2,
                eps,
                bias_correction1,
                bias_correction2,
                ..UpdateParams::default()
            },
            // Plain SGD with γ = −1 is `θ − (−1)·g = θ + g`, exactly (both steps are exact).
            UpdateOp::Accumulate => UpdateParams {
                kind: 0,
                lr: -1.0,
                ..UpdateParams::default()
            },
        }
    }
}

/// One step of `op` on `param` with gradient `grad` and the op's state buffers, in place.
///
/// # Panics
/// If the dtypes differ or are not float, or fewer state buffers than the op needs are given.
pub(crate) fn update(
    op: UpdateOp,
    param: &mut CudaStorage,
    grad: &CudaStorage,
    state: &mut [&mut CudaStorage],
) {
    assert!(
        state.len() >= op.state_len(),
        "update: {op:?} needs {} state buffers, got {}",
        op.state_len(),
        state.len()
    );
    let params = UpdateParams::new(op);
    let device = param.device.state();
    let (p_dtype, g_dtype) = (param.dtype(), grad.dtype());
    match (&mut param.buf, &grad.buf) {
        (Buffer::F32(p), Buffer::F32(g)) => step(device, p, g, state, params),
        (Buffer::F64(p), Buffer::F64(g)) => step(device, p, g, state, params),
        _ => panic!(
            "update: parameter {p_dtype:?} and gradient {g_dtype:?} must be the same float dtype"
        ),
    }
}

fn step<T: Float>(
    device: &DeviceState,
    p: &mut CudaSlice<T>,
    g: &CudaSlice<T>,
    state: &mut [&mut CudaStorage],
    params: UpdateParams,
) {
    // The state buffers as raw device pointers (0 for the ones the op does not use): the
    // kernel takes two, whatever the op.
    let mut pointers = [0u64; 2];
    for (slot, s) in pointers.iter_mut().zip(state.iter_mut()) {
        let dtype = s.dtype();
        let Some(buf) = T::slice_mut(&mut s.buf) else {
            panic!("update: a state buffer is {dtype:?}, the parameter is not");
        };
        assert_eq!(
            buf.len(),
            p.len(),
            "update: a state buffer's length differs from the parameter's"
        );
        *slot = buf.device_ptr_mut(&device.stream).0;
    }
    let n = count(p.len(), "update");
    if n == 0 {
        return;
    }
    // update_T(T* p, const T* g, T* s0, T* s1, u32 n, UpdateParams u)
    launch!(device, &KERNELS, "update", T::SUFFIX, grid(n), "update";
        p, g, &pointers[0], &pointers[1], &n, &params);
}
