//! Every primitive on the GPU against the CPU backend (the oracle), on the same inputs.
//!
//! Tolerances: `f64` results agree to 1e-12 relative (elementwise) or 1e-10 (sums and
//! products, whose order differs); `f32` to 1e-5 elementwise and 1e-4 for sums and products.
//! Without a GPU every test prints `skipped: no CUDA device (<reason>)` and passes.

use adjoint_cpu::{Cpu, CpuStorage};
use adjoint_cuda::{
    Backend, BinaryOp, Conv2dGeometry, Conv2dSpec, Cuda, CudaDevice, CudaStorage, DType,
    MatmulSpec, ReduceOp, UnaryOp, UpdateOp,
};

fn gpu() -> Option<CudaDevice> {
    match CudaDevice::new(0) {
        Ok(device) => Some(device),
        Err(e) => {
            println!("skipped: no CUDA device ({e})");
            None
        }
    }
}

/// Uniform values in [-1, 1) (as the CPU backend draws them).
fn rand(n: usize, seed: u64, dtype: DType) -> CpuStorage {
    Cpu::random(&Cpu, n, seed, (-1.0, 1.0), false, dtype)
}

fn up(gpu: &CudaDevice, x: &CpuStorage) -> CudaStorage {
    match x {
        CpuStorage::F32(v) => Cuda::upload_f32(gpu, v),
        CpuStorage::F64(v) => Cuda::upload_f64(gpu, v, DType::F64),
        CpuStorage::U32(v) => Cuda::upload_u32(gpu, v),
    }
}

/// Relative tolerance of `dtype` for elementwise results (`exact`) or accumulations.
fn tol(dtype: DType, exact: bool) -> f64 {
    match (dtype, exact) {
        (DType::F64, true) => 1e-12,
        (DType::F64, false) => 1e-10,
        (_, true) => 1e-5,
        (_, false) => 1e-4,
    }
}

#[track_caller]
fn same(what: &str, want: &CpuStorage, got: &CudaStorage, rel: f64) {
    assert_eq!(want.dtype(), got.dtype(), "{what}: dtype");
    let (want, got) = (want.to_f64(), Cuda::download_f64(got));
    assert_eq!(want.len(), got.len(), "{what}: length");
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        let ok = (w.is_nan() && g.is_nan()) || w == g || (w - g).abs() <= rel * (1.0 + w.abs());
        assert!(ok, "{what}: element {i}: CPU {w} vs CUDA {g}");
    }
}

const FLOATS: [DType; 2] = [DType::F32, DType::F64];

#[test]
fn unary_ops() {
    let Some(gpu) = gpu() else { return };
    let ops = [
        UnaryOp::Neg,
        UnaryOp::Exp,
        UnaryOp::Ln,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Recip,
        UnaryOp::Abs,
        UnaryOp::Sign,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Relu,
        UnaryOp::LeakyRelu(0.01),
        UnaryOp::Gelu,
        UnaryOp::GeluErf,
        UnaryOp::Silu,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Powf(2.5),
        UnaryOp::AddScalar(0.5),
        UnaryOp::MulScalar(-3.0),
        UnaryOp::DivScalarBy(2.0),
        UnaryOp::Clamp(-0.5, 0.25),
    ];
    for dtype in FLOATS {
        // Positive inputs for ln/sqrt/pow, mixed signs (and an exact 0) otherwise.
        let mixed = Cpu::upload_f64(&Cpu, &[-0.7, 0.0, 0.3, 1.5, -2.0, 0.9, -0.1, 4.0], dtype);
        let positive = Cpu::unary(UnaryOp::Abs, &mixed);
        let positive = Cpu::unary(UnaryOp::AddScalar(0.1), &positive);
        for op in ops {
            let x = match op {
                UnaryOp::Ln | UnaryOp::Sqrt | UnaryOp::Rsqrt | UnaryOp::Powf(_) => &positive,
                _ => &mixed,
            };
            let got = Cuda::unary(op, &up(&gpu, x));
            same(
                &format!("{op:?} {dtype:?}"),
                &Cpu::unary(op, x),
                &got,
                tol(dtype, true),
            );
        }
    }
}

