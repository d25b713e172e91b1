//! Kernel tests against naive reference loops, and adjoint identities
//! (`⟨K x, y⟩ = ⟨x, Kᵀ y⟩`) for the gather/unfold pairs.

use crate::{
    Backend, BinaryOp, Conv2dGeometry, Cpu, CpuStorage, DType, MatmulSpec, ReduceOp, UnaryOp,
    UpdateOp,
};

fn rand(n: usize, seed: u64) -> CpuStorage {
    Cpu::random(&Cpu, n, seed, (-1.0, 1.0), false, DType::F64)
}

fn dot(a: &CpuStorage, b: &CpuStorage) -> f64 {
    a.to_f64().iter().zip(b.to_f64()).map(|(x, y)| x * y).sum()
}

fn close(a: &[f64], b: &[f64]) {
    close_within(a, b, 1e-9);
}

fn close_within(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < tol * (1.0 + y.abs()), "{x} vs {y}");
    }
}

#[test]
fn matmul_with_transposes_and_broadcast_batches() {
    // Below (a vector times a matrix, outer products with and without a tail after their
    // blocks of 32 columns, an empty inner dimension, whose product is zeros, and widths with
    // and without a tail after the plain loops' blocks of 16 columns) and above the size where
    // the plain loops hand over to the `gemm` crate, and products large enough to be split
    // across threads by columns (wide) and by rows (tall).
    for (batch, m, k, n) in [
        (3, 4, 5, 2),
        (2, 1, 32, 32),
        (2, 3, 1, 4),
        (2, 32, 1, 32),
        (1, 5, 1, 70),
        (2, 3, 0, 4),
        (1, 2, 0, 18),
        (2, 3, 7, 21),
        (2, 5, 3, 48),
        (2, 40, 37, 33),
        (2, 100, 64, 130),
        (1, 130, 64, 100),
    ] {
        matmul_case(batch, m, k, n);
    }
}

#[test]
fn small_f32_products_match_f64_sums() {
    // The f32 kernels of the plain loops, including the outer product and the AVX2 one for
    // A·Bᵀ with contiguous rows (groups of eight columns and a tail, inner sizes with and
    // without a tail of eight), against the products in f64 of the same (f32-rounded) values.
    for (m, k, n) in [
        (1, 32, 32),
        (1, 16, 32),
        (32, 1, 32),
        (16, 1, 40),
        (2, 37, 21),
        (3, 5, 7),
        (1, 8, 9),
    ] {
        matmul_case_in(DType::F32, 1e-5, (1, m, k, n));
    }
}

#[test]
fn large_f32_products_match_f64_sums() {
    // The threaded f32 GEMM (the AVX-512 kernel where the CPU has it), split by columns and
    // by rows, written and added to a buffer with and without a factor.
    for (batch, m, k, n) in [(1, 100, 64, 130), (2, 130, 70, 100)] {
        matmul_case_in(DType::F32, 1e-5, (batch, m, k, n));
    }
}

fn matmul_case(batch: usize, m: usize, k: usize, n: usize) {
    matmul_case_in(DType::F64, 1e-9, (batch, m, k, n));
}

/// Every combination of transposed operands (a shared left matrix when it is transposed),
/// against sums in `f64` of the stored values, within `tol` relative.
fn matmul_case_in(dtype: DType, tol: f64, (batch, m, k, n): (usize, usize, usize, usize)) {
    for (lt, rt, lhs_stride) in [
        (false, false, m * k),
        (true, false, 0),
        (false, true, m * k),
        (true, true, 0),
    ] {
        let a = Cpu::random(&Cpu, batch * m * k, 1, (-1.0, 1.0), false, dtype);
        let b = Cpu::random(&Cpu, batch * k * n, 2, (-1.0, 1.0), false, dtype);
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
        let got = Cpu::matmul(&a, &b, &spec).to_f64();
        let (av, bv) = (a.to_f64(), b.to_f64());
        let mut want = vec![0.0; batch * m * n];
        for bi in 0..batch {
            for i in 0..m {
                for j in 0..n {
                    want[(bi * m + i) * n + j] = (0..k)
                        .map(|l| {
                            let x = av[bi * lhs_stride + if lt { l * m + i } else { i * k + l }];
                            let y = bv[bi * k * n + if rt { j * k + l } else { l * n + j }];
                            x * y
                        })
                        .sum();
                }
            }
        }
        close_within(&got, &want, tol);
        // The same products added to a buffer (`matmul_acc`, β = 1), and scaled first (α,
        // by the GEMM's factor or, for the plain loops, by a pass after them).
        let before = Cpu::random(&Cpu, batch * m * n, 3, (-1.0, 1.0), false, dtype);
        for alpha in [1.0, -0.75] {
            let mut acc = before.clone();
            Cpu::matmul_acc(&a, &b, &spec, alpha, &mut acc);
            let want_acc: Vec<f64> = before
                .to_f64()
                .iter()
                .zip(&want)
                .map(|(c, p)| c + alpha * p)
                .collect();
            close_within(&acc.to_f64(), &want_acc, tol);
        }
    }
}

/// The bits of a float buffer's elements.
fn bits(s: &CpuStorage) -> Vec<u64> {
    match s {
        CpuStorage::F32(v) => v.iter().map(|x| x.to_bits() as u64).collect(),
        CpuStorage::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
        _ => unreachable!("float storages only"),
    }
}

/// A batch of products `op(A[b])·op(B)` with one right matrix for all, and random operands.
fn shared_right_product(
    dtype: DType,
    [batch, m, k, n]: [usize; 4],
    [lt, rt]: [bool; 2],
) -> (MatmulSpec, CpuStorage, CpuStorage) {
    let spec = MatmulSpec {
        batch,
        m,
        k,
        n,
        lhs_batch_stride: m * k,
        rhs_batch_stride: 0,
        lhs_transposed: lt,
        rhs_transposed: rt,
    };
    let a = Cpu::random(&Cpu, batch * m * k, 1, (-1.0, 1.0), false, dtype);
    let b = Cpu::random(&Cpu, k * n, 2, (-1.0, 1.0), false, dtype);
    (spec, a, b)
}

