//! Matrix products: [`gemm_parallel`] for each product of a batch, plain loops for tiny ones;
//! written into a new buffer ([`matmul`]) or added to one ([`matmul_acc`]).
//!
//! Transposed operands are not copied: `op(A)` is read through swapped row/column strides.

use super::float::Float;
use super::gemm::{Epilogue, Gemm, gemm_parallel};
use super::simd::{Kernel, dispatch};
use crate::{CpuStorage, MatmulSpec};
use adjoint_backend::{BinaryOp, Real, UnaryOp};

/// `C[b] = op(A[b]) · op(B[b])` for every batch `b` (see [`MatmulSpec`]).
pub fn matmul(lhs: &CpuStorage, rhs: &CpuStorage, spec: &MatmulSpec) -> CpuStorage {
    match (lhs, rhs) {
        (CpuStorage::F32(a), CpuStorage::F32(b)) => CpuStorage::F32(product(spec, a, b)),
        (CpuStorage::F64(a), CpuStorage::F64(b)) => CpuStorage::F64(product(spec, a, b)),
        (a, b) => panic!(
            "matmul: dtypes {:?} and {:?} differ or are not float",
            a.dtype(),
            b.dtype()
        ),
    }
}

/// `act(op(A[b]) · op(B[b]) + bias)` for every batch `b`: `bias` (`n` elements) added to every
/// row, then `act` elementwise, as each block of the product is finished (see [`Epilogue`]).
///
/// # Panics
/// If the dtypes differ or are not float, or `bias` does not hold `n` elements.
pub fn matmul_epilogue(
    lhs: &CpuStorage,
    rhs: &CpuStorage,
    spec: &MatmulSpec,
    bias: Option<&CpuStorage>,
    act: Option<UnaryOp>,
) -> CpuStorage {
    /// The product in `T`, if all buffers hold `T`.
    fn typed<T: Float>(
        [lhs, rhs]: [&CpuStorage; 2],
        spec: &MatmulSpec,
        bias: Option<&CpuStorage>,
        act: Option<UnaryOp>,
    ) -> Option<CpuStorage> {
        let (a, b) = (T::slice(lhs)?, T::slice(rhs)?);
        let bias = match bias {
            Some(c) => Some(T::slice(c)?),
            None => None,
        };
        if let Some(bias) = bias {
            assert_eq!(
                bias.len(),
                spec.n,
                "matmul: the bias holds {} elements, not one per column ({})",
                bias.len(),
                spec.n
            );
        }
        let epilogue = Epilogue {
            bias: bias.map(<[T]>::as_ptr),
            act,
            ..Epilogue::NONE
        };
        Some(T::storage(product_with(spec, a, b, epilogue)))
    }
    let operands = [lhs, rhs];
    typed::<f32>(operands, spec, bias, act)
        .or_else(|| typed::<f64>(operands, spec, bias, act))
        .unwrap_or_else(|| {
            panic!(
                "matmul: dtypes (lhs, rhs, bias) {:?} differ or are not float",
                (lhs.dtype(), rhs.dtype(), bias.map(CpuStorage::dtype))
            )
        })
}

/// `grad(y, op(A)·op(B))` elementwise ([`Backend::matmul_grad`](adjoint_backend::Backend::matmul_grad)):
/// the GEMM's epilogue applies the derivative as it writes each block of `C` (the AVX-512
/// tiles a ReLU's in registers, other kernels each block after its sums).
///
/// # Panics
/// If the dtypes differ or are not float, or `y` does not hold the products' elements.
pub fn matmul_grad(
    lhs: &CpuStorage,
    rhs: &CpuStorage,
    spec: &MatmulSpec,
    y: &CpuStorage,
    grad: BinaryOp,
) -> CpuStorage {
    grad_products(lhs, rhs, spec, y, grad, false).0
}