#[test]
fn binary_ops_with_broadcasting() {
    let Some(gpu) = gpu() else { return };
    let shapes: [(&[usize], &[usize], &[usize]); 4] = [
        (&[3, 4], &[3, 4], &[3, 4]),
        (&[2, 3, 4], &[1, 1, 4], &[2, 3, 4]),
        (&[2, 1, 4], &[1, 3, 1], &[2, 3, 4]),
        (&[5, 1], &[1, 6], &[5, 6]),
    ];
    for dtype in FLOATS {
        for (ls, rs, out) in shapes {
            let a = rand(ls.iter().product(), 1, dtype);
            let b = rand(rs.iter().product(), 2, dtype);
            // Pow needs a positive base.
            let a_pos = Cpu::unary(UnaryOp::AddScalar(1.5), &a);
            for op in BinaryOp::EVERY {
                let a = if op == BinaryOp::Pow { &a_pos } else { &a };
                let want = Cpu::binary(op, (a, ls), (&b, rs), out);
                let got = Cuda::binary(op, (&up(&gpu, a), ls), (&up(&gpu, &b), rs), out);
                same(
                    &format!("{op:?} {ls:?}x{rs:?} {dtype:?}"),
                    &want,
                    &got,
                    tol(dtype, true),
                );
            }
        }
    }
}

#[test]
fn select_broadcasts_mask_and_branches() {
    let Some(gpu) = gpu() else { return };
    for dtype in FLOATS {
        let mask = Cpu::upload_f64(&Cpu, &[1.0, 0.0, 1.0], dtype);
        let t = rand(6, 3, dtype);
        let f = rand(2, 4, dtype);
        let (ms, ts, fs, out): (&[usize], &[usize], &[usize], &[usize]) =
            (&[1, 3], &[2, 3], &[2, 1], &[2, 3]);
        let want = Cpu::select((&mask, ms), (&t, ts), (&f, fs), out);
        let got = Cuda::select(
            (&up(&gpu, &mask), ms),
            (&up(&gpu, &t), ts),
            (&up(&gpu, &f), fs),
            out,
        );
        same("select", &want, &got, 0.0);
    }
}

#[test]
fn binary_assign_writes_either_operand() {
    let Some(gpu) = gpu() else { return };
    // The sum runs the in-place update kernel; the others compute into a new buffer.
    for dtype in FLOATS {
        let (a, b) = (rand(77, 31, dtype), rand(77, 32, dtype));
        for op in [BinaryOp::Add, BinaryOp::Sub, BinaryOp::TanhGrad] {
            for out_is_lhs in [true, false] {
                let (mut want, mut got) = (a.clone(), up(&gpu, &a));
                Cpu::binary_assign(op, &mut want, &b, out_is_lhs);
                Cuda::binary_assign(op, &mut got, &up(&gpu, &b), out_is_lhs);
                same(
                    &format!("binary_assign {op:?} out_is_lhs={out_is_lhs}"),
                    &want,
                    &got,
                    tol(dtype, true),
                );
            }
        }
    }
}

#[test]
fn relu_with_bits_and_masking_by_them() {
    let Some(gpu) = gpu() else { return };
    // A partial last word, whole words, a NaN (not positive) and exact zeros.
    for n in [1, 31, 32, 33, 100, 4097] {
        for dtype in FLOATS {
            let mut x = rand(n, 21, dtype).to_f64();
            x[0] = f64::NAN;
            if n > 2 {
                x[2] = 0.0;
            }
            let x = Cpu::upload_f64(&Cpu, &x, dtype);
            let (want_y, want_bits) = Cpu::relu_with_bits(&x);
            let (got_y, got_bits) = Cuda::relu_with_bits(&up(&gpu, &x));
            same("relu_with_bits", &want_y, &got_y, 0.0);
            assert_eq!(
                Cpu::download_u32(&want_bits),
                Cuda::download_u32(&got_bits),
                "relu_with_bits n={n} {dtype:?}"
            );
            let d = rand(n, 22, dtype);
            let want = Cpu::mask_by_bits(&d, &want_bits);
            let got = Cuda::mask_by_bits(&up(&gpu, &d), &got_bits);
            same("mask_by_bits", &want, &got, 0.0);
        }
    }
}