/// `matmul_epilogue` against the ops it fuses (the `Backend` default: the products, then
/// `binary(Add)` with the bias broadcast over the rows, then `unary_assign`), bit for bit, in
/// both dtypes: by the plain loops, by the `gemm` crate and the AVX-512 kernel (f32),
/// serial and split across threads by rows and by columns (with the bias split too).
#[test]
fn matmul_epilogue_gives_the_bits_of_the_separate_ops() {
    for dtype in [DType::F32, DType::F64] {
        for (batch, m, k, n) in [
            (2, 3, 7, 21),
            (1, 2, 0, 18),
            (1, 128, 300, 512),
            (1, 40, 300, 700),
            (1, 700, 300, 40),
            (2, 40, 37, 33),
        ] {
            for (lt, rt) in [(false, false), (true, true), (false, true)] {
                let (spec, a, b) = shared_right_product(dtype, [batch, m, k, n], [lt, rt]);
                let bias = Cpu::random(&Cpu, n, 3, (-1.0, 1.0), false, dtype);
                for with_bias in [false, true] {
                    for act in [None, Some(UnaryOp::Relu), Some(UnaryOp::Tanh)] {
                        let want = adjoint_backend::matmul_epilogue_by_ops::<Cpu>(
                            &a,
                            &b,
                            &spec,
                            with_bias.then_some(&bias),
                            act,
                        );
                        let got =
                            Cpu::matmul_epilogue(&a, &b, &spec, with_bias.then_some(&bias), act);
                        assert!(
                            bits(&got) == bits(&want),
                            "{dtype:?} {spec:?} bias={with_bias} act={act:?}: the fused values differ"
                        );
                    }
                }
            }
        }
    }
}

/// `matmul_grad` against the ops it fuses (the `Backend` default: the products, then
/// `binary_assign` of the derivative with `y` as the left operand), bit for bit, in both
/// dtypes: by the plain loops, the `gemm` crate and the AVX-512 kernel (a ReLU's derivative in
/// its tiles, another after each block), serial and split by rows and by columns, one product
/// or a batch (each product's block of `y` its own), with `y`
/// holding zeros, negatives and a NaN (a ReLU's derivative passes `ȳ` only where `y > 0`).
/// `matmul_grad_sums` (one product) likewise, its sums against `reduce(Sum)` over the rows of
/// those values: the GEMM's tiles or its epilogue pass add up each column in row order, also
/// where a product taller than wide is split by columns for them (`300 × 50 × 96`).
#[test]
fn matmul_grad_gives_the_bits_of_the_separate_ops() {
    for dtype in [DType::F32, DType::F64] {
        for (batch, m, k, n) in [
            (2, 3, 7, 21),
            (1, 5, 9, 33),
            (1, 128, 10, 512),
            (1, 128, 300, 512),
            (1, 700, 300, 40),
            (2, 40, 37, 33),
            (2, 64, 100, 96),
            (1, 300, 50, 96),
        ] {
            for (lt, rt) in [(false, false), (false, true), (true, false)] {
                let (spec, a, b) = shared_right_product(dtype, [batch, m, k, n], [lt, rt]);
                let mut y = Cpu::random(&Cpu, batch * m * n, 3, (-1.0, 1.0), false, dtype).to_f64();
                y[0] = 0.0;
                y[1] = f64::NAN;
                y[2] = -0.0;
                let y = CpuStorage::from_f64(&y, dtype);
                for grad in [
                    BinaryOp::LeakyReluGrad(0.0),
                    BinaryOp::LeakyReluGrad(0.2),
                    BinaryOp::TanhGrad,
                ] {
                    let mut want = Cpu::matmul(&a, &b, &spec);
                    Cpu::binary_assign(grad, &mut want, &y, false);
                    let got = Cpu::matmul_grad(&a, &b, &spec, &y, grad);
                    assert!(
                        bits(&got) == bits(&want),
                        "{dtype:?} {spec:?} {grad:?}: the fused values differ"
                    );
                    if batch == 1 {
                        let sums = Cpu::reduce(ReduceOp::Sum, &want, &[m, n], &[0]);
                        let (got, got_sums) = Cpu::matmul_grad_sums(&a, &b, &spec, &y, grad);
                        assert!(
                            bits(&got) == bits(&want) && bits(&got_sums) == bits(&sums),
                            "{dtype:?} {spec:?} {grad:?}: the fused values or sums differ"
                        );
                    }
                }
            }
        }
    }
}

#[test]
#[should_panic(expected = "matmul: the bias holds 3 elements, not one per column (4)")]
fn matmul_epilogue_checks_the_bias_length() {
    let spec = MatmulSpec {
        batch: 1,
        m: 2,
        k: 2,
        n: 4,
        lhs_batch_stride: 0,
        rhs_batch_stride: 0,
        lhs_transposed: false,
        rhs_transposed: false,
    };
    let (a, b, bias) = (rand(4, 1), rand(8, 2), rand(3, 3));
    Cpu::matmul_epilogue(&a, &b, &spec, Some(&bias), None);
}

#[test]
fn reduce_middle_axes_and_broadcast_binary() {
    let shape = [2, 3, 4];
    let x = rand(24, 3);
    let v = x.to_f64();
    let got = Cpu::reduce(ReduceOp::Sum, &x, &shape, &[1]).to_f64();
    let want: Vec<f64> = (0..2)
        .flat_map(|i| (0..4).map(move |l| (i, l)))
        .map(|(i, l)| (0..3).map(|j| v[i * 12 + j * 4 + l]).sum())
        .collect();
    close(&got, &want);
    let max = Cpu::reduce(ReduceOp::Max, &x, &shape, &[0, 2]).to_f64();
    let want: Vec<f64> = (0..3)
        .map(|j| {
            (0..2)
                .flat_map(|i| (0..4).map(move |l| (i, l)))
                .map(|(i, l)| v[i * 12 + j * 4 + l])
                .fold(f64::MIN, f64::max)
        })
        .collect();
    close(&max, &want);
    // [2, 3, 4] - [3, 1] (aligned [1, 3, 1]) and + a row [4].
    let c = rand(3, 4);
    let got = Cpu::binary(BinaryOp::Sub, (&x, &shape), (&c, &[1, 3, 1]), &shape).to_f64();
    let cv = c.to_f64();
    close(
        &got,
        &(0..24).map(|i| v[i] - cv[(i / 4) % 3]).collect::<Vec<_>>(),
    );
    let r = rand(4, 5);
    let got = Cpu::binary(BinaryOp::Add, (&x, &shape), (&r, &[1, 1, 4]), &shape).to_f64();
    let rv = r.to_f64();
    close(&got, &(0..24).map(|i| v[i] + rv[i % 4]).collect::<Vec<_>>());
}

