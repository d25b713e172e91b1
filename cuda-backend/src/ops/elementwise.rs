//! Unary and binary ops (broadcasting through strided index maps) and select.

use super::{float_map, float_map_with_ids, float_map2, layout};
use crate::compile::Module;
use crate::device::{DeviceState, grid};
use crate::launch::{STRIDED, Strided, broadcast, count, launch};
use crate::storage::{Buffer, Float, alloc};
use crate::{CudaStorage, codes};
use adjoint_backend::{BinaryOp, UnaryOp};
use cudarc::driver::CudaSlice;

/// `kernels/elementwise.cu`: the elementwise ops, the ReLU bit masks, `select` and the matmul epilogue.
pub(crate) const KERNELS: Module = Module {
    file: "elementwise.cu",
    text: include_str!("../../kernels/elementwise.cu"),
    mirrors: &[STRIDED],
};

/// `op` on every element.
pub(crate) fn unary(op: UnaryOp, x: &CudaStorage) -> CudaStorage {
    let (code, [a, b]) = codes::unary(op);
    float_map!(x, "unary", |v| unary_typed(x.device.state(), v, code, a, b))
}

fn unary_typed<T: Float>(
    state: &DeviceState,
    x: &CudaSlice<T>,
    code: u32,
    a: f64,
    b: f64,
) -> CudaSlice<T> {
    let n = count(x.len(), "unary");
    let mut y = alloc::<T>(&state.stream, x.len(), "unary");
    // unary_T(const T* x, T* y, u32 n, u32 op, double a, double b)
    launch!(state, &KERNELS, "unary", T::SUFFIX, grid(n), "unary";
        x, &mut y, &n, &code, &a, &b);
    y
}

/// `op` with NumPy broadcasting of both operands to `out_shape`.
pub(crate) fn binary(
    op: BinaryOp,
    (lhs, lhs_shape): (&CudaStorage, &[usize]),
    (rhs, rhs_shape): (&CudaStorage, &[usize]),
    out_shape: &[usize],
) -> CudaStorage {
    let (code, [a, b]) = codes::binary(op);
    let map = Strided::new(
        out_shape,
        &[
            &broadcast(lhs_shape, out_shape),
            &broadcast(rhs_shape, out_shape),
        ],
    );
    let len = out_shape.iter().product();
    float_map2!(lhs, rhs, "binary", |l, r| {
        binary_typed(lhs.device.state(), (l, r), len, code, [a, b], map)
    })
}

fn binary_typed<T: Float>(
    state: &DeviceState,
    (lhs, rhs): (&CudaSlice<T>, &CudaSlice<T>),
    len: usize,
    code: u32,
    [a, b]: [f64; 2],
    map: Strided,
) -> CudaSlice<T> {
    let n = count(len, "binary");
    let mut y = alloc::<T>(&state.stream, len, "binary");
    // binary_T(const T* lhs, const T* rhs, T* y, u32 n, u32 op, double a, double b, Strided s)
    launch!(state, &KERNELS, "binary", T::SUFFIX, grid(n), "binary";
        lhs, rhs, &mut y, &n, &code, &a, &b, &map);
    y
}

/// `max(x, 0)`, and bit `i % 32` of word `i / 32` set where `x[i] > 0`.
pub(crate) fn relu_with_bits(x: &CudaStorage) -> (CudaStorage, CudaStorage) {
    let state = x.device.state();
    float_map_with_ids!(x, "relu", |v| relu_bits_typed(state, v))
}

fn relu_bits_typed<T: Float>(
    state: &DeviceState,
    x: &CudaSlice<T>,
) -> (CudaSlice<T>, CudaSlice<u32>) {
    let n = count(x.len(), "relu");
    let words = x.len().div_ceil(32);
    let mut y = alloc::<T>(&state.stream, x.len(), "relu");
    let mut bits = alloc::<u32>(&state.stream, words, "relu");
    if n > 0 {
        // relu_with_bits_T(const T* x, T* y, u32* bits, u32 n): a thread per element, a warp
        // per word (`grid` launches blocks of 256 threads).
        launch!(state, &KERNELS, "relu_with_bits", T::SUFFIX, grid(n), "relu";
            x, &mut y, &mut bits, &n);
    }
    (y, bits)
}