/// [`matmul_grad`] and the sums of its rows
/// ([`Backend::matmul_grad_sums`](adjoint_backend::Backend::matmul_grad_sums)): the GEMM's
/// epilogue adds each row to them as it writes it, each column's rows in order (the product
/// split between threads by columns only).
///
/// # Panics
/// As [`matmul_grad`], or if `spec.batch` is not 1.
pub fn matmul_grad_sums(
    lhs: &CpuStorage,
    rhs: &CpuStorage,
    spec: &MatmulSpec,
    y: &CpuStorage,
    grad: BinaryOp,
) -> (CpuStorage, CpuStorage) {
    assert_eq!(
        spec.batch, 1,
        "matmul_grad_sums: {} products, not one",
        spec.batch
    );
    let (d, sums) = grad_products(lhs, rhs, spec, y, grad, true);
    (
        d,
        sums.expect("grad_products returns the sums when asked for them"),
    )
}

/// The products of [`matmul_grad`], and their row sums when `with_sums`.
fn grad_products(
    lhs: &CpuStorage,
    rhs: &CpuStorage,
    spec: &MatmulSpec,
    y: &CpuStorage,
    grad: BinaryOp,
    with_sums: bool,
) -> (CpuStorage, Option<CpuStorage>) {
    /// The products in `T`, if all buffers hold `T`.
    fn typed<T: Float>(
        [lhs, rhs, y]: [&CpuStorage; 3],
        spec: &MatmulSpec,
        grad: BinaryOp,
        with_sums: bool,
    ) -> Option<(CpuStorage, Option<CpuStorage>)> {
        let (a, b, y) = (T::slice(lhs)?, T::slice(rhs)?, T::slice(y)?);
        let len = spec.batch * spec.m * spec.n;
        assert_eq!(
            y.len(),
            len,
            "matmul_grad: y holds {} elements, the products {len}",
            y.len()
        );
        let mut sums = with_sums.then(|| vec![T::zero(); spec.n]);
        let epilogue = Epilogue {
            grad: Some((grad, y.as_ptr())),
            sums: sums.as_mut().map(|s| s.as_mut_ptr()),
            ..Epilogue::NONE
        };
        let d = T::storage(product_with(spec, a, b, epilogue));
        Some((d, sums.map(T::storage)))
    }
    let operands = [lhs, rhs, y];
    typed::<f32>(operands, spec, grad, with_sums)
        .or_else(|| typed::<f64>(operands, spec, grad, with_sums))
        .unwrap_or_else(|| {
            panic!(
                "matmul_grad: dtypes (lhs, rhs, y) {:?} differ or are not float",
                (lhs.dtype(), rhs.dtype(), y.dtype())
            )
        })
}

type Strides = (isize, isize);

/// Products of at most this many multiply-adds skip the packed GEMM, whose packing of both
/// operands costs more than the product itself for a vector times a small matrix (the RNN
/// step of `benches/steps.rs`: `[1, 32]·[32, 32]`).
const SMALL: usize = 32 * 32 * 32;

/// `C[b] += α·op(A[b])·op(B[b])` for every batch `b`, into `out` (`batch · m · n` elements).
pub fn matmul_acc(
    lhs: &CpuStorage,
    rhs: &CpuStorage,
    spec: &MatmulSpec,
    alpha: f64,
    out: &mut CpuStorage,
) {
    match (lhs, rhs, out) {
        (CpuStorage::F32(a), CpuStorage::F32(b), CpuStorage::F32(c)) => {
            accumulate(spec, a, b, alpha as f32, c)
        }
        (CpuStorage::F64(a), CpuStorage::F64(b), CpuStorage::F64(c)) => {
            accumulate(spec, a, b, alpha, c)
        }
        (a, b, c) => panic!(
            "matmul_acc: dtypes {:?}, {:?} and {:?} differ or are not float",
            a.dtype(),
            b.dtype(),
            c.dtype()
        ),
    }
}

/// The batched product of two buffers of one float type. Neither kernel reads `C` (the plain
/// loops write each element before reading it, the GEMM runs with β = 0), so `C` is not
/// zeroed first (a pass over the output fewer: ~4% of the MLP step was this `memset`).
fn product<T: Gemm>(spec: &MatmulSpec, a: &[T], b: &[T]) -> Vec<T> {
    product_with(spec, a, b, Epilogue::NONE)
}