#[test]
fn reduce_matches_a_naive_reduction_over_every_axis_set() {
    // Runs longer and shorter than the eight lanes of the vectorized fold, every subset of
    // axes (merged runs of reduced and kept axes in every pattern), and a NaN for Max/Min.
    let shape = [3, 5, 2, 19];
    let x = rand(3 * 5 * 2 * 19, 9);
    let mut v = x.to_f64();
    for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
        for mask in 1..16_usize {
            let axes: Vec<usize> = (0..4).filter(|a| mask >> a & 1 == 1).collect();
            let got = Cpu::reduce(op, &x, &shape, &axes).to_f64();
            let out_shape: Vec<usize> = (0..4)
                .map(|a| if axes.contains(&a) { 1 } else { shape[a] })
                .collect();
            let mut want = vec![op.identity::<f64>(); out_shape.iter().product()];
            for (i, &value) in v.iter().enumerate() {
                let (mut rest, mut out, mut scale) = (i, 0, 1);
                for a in (0..4).rev() {
                    let coord = rest % shape[a];
                    rest /= shape[a];
                    if !axes.contains(&a) {
                        out += scale * coord;
                    }
                    scale *= out_shape[a];
                }
                want[out] = op.combine(want[out], value);
            }
            close(&got, &want);
        }
    }
    v[77] = f64::NAN;
    let x = CpuStorage::F64(v);
    for op in [ReduceOp::Max, ReduceOp::Min] {
        let got = Cpu::reduce(op, &x, &shape, &[0, 2, 3]).to_f64();
        // Element 77 is at (0, 2, 0, 1): channel 2 of the kept axis.
        assert!(got[2].is_nan() && got.iter().filter(|g| g.is_nan()).count() == 1);
    }
}

#[test]
fn reducing_no_axis_copies_the_input_even_at_rank_0() {
    // A rank-0 tensor has no axis to reduce: `sum_all` of a scalar is the scalar (it gave the
    // identity, 0 for Sum, which zeroed the tangent of every `tensor ∘ f64` scalar operand
    // after a full reduction). No axis of a rank-2 tensor: the same elements.
    let x = CpuStorage::F64(vec![-2.5]);
    for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
        assert_eq!(Cpu::reduce(op, &x, &[], &[]).to_f64(), vec![-2.5]);
        let y = rand(6, 4);
        assert_eq!(Cpu::reduce(op, &y, &[2, 3], &[]).to_f64(), y.to_f64());
    }
}

#[test]
fn column_folds_split_across_threads_give_the_in_order_values() {
    // A bias's tangent: the leading axes of a matrix long enough to be split between the
    // threads, in blocks of 64 columns and a shorter last one; each column summed in row
    // order, so the bits are those of a plain loop.
    let (rows, cols) = (300, 150);
    let x = rand(rows * cols, 41);
    let v = x.to_f64();
    for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
        for shape in [vec![rows, cols], vec![3, rows / 3, cols]] {
            let axes: Vec<usize> = (0..shape.len() - 1).collect();
            let got = Cpu::reduce(op, &x, &shape, &axes).to_f64();
            let want: Vec<f64> = (0..cols)
                .map(|j| (0..rows).fold(op.identity(), |a, i| op.combine(a, v[i * cols + j])))
                .collect();
            assert_eq!(got, want, "{op:?} over {axes:?} of {shape:?}");
        }
    }
}

#[test]
fn broadcast_binary_split_across_threads() {
    // Long enough to be split into blocks of whole rows (the last block shorter), with both
    // operands broadcast along different axes.
    let (out, ash, bsh) = ([3, 300, 301], [3, 1, 301], [1, 300, 1]);
    let (a, b) = (rand(3 * 301, 31), rand(300, 32));
    let got = Cpu::binary(BinaryOp::Mul, (&a, &ash), (&b, &bsh), &out).to_f64();
    let (av, bv) = (a.to_f64(), b.to_f64());
    let want: Vec<f64> = (0..3 * 300 * 301)
        .map(|i| {
            let (n, r, c) = (i / (300 * 301), (i / 301) % 300, i % 301);
            av[n * 301 + c] * bv[r]
        })
        .collect();
    close(&got, &want);
}

/// `x` (of `shape`, row-major) with permuted axes, by a naive index mapping.
fn naive_permute(x: &[f64], shape: &[usize], perm: &[usize]) -> Vec<f64> {
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let strides: Vec<usize> = (0..shape.len())
        .map(|a| shape[a + 1..].iter().product())
        .collect();
    (0..x.len())
        .map(|mut i| {
            let mut src = 0;
            for (a, &p) in perm.iter().enumerate().rev() {
                src += (i % out_shape[a]) * strides[p];
                i /= out_shape[a];
            }
            x[src]
        })
        .collect()
}

