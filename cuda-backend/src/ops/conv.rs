//! Convolution as `im2col` + cuBLAS, and the unfolding kernels.
//!
//! With `G` groups, `O` output channels (`og = O/G` per group), `ck = C/G·kh·kw` column rows
//! per group and `l = oh·ow` output pixels:
//!
//! * forward: columns `[N, C·kh·kw, l]`, then per group one GEMM batched over the images,
//!   `Y[n, g] = W_g · cols[n, g]` (`W_g` repeated with batch stride 0);
//! * input tangent: `cols̄[n, g] = W_gᵀ · Ȳ[n, g]`, folded back by `col2im`;
//! * weight tangent: the columns unfolded as `[C·kh·kw, N·l]` and `Ȳ` permuted to `[O, N·l]`,
//!   so that `W̄_g = Ȳ_g · cols_gᵀ` is one GEMM over the whole batch (no reduction over
//!   images afterwards).

use super::float_map;
use super::float_map2;
use super::layout::permute;
use super::matmul::Gemm;
use crate::CudaStorage;
use crate::compile::{Mirror, Module};
use crate::device::{DeviceState, grid};
use crate::launch::{STRIDED, count, launch};
use crate::storage::{Float, alloc};
use adjoint_backend::{Conv2dGeometry, Conv2dSpec};
use cudarc::driver::{CudaSlice, DeviceRepr};

/// The geometry as the kernels take it. Mirrors `struct Geometry` in `kernels/conv.cu`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    batch: u32,
    channels: u32,
    height: u32,
    width: u32,
    kernel: [u32; 2],
    stride: [u32; 2],
    padding: [u32; 2],
    dilation: [u32; 2],
    out: [u32; 2],
}

// SAFETY: a `#[repr(C)]` struct of `u32`s with no padding, laid out as the kernels' `Geometry`
// (the kernel compilation asserts the size and alignment, see `compile::layout_asserts`).
unsafe impl DeviceRepr for Geometry {}

/// `kernels/conv.cu`: the unfolding, its adjoint and max pooling, taking the geometry by value.
pub(crate) const KERNELS: Module = Module {
    file: "conv.cu",
    text: include_str!("../../kernels/conv.cu"),
    mirrors: &[STRIDED, Mirror::of::<Geometry>("Geometry")],
};

impl Geometry {
    pub(crate) fn new(g: &Conv2dGeometry) -> Geometry {
        let out = g.output().expect("conv: geometry validated by the caller");
        let c = |v: usize| count(v, "conv2d");
        let pair = |[a, b]: [usize; 2]| [c(a), c(b)];
        Geometry {
            batch: c(g.batch),
            channels: c(g.channels),
            height: c(g.input[0]),
            width: c(g.input[1]),
            kernel: pair(g.kernel),
            stride: pair(g.stride),
            padding: pair(g.padding),
            dilation: pair(g.dilation),
            out: pair(out),
        }
    }

    /// Planes (`N·C` images of one channel each).
    pub(crate) fn planes(&self) -> usize {
        self.batch as usize * self.channels as usize
    }

    /// Input pixels per plane.
    pub(crate) fn image(&self) -> usize {
        self.height as usize * self.width as usize
    }

    /// Output pixels per image.
    pub(crate) fn pixels(&self) -> usize {
        self.out[0] as usize * self.out[1] as usize
    }

    /// Whether two windows can share an input element: a window spans more than the stride
    /// along an axis.
    pub(crate) fn windows_overlap(&self) -> bool {
        (0..2).any(|d| self.kernel[d].saturating_sub(1) * self.dilation[d] + 1 > self.stride[d])
    }

    /// Column rows (`C·kh·kw`).
    fn rows(&self) -> usize {
        self.channels as usize * self.kernel[0] as usize * self.kernel[1] as usize
    }
}

/// Where column element `(n, r, l)` goes: `n·batch_stride + r·row_stride + l`.
#[derive(Clone, Copy)]
enum ColumnLayout {
    /// `[N, C·kh·kw, l]`, the layout of [`im2col`].
    ImageMajor,
    /// `[C·kh·kw, N, l]`: each row holds the whole batch.
    RowMajor,
}