#[test]
fn reductions_over_axis_sets_and_argmax() {
    let Some(gpu) = gpu() else { return };
    let shape = [3, 5, 70];
    for dtype in FLOATS {
        let x = rand(shape.iter().product(), 5, dtype);
        let xg = up(&gpu, &x);
        let axis_sets = [&[0][..], &[1], &[2], &[0, 2], &[0, 1, 2], &[]];
        same_reductions(&x, &xg, &shape, &axis_sets);
        for axis in 0..3 {
            let want = Cpu::argmax(&x, &shape, axis);
            same("argmax", &want, &Cuda::argmax(&xg, &shape, axis), 0.0);
        }
    }
    // A long reduction (many blocks of partial sums in one output).
    let long = rand(1 << 20, 6, DType::F64);
    let want = Cpu::reduce(ReduceOp::Sum, &long, &[1 << 20], &[0]);
    let got = Cuda::reduce(ReduceOp::Sum, &up(&gpu, &long), &[1 << 20], &[0]);
    same("sum of 2^20", &want, &got, 1e-10);
}

/// A bias tangent's shape: few long lanes over strided axes, which the device cuts into runs
/// of partial results (`Shape::Runs`), with a NaN in one lane for max and min.
#[test]
fn reductions_of_few_long_lanes() {
    let Some(gpu) = gpu() else { return };
    let shape = [16, 8, 40, 40];
    for dtype in FLOATS {
        let mut x = rand(shape.iter().product(), 7, dtype).to_f64();
        x[3 * 8 * 1600 + 5 * 1600 + 777] = f64::NAN; // lane 5
        let x = Cpu::upload_f64(&Cpu, &x, dtype);
        same_reductions(
            &x,
            &up(&gpu, &x),
            &shape,
            &[&[0, 2, 3], &[0, 1, 2, 3], &[2, 3]],
        );
    }
}

/// Sum, max and min of `x` (on the CPU) and `xg` (its copy on the GPU) over each set of axes.
#[track_caller]
fn same_reductions(x: &CpuStorage, xg: &CudaStorage, shape: &[usize], axis_sets: &[&[usize]]) {
    for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
        for axes in axis_sets {
            let want = Cpu::reduce(op, x, shape, axes);
            let got = Cuda::reduce(op, xg, shape, axes);
            same(
                &format!("{op:?} over {axes:?}"),
                &want,
                &got,
                tol(x.dtype(), false),
            );
        }
    }
}

#[test]
fn fused_softmax_and_log_softmax() {
    let Some(gpu) = gpu() else { return };
    let shape = [3, 300, 4];
    for dtype in FLOATS {
        let x = Cpu::unary(UnaryOp::MulScalar(20.0), &rand(3600, 19, dtype));
        let v = x.to_f64();
        for axis in 0..3 {
            let (outer, len): (usize, usize) = (shape[..axis].iter().product(), shape[axis]);
            let inner: usize = shape[axis + 1..].iter().product();
            let (mut soft, mut log) = (vec![0.0; v.len()], vec![0.0; v.len()]);
            for o in 0..outer {
                for i in 0..inner {
                    let at = |j: usize| (o * len + j) * inner + i;
                    let m = (0..len).map(|j| v[at(j)]).fold(f64::NEG_INFINITY, f64::max);
                    let s: f64 = (0..len).map(|j| (v[at(j)] - m).exp()).sum();
                    for j in 0..len {
                        soft[at(j)] = (v[at(j)] - m).exp() / s;
                        log[at(j)] = v[at(j)] - m - s.ln();
                    }
                }
            }
            let xg = up(&gpu, &x);
            for (want, take_log) in [(soft, false), (log, true)] {
                let got = Cuda::softmax(&xg, &shape, axis, take_log).expect("CUDA fuses softmax");
                let want = Cpu::cast(&Cpu::upload_f64(&Cpu, &want, DType::F64), dtype);
                same(
                    &format!("softmax log={take_log} axis {axis}"),
                    &want,
                    &got,
                    tol(dtype, false),
                );
            }
        }
    }
}