/// [`product`] with an epilogue.
fn product_with<T: Gemm>(spec: &MatmulSpec, a: &[T], b: &[T], epilogue: Epilogue<T>) -> Vec<T> {
    let len = spec.batch * spec.m * spec.n;
    let mut c = Vec::with_capacity(len);
    let out = c.spare_capacity_mut().as_mut_ptr().cast::<T>();
    products::<T, false>(spec, a, b, out, epilogue);
    // SAFETY: the capacity is `len`, and `products` had a kernel write every one of the
    // `batch · m · n` elements (none when `m` or `n` is 0, and then `len` is 0).
    unsafe { c.set_len(len) };
    c
}

/// The batched product times `alpha` added to `c`: by the GEMM's own factor, or, for the
/// plain loops of small products (which have none), the product and then one pass.
fn accumulate<T: Gemm>(spec: &MatmulSpec, a: &[T], b: &[T], alpha: T, c: &mut [T]) {
    if alpha == T::one() {
        return product_into::<T, true>(spec, a, b, c);
    }
    check_output(spec, c);
    if spec.m * spec.k * spec.n <= SMALL {
        for (c, p) in c.iter_mut().zip(product(spec, a, b)) {
            *c = *c + alpha * p;
        }
    } else {
        large(
            spec,
            a,
            b,
            c.as_mut_ptr(),
            T::one(),
            Epilogue::scaled(alpha),
        );
    }
}

/// Panics unless `c` holds the `batch · m · n` elements of the products.
fn check_output<T>(spec: &MatmulSpec, c: &[T]) {
    assert_eq!(
        c.len(),
        spec.batch * spec.m * spec.n,
        "matmul: the output does not hold batch · m · n elements"
    );
}

/// The batched product written (`ACC = false`) or added (`ACC`) to `c` (`batch · m · n`
/// elements): [`matmul`] and [`matmul_acc`] on slices of buffers.
pub(crate) fn product_into<T: Gemm, const ACC: bool>(
    spec: &MatmulSpec,
    a: &[T],
    b: &[T],
    c: &mut [T],
) {
    check_output(spec, c);
    products::<T, ACC>(spec, a, b, c.as_mut_ptr(), Epilogue::NONE);
}

/// The products written (`ACC = false`: `out` may be uninitialized) or added (`ACC`) to the
/// `batch · m · n` elements at `out`, then `epilogue` (the bias, if any, holds `n` elements).
fn products<T: Gemm, const ACC: bool>(
    spec: &MatmulSpec,
    a: &[T],
    b: &[T],
    out: *mut T,
    epilogue: Epilogue<T>,
) {
    // Two instances of `run`, so that the small products (whose fixed cost is most of their
    // time) do not carry the register pressure of the threaded GEMM's setup.
    if spec.m * spec.k * spec.n <= SMALL {
        run(spec, a, b, out, |m, k, n, a, sa, b, sb, c| {
            // SAFETY: `run` passes pointers into buffers whose lengths were checked against
            // these dimensions and strides; `c` is a row-major `m × n` block of the
            // allocation, which the kernel only writes (or, with `ACC`, reads and writes:
            // then it is initialized).
            unsafe { small_product_dispatch::<T, ACC>(m, k, n, (a, sa), (b, sb), c) }
        });
        let rows = spec.batch * spec.m;
        // SAFETY: the kernels initialized the `rows × n` elements at `out`.
        unsafe { epilogue.apply([rows, spec.n], out, spec.n as isize) };
    } else {
        let beta = if ACC { T::one() } else { T::zero() };
        large(spec, a, b, out, beta, epilogue);
    }
}