#[test]
fn permute_matches_a_naive_index_mapping() {
    // Swaps of the last two axes (the tiled transpose: sizes that are not multiples of its
    // tiles, a batch of matrices, one row, one long enough to run in parallel) and other
    // permutations (ndarray's copy).
    let cases: [(&[usize], &[usize]); 7] = [
        (&[37, 21], &[1, 0]),
        (&[3, 37, 21], &[0, 2, 1]),
        (&[1, 5], &[1, 0]),
        (&[600, 500], &[1, 0]),
        (&[2, 3, 700, 70], &[0, 1, 3, 2]),
        (&[4, 5, 6], &[2, 0, 1]),
        (&[4, 5, 6], &[1, 0, 2]),
    ];
    for (seed, (shape, perm)) in cases.into_iter().enumerate() {
        let x = rand(shape.iter().product(), 40 + seed as u64);
        let got = Cpu::permute(&x, shape, perm);
        assert_eq!(
            got.to_f64(),
            naive_permute(&x.to_f64(), shape, perm),
            "{shape:?} {perm:?}"
        );
        // The same elements through f32 and u32 buffers.
        let ids = CpuStorage::U32((0..x.len() as u32).collect());
        let want: Vec<f64> = naive_permute(&ids.to_f64(), shape, perm);
        assert_eq!(
            Cpu::permute(&ids, shape, perm).to_f64(),
            want,
            "u32 {shape:?} {perm:?}"
        );
    }
    assert!(
        Cpu::permute(&CpuStorage::F32(vec![]), &[0, 3], &[1, 0])
            .to_f64()
            .is_empty()
    );
}

#[test]
fn broadcast_matches_a_naive_index_mapping() {
    // Trailing runs copied or repeated, mixed axes, fewer axes than the output, a scalar.
    let cases: [(&[usize], &[usize]); 11] = [
        (&[3, 1], &[3, 1000]),
        (&[1, 5], &[4, 5]),
        (&[5], &[4, 5]),
        (&[2, 1, 3], &[2, 4, 3]),
        (&[1], &[2, 3]),
        (&[1, 1], &[3, 4]),
        (&[], &[2, 2]),
        (&[2, 3], &[2, 3]),
        (&[4, 1, 1], &[4, 2, 3]),
        (&[1, 3, 1], &[2, 3, 4]),
        (&[3, 1], &[0, 3, 2]),
    ];
    for (seed, (shape, out_shape)) in cases.into_iter().enumerate() {
        let x = rand(shape.iter().product(), 60 + seed as u64);
        let xv = x.to_f64();
        let lead = out_shape.len() - shape.len();
        let want: Vec<f64> = (0..out_shape.iter().product::<usize>())
            .map(|mut i| {
                let (mut src, mut stride) = (0, 1);
                for a in (0..out_shape.len()).rev() {
                    let idx = i % out_shape[a];
                    i /= out_shape[a];
                    if a >= lead && shape[a - lead] != 1 {
                        src += idx * stride;
                    }
                    if a >= lead {
                        stride *= shape[a - lead];
                    }
                }
                xv[src]
            })
            .collect();
        let got = Cpu::broadcast(&x, shape, out_shape).to_f64();
        assert_eq!(got, want, "{shape:?} -> {out_shape:?}");
    }
}

/// A one-element operand broadcast over the other (a tangent times a rank-0 seed) takes the
/// one-loop path; on either side, below and above the parallel threshold, it gives each
/// element's `op.eval` exactly (a non-commutative op catches swapped operands).
#[test]
fn binary_with_a_one_element_operand_on_either_side() {
    for (n, seed) in [(12_usize, 70_u64), (40_000, 71)] {
        let shape = [4, n / 4];
        let x = rand(n, seed);
        let s = CpuStorage::F64(vec![0.75]);
        let xv = x.to_f64();
        for op in [BinaryOp::Sub, BinaryOp::Div] {
            let right = Cpu::binary(op, (&x, &shape), (&s, &[1, 1]), &shape).to_f64();
            let left = Cpu::binary(op, (&s, &[1, 1]), (&x, &shape), &shape).to_f64();
            for (i, &v) in xv.iter().enumerate() {
                assert_eq!(right[i], op.eval(v, 0.75), "{op:?} x·s, element {i}");
                assert_eq!(left[i], op.eval(0.75, v), "{op:?} s·x, element {i}");
            }
        }
    }
}

#[test]
fn narrow_matches_a_naive_index_mapping() {
    let shape = [3, 4, 5];
    let x = rand(60, 50);
    let xv = x.to_f64();
    for (axis, start, len) in [(0, 1, 2), (1, 1, 3), (2, 3, 2), (2, 0, 5), (1, 4, 0)] {
        let mut out_shape = shape;
        out_shape[axis] = len;
        let want: Vec<f64> = (0..out_shape.iter().product::<usize>())
            .map(|i| {
                let [_, rows, cols] = out_shape;
                let mut idx = [i / (rows * cols), i / cols % rows, i % cols];
                idx[axis] += start;
                xv[idx[0] * 20 + idx[1] * 5 + idx[2]]
            })
            .collect();
        let got = Cpu::narrow(&x, &shape, axis, start, len).to_f64();
        assert_eq!(got, want, "axis {axis}, {start}..{}", start + len);
    }
}

#[test]
fn update_split_across_threads_matches_its_scalar_meaning() {
    // Long enough to be split into blocks; Adam reads and writes both state buffers.
    let n = 300_001;
    let op = UpdateOp::Adam {
        lr: 0.01,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-8,
        weight_decay: 0.1,
        decoupled: true,
        bias_correction1: 0.1,
        bias_correction2: 0.001,
    };
    let (p0, g, m0, v0) = (rand(n, 41), rand(n, 42), rand(n, 43), rand(n, 44));
    let v0 = CpuStorage::F64(v0.to_f64().iter().map(|v| v.abs()).collect());
    let (mut p, mut m, mut v) = (p0.clone(), m0.clone(), v0.clone());
    Cpu::update(op, &mut p, &g, &mut [&mut m, &mut v]);
    let (p0, g, m0, v0) = (p0.to_f64(), g.to_f64(), m0.to_f64(), v0.to_f64());
    let (p, m, v) = (p.to_f64(), m.to_f64(), v.to_f64());
    for i in (0..n).step_by(997).chain([n - 1]) {
        let (np, [nm, nv]) = op.eval(p0[i], g[i], [m0[i], v0[i]]);
        assert_eq!((p[i], m[i], v[i]), (np, nm, nv), "element {i}");
    }
}