#[test]
fn matmul_with_transposes_and_shared_operands() {
    let Some(gpu) = gpu() else { return };
    let (batch, m, k, n) = (3, 33, 17, 9);
    for dtype in FLOATS {
        for (lt, rt, lhs_stride) in [
            (false, false, m * k),
            (true, false, 0),
            (false, true, m * k),
            (true, true, 0),
        ] {
            let a = rand(batch * m * k, 7, dtype);
            let b = rand(batch * k * n, 8, dtype);
            let spec = MatmulSpec {
                batch,
                m,
                k,
                n,
                lhs_batch_stride: lhs_stride,
                rhs_batch_stride: k * n,
                lhs_transposed: lt,
                rhs_transposed: rt,
            };
            let want = Cpu::matmul(&a, &b, &spec);
            let (ag, bg) = (up(&gpu, &a), up(&gpu, &b));
            let got = Cuda::matmul(&ag, &bg, &spec);
            same(&format!("matmul {spec:?}"), &want, &got, tol(dtype, false));
            // The products added into an accumulator (a GEMM with β = 1), scaled by α.
            let acc = rand(batch * m * n, 9, dtype);
            for alpha in [1.0, -0.75] {
                let mut want = acc.clone();
                Cpu::matmul_acc(&a, &b, &spec, alpha, &mut want);
                let mut got = up(&gpu, &acc);
                Cuda::matmul_acc(&ag, &bg, &spec, alpha, &mut got);
                same(
                    &format!("matmul_acc α = {alpha} {spec:?}"),
                    &want,
                    &got,
                    tol(dtype, false),
                );
            }
        }
    }
}

/// A layer `act(x·W + b)` in one op: the bits of the product, the broadcast sum and the
/// activation run one after the other on the device (the trait's contract), and the CPU's
/// values.
#[test]
fn matmul_epilogue_is_the_product_sum_and_activation() {
    let Some(gpu) = gpu() else { return };
    let (m, k, n) = (37, 19, 11);
    let spec = MatmulSpec {
        batch: 1,
        m,
        k,
        n,
        lhs_batch_stride: 0,
        rhs_batch_stride: 0,
        lhs_transposed: false,
        rhs_transposed: true,
    };
    let acts = [
        None,
        Some(UnaryOp::Relu),
        Some(UnaryOp::Tanh),
        Some(UnaryOp::Sigmoid),
    ];
    for dtype in FLOATS {
        let (x, w, b) = (
            rand(m * k, 10, dtype),
            rand(n * k, 11, dtype),
            rand(n, 12, dtype),
        );
        let (xg, wg, bg) = (up(&gpu, &x), up(&gpu, &w), up(&gpu, &b));
        for act in acts {
            for bias in [true, false] {
                let what = format!("matmul_epilogue {dtype:?} bias {bias} {act:?}");
                let (cpu_bias, gpu_bias) = (bias.then_some(&b), bias.then_some(&bg));
                let want = Cpu::matmul_epilogue(&x, &w, &spec, cpu_bias, act);
                let got = Cuda::matmul_epilogue(&xg, &wg, &spec, gpu_bias, act);
                same(&what, &want, &got, tol(dtype, false));
                let composed =
                    adjoint_backend::matmul_epilogue_by_ops::<Cuda>(&xg, &wg, &spec, gpu_bias, act);
                let (got, composed) = (Cuda::download_f64(&got), Cuda::download_f64(&composed));
                assert!(
                    got.iter()
                        .zip(&composed)
                        .all(|(g, c)| g.to_bits() == c.to_bits()),
                    "{what}: not the bits of the separate ops"
                );
            }
        }
    }
}