/// The products of [`products`] above the plain loops' size, by the threaded GEMM
/// (`C = A·B + β·C`; with β = 0, `C` is written, not read).
#[inline(never)]
fn large<T: Gemm>(
    spec: &MatmulSpec,
    a: &[T],
    b: &[T],
    out: *mut T,
    beta: T,
    epilogue: Epilogue<T>,
) {
    run(spec, a, b, out, |m, k, n, a, (ar, ac), b, (br, bc), c| {
        // SAFETY: `c` is batch `i`'s block of the allocation at `out`, `i·m·n` elements on:
        // its rows are rows `i·m..` of the `batch·m × n` output, and of the epilogue's `y`,
        // laid out as `C` (`run` calls no kernel when `n` is 0).
        let epilogue = unsafe { epilogue.at_row(c.offset_from(out) as usize / n, n as isize) };
        // SAFETY: as for the small products; `gemm_parallel` writes each element of `c` once.
        unsafe {
            gemm_parallel(
                [m, k, n],
                (a, [ar, ac]),
                (b, [br, bc]),
                beta,
                (c, [n as isize, 1]),
                epilogue,
            )
        }
    });
}

/// [`small_product`] compiled for AVX2 with fused multiply-adds when the CPU has them (the
/// crate is built for baseline x86-64, whose 128-bit SSE2 loops run this at half the width),
/// else the baseline build; in the AVX2 build a type's own kernel for `A·Bᵀ` with contiguous
/// rows ([`Gemm::dots_avx2`]) runs if it has one.
///
/// # Safety
/// As [`small_product`].
unsafe fn small_product_dispatch<T: Gemm, const ACC: bool>(
    m: usize,
    k: usize,
    n: usize,
    a: (*const T, Strides),
    b: (*const T, Strides),
    c: *mut T,
) {
    /// The arguments of one small product.
    struct Small<T, const ACC: bool> {
        mkn: [usize; 3],
        a: (*const T, Strides),
        b: (*const T, Strides),
        c: *mut T,
    }
    impl<T: Gemm, const ACC: bool> Kernel for Small<T, ACC> {
        type Output = ();
        #[inline(always)]
        unsafe fn run<const FMA: bool>(self) {
            let Small {
                mkn: [m, k, n],
                a,
                b,
                c,
            } = self;
            let ((ap, (ar, ac)), (bp, (br, bc))) = (a, b);
            // The type's own `A·Bᵀ` kernel writes `C`; an accumulation takes the loops.
            let dots = FMA && !ACC && bc != 1 && ac == 1 && br == 1;
            // SAFETY: the pointers are as `small_product` requires (the caller's contract),
            // and `dots_avx2` runs only in the AVX2 + FMA build.
            unsafe {
                if !(dots && T::dots_avx2([m, k, n], (ap, ar), (bp, bc), c)) {
                    small_product::<T, FMA, ACC>(m, k, n, a, b, c)
                }
            }
        }
    }
    let kernel = Small::<T, ACC> {
        mkn: [m, k, n],
        a,
        b,
        c,
    };
    // SAFETY: the product's pointers are the caller's contract.
    unsafe { dispatch(kernel) }
}

/// Columns of `C` that [`small_product`] sums in a local array (two AVX2 vectors of `f32`,
/// four of `f64`), so that the partial sums stay in registers across the inner dimension.
const BLOCK: usize = 16;

/// Columns of `C` per block of [`small_product`]'s outer product (`k = 1`): four AVX2 vectors
/// of `f32`.
const OUTER: usize = 32;

/// `acc + x·y`, fused (one rounding) when `FMA`: only in code compiled with the FMA feature,
/// where `mul_add` is one instruction rather than a libm call.
#[inline(always)]
fn madd<T: Real, const FMA: bool>(acc: T, x: T, y: T) -> T {
    if FMA { x.mul_add(y, acc) } else { acc + x * y }
}

