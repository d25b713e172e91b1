//! The backend's one GEMM: on a single thread, [`super::gemm_avx512`]'s kernel for `f32` on
//! CPUs with AVX-512F and `matrixmultiply`'s kernels otherwise; and a split of one product
//! across rayon's threads.
//!
//! All parallelism of the CPU backend is rayon's, in one pool of one thread per core.
//! `matrixmultiply`'s own `threading` feature would start a second pool: on two cores its
//! worker and rayon's (spinning between the parallel passes of a step) took turns on the same
//! cores, and the MNIST CNN step spent about a quarter of its samples in `sched_yield` and the
//! scheduler. So products run serially where the caller is already parallel (the convolution,
//! one image per task), and [`gemm_parallel`] splits a lone product itself.

use adjoint_backend::Real;

/// A matrix operand: its first element and its (row, column) strides in elements.
pub(crate) type Operand<T> = (*const T, [isize; 2]);
/// A matrix result: its first element and its (row, column) strides in elements.
pub(crate) type Output<T> = (*mut T, [isize; 2]);

/// A float type with a `matrixmultiply` kernel.
pub(crate) trait Gemm: Real + Send + Sync {
    /// `C = A·B + β·C` on the calling thread, `A` being `m × k`, `B` `k × n`, `C` `m × n`.
    ///
    /// # Safety
    /// The pointers must address matrices of these sizes under their strides, and `C` must not
    /// overlap `A` or `B`.
    unsafe fn gemm(
        mkn: [usize; 3],
        a: Operand<Self>,
        b: Operand<Self>,
        beta: Self,
        c: Output<Self>,
    );

    /// `C = A·Bᵀ` by a kernel of this type for CPUs with AVX2 and FMA, when `A` (`m × k`,
    /// row stride `ar`) and `B` (`n × k`, row stride `bc`) have contiguous rows; returns
    /// whether it ran (`false`: no such kernel, use the generic loops).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA, and the pointers are as for [`Gemm::gemm`].
    unsafe fn dots_avx2(
        _mkn: [usize; 3],
        _a: (*const Self, isize),
        _b: (*const Self, isize),
        _c: *mut Self,
    ) -> bool {
        false
    }
}

/// No kernel of its own for this type (or this CPU architecture): `matrixmultiply` runs
/// every product.
unsafe fn none<T>(_: [usize; 3], _: Operand<T>, _: Operand<T>, _: T, _: Output<T>) -> bool {
    false
}

#[cfg(target_arch = "x86_64")]
use super::gemm_avx512::sgemm as own_f32;
#[cfg(not(target_arch = "x86_64"))]
use none as own_f32;

macro_rules! gemm_impl {
    ($t:ty, $own:path, $kernel:path $(, $extra:item)*) => {
        impl Gemm for $t {
            $($extra)*

            #[inline]
            unsafe fn gemm(
                [m, k, n]: [usize; 3],
                (a, [ar, ac]): Operand<Self>,
                (b, [br, bc]): Operand<Self>,
                beta: Self,
                (c, [cr, cc]): Output<Self>,
            ) {
                // SAFETY: forwarded from the caller, whose contract is both kernels'.
                unsafe {
                    if !$own([m, k, n], (a, [ar, ac]), (b, [br, bc]), beta, (c, [cr, cc])) {
                        $kernel(m, k, n, 1.0, a, ar, ac, b, br, bc, beta, c, cr, cc)
                    }
                }
            }
        }
    };
}
gemm_impl!(
    f32,
    own_f32,
    matrixmultiply::sgemm,
    #[inline]
    unsafe fn dots_avx2(
        [m, k, n]: [usize; 3],
        (a, ar): (*const Self, isize),
        (b, bc): (*const Self, isize),
        c: *mut Self,
    ) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: forwarded from the caller, whose contract is the kernel's.
            unsafe { super::dots::dots_f32(m, k, n, a, ar, b, bc, c) };
            true
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (m, k, n, a, ar, b, bc, c);
            false
        }
    }
);
gemm_impl!(f64, none, matrixmultiply::dgemm);

/// Products of fewer multiply-adds than this run on one thread (a round number, not tuned:
/// handing a product to a second thread has a fixed cost that a small one does not repay).
const PARALLEL_MIN: usize = 1 << 18;

/// Block boundaries of a split are multiples of this, so that every block but the last keeps
/// the kernels' register tiles full (16 × 16 in `matrixmultiply`, 8 × 32 in
/// [`super::gemm_avx512`]).
const ALIGN: usize = 32;

/// Raw pointers moved into rayon tasks.
#[derive(Clone, Copy)]
struct Shared<T>(T);
// SAFETY: the tasks of `gemm_parallel` read `A` and `B` and write disjoint blocks of `C`.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Shared<T> {}

/// `C = A·B + β·C` as [`Gemm::gemm`], split into one block of rows (or of columns, when `C` is
/// wider than tall) per rayon thread. Splitting the longer side duplicates the packing of the
/// smaller operand only.
///
/// # Safety
/// As [`Gemm::gemm`].
pub(crate) unsafe fn gemm_parallel<T: Gemm>(
    [m, k, n]: [usize; 3],
    a: Operand<T>,
    b: Operand<T>,
    beta: T,
    c: Output<T>,
) {
    let long = m.max(n);
    let parts = rayon::current_num_threads()
        .min(long / ALIGN)
        .min(m * k * n / PARALLEL_MIN);
    if parts <= 1 {
        // SAFETY: the caller's contract.
        return unsafe { T::gemm([m, k, n], a, b, beta, c) };
    }
    let block = long.div_ceil(parts).next_multiple_of(ALIGN);
    let (a, b, c) = (Shared(a), Shared(b), Shared(c));
    rayon::scope(|scope| {
        for start in (0..long).step_by(block) {
            let len = block.min(long - start);
            scope.spawn(move |_| {
                let (Shared((ap, [ar, ac])), Shared((bp, [br, bc])), Shared((cp, [cr, cc]))) =
                    (a, b, c);
                let off = start as isize;
                // SAFETY: rows (columns) `start..start + len` of `A` (of `B`) and of `C` lie
                // inside the matrices the caller described; blocks of `C` are disjoint.
                unsafe {
                    if m >= n {
                        T::gemm(
                            [len, k, n],
                            (ap.offset(off * ar), [ar, ac]),
                            (bp, [br, bc]),
                            beta,
                            (cp.offset(off * cr), [cr, cc]),
                        );
                    } else {
                        T::gemm(
                            [m, k, len],
                            (ap, [ar, ac]),
                            (bp.offset(off * bc), [br, bc]),
                            beta,
                            (cp.offset(off * cc), [cr, cc]),
                        );
                    }
                }
            });
        }
    });
}