#[test]
fn layout_ops() {
    let Some(gpu) = gpu() else { return };
    let shape = [2, 3, 4];
    for dtype in [DType::F32, DType::F64, DType::U32] {
        let x = Cpu::cast(&rand(24, 9, DType::F64), DType::F64);
        let x = Cpu::cast(
            &Cpu::unary(UnaryOp::MulScalar(10.0), &Cpu::unary(UnaryOp::Abs, &x)),
            dtype,
        );
        let xg = up(&gpu, &x);
        for perm in [[0, 1, 2], [2, 0, 1], [1, 2, 0], [2, 1, 0]] {
            same(
                "permute",
                &Cpu::permute(&x, &shape, &perm),
                &Cuda::permute(&xg, &shape, &perm),
                0.0,
            );
        }
        let small = Cpu::narrow(&x, &shape, 1, 1, 1);
        let small_shape = [2, 1, 4];
        same(
            "broadcast",
            &Cpu::broadcast(&small, &small_shape, &[3, 2, 5, 4]),
            &Cuda::broadcast(&up(&gpu, &small), &small_shape, &[3, 2, 5, 4]),
            0.0,
        );
        for axis in 0..3 {
            same(
                "narrow",
                &Cpu::narrow(&x, &shape, axis, 1, 1),
                &Cuda::narrow(&xg, &shape, axis, 1, 1),
                0.0,
            );
            let mut other = shape;
            other[axis] = 1;
            let y = Cpu::narrow(&x, &shape, axis, 0, 1);
            let yg = up(&gpu, &y);
            same(
                "cat",
                &Cpu::cat(&[(&x, &shape), (&y, &other), (&x, &shape)], axis),
                &Cuda::cat(&[(&xg, &shape), (&yg, &other), (&xg, &shape)], axis),
                0.0,
            );
        }
        for to in [DType::F32, DType::F64, DType::U32] {
            same("cast", &Cpu::cast(&x, to), &Cuda::cast(&xg, to), 0.0);
        }
        same(
            "fill",
            &Cpu::fill(&Cpu, 7, 2.5, dtype),
            &Cuda::fill(&gpu, 7, 2.5, dtype),
            0.0,
        );
        same(
            "zeros",
            &Cpu::fill(&Cpu, 7, 0.0, dtype),
            &Cuda::fill(&gpu, 7, 0.0, dtype),
            0.0,
        );
        same(
            "arange",
            &Cpu::arange(&Cpu, 1.0, 0.5, 9, dtype),
            &Cuda::arange(&gpu, 1.0, 0.5, 9, dtype),
            0.0,
        );
    }
    // Float to u32 saturates like Rust's `as`.
    let odd = Cpu::upload_f64(&Cpu, &[-3.0, f64::NAN, 1e12, 7.9], DType::F64);
    same(
        "saturating cast",
        &Cpu::cast(&odd, DType::U32),
        &Cuda::cast(&up(&gpu, &odd), DType::U32),
        0.0,
    );
}

#[test]
fn gather_scatter_and_one_hot() {
    let Some(gpu) = gpu() else { return };
    let shape = [2, 5, 3];
    let ids = Cpu::upload_u32(&Cpu, &[4, 0, 4, 2]);
    let idsg = up(&gpu, &ids);
    for dtype in FLOATS {
        let x = rand(30, 10, dtype);
        for axis in 0..3 {
            let ids = if axis == 1 {
                ids.clone()
            } else {
                Cpu::upload_u32(&Cpu, &[1, 0, 1])
            };
            let idsg = up(&gpu, &ids);
            let want = Cpu::index_select(&x, &shape, axis, &ids);
            same(
                "index_select",
                &want,
                &Cuda::index_select(&up(&gpu, &x), &shape, axis, &idsg),
                0.0,
            );
            let want_add = Cpu::index_add(&want, &shape, axis, &ids);
            let got_add = Cuda::index_add(&up(&gpu, &want), &shape, axis, &idsg);
            same("index_add", &want_add, &got_add, tol(dtype, false));
        }
        same(
            "one_hot",
            &Cpu::one_hot(&ids, 6, dtype),
            &Cuda::one_hot(&idsg, 6, dtype),
            0.0,
        );
    }
    assert_eq!(Cuda::max_id(&idsg), Some(4));
    // Ids computed on the device are reduced there: argmax along a row of 5.
    let scores = rand(40, 18, DType::F32);
    let argmax = Cuda::argmax(&up(&gpu, &scores), &[8, 5], 1);
    assert_eq!(
        Cuda::max_id(&argmax),
        Cpu::max_id(&Cpu::argmax(&scores, &[8, 5], 1))
    );
    assert_eq!(Cuda::max_id(&Cuda::upload_u32(&gpu, &[])), None);
}