/// `C = A·B` (or `C += A·B` with `ACC`) by plain loops, in the order that reads `B` (or, for a
/// transposed `B`, both operands) contiguously, so that the inner loop vectorizes. Without
/// `ACC` every element of `C` is written before it is read (`C` may start uninitialized).
///
/// # Safety
/// As [`Gemm::gemm`]: the pointers cover `m × k`, `k × n` and `m × n` elements under the
/// given strides, `C` row-major with row stride `n`.
#[inline(always)]
unsafe fn small_product<T: Real, const FMA: bool, const ACC: bool>(
    m: usize,
    k: usize,
    n: usize,
    (a, (ar, ac)): (*const T, Strides),
    (b, (br, bc)): (*const T, Strides),
    c: *mut T,
) {
    // SAFETY: every offset below is `i·ar + l·ac < extent of A` (likewise B, C) for
    // `i < m`, `l < k`, `j < n`, which the caller guarantees.
    unsafe {
        let at = |i: usize, l: usize| *a.offset(i as isize * ar + l as isize * ac);
        // Writes (or adds) one element of `C`.
        let put = |p: *mut T, v: T| {
            if ACC {
                *p = *p + v;
            } else {
                p.write(v);
            }
        };
        if k == 1 && bc == 1 {
            // An outer product, C[i, :] = A[i, 0] · B[0, :] (the weight tangent of a batch of
            // one row), by blocks of `OUTER` columns: a block of B's row stays in registers
            // while it is scaled into that block of every row of C.
            let blocked = n - n % OUTER;
            for j0 in (0..blocked).step_by(OUTER) {
                let y = b.add(j0).cast::<[T; OUTER]>().read_unaligned();
                for i in 0..m {
                    let x = at(i, 0);
                    let out = c.add(i * n + j0).cast::<[T; OUTER]>();
                    let mut v = if ACC {
                        out.read_unaligned()
                    } else {
                        [T::zero(); OUTER]
                    };
                    for (v, &y) in v.iter_mut().zip(&y) {
                        *v = if ACC { *v + x * y } else { x * y };
                    }
                    out.write_unaligned(v);
                }
            }
            // The last `n mod OUTER` columns.
            for i in (0..m).filter(|_| blocked < n) {
                let x = at(i, 0);
                for j in blocked..n {
                    put(c.add(i * n + j), x * *b.add(j));
                }
            }
        } else if bc == 1 {
            // C[i, :] = Σₗ A[i, l] · B[l, :], rows of B contiguous. Blocks of `BLOCK` columns
            // are summed over l in local arrays (registers), then written once: the even and
            // the odd l apart, two independent chains of multiply-adds for the CPU to overlap
            // (the RNN step's `[1, 32]·[32, 32]` is otherwise a chain of 32 dependent
            // multiply-adds per vector: the RNN gradient took 49.4 µs with one chain, 45.0
            // with two, and 45.7 with four sums in a loop over an array of them).
            let blocked = n - n % BLOCK;
            let row = |l: usize, j0: usize| {
                std::slice::from_raw_parts(b.offset(l as isize * br).add(j0), BLOCK)
            };
            for i in 0..m {
                for j0 in (0..blocked).step_by(BLOCK) {
                    let (mut acc, mut odd) = ([T::zero(); BLOCK], [T::zero(); BLOCK]);
                    for l in (0..k - k % 2).step_by(2) {
                        let (x, y) = (at(i, l), at(i, l + 1));
                        for (((s, t), &u), &v) in acc
                            .iter_mut()
                            .zip(odd.iter_mut())
                            .zip(row(l, j0))
                            .zip(row(l + 1, j0))
                        {
                            *s = madd::<T, FMA>(*s, x, u);
                            *t = madd::<T, FMA>(*t, y, v);
                        }
                    }
                    if k % 2 == 1 {
                        let x = at(i, k - 1);
                        for (s, &u) in acc.iter_mut().zip(row(k - 1, j0)) {
                            *s = madd::<T, FMA>(*s, x, u);
                        }
                    }
                    for (s, &t) in acc.iter_mut().zip(&odd) {
                        *s = *s + t;
                    }
                    if ACC {
                        for (j, &v) in acc.iter().enumerate() {
                            put(c.add(i * n + j0 + j), v);
                        }
                    } else {
                        std::ptr::copy_nonoverlapping(acc.as_ptr(), c.add(i * n + j0), BLOCK);
                    }
                }
            }
            // The last `n mod BLOCK` columns: the first term is written, the others added.
            let tail = n - blocked;
            for i in (0..m).filter(|_| tail > 0) {
                let first = c.add(i * n + blocked);
                if k == 0 {
                    for j in 0..tail {
                        put(first.add(j), T::zero());
                    }
                } else {
                    let (x, b_row) = (at(i, 0), b.add(blocked));
                    for j in 0..tail {
                        put(first.add(j), x * *b_row.add(j));
                    }
                }
                let row = std::slice::from_raw_parts_mut(first, tail);
                for l in 1..k {
                    let x = at(i, l);
                    let b_row =
                        std::slice::from_raw_parts(b.offset(l as isize * br).add(blocked), tail);
                    for (out, &y) in row.iter_mut().zip(b_row) {
                        *out = madd::<T, FMA>(*out, x, y);
                    }
                }
            }
        } else if ac == 1 && br == 1 {
            // C[i, j] = A[i, :]·Bᵀ[j, :], both rows contiguous: dot products.
            for i in 0..m {
                let a_row = std::slice::from_raw_parts(a.offset(i as isize * ar), k);
                for j in 0..n {
                    let b_col = std::slice::from_raw_parts(b.offset(j as isize * bc), k);
                    put(c.add(i * n + j), dot::<T, FMA>(a_row, b_col));
                }
            }
        } else {
            for i in 0..m {
                for j in 0..n {
                    let mut sum = T::zero();
                    for l in 0..k {
                        sum = madd::<T, FMA>(
                            sum,
                            at(i, l),
                            *b.offset(l as isize * br + j as isize * bc),
                        );
                    }
                    put(c.add(i * n + j), sum);
                }
            }
        }
    }
}

