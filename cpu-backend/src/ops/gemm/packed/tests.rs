//! The kernel against `f64` sums for every layout and edge, its chunks and epilogues against
//! the product in one piece and the separate ops, and the products it declines.

use super::super::product::{Epilogue, Operand, Output};
use super::isa::{Avx2, Avx512, Isa};
use super::sgemm::{chunks, sgemm};
use adjoint_backend::UnaryOp;

/// Runs `$test::<S>()` for every extension `S` this CPU has, and says which it skipped.
macro_rules! for_each_isa {
    ($test:ident) => {{
        let mut ran = 0;
        for (has, name, test) in [
            (Avx512::available(), Avx512::NAME, $test::<Avx512> as fn()),
            (Avx2::available(), Avx2::NAME, $test::<Avx2> as fn()),
        ] {
            if has {
                test();
                ran += 1;
            } else {
                eprintln!("skipped the {name} kernel: this CPU does not have it");
            }
        }
        if ran == 0 {
            eprintln!("skipped: this CPU has neither extension, the kernel never runs here");
        }
    }};
}

/// Entries in [-1, 1) from a fixed sequence.
fn values(len: usize, seed: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i * 7919 + seed * 104_729) % 2001) as f32 / 1000.0 - 1.0)
        .collect()
}

/// How `A` lies: row-major with a row stride of `2k` (packed by transposes), transposed
/// with a column stride of `2m` (packed by copies), or every other element of every row
/// (neither stride 1: read in place).
#[derive(Clone, Copy, Debug)]
enum ALayout {
    Rows,
    Transposed,
    Strided,
}

/// How a case runs: β, the factor α (`None`: 1), whether with the bias, the activation.
type Run = (f32, Option<f32>, bool, Option<UnaryOp>);

/// A product's operands under the given layouts: `A` as [`ALayout`] says, in a wider
/// matrix, `B` row-major or transposed, `C` with a row stride of `n + 3` and known values
/// (which β = 0 must ignore and no store may touch past column `n`).
struct Case {
    mkn: [usize; 3],
    a: (Vec<f32>, [isize; 2]),
    b: (Vec<f32>, [isize; 2]),
    c_row: usize,
    start: Vec<f32>,
    bias: Vec<f32>,
}

impl Case {
    fn new([m, k, n]: [usize; 3], a_layout: ALayout, b_transposed: bool) -> Case {
        let (a_len, a_strides) = match a_layout {
            ALayout::Rows => (m * k * 2, [2 * k as isize, 1]),
            ALayout::Transposed => (k * m * 2, [1, 2 * m as isize]),
            ALayout::Strided => (m * k * 2, [2 * k as isize, 2]),
        };
        let (b_len, b_strides) = if b_transposed {
            (n * k, [1, k as isize])
        } else {
            (k * n, [n as isize, 1])
        };
        let c_row = n + 3;
        Case {
            mkn: [m, k, n],
            a: (values(a_len.max(1), 1), a_strides),
            b: (values(b_len.max(1), 2), b_strides),
            c_row,
            start: values(m * c_row, 3),
            bias: {
                // A NaN, where ReLU's kernel gives 0 (as `max(z, +0)` does, not
                // `max(+0, z)`).
                let mut bias = values(n.max(2), 4);
                bias[1] = f32::NAN;
                bias
            },
        }
    }

    /// `C` after `kernel` ran on this case's operands with `beta` and the epilogue (the
    /// factor `scale`, the bias, if any, this case's); `kernel` says whether it ran.
    fn with(
        &self,
        (beta, scale, bias, act): Run,
        kernel: impl FnOnce(Operand<f32>, Operand<f32>, Output<f32>, Epilogue<f32>) -> bool,
    ) -> Vec<f32> {
        let mut c = self.start.clone();
        let epilogue = Epilogue {
            scale,
            bias: bias.then_some(self.bias.as_ptr()),
            act,
            grad: None,
            sums: None,
        };
        let ran = kernel(
            (self.a.0.as_ptr(), self.a.1),
            (self.b.0.as_ptr(), self.b.1),
            (c.as_mut_ptr(), [self.c_row as isize, 1]),
            epilogue,
        );
        assert!(ran, "the kernel declined a product it handles (β = {beta})");
        c
    }

    /// `C` after `S`'s kernel ran with `beta` and `epilogue` on the whole product.
    fn run<S: Isa>(&self, run @ (beta, ..): Run) -> Vec<f32> {
        self.with(run, |a, b, c, epilogue| {
            let mut whole = Some(0..self.mkn[0]);
            let mut next = || whole.take();
            // SAFETY: the buffers hold the matrices under these strides and the bias `n`
            // elements; `C` is separate; the CPU has `S` (`for_each_isa`).
            unsafe { chunks::<S>(self.mkn, a, b, beta, c, epilogue, (true, false), &mut next) }
        })
    }