#[test]
fn unary_ops_match_their_scalar_meaning() {
    let x = rand(100, 6);
    for op in [
        UnaryOp::Exp,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Relu,
        UnaryOp::Gelu,
        UnaryOp::GeluErf,
        UnaryOp::LeakyRelu(0.1),
        UnaryOp::Clamp(-0.3, 0.2),
        UnaryOp::AddScalar(2.0),
    ] {
        let got = Cpu::unary(op, &x).to_f64();
        close(
            &got,
            &x.to_f64().iter().map(|&v| op.eval(v)).collect::<Vec<_>>(),
        );
        // Written into the input's buffer: the same values, in both float types.
        for x in [x.clone(), Cpu::cast(&x, DType::F32)] {
            let mut y = x.clone();
            Cpu::unary_assign(op, &mut y);
            assert_eq!(y, Cpu::unary(op, &x), "{op:?} in place");
        }
    }
}

#[test]
fn col2im_is_the_adjoint_of_im2col() {
    let g = Conv2dGeometry {
        batch: 2,
        channels: 3,
        input: [5, 6],
        kernel: [3, 2],
        stride: [2, 1],
        padding: [1, 2],
        dilation: [1, 2],
    };
    let [oh, ow] = g.output().expect("fits");
    let x = rand(2 * 3 * 5 * 6, 7);
    let c = rand(2 * 3 * 3 * 2 * oh * ow, 8);
    let lhs = dot(&Cpu::im2col(&x, &g, 0.0), &c);
    let rhs = dot(&x, &Cpu::col2im(&c, &g));
    assert!((lhs - rhs).abs() < 1e-9, "{lhs} vs {rhs}");
}

#[test]
fn index_add_is_the_adjoint_of_index_select() {
    let shape = [3, 4, 2];
    let x = rand(24, 9);
    let ids = Cpu::upload_u32(&Cpu, &[3, 0, 3, 1, 2]);
    let y = rand(3 * 5 * 2, 10);
    let lhs = dot(&Cpu::index_select(&x, &shape, 1, &ids), &y);
    let rhs = dot(&x, &Cpu::index_add(&y, &shape, 1, &ids));
    assert!((lhs - rhs).abs() < 1e-9);
    let argmax = Cpu::argmax(
        &Cpu::upload_f64(&Cpu, &[1.0, 3.0, 3.0, 0.0, -1.0, 2.0], DType::F32),
        &[2, 3],
        1,
    );
    assert_eq!(argmax, CpuStorage::U32(vec![1, 2]));
}

#[test]
fn argmax_along_any_axis_takes_the_first_maximum_and_the_first_nan() {
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    // Shape [2, 3, 2]; lanes along axis 1 (stride 2).
    #[rustfmt::skip]
    let v = [
        1.0, -inf,   5.0, -inf,   5.0, -inf,
        nan, 2.0,    0.0, nan,    nan, 2.0,
    ];
    for dtype in [DType::F32, DType::F64] {
        let x = Cpu::upload_f64(&Cpu, &v, dtype);
        let ids = Cpu::argmax(&x, &[2, 3, 2], 1);
        assert_eq!(ids, CpuStorage::U32(vec![1, 0, 0, 1]), "{dtype:?}");
        let ids = Cpu::argmax(&x, &[2, 3, 2], 2);
        assert_eq!(ids, CpuStorage::U32(vec![0, 0, 0, 0, 1, 0]), "{dtype:?}");
        let ids = Cpu::argmax(&x, &[2, 3, 2], 0);
        assert_eq!(ids, CpuStorage::U32(vec![1, 1, 0, 1, 1, 1]), "{dtype:?}");
    }
}

#[test]
fn convolution_matches_naive_and_its_adjoints() {
    // 33 images (split over the threads, serial GEMMs) and one image (fewer images than
    // threads: the batch as one range, each GEMM free to split; these are too small to).
    for batch in [33, 1] {
        convolution_case(batch);
    }
}

fn convolution_case(batch: usize) {
    use crate::Conv2dSpec;
    let geometry = Conv2dGeometry {
        batch,
        channels: 4,
        input: [32, 32],
        kernel: [3, 3],
        stride: [1, 1],
        padding: [0, 0],
        dilation: [1, 1],
    };
    let spec = Conv2dSpec {
        geometry,
        out_channels: 2,
        groups: 2,
    };
    let [oh, ow] = geometry.output().expect("fits");
    let x = rand(batch * 4 * 32 * 32, 11);
    let w = rand(2 * 2 * 9, 12);
    let y = Cpu::conv2d(&x, &w, &spec).to_f64();
    let (xv, wv) = (x.to_f64(), w.to_f64());
    let last = batch - 1;
    for &(n, o, i, j) in &[
        (0, 0, 0, 0),
        (last / 2, 1, 5, 7),
        (last, 0, 29, 29),
        (last, 1, 13, 2),
    ] {
        let mut want = 0.0;
        for c in 0..2 {
            for p in 0..3 {
                for q in 0..3 {
                    want += wv[((o * 2 + c) * 3 + p) * 3 + q]
                        * xv[((n * 4 + o * 2 + c) * 32 + i + p) * 32 + j + q];
                }
            }
        }
        close(&[y[((n * 2 + o) * oh + i) * ow + j]], &[want]);
    }
    // The fused bias: the same output plus b[o] on channel o.
    let b = rand(2, 14);
    let with_bias = Cpu::conv2d_bias(&x, &w, &b, &spec).expect("fused").to_f64();
    let bv = b.to_f64();
    let want: Vec<f64> = (0..y.len())
        .map(|i| y[i] + bv[(i / (oh * ow)) % 2])
        .collect();
    close(&with_bias, &want);
    let dy = rand(batch * 2 * oh * ow, 13);
    let y = Cpu::conv2d(&x, &w, &spec);
    let lhs = dot(&y, &dy);
    assert!(
        (lhs - dot(&x, &Cpu::conv2d_backward_input(&dy, &w, &spec))).abs()
            < 1e-8 * lhs.abs().max(1.0)
    );
    assert!(
        (lhs - dot(&w, &Cpu::conv2d_backward_weight(&x, &dy, &spec))).abs()
            < 1e-8 * lhs.abs().max(1.0)
    );
}