/// `Σ xᵢ·yᵢ` in eight independent partial sums, so that the loop vectorizes (a single running
/// sum is a dependency chain the compiler may not reorder).
#[inline(always)]
fn dot<T: Real, const FMA: bool>(x: &[T], y: &[T]) -> T {
    let mut lanes = [T::zero(); 8];
    let (xc, yc) = (x.chunks_exact(8), y.chunks_exact(8));
    let tail: T = xc
        .remainder()
        .iter()
        .zip(yc.remainder())
        .fold(T::zero(), |s, (&a, &b)| madd::<T, FMA>(s, a, b));
    for (xs, ys) in xc.zip(yc) {
        for ((lane, &a), &b) in lanes.iter_mut().zip(xs).zip(ys) {
            *lane = madd::<T, FMA>(*lane, a, b);
        }
    }
    lanes.iter().fold(tail, |s, &l| s + l)
}

/// Calls `kernel` once per batch with raw pointers and (row, column) strides; `c` addresses
/// `batch · m · n` elements, batch after batch.
#[allow(clippy::type_complexity)]
fn run<T>(
    spec: &MatmulSpec,
    a: &[T],
    b: &[T],
    c: *mut T,
    kernel: impl Fn(usize, usize, usize, *const T, Strides, *const T, Strides, *mut T),
) {
    let MatmulSpec { batch, m, k, n, .. } = *spec;
    let a_strides = if spec.lhs_transposed {
        (1, m as isize)
    } else {
        (k as isize, 1)
    };
    let b_strides = if spec.rhs_transposed {
        (1, k as isize)
    } else {
        (n as isize, 1)
    };
    if batch == 0 || m == 0 || n == 0 {
        // No output element (an empty batch axis broadcasts to none: the operands need not
        // hold even one matrix).
        return;
    }
    let last = batch - 1;
    assert!(
        a.len() >= last * spec.lhs_batch_stride + m * k,
        "matmul: lhs buffer too short"
    );
    assert!(
        b.len() >= last * spec.rhs_batch_stride + k * n,
        "matmul: rhs buffer too short"
    );
    for i in 0..batch {
        let a_ptr = a[i * spec.lhs_batch_stride..].as_ptr();
        let b_ptr = b[i * spec.rhs_batch_stride..].as_ptr();
        // In bounds: the caller's `c` holds `batch · m · n` elements.
        let c_ptr = c.wrapping_add(i * m * n);
        kernel(m, k, n, a_ptr, a_strides, b_ptr, b_strides, c_ptr);
    }
}