fn unfold<T: Float>(
    state: &DeviceState,
    x: &CudaSlice<T>,
    g: &Geometry,
    fill: f64,
    layout: ColumnLayout,
) -> CudaSlice<T> {
    let (rows, l, batch) = (g.rows(), g.pixels(), g.batch as usize);
    let total = batch * rows * l;
    // The threads cover the pixels, but the columns too must fit the kernels' 32-bit sizes.
    count(total, "im2col");
    let mut cols = alloc::<T>(&state.stream, total, "im2col");
    if cols.is_empty() {
        return cols;
    }
    // A thread per pixel of each input plane, writing the pixel's taps.
    let n = count(g.planes() * l, "im2col");
    let (batch_stride, row_stride) = match layout {
        ColumnLayout::ImageMajor => (count(rows * l, "im2col"), count(l, "im2col")),
        ColumnLayout::RowMajor => (count(l, "im2col"), count(batch * l, "im2col")),
    };
    // im2col_T(const T* x, T* cols, Geometry g, double fill, u32 batch_stride, u32 row_stride)
    launch!(state, &KERNELS, "im2col", T::SUFFIX, grid(n), "im2col";
        x, &mut cols, g, &fill, &batch_stride, &row_stride);
    cols
}

fn fold<T: Float>(state: &DeviceState, cols: &CudaSlice<T>, g: &Geometry) -> CudaSlice<T> {
    let total = g.planes() * g.image();
    let mut x = alloc::<T>(&state.stream, total, "col2im");
    let n = count(total, "col2im");
    if n > 0 {
        // col2im_T(const T* cols, T* x, Geometry g)
        launch!(state, &KERNELS, "col2im", T::SUFFIX, grid(n), "col2im"; cols, &mut x, g);
    }
    x
}

/// Columns `[N, C·kh·kw, oh·ow]` of NCHW `x`; padding reads `fill`.
pub(crate) fn im2col(x: &CudaStorage, g: &Conv2dGeometry, fill: f64) -> CudaStorage {
    let geometry = Geometry::new(g);
    float_map!(x, "im2col", |v| {
        unfold(
            x.device.state(),
            v,
            &geometry,
            fill,
            ColumnLayout::ImageMajor,
        )
    })
}

/// The columns summed back into NCHW (the adjoint of [`im2col`]).
pub(crate) fn col2im(cols: &CudaStorage, g: &Conv2dGeometry) -> CudaStorage {
    let geometry = Geometry::new(g);
    float_map!(cols, "col2im", |v| fold(cols.device.state(), v, &geometry))
}

/// Sizes of one grouped convolution.
struct Sizes {
    groups: usize,
    /// Output channels per group.
    og: usize,
    /// Column rows per group.
    ck: usize,
    /// Output pixels per image.
    l: usize,
    out_channels: usize,
    rows: usize,
}

fn sizes(s: &Conv2dSpec, g: &Geometry) -> Sizes {
    Sizes {
        groups: s.groups,
        og: s.out_channels / s.groups,
        ck: g.rows() / s.groups,
        l: g.pixels(),
        out_channels: s.out_channels,
        rows: g.rows(),
    }
}

/// NCHW `x` convolved with `w` (`[O, C/G, kh, kw]`): `[N, O, oh, ow]`.
pub(crate) fn conv2d(x: &CudaStorage, w: &CudaStorage, spec: &Conv2dSpec) -> CudaStorage {
    float_map2!(x, w, "conv2d", |xv, wv| forward(
        x.device.state(),
        xv,
        wv,
        spec
    ))
}

fn forward<T: Float>(
    state: &DeviceState,
    x: &CudaSlice<T>,
    w: &CudaSlice<T>,
    spec: &Conv2dSpec,
) -> CudaSlice<T> {
    let g = Geometry::new(&spec.geometry);
    let s = sizes(spec, &g);
    let batch = g.batch as usize;
    let mut y = alloc::<T>(&state.stream, batch * s.out_channels * s.l, "conv2d");
    if y.is_empty() {
        return y;
    }
    let cols = unfold(state, x, &g, 0.0, ColumnLayout::ImageMajor);
    forward_plan(&s, batch).run(state, (w, &cols, &mut y));
    y
}

/// The GEMMs of one convolution product: `gemm` once per group, each operand (left, right,
/// output) advanced by its `steps` entry from one group to the next.
struct Grouped {
    gemm: Gemm,
    groups: usize,
    steps: [usize; 3],
}

impl Grouped {
    fn run<T: Float>(
        &self,
        state: &DeviceState,
        (lhs, rhs, out): (&CudaSlice<T>, &CudaSlice<T>, &mut CudaSlice<T>),
    ) {
        let [lhs_step, rhs_step, out_step] = self.steps;
        for group in 0..self.groups {
            self.gemm.run(
                state,
                &lhs.slice(group * lhs_step..),
                &rhs.slice(group * rhs_step..),
                &mut out.slice_mut(group * out_step..),
            );
        }
    }
}