/// The weight tangent against its sum, `W̄[o, c, p, q] = Σ Ȳ[n, o, i, j]·x[n, g·C/G + c, i + p,
/// j + q]`, in both of the GEMM's forms: fewer output channels per group than columns per
/// pixel (`W̄ᵀ` computed, then transposed: 4 against 27, and 3 against 18 with two groups)
/// and more (40 against 27).
#[test]
fn convolution_weight_tangent_matches_its_sum_in_both_forms() {
    use crate::Conv2dSpec;
    for (channels, out_channels, groups) in [(3, 4, 1), (4, 6, 2), (3, 40, 1)] {
        let (batch, size, k) = (3, 9, 3);
        let geometry = Conv2dGeometry {
            batch,
            channels,
            input: [size, size],
            kernel: [k, k],
            stride: [1, 1],
            padding: [0, 0],
            dilation: [1, 1],
        };
        let spec = Conv2dSpec {
            geometry,
            out_channels,
            groups,
        };
        let [oh, ow] = geometry.output().expect("fits");
        let (cg, og) = (channels / groups, out_channels / groups);
        let x = rand(batch * channels * size * size, 21);
        let dy = rand(batch * out_channels * oh * ow, 22);
        let got = Cpu::conv2d_backward_weight(&x, &dy, &spec).to_f64();
        let (xv, dyv) = (x.to_f64(), dy.to_f64());
        let mut want = vec![0.0; out_channels * cg * k * k];
        for o in 0..out_channels {
            for c in 0..cg {
                let channel = o / og * cg + c;
                for p in 0..k {
                    for q in 0..k {
                        let mut sum = 0.0;
                        for n in 0..batch {
                            for i in 0..oh {
                                for j in 0..ow {
                                    sum += dyv[((n * out_channels + o) * oh + i) * ow + j]
                                        * xv[((n * channels + channel) * size + i + p) * size
                                            + j
                                            + q];
                                }
                            }
                        }
                        want[((o * cg + c) * k + p) * k + q] = sum;
                    }
                }
            }
        }
        close(&got, &want);
    }
}

#[test]
fn convolution_without_input_channels_is_its_bias() {
    let spec = crate::Conv2dSpec {
        geometry: Conv2dGeometry {
            batch: 2,
            channels: 0,
            input: [3, 3],
            kernel: [2, 2],
            stride: [1, 1],
            padding: [0, 0],
            dilation: [1, 1],
        },
        out_channels: 2,
        groups: 1,
    };
    let (x, w) = (rand(0, 1), rand(0, 2));
    assert_eq!(Cpu::conv2d(&x, &w, &spec).to_f64(), vec![0.0; 16]);
    let b = Cpu::upload_f64(&Cpu, &[1.5, -2.0], DType::F64);
    let y = Cpu::conv2d_bias(&x, &w, &b, &spec).expect("fused").to_f64();
    assert_eq!(y, [[1.5; 4], [-2.0; 4], [1.5; 4], [-2.0; 4]].concat());
}

#[test]
#[should_panic(expected = "conv2d: 4 input and 3 output channels do not split into 2 groups")]
fn convolution_rejects_channels_that_do_not_split_into_groups() {
    let geometry = Conv2dGeometry {
        batch: 1,
        channels: 4,
        input: [4, 4],
        kernel: [3, 3],
        stride: [1, 1],
        padding: [0, 0],
        dilation: [1, 1],
    };
    let spec = crate::Conv2dSpec {
        geometry,
        out_channels: 3,
        groups: 2,
    };
    // Three output channels in two groups would leave the third unwritten.
    let _ = Cpu::conv2d(&rand(64, 1), &rand(3 * 2 * 9, 2), &spec);
}

#[test]
fn input_tangent_with_padding_is_the_adjoint() {
    use crate::Conv2dSpec;
    // Stride 1, groups 1, a rectangular kernel and paddings up to the kernel size.
    for padding in [[0, 0], [1, 2], [2, 0], [3, 1]] {
        let geometry = Conv2dGeometry {
            batch: 3,
            channels: 5,
            input: [9, 8],
            kernel: [3, 4],
            stride: [1, 1],
            padding,
            dilation: [1, 1],
        };
        let spec = Conv2dSpec {
            geometry,
            out_channels: 6,
            groups: 1,
        };
        let [oh, ow] = geometry.output().expect("fits");
        let x = rand(3 * 5 * 72, 21);
        let w = rand(6 * 5 * 12, 22);
        let dy = rand(3 * 6 * oh * ow, 23);
        let lhs = dot(&Cpu::conv2d(&x, &w, &spec), &dy);
        let rhs = dot(&x, &Cpu::conv2d_backward_input(&dy, &w, &spec));
        assert!(
            (lhs - rhs).abs() < 1e-9 * lhs.abs().max(1.0),
            "padding {padding:?}: {lhs} vs {rhs}"
        );
    }
}

#[test]
fn binary_assign_equals_binary_for_every_op_and_side() {
    // A short buffer, and one long enough to be split across threads.
    for n in [37, crate::ops::elementwise::PAR_MIN + 5] {
        for dtype in [DType::F32, DType::F64] {
            let a = Cpu::random(&Cpu, n, 41, (0.1, 2.0), false, dtype);
            let b = Cpu::random(&Cpu, n, 42, (-1.0, 1.0), false, dtype);
            for op in BinaryOp::EVERY {
                let want = Cpu::binary(op, (&a, &[n]), (&b, &[n]), &[n]);
                let mut into_a = a.clone();
                Cpu::binary_assign(op, &mut into_a, &b, true);
                assert_eq!(into_a, want, "{op:?} {dtype:?} n={n}, written over the lhs");
                let mut into_b = b.clone();
                Cpu::binary_assign(op, &mut into_b, &a, false);
                assert_eq!(into_b, want, "{op:?} {dtype:?} n={n}, written over the rhs");
            }
        }
    }
}

