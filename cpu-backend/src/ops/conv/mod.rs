//! NCHW convolution, and the choice of its algorithm: `f32` convolutions at stride 1 on CPUs
//! with AVX2 and FMA but not AVX-512F, with at least one image per thread, run
//! [`direct`](mod@direct)'s kernels, which read the image in place; every other runs as
//! `im2col` + GEMM ([`gemm`]).
//! [`im2col`](mod@im2col) holds the unfolding itself, also used by pooling, and [`batch`] how a
//! batch is spread over the threads.

mod batch;
#[cfg(target_arch = "x86_64")]
pub(crate) mod direct;
mod gemm;
pub(crate) mod im2col;

pub use im2col::{col2im, im2col};

use crate::{Conv2dSpec, CpuStorage};
use gemm::{backward_input, backward_weight, forward, forward_plain};

/// Whether the backend runs an `f32` convolution on [`direct`](mod@direct)'s kernels rather
/// than on the GEMM path: when it is [`supported`](direct::supported), has at least one image
/// per thread (fewer run on the GEMM path, which splits each product across the threads), and
/// the CPU lacks AVX-512F. With AVX-512F the GEMM path's own kernel does twice the work per
/// instruction of these AVX2 tiles (the CNN step took 21.5 ms with it on a Xeon), and these
/// kernels were never measured there.
#[cfg(target_arch = "x86_64")]
fn applies(s: &Conv2dSpec) -> bool {
    direct::supported(s)
        && s.geometry.batch >= rayon::current_num_threads()
        && !std::is_x86_feature_detected!("avx512f")
}

macro_rules! dispatch {
    ($f:ident, $a:expr, $b:expr, $s:expr) => {
        match ($a, $b) {
            (CpuStorage::F32(a), CpuStorage::F32(b)) => CpuStorage::F32($f(a, b, $s)),
            (CpuStorage::F64(a), CpuStorage::F64(b)) => CpuStorage::F64($f(a, b, $s)),
            (a, b) => panic!(
                "conv2d: dtypes {:?} and {:?} differ or are not float",
                a.dtype(),
                b.dtype()
            ),
        }
    };
}

/// `run` on the two `f32` buffers when both are `f32` and [`direct`](mod@direct) takes the
/// convolution ([`applies`]), else `None`.
#[cfg(target_arch = "x86_64")]
fn direct_f32(
    a: &CpuStorage,
    b: &CpuStorage,
    s: &Conv2dSpec,
    run: impl FnOnce(&[f32], &[f32]) -> Vec<f32>,
) -> Option<CpuStorage> {
    match (a, b) {
        (CpuStorage::F32(a), CpuStorage::F32(b)) if applies(s) => Some(CpuStorage::F32(run(a, b))),
        _ => None,
    }
}

/// The convolution of NCHW `x` with `w`.
pub fn conv2d(x: &CpuStorage, w: &CpuStorage, s: &Conv2dSpec) -> CpuStorage {
    #[cfg(target_arch = "x86_64")]
    if let Some(y) = direct_f32(x, w, s, |x, w| direct::forward(x, w, None, s)) {
        return y;
    }
    dispatch!(forward_plain, x, w, s)
}

/// The convolution of NCHW `x` with `w` plus `bias[o]` on every pixel of channel `o`.
pub fn conv2d_bias(
    x: &CpuStorage,
    w: &CpuStorage,
    bias: &CpuStorage,
    s: &Conv2dSpec,
) -> CpuStorage {
    match (x, w, bias) {
        (CpuStorage::F32(x), CpuStorage::F32(w), CpuStorage::F32(b)) => {
            #[cfg(target_arch = "x86_64")]
            if applies(s) {
                return CpuStorage::F32(direct::forward(x, w, Some(b), s));
            }
            CpuStorage::F32(forward(x, w, Some(b), s))
        }
        (CpuStorage::F64(x), CpuStorage::F64(w), CpuStorage::F64(b)) => {
            CpuStorage::F64(forward(x, w, Some(b), s))
        }
        (x, w, b) => panic!(
            "conv2d: dtypes {:?}, {:?} and bias {:?} differ or are not float",
            x.dtype(),
            w.dtype(),
            b.dtype()
        ),
    }
}

/// The input tangent of a convolution.
pub fn conv2d_backward_input(dy: &CpuStorage, w: &CpuStorage, s: &Conv2dSpec) -> CpuStorage {
    #[cfg(target_arch = "x86_64")]
    if let Some(dx) = direct_f32(dy, w, s, |dy, w| direct::backward_input(dy, w, s)) {
        return dx;
    }
    dispatch!(backward_input, dy, w, s)
}

/// The weight tangent of a convolution.
pub fn conv2d_backward_weight(x: &CpuStorage, dy: &CpuStorage, s: &Conv2dSpec) -> CpuStorage {
    #[cfg(target_arch = "x86_64")]
    if let Some(dw) = direct_f32(x, dy, s, |x, dy| direct::backward_weight(x, dy, s)) {
        return dw;
    }
    dispatch!(backward_weight, x, dy, s)
}