/// `Y[n, g] = W_g · cols[n, g]` for every image (batched, `W_g` repeated): weights `[G, og, ck]`
/// times columns `[N, G, ck, l]` into `[N, G, og, l]`.
fn forward_plan(s: &Sizes, batch: usize) -> Grouped {
    Grouped {
        gemm: Gemm {
            batch,
            m: s.og,
            k: s.ck,
            n: s.l,
            lhs_transposed: false,
            rhs_transposed: false,
            lhs_stride: 0,
            rhs_stride: s.rows * s.l,
            out_stride: s.out_channels * s.l,
            alpha: 1.0,
            beta: 0.0,
        },
        groups: s.groups,
        steps: [s.og * s.ck, s.ck * s.l, s.og * s.l],
    }
}

/// `cols̄[n, g] = W_gᵀ · Ȳ[n, g]` for every image: weights transposed times output tangents
/// `[N, G, og, l]` into column tangents `[N, G, ck, l]`.
fn backward_input_plan(s: &Sizes, batch: usize) -> Grouped {
    Grouped {
        gemm: Gemm {
            batch,
            m: s.ck,
            k: s.og,
            n: s.l,
            lhs_transposed: true,
            rhs_transposed: false,
            lhs_stride: 0,
            rhs_stride: s.out_channels * s.l,
            out_stride: s.rows * s.l,
            alpha: 1.0,
            beta: 0.0,
        },
        groups: s.groups,
        steps: [s.og * s.ck, s.og * s.l, s.ck * s.l],
    }
}

/// `W̄_g = Ȳ_g · cols_gᵀ` over the whole batch: output tangents `[G, og, N·l]` times columns
/// `[G, ck, N·l]` transposed into `[G, og, ck]`.
fn backward_weight_plan(s: &Sizes, pixels: usize) -> Grouped {
    Grouped {
        gemm: Gemm {
            batch: 1,
            m: s.og,
            k: pixels,
            n: s.ck,
            lhs_transposed: false,
            rhs_transposed: true,
            lhs_stride: 0,
            rhs_stride: 0,
            out_stride: 0,
            alpha: 1.0,
            beta: 0.0,
        },
        groups: s.groups,
        steps: [s.og * pixels, s.ck * pixels, s.og * s.ck],
    }
}

/// The input tangent of [`conv2d`] for output tangent `dy`.
pub(crate) fn conv2d_backward_input(
    dy: &CudaStorage,
    w: &CudaStorage,
    spec: &Conv2dSpec,
) -> CudaStorage {
    float_map2!(dy, w, "conv2d_backward_input", |dv, wv| {
        backward_input(dy.device.state(), dv, wv, spec)
    })
}

fn backward_input<T: Float>(
    state: &DeviceState,
    dy: &CudaSlice<T>,
    w: &CudaSlice<T>,
    spec: &Conv2dSpec,
) -> CudaSlice<T> {
    let g = Geometry::new(&spec.geometry);
    let s = sizes(spec, &g);
    let batch = g.batch as usize;
    let mut cols = alloc::<T>(&state.stream, batch * s.rows * s.l, "conv2d_backward_input");
    if !cols.is_empty() {
        backward_input_plan(&s, batch).run(state, (w, dy, &mut cols));
    }
    fold(state, &cols, &g)
}

/// The weight tangent of [`conv2d`] for input `x` and output tangent `dy`.
pub(crate) fn conv2d_backward_weight(
    x: &CudaStorage,
    dy: &CudaStorage,
    spec: &Conv2dSpec,
) -> CudaStorage {
    let g = Geometry::new(&spec.geometry);
    let s = sizes(spec, &g);
    let batch = g.batch as usize;
    // Ȳ as [O, N, l]: each output channel's tangents of the whole batch side by side.
    let dy_rows = permute(dy, &[batch, s.out_channels, s.l], &[1, 0, 2]);
    float_map2!(x, &dy_rows, "conv2d_backward_weight", |xv, dv| {
        backward_weight(x.device.state(), xv, dv, spec)
    })
}