    /// `C` after `S`'s kernel ran over chunks of `len` rows (`rows`) or columns, handed out
    /// in the order `order` gives the chunk indices, packing what they share once.
    fn run_chunks<S: Isa>(
        &self,
        run @ (beta, ..): Run,
        (rows, len): (bool, usize),
        order: impl Fn(usize) -> Vec<usize>,
    ) -> Vec<f32> {
        let [m, _, n] = self.mkn;
        let long = if rows { m } else { n };
        let mut handed = order(long.div_ceil(len))
            .into_iter()
            .map(|i| i * len..long.min((i + 1) * len));
        self.with(run, |a, b, c, epilogue| {
            let mut next = || handed.next();
            // SAFETY: as in `run`; the chunks are disjoint ranges of `C`'s rows or
            // columns.
            unsafe { chunks::<S>(self.mkn, a, b, beta, c, epilogue, (rows, true), &mut next) }
        })
    }

    /// `β·C + α·A·B` at `(i, j)`, summed in `f64`.
    fn want(&self, beta: f32, alpha: f32, i: usize, j: usize) -> f64 {
        let ([ar, ac], [br, bc]) = (self.a.1, self.b.1);
        let mut sum = 0.0;
        for p in 0..self.mkn[1] {
            let x = self.a.0[(i as isize * ar + p as isize * ac) as usize] as f64;
            let y = self.b.0[(p as isize * br + j as isize * bc) as usize] as f64;
            sum += x * y;
        }
        beta as f64 * self.start[i * self.c_row + j] as f64 + alpha as f64 * sum
    }
}

#[test]
fn products_match_f64_sums_for_every_layout_and_edge() {
    for_each_isa!(products_match_f64_sums);
}

fn products_match_f64_sums<S: Isa>() {
    // Rows around the tile (8 on AVX-512, 6 on AVX2) and the block (64, 72) sizes, columns
    // around the vector (16, 8: one-vector tiles below it), tile (32, 16) and packed-block
    // (512) sizes, a packed `B` of one narrow panel (10 columns), inner sizes around the
    // transposes' 16 and 8 and the block's 256 (and 513, three equal blocks), and k = 0.
    let shapes = [
        [1, 1, 1],
        [7, 5, 15],
        [8, 16, 16],
        [9, 17, 17],
        [65, 257, 33],
        [64, 0, 31],
        [13, 300, 530],
        [70, 32, 64],
        [33, 47, 97],
        [16, 513, 65],
        [72, 40, 10],
        [5, 7, 9],
        [6, 8, 8],
        [73, 9, 23],
    ];
    let layouts = [ALayout::Rows, ALayout::Transposed, ALayout::Strided];
    for mkn @ [m, k, n] in shapes {
        for (a_t, b_t) in layouts.iter().flat_map(|&a| [(a, false), (a, true)]) {
            let case = Case::new(mkn, a_t, b_t);
            for beta in [0.0, 1.0] {
                // The product, scaled, and with the bias and a ReLU applied in the tiles.
                let ends = [
                    (None, false, None),
                    (Some(-0.75), false, None),
                    (None, true, Some(UnaryOp::Relu)),
                ];
                for (scale, bias, act) in ends {
                    let c = case.run::<S>((beta, scale, bias, act));
                    for i in 0..m {
                        for j in 0..case.c_row {
                            let got = c[i * case.c_row + j] as f64;
                            if j >= n {
                                let was = case.start[i * case.c_row + j] as f64;
                                assert_eq!(got, was, "wrote outside C at ({i}, {j})");
                                continue;
                            }
                            let mut want = case.want(beta, scale.unwrap_or(1.0), i, j);
                            if bias {
                                want = (want + case.bias[j] as f64).max(0.0);
                            }
                            let tol = 1e-6 * (k as f64 + 2.0);
                            assert!(
                                (got - want).abs() <= tol,
                                "{} {mkn:?} a={a_t:?} b_t={b_t} β={beta} α={scale:?} \
                                 bias={bias}: C[{i}, {j}] = {got}, want {want}",
                                S::NAME
                            );
                        }
                    }
                }
            }
        }
    }
}

/// A product run in chunks of rows or of columns, handed out in any order, with the
/// operand they share packed once (by the first chunk, for `B`), gives the bits of the
/// product in one piece, for every layout, factor and epilogue.
#[test]
fn chunks_give_the_bits_of_one_product() {
    for_each_isa!(chunks_give_the_bits);
}