fn conv_spec(groups: usize, stride: usize, padding: usize, dilation: usize) -> Conv2dSpec {
    Conv2dSpec {
        geometry: Conv2dGeometry {
            batch: 3,
            channels: 4,
            input: [9, 8],
            kernel: [3, 2],
            stride: [stride, stride],
            padding: [padding, padding + 1],
            dilation: [dilation, dilation],
        },
        out_channels: 6,
        groups,
    }
}

#[test]
fn convolution_forward_and_backward() {
    let Some(gpu) = gpu() else { return };
    for dtype in FLOATS {
        for spec in [
            conv_spec(1, 1, 0, 1),
            conv_spec(2, 2, 1, 1),
            conv_spec(1, 1, 2, 2),
        ] {
            let g = spec.geometry;
            let [oh, ow] = g.output().unwrap();
            let x = rand(g.batch * g.channels * 72, 11, dtype);
            let w = rand(spec.out_channels * g.channels / spec.groups * 6, 12, dtype);
            let dy = rand(g.batch * spec.out_channels * oh * ow, 13, dtype);
            let (xg, wg, dyg) = (up(&gpu, &x), up(&gpu, &w), up(&gpu, &dy));
            let t = tol(dtype, false);
            same(
                "im2col",
                &Cpu::im2col(&x, &g, -1.5),
                &Cuda::im2col(&xg, &g, -1.5),
                0.0,
            );
            let cols = Cpu::im2col(&x, &g, 0.0);
            same(
                "col2im",
                &Cpu::col2im(&cols, &g),
                &Cuda::col2im(&up(&gpu, &cols), &g),
                t,
            );
            same(
                "conv2d",
                &Cpu::conv2d(&x, &w, &spec),
                &Cuda::conv2d(&xg, &wg, &spec),
                t,
            );
            same(
                "conv2d_backward_input",
                &Cpu::conv2d_backward_input(&dy, &w, &spec),
                &Cuda::conv2d_backward_input(&dyg, &wg, &spec),
                t,
            );
            same(
                "conv2d_backward_weight",
                &Cpu::conv2d_backward_weight(&x, &dy, &spec),
                &Cuda::conv2d_backward_weight(&xg, &dyg, &spec),
                t,
            );
        }
    }
}

/// Max pooling's fused forward (maxima and winning taps) and tangent against the CPU's, on
/// windows without overlap, with gaps, with overlap, padding (windows entirely in it
/// included) and dilation; small integers make ties, and NaNs must win their windows.
#[test]
fn max_pooling_forward_and_backward() {
    let Some(gpu) = gpu() else { return };
    let pool = |kernel, stride, padding, dilation| Conv2dGeometry {
        batch: 6,
        channels: 1,
        input: [9, 7],
        kernel: [kernel, kernel],
        stride: [stride, stride],
        padding: [padding, padding],
        dilation: [dilation, dilation],
    };
    for dtype in FLOATS {
        // Without overlap (scattered), with gaps and with windows entirely in the padding
        // (scattered), with overlap (gathered).
        let disjoint = [pool(2, 2, 0, 1), pool(2, 3, 1, 1), pool(2, 2, 2, 1)];
        let overlapping = [pool(3, 2, 1, 1), pool(3, 1, 1, 2), pool(2, 1, 2, 1)];
        for g in disjoint.into_iter().chain(overlapping) {
            let n = g.batch * g.input[0] * g.input[1];
            let values: Vec<f64> = (0..n)
                .map(|i| {
                    if i % 17 == 5 {
                        f64::NAN
                    } else {
                        ((i * 7) % 5) as f64
                    }
                })
                .collect();
            let x = Cpu::upload_f64(&Cpu, &values, dtype);
            let (want_y, want_winners) = Cpu::max_pool2d(&x, &g).expect("the CPU fuses it");
            let (y, winners) = Cuda::max_pool2d(&up(&gpu, &x), &g).expect("CUDA fuses it");
            let what = format!(
                "max_pool2d {:?} stride {:?} padding {:?}",
                g.kernel, g.stride, g.padding
            );
            same(&what, &want_y, &y, 0.0);
            same(&what, &want_winners, &winners, 0.0);
            let dy = rand(Cpu::len(&want_y), 14, dtype);
            let want = Cpu::max_pool2d_backward(&dy, &want_winners, &g).expect("fused");
            let got = Cuda::max_pool2d_backward(&up(&gpu, &dy), &winners, &g).expect("fused");
            same(&format!("{what}: tangent"), &want, &got, tol(dtype, false));
        }
    }
}