/// `d[i]` where bit `i` of `bits` is set, else 0.
pub(crate) fn mask_by_bits(d: &CudaStorage, bits: &CudaStorage) -> CudaStorage {
    let words = bits.ids("mask_by_bits");
    assert_eq!(
        words.len(),
        d.len().div_ceil(32),
        "mask_by_bits: {} words of bits for {} elements",
        words.len(),
        d.len()
    );
    float_map!(d, "mask_by_bits", |v| mask_by_bits_typed(
        d.device.state(),
        v,
        words
    ))
}

fn mask_by_bits_typed<T: Float>(
    state: &DeviceState,
    d: &CudaSlice<T>,
    bits: &CudaSlice<u32>,
) -> CudaSlice<T> {
    let n = count(d.len(), "mask_by_bits");
    let mut y = alloc::<T>(&state.stream, d.len(), "mask_by_bits");
    if n > 0 {
        // mask_by_bits_T(const T* d, const u32* bits, T* y, u32 n)
        launch!(state, &KERNELS, "mask_by_bits", T::SUFFIX, grid(n), "mask_by_bits";
            d, bits, &mut y, &n);
    }
    y
}

/// `mask != 0 ? on_true : on_false`, all three broadcast to `out_shape` (the mask is cast to
/// the values' dtype first if it differs).
pub(crate) fn select(
    (mask, mask_shape): (&CudaStorage, &[usize]),
    (on_true, true_shape): (&CudaStorage, &[usize]),
    (on_false, false_shape): (&CudaStorage, &[usize]),
    out_shape: &[usize],
) -> CudaStorage {
    let cast;
    let mask = if mask.dtype() == on_true.dtype() {
        mask
    } else {
        cast = layout::cast(mask, on_true.dtype());
        &cast
    };
    let map = Strided::new(
        out_shape,
        &[
            &broadcast(mask_shape, out_shape),
            &broadcast(true_shape, out_shape),
            &broadcast(false_shape, out_shape),
        ],
    );
    let len = out_shape.iter().product();
    float_map2!(on_true, on_false, "select", |t, f| {
        select_typed(on_true.device.state(), (&mask.buf, t, f), len, map)
    })
}

fn select_typed<T: Float>(
    state: &DeviceState,
    (mask, on_true, on_false): (&Buffer, &CudaSlice<T>, &CudaSlice<T>),
    len: usize,
    map: Strided,
) -> CudaSlice<T> {
    let mask = T::slice(mask).expect("select: the mask was cast to the values' dtype");
    let n = count(len, "select");
    let mut y = alloc::<T>(&state.stream, len, "select");
    // select_T(const T* mask, const T* on_true, const T* on_false, T* y, u32 n, Strided s)
    launch!(state, &KERNELS, "select", T::SUFFIX, grid(n), "select";
        mask, on_true, on_false, &mut y, &n, &map);
    y
}

/// `y ← act(y + bias)` in place, `bias` (`cols` elements) added to every row of `y`, `act`
/// optional: the epilogue of a fused layer, with the scalar rules of `binary(Add)` and
/// `unary(act)`, so the same bits as those two ops.
pub(crate) fn bias_act_in_place<T: Float>(
    state: &DeviceState,
    y: &mut CudaSlice<T>,
    bias: &CudaSlice<T>,
    cols: usize,
    act: Option<UnaryOp>,
) {
    let n = count(y.len(), "matmul_epilogue");
    let cols = count(cols, "matmul_epilogue");
    if n == 0 {
        return;
    }
    let (has_act, (code, [a, b])) = match act {
        Some(op) => (1_u32, codes::unary(op)),
        None => (0, (0, [0.0, 0.0])),
    };
    // bias_act_T(T* y, const T* bias, u32 n, u32 cols, u32 has_act, u32 op, double a, double b)
    launch!(state, &KERNELS, "bias_act", T::SUFFIX, grid(n), "matmul_epilogue";
        y, bias, &n, &cols, &has_act, &code, &a, &b);
}