fn chunks_give_the_bits<S: Isa>() {
    let orders: [fn(usize) -> Vec<usize>; 2] = [
        |count| (0..count).collect(),
        // The last first, then the others from the middle on: the chunk that packs `B`
        // is not the first one in `C`.
        |count| {
            let mut order: Vec<usize> = (0..count).rev().collect();
            order.rotate_left(count / 2);
            order
        },
    ];
    let layouts = [ALayout::Rows, ALayout::Transposed, ALayout::Strided];
    // Sizes around the tiles (8 × 32), blocks (64 rows, 256 inner) and a ragged last
    // chunk; inner sizes of one block and of three; a row-major `B` of 10 columns, read
    // in place by every chunk of rows.
    for mkn @ [m, k, n] in [
        [130, 40, 97],
        [70, 513, 65],
        [200, 300, 33],
        [9, 17, 530],
        [130, 300, 10],
    ] {
        for (a_t, b_t) in layouts.iter().flat_map(|&a| [(a, false), (a, true)]) {
            let case = Case::new(mkn, a_t, b_t);
            let runs: [Run; 4] = [
                (0.0, None, false, None),
                (1.0, Some(-0.75), false, None),
                (1.0, None, true, Some(UnaryOp::Relu)),
                (0.0, None, true, Some(UnaryOp::Tanh)),
            ];
            for run @ (beta, ..) in runs {
                let whole = case.run::<S>(run);
                for (rows, len) in [(true, 32), (true, 64), (false, 32), (false, 96)] {
                    if (if rows { m } else { n }) <= len {
                        continue;
                    }
                    for order in orders {
                        let got = case.run_chunks::<S>(run, (rows, len), order);
                        let bits = |c: &[f32]| c.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(
                            bits(&got),
                            bits(&whole),
                            "{} {mkn:?} a={a_t:?} b_t={b_t} β={beta} rows={rows} len={len} \
                             k={k}",
                            S::NAME
                        );
                    }
                }
            }
        }
    }
}

/// The epilogue gives the bits of the product followed by the elementwise ops (the
/// contract of `Backend::matmul_epilogue`): the in-tile bias and ReLU, and the bias in the
/// tiles followed by another activation. (Another activation without a bias runs
/// `Epilogue::apply` after the product, this test's reference itself; `tests.rs` checks it
/// against the backend's separate ops.)
#[test]
fn epilogues_give_the_bits_of_the_separate_ops() {
    for_each_isa!(epilogues_give_the_bits);
}

fn epilogues_give_the_bits<S: Isa>() {
    let (relu, tanh, sigmoid) = (
        Some(UnaryOp::Relu),
        Some(UnaryOp::Tanh),
        Some(UnaryOp::Sigmoid),
    );
    let epilogues = [
        (false, None),
        (true, None),
        (false, relu),
        (true, relu),
        (true, tanh),
        (true, sigmoid),
    ];
    for mkn @ [m, _, n] in [[9, 17, 33], [64, 0, 31], [13, 300, 530]] {
        for (a_t, b_t) in [(ALayout::Rows, false), (ALayout::Transposed, true)] {
            let case = Case::new(mkn, a_t, b_t);
            for beta in [0.0, 1.0] {
                let product = case.run::<S>((beta, None, false, None));
                for (bias, act) in epilogues {
                    let mut want = product.clone();
                    let separate = Epilogue {
                        bias: bias.then_some(case.bias.as_ptr()),
                        act,
                        ..Epilogue::NONE
                    };
                    // SAFETY: `want` holds `m` initialized rows of `c_row ≥ n`.
                    unsafe { separate.apply([m, n], want.as_mut_ptr(), case.c_row as isize) };
                    let got = case.run::<S>((beta, None, bias, act));
                    let bits = |c: &[f32]| c.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(
                        bits(&got),
                        bits(&want),
                        "{} {mkn:?} a={a_t:?} b_t={b_t} β={beta} bias={bias} act={act:?}",
                        S::NAME
                    );
                }
            }
        }
    }
}

#[test]
fn other_layouts_and_factors_are_declined() {
    let (a, b, mut c) = ([1.0f32; 4], [1.0f32; 4], [0.0f32; 4]);
    let case = |b_strides: [isize; 2], beta: f32, c_strides: [isize; 2], c: &mut [f32]| {
        // SAFETY: 2 × 2 matrices in 4-element buffers under each of these strides.
        unsafe {
            sgemm(
                [2, 2, 2],
                (a.as_ptr(), [2, 1]),
                (b.as_ptr(), b_strides),
                beta,
                (c.as_mut_ptr(), c_strides),
                Epilogue::NONE,
            )
        }
    };
    assert!(!case([2, 1], 0.5, [2, 1], &mut c), "β = 0.5");
    assert!(!case([2, 1], 0.0, [1, 2], &mut c), "column-major C");
    assert!(!case([4, 2], 0.0, [2, 1], &mut c), "strided B");
    assert_eq!(c, [0.0; 4], "a declined product wrote C");
}