#[test]
#[should_panic(expected = "in-place elementwise op on buffers of different lengths")]
fn binary_assign_checks_lengths() {
    Cpu::binary_assign(BinaryOp::Add, &mut rand(3, 1), &rand(4, 2), true);
}

#[test]
fn relu_with_bits_and_masking_by_them() {
    // Bits 0..: 0.5 > 0, −1 no, 0 no, NaN no, 2 yes; then a second word for element 32; and
    // a buffer long enough to be split across threads.
    let mut x = vec![0.5, -1.0, 0.0, f64::NAN, 2.0];
    x.resize(33, -3.0);
    x[32] = 7.0;
    for dtype in [DType::F32, DType::F64] {
        let xs = Cpu::upload_f64(&Cpu, &x, dtype);
        let (y, bits) = Cpu::relu_with_bits(&xs);
        assert_eq!(Cpu::download_u32(&bits), vec![0b10001, 1]);
        assert_eq!(y, Cpu::unary(UnaryOp::Relu, &xs));
        let d = Cpu::mask_by_bits(&Cpu::upload_f64(&Cpu, &[10.0; 33], dtype), &bits);
        let mut want = vec![0.0; 33];
        (want[0], want[4], want[32]) = (10.0, 10.0, 10.0);
        assert_eq!(d.to_f64(), want);
        // Long: the bits and the masked adjoint against reference loops.
        let n = crate::ops::elementwise::PAR_MIN + 45;
        let xs = Cpu::random(&Cpu, n, 9, (-1.0, 1.0), false, dtype);
        let (y, bits) = Cpu::relu_with_bits(&xs);
        assert_eq!(y, Cpu::unary(UnaryOp::Relu, &xs));
        let words: Vec<u32> = (xs.to_f64().chunks(32))
            .map(|c| (c.iter().enumerate()).fold(0, |m, (k, &v)| m | u32::from(v > 0.0) << k))
            .collect();
        assert_eq!(Cpu::download_u32(&bits), words);
        let d = Cpu::random(&Cpu, n, 10, (-1.0, 1.0), false, dtype);
        let got = Cpu::mask_by_bits(&d, &bits);
        let want: Vec<f64> = (xs.to_f64().iter().zip(d.to_f64()))
            .map(|(&x, d)| if x > 0.0 { d } else { 0.0 })
            .collect();
        assert_eq!(got.to_f64(), want);
    }
    // An empty buffer has no words.
    let empty = Cpu::upload_f64(&Cpu, &[], DType::F32);
    assert!(Cpu::download_u32(&Cpu::relu_with_bits(&empty).1).is_empty());
}

#[test]
#[should_panic(expected = "mask_by_bits: 1 words of bits for 33 elements")]
fn mask_by_bits_checks_the_word_count() {
    let (_, bits) = Cpu::relu_with_bits(&rand(32, 1));
    Cpu::mask_by_bits(&rand(33, 2), &bits);
}