#[test]
fn random_draws_are_seeded_and_distributed() {
    let Some(gpu) = gpu() else { return };
    let n = 1 << 16;
    for dtype in FLOATS {
        let u = Cuda::download_f64(&Cuda::random(&gpu, n, 7, (-2.0, 3.0), false, dtype));
        assert_eq!(
            u,
            Cuda::download_f64(&Cuda::random(&gpu, n, 7, (-2.0, 3.0), false, dtype))
        );
        assert!(u.iter().all(|&v| (-2.0..3.0).contains(&v)));
        let mean = u.iter().sum::<f64>() / n as f64;
        // Mean of U[-2, 3) is 0.5, its standard error here 5/sqrt(12 n) ≈ 0.0056.
        assert!((mean - 0.5).abs() < 0.03, "uniform mean {mean}");
        let z = Cuda::download_f64(&Cuda::random(&gpu, n, 8, (1.0, 2.0), true, dtype));
        let mean = z.iter().sum::<f64>() / n as f64;
        let var = z.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(
            (mean - 1.0).abs() < 0.05 && (var - 4.0).abs() < 0.15,
            "normal {mean} {var}"
        );
    }
}

#[test]
fn optimizer_steps_in_place() {
    let Some(gpu) = gpu() else { return };
    let sgd = |first_step, nesterov| UpdateOp::Sgd {
        lr: 0.1,
        momentum: 0.9,
        dampening: 0.1,
        weight_decay: 0.01,
        nesterov,
        first_step,
    };
    let ops = [
        sgd(true, false),
        sgd(false, true),
        UpdateOp::Sgd {
            lr: 0.5,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
            first_step: true,
        },
        UpdateOp::Adam {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
            decoupled: true,
            bias_correction1: 0.19,
            bias_correction2: 0.002,
        },
        UpdateOp::Adam {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
            decoupled: false,
            bias_correction1: 0.1,
            bias_correction2: 0.001,
        },
        UpdateOp::Accumulate,
    ];
    for dtype in FLOATS {
        for op in ops {
            let (mut p, g) = (rand(50, 14, dtype), rand(50, 15, dtype));
            let (mut s0, mut s1) = (
                rand(50, 16, dtype),
                Cpu::unary(UnaryOp::Abs, &rand(50, 17, dtype)),
            );
            let (mut pg, gg, mut s0g, mut s1g) =
                (up(&gpu, &p), up(&gpu, &g), up(&gpu, &s0), up(&gpu, &s1));
            Cpu::update(op, &mut p, &g, &mut [&mut s0, &mut s1][..op.state_len()]);
            Cuda::update(
                op,
                &mut pg,
                &gg,
                &mut [&mut s0g, &mut s1g][..op.state_len()],
            );
            let t = tol(dtype, true);
            same(&format!("{op:?} param"), &p, &pg, t);
            same(&format!("{op:?} state 0"), &s0, &s0g, t);
            same(&format!("{op:?} state 1"), &s1, &s1g, t);
        }
    }
}

#[test]
fn opening_a_device_twice_gives_the_same_device() {
    let Some(gpu) = gpu() else { return };
    assert_eq!(CudaDevice::new(0).unwrap(), gpu);
    assert_eq!(Cuda::device(&Cuda::fill(&gpu, 3, 1.0, DType::F32)), gpu);
    assert!(format!("{gpu:?}").starts_with("CudaDevice(0, "));
    gpu.synchronize().unwrap();
}

#[test]
fn a_missing_device_is_an_error_not_a_panic() {
    // With a GPU: ordinal 1000 does not exist. Without: the driver is missing. Either way an
    // error that names the problem.
    let err = CudaDevice::new(1000).unwrap_err().to_string();
    assert!(err.starts_with("no CUDA device"), "{err}");
}