fn backward_weight<T: Float>(
    state: &DeviceState,
    x: &CudaSlice<T>,
    dy_rows: &CudaSlice<T>,
    spec: &Conv2dSpec,
) -> CudaSlice<T> {
    let g = Geometry::new(&spec.geometry);
    let s = sizes(spec, &g);
    let pixels = g.batch as usize * s.l;
    let mut dw = alloc::<T>(
        &state.stream,
        s.out_channels * s.ck,
        "conv2d_backward_weight",
    );
    if dw.is_empty() {
        return dw;
    }
    if pixels == 0 {
        return crate::storage::zeros(&state.stream, dw.len(), "conv2d_backward_weight");
    }
    let cols = unfold(state, x, &g, 0.0, ColumnLayout::RowMajor);
    backward_weight_plan(&s, pixels).run(state, (dy_rows, &cols, &mut dw));
    dw
}

#[cfg(test)]
mod tests {
    //! The three products' GEMM plans, run on the host by the cuBLAS emulator with the CPU
    //! backend's unfolding, against the CPU backend's convolution: the offsets, strides and
    //! transposes that a GPU would be given are checked without one.

    use super::*;
    use crate::ops::matmul::emulate;
    use adjoint_backend::{Backend, DType};
    use adjoint_cpu::{Cpu, CpuStorage};

    fn rand(n: usize, seed: u64) -> CpuStorage {
        Cpu::random(&Cpu, n, seed, (-1.0, 1.0), false, DType::F64)
    }

    /// Runs `plan` on host buffers as [`Grouped::run`] does on the device.
    fn run_on_host(plan: &Grouped, lhs: &[f64], rhs: &[f64], out: &mut [f64]) {
        let cfg = plan.gemm.cublas::<f64>();
        let [ls, rs, os] = plan.steps;
        for group in 0..plan.groups {
            let (a, b) = Gemm::operands(&lhs[group * ls..], &rhs[group * rs..]);
            emulate(&cfg, a, b, &mut out[group * os..]);
        }
    }

    fn close(what: &str, got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() < 1e-10 * (1.0 + w.abs()),
                "{what}[{i}]: {g} vs {w}"
            );
        }
    }

    #[test]
    fn gemm_plans_match_the_cpu_convolution() {
        for (groups, stride, padding) in [(1, 1, 0), (2, 2, 1), (3, 1, 2)] {
            let spec = Conv2dSpec {
                geometry: Conv2dGeometry {
                    batch: 2,
                    channels: 6,
                    input: [7, 6],
                    kernel: [3, 2],
                    stride: [stride, stride],
                    padding: [padding, padding],
                    dilation: [1, 1],
                },
                out_channels: 12,
                groups,
            };
            let g = Geometry::new(&spec.geometry);
            let s = sizes(&spec, &g);
            let batch = spec.geometry.batch;
            let x = rand(batch * 6 * 42, 1);
            let w = rand(12 * 6 / groups * 6, 2);
            let dy = rand(batch * 12 * s.l, 3);
            let cols = Cpu::im2col(&x, &spec.geometry, 0.0);

            let mut y = vec![0.0; batch * 12 * s.l];
            run_on_host(
                &forward_plan(&s, batch),
                &w.to_f64(),
                &cols.to_f64(),
                &mut y,
            );
            close("forward", &y, &Cpu::conv2d(&x, &w, &spec).to_f64());

            let mut dcols = vec![0.0; batch * s.rows * s.l];
            run_on_host(
                &backward_input_plan(&s, batch),
                &w.to_f64(),
                &dy.to_f64(),
                &mut dcols,
            );
            let dx = Cpu::col2im(&Cpu::upload_f64(&Cpu, &dcols, DType::F64), &spec.geometry);
            close(
                "input tangent",
                &dx.to_f64(),
                &Cpu::conv2d_backward_input(&dy, &w, &spec).to_f64(),
            );

            // The device unfolds as [C·kh·kw, N, l] and permutes Ȳ to [O, N, l]; here both
            // come from the CPU's [N, …, l] layouts by the same permutation.
            let rows = Cpu::permute(&cols, &[batch, s.rows, s.l], &[1, 0, 2]);
            let dy_rows = Cpu::permute(&dy, &[batch, 12, s.l], &[1, 0, 2]);
            let mut dw = vec![0.0; 12 * s.ck];
            let plan = backward_weight_plan(&s, batch * s.l);
            run_on_host(&plan, &dy_rows.to_f64(), &rows.to_f64(), &mut dw);
            close(
                "weight tangent",
                &dw,
                &Cpu::conv2d_backward_weight(&x, &dy, &spec).to_f64(),
            );
        }
    }
}