/// The `f32` convolutions against the `f64` ones (the GEMM path, checked against sums and
/// adjoints above), in shapes that reach every tail of the direct kernels
/// (`ops::conv::direct`, stride 1 on AVX2 + FMA): the MNIST CNN's two layers; output rows
/// wider than a tile and not a multiple of it, output channels and taps not multiples of the
/// tiles' rows, padding, dilation and groups; and a stride and a single image, which take
/// the GEMM path.
#[test]
fn f32_convolutions_match_f64_in_every_tail() {
    use crate::Conv2dSpec;
    let mnist = Conv2dSpec {
        geometry: Conv2dGeometry {
            batch: 3,
            channels: 32,
            input: [26, 26],
            kernel: [3, 3],
            stride: [1, 1],
            padding: [0, 0],
            dilation: [1, 1],
        },
        out_channels: 64,
        groups: 1,
    };
    // The MNIST CNN's second layer with other channels, input size and whatever `change` sets.
    let with = |channels, out_channels, input, change: fn(&mut Conv2dSpec)| {
        let mut spec = mnist;
        (spec.geometry.channels, spec.out_channels) = (channels, out_channels);
        spec.geometry.input = input;
        change(&mut spec);
        spec
    };
    let cases = [
        mnist,
        with(1, 32, [28, 28], |_| {}),
        with(5, 7, [9, 30], |s| {
            s.geometry.kernel = [3, 4];
            s.geometry.padding = [1, 2];
            s.geometry.dilation = [1, 2];
        }),
        with(6, 34, [11, 13], |s| {
            s.groups = 2;
            s.geometry.kernel = [2, 2];
            s.geometry.padding = [0, 1];
        }),
        with(3, 5, [9, 9], |s| s.geometry.stride = [2, 1]),
        with(3, 5, [9, 9], |s| s.geometry.batch = 1),
    ];
    for (i, &spec) in cases.iter().enumerate() {
        let g = spec.geometry;
        let direct = crate::ops::conv::direct::supported(&spec);
        assert_eq!(
            direct,
            g.stride == [1, 1] && crate::ops::simd::has_avx2_fma(),
            "case {i}"
        );
        let [oh, ow] = g.output().expect("fits");
        let taps = g.channels / spec.groups * g.kernel[0] * g.kernel[1];
        // The f64 side computes on the f32 inputs' values, exactly; `abs` gives the sums of
        // the terms' magnitudes, which bound any order's rounding: `|ŝ − s| ≤ n·u·Σ|terms|`
        // for a sum of `n` products in precision `u = 2⁻²⁴` (Higham, "Accuracy and Stability
        // of Numerical Algorithms", §3.1), the bias being one more term.
        let f32 = |seed: u64, n: usize| {
            let v = rand(n, seed).to_f64();
            let v32 = Cpu::upload_f64(&Cpu, &v, DType::F32);
            let exact = v32.to_f64();
            let abs: Vec<f64> = exact.iter().map(|v| v.abs()).collect();
            (
                v32,
                Cpu::upload_f64(&Cpu, &exact, DType::F64),
                Cpu::upload_f64(&Cpu, &abs, DType::F64),
            )
        };
        let (x32, x, xa) = f32(31, g.batch * g.channels * g.input[0] * g.input[1]);
        let (w32, w, wa) = f32(32, spec.out_channels * taps);
        let (b32, b, ba) = f32(33, spec.out_channels);
        let (dy32, dy, dya) = f32(34, g.batch * spec.out_channels * oh * ow);
        let per_tap = g.kernel[0] * g.kernel[1];
        // The backend's choice of path, and the direct kernels themselves wherever the CPU
        // runs them (the backend leaves them to the GEMM path for a single image, or on a CPU
        // with AVX-512F).
        let mut direct_results = Vec::new();
        if direct {
            use crate::ops::conv::direct as d;
            let s = |v: &CpuStorage| match v {
                CpuStorage::F32(v) => v.clone(),
                other => panic!("an f32 buffer, got {:?}", other.dtype()),
            };
            let (x, w, b, dy) = (s(&x32), s(&w32), s(&b32), s(&dy32));
            direct_results = vec![
                d::forward(&x, &w, None, &spec),
                d::forward(&x, &w, Some(&b), &spec),
                d::backward_input(&dy, &w, &spec),
                d::backward_weight(&x, &dy, &spec),
            ];
        }
        let direct_results: Vec<Option<CpuStorage>> = (0..4)
            .map(|op| direct_results.get(op).cloned().map(CpuStorage::F32))
            .collect();
        let cases = [
            (
                Cpu::conv2d(&x32, &w32, &spec),
                Cpu::conv2d(&x, &w, &spec),
                Cpu::conv2d(&xa, &wa, &spec),
                taps,
            ),
            (
                Cpu::conv2d_bias(&x32, &w32, &b32, &spec).expect("fused"),
                Cpu::conv2d_bias(&x, &w, &b, &spec).expect("fused"),
                Cpu::conv2d_bias(&xa, &wa, &ba, &spec).expect("fused"),
                taps + 1,
            ),
            (
                Cpu::conv2d_backward_input(&dy32, &w32, &spec),
                Cpu::conv2d_backward_input(&dy, &w, &spec),
                Cpu::conv2d_backward_input(&dya, &wa, &spec),
                spec.out_channels / spec.groups * per_tap,
            ),
            (
                Cpu::conv2d_backward_weight(&x32, &dy32, &spec),
                Cpu::conv2d_backward_weight(&x, &dy, &spec),
                Cpu::conv2d_backward_weight(&xa, &dya, &spec),
                g.batch * oh * ow,
            ),
        ];
        for (op, ((got, want, magnitude, terms), direct)) in
            cases.into_iter().zip(direct_results).enumerate()
        {
            let bound = terms as f64 * f64::from(f32::EPSILON) / 2.0;
            let (want, magnitude) = (want.to_f64(), magnitude.to_f64());
            for got in [Some(got), direct].into_iter().flatten() {
                assert_eq!(got.dtype(), DType::F32);
                let got = got.to_f64();
                assert_eq!(got.len(), want.len());
                for (j, ((g, w), m)) in got.iter().zip(&want).zip(&magnitude).enumerate() {
                    assert!(
                        (g - w).abs() <= bound * m,
                        "case {i}, op {op}, element {j}: {g} against {w} (bound {})",
                        bound * m
                    );
                }
            }
        }
    }
}

#[test]
fn softmax_matches_the_formula_along_every_axis() {
    // Exact values: [0, ln 3] → [1/4, 3/4], and its log.
    let x = CpuStorage::F64(vec![0.0, 3f64.ln()]);
    let s = Cpu::softmax(&x, &[1, 2], 1, false).expect("the CPU has a fused softmax");
    close(&s.to_f64(), &[0.25, 0.75]);
    let l = Cpu::softmax(&x, &[1, 2], 1, true).expect("and a fused log-softmax");
    close(&l.to_f64(), &[0.25f64.ln(), 0.75f64.ln()]);
    // Every axis of a 3-D tensor (slices contiguous and strided), and one large enough to be
    // split between the threads, against the formula in f64 with the maximum subtracted.
    for (shape, axis) in [
        (vec![3, 5, 4], 0),
        (vec![3, 5, 4], 1),
        (vec![3, 5, 4], 2),
        (vec![300, 130], 1),
    ] {
        let x = rand(shape.iter().product(), 51);
        let v = x.to_f64();
        let (len, inner) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
        for log in [false, true] {
            let got = Cpu::softmax(&x, &shape, axis, log).unwrap().to_f64();
            let want: Vec<f64> = (0..v.len())
                .map(|i| {
                    let (block, j) = (i / (len * inner), i % inner);
                    let at = |k: usize| v[block * len * inner + k * inner + j];
                    let m = (0..len).map(at).fold(f64::NEG_INFINITY, f64::max);
                    let sum: f64 = (0..len).map(|k| (at(k) - m).exp()).sum();
                    if log {
                        v[i] - m - sum.ln()
                    } else {
                        (v[i] - m).exp() / sum
                    }
                })
                .collect();
            close(&got, &want);
        }
    }
    // A NaN spreads through its slice only; a slice of −∞ and a finite value gives 0 and 1.
    let x = CpuStorage::F64(vec![1.0, f64::NAN, 2.0, f64::NEG_INFINITY, 5.0, 0.5]);
    let got = Cpu::softmax(&x, &[2, 3], 1, false).unwrap().to_f64();
    assert!(got[..3].iter().all(|g| g.is_nan()), "{got:?}");
    let log = Cpu::softmax(&x, &[2, 3], 1, true).unwrap().to_f64();
    assert!(log[..3].iter().all(|g| g.is_nan()), "{log:?}");
    assert!(log[3..].iter().all(|g| !g.is_nan()), "{log:?}");
    assert_eq!(got[3], 0.0);
    close(
        &got[4..],
        &[1.0 / (1.0 + (-4.5f64).exp()), 1.0 / (1.0 + 4.5f64.exp())],
    );
}
