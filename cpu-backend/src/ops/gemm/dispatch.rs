//! The [`Gemm`] trait, and which kernel runs each float type's products on this CPU: for
//! `f32`, the own kernel ([`super::packed`], for AVX-512F or AVX2 and FMA, detected at run
//! time) and the AVX2 dot products ([`super::avx2`]), else the `gemm` crate
//! ([`super::generic`]); for `f64`, the `gemm` crate.

use super::super::math::Elementary;
use super::generic::{library, no_chunks, no_sharing, none};
use super::product::{Epilogue, Operand, Output, Wrap};
use adjoint_backend::Real;
use std::ops::Range;

/// A float type with a GEMM kernel (the `gemm` crate's, or one of its own).
pub(crate) trait Gemm: Real + Send + Sync + Elementary {
    /// `C = act(A·B + β·C + bias)` on the calling thread, `A` being `m × k`, `B` `k × n`, `C`
    /// `m × n`: the product, then `epilogue` (which a type's own kernel applies as it writes
    /// `C`).
    ///
    /// # Safety
    /// The pointers must address matrices of these sizes under their strides, `C` must not
    /// overlap `A` or `B`, and the epilogue's bias must address `n` elements.
    unsafe fn gemm_epilogue(
        mkn: [usize; 3],
        a: Operand<Self>,
        b: Operand<Self>,
        beta: Self,
        c: Output<Self>,
        epilogue: Epilogue<Self>,
    );

    /// `C = A·B + β·C`: [`Gemm::gemm_epilogue`] with no epilogue.
    ///
    /// # Safety
    /// As [`Gemm::gemm_epilogue`].
    #[inline]
    unsafe fn gemm(
        mkn: [usize; 3],
        a: Operand<Self>,
        b: Operand<Self>,
        beta: Self,
        c: Output<Self>,
    ) {
        // SAFETY: the caller's contract.
        unsafe { Self::gemm_epilogue(mkn, a, b, beta, c, Epilogue::NONE) }
    }

    /// `C = act(A·B + β·C + bias)` over the chunks of rows (`rows`) or of columns of `C` that
    /// `next` hands out, on this thread, until it hands out none: one
    /// [`Gemm::gemm_epilogue`] per chunk, or a type's own loop that packs what the chunks
    /// share (all of `A` for chunks of columns, all of `B` for chunks of rows) once.
    ///
    /// # Safety
    /// As [`Gemm::gemm_epilogue`]; every chunk lies inside `C`'s rows (or columns).
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_chunks(
        mkn: [usize; 3],
        a: Operand<Self>,
        b: Operand<Self>,
        beta: Self,
        c: Output<Self>,
        epilogue: Epilogue<Self>,
        rows: bool,
        next: &mut dyn FnMut() -> Option<Range<usize>>,
    );

    /// Whether [`Gemm::gemm_chunks`] packs the chunks' shared operand once for this product
    /// split into chunks of rows (`rows`) or of columns on this CPU, so that
    /// [`gemm_parallel`](super::gemm_parallel) can hand it out in chunks finer than one per
    /// thread without packing it again for each.
    fn shares_packing(
        mkn: [usize; 3],
        a: Operand<Self>,
        b: Operand<Self>,
        beta: Self,
        c: Output<Self>,
        rows: bool,
    ) -> bool;

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

    /// `C[cₜ..] += A[aₜ..]·B` for each pair of element offsets `(aₜ, cₜ)` of `at`, on this
    /// thread, by a kernel of this type that packs `B` once for all of them and reads each
    /// `A[aₜ..]` (`m × k`, row-major, rows `ar` apart) in place with its runs broken by
    /// `wrap`; each `C[cₜ..]` is `m × n` with rows `cr` apart and contiguous columns. Returns
    /// whether it ran (`false`: no such kernel).
    ///
    /// # Safety
    /// As [`Gemm::gemm`] for every pair; no pair's `C` overlaps another's or an operand.
    unsafe fn gemm_shared_b(
        _mkn: [usize; 3],
        _a: (*const Self, isize, Wrap),
        _b: Operand<Self>,
        _c: (*mut Self, isize),
        _at: &[(usize, usize)],
    ) -> bool {
        false
    }
}

/// [`Gemm::gemm_chunks`] by one [`Gemm::gemm_epilogue`] per chunk.
///
/// # Safety
/// As [`Gemm::gemm_chunks`].
#[allow(clippy::too_many_arguments)]
unsafe fn chunk_by_chunk<T: Gemm>(
    [m, k, n]: [usize; 3],
    (ap, [ar, ac]): Operand<T>,
    (bp, [br, bc]): Operand<T>,
    beta: T,
    (cp, [cr, cc]): Output<T>,
    epilogue: Epilogue<T>,
    rows: bool,
    next: &mut dyn FnMut() -> Option<Range<usize>>,
) {
    while let Some(chunk) = next() {
        let (start, len) = (chunk.start as isize, chunk.len());
        // SAFETY: the chunk's rows (columns) of `A` (of `B`), of `C` and of the bias lie
        // inside what the caller described.
        unsafe {
            if rows {
                T::gemm_epilogue(
                    [len, k, n],
                    (ap.offset(start * ar), [ar, ac]),
                    (bp, [br, bc]),
                    beta,
                    (cp.offset(start * cr), [cr, cc]),
                    epilogue.at_row(chunk.start, cr),
                );
            } else {
                T::gemm_epilogue(
                    [m, k, len],
                    (ap, [ar, ac]),
                    (bp.offset(start * bc), [br, bc]),
                    beta,
                    (cp.offset(start * cc), [cr, cc]),
                    epilogue.at_column(chunk.start),
                );
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
use super::packed::sgemm as own_f32;
#[cfg(not(target_arch = "x86_64"))]
use none as own_f32;

#[cfg(target_arch = "x86_64")]
use super::packed::{sgemm_chunks as own_f32_chunks, shares_packing as own_f32_shares};
#[cfg(not(target_arch = "x86_64"))]
use {no_chunks as own_f32_chunks, no_sharing as own_f32_shares};

macro_rules! gemm_impl {
    ($t:ty, $own:path, $own_chunks:path, $shares:path $(, $extra:item)*) => {
        impl Gemm for $t {
            $($extra)*

            #[allow(clippy::too_many_arguments)]
            unsafe fn gemm_chunks(
                mkn: [usize; 3],
                a: Operand<Self>,
                b: Operand<Self>,
                beta: Self,
                c: Output<Self>,
                epilogue: Epilogue<Self>,
                rows: bool,
                next: &mut dyn FnMut() -> Option<Range<usize>>,
            ) {
                // SAFETY: forwarded from the caller, whose contract is both loops'.
                unsafe {
                    if !$own_chunks(mkn, a, b, beta, c, epilogue, rows, next) {
                        chunk_by_chunk(mkn, a, b, beta, c, epilogue, rows, next);
                    }
                }
            }

            fn shares_packing(
                mkn: [usize; 3],
                a: Operand<Self>,
                b: Operand<Self>,
                beta: Self,
                c: Output<Self>,
                rows: bool,
            ) -> bool {
                $shares(mkn, a, b, beta, c, rows)
            }

            #[inline]
            unsafe fn gemm_epilogue(
                [m, k, n]: [usize; 3],
                (a, [ar, ac]): Operand<Self>,
                (b, [br, bc]): Operand<Self>,
                beta: Self,
                (c, [cr, cc]): Output<Self>,
                epilogue: Epilogue<Self>,
            ) {
                let (a, b, c) = ((a, [ar, ac]), (b, [br, bc]), (c, [cr, cc]));
                // SAFETY: forwarded from the caller, whose contract is both kernels' and the
                // epilogue's (the kernel initializes `C` first).
                unsafe {
                    if !$own([m, k, n], a, b, beta, c, epilogue) {
                        let alpha = epilogue.scale.unwrap_or(1.0);
                        library([m, k, n], a, b, (alpha, beta), c);
                        epilogue.apply([m, n], c.0, cr);
                    }
                }
            }
        }
    };
}
gemm_impl!(
    f32,
    own_f32,
    own_f32_chunks,
    own_f32_shares,
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
            unsafe { super::avx2::dots_f32(m, k, n, a, ar, b, bc, c) };
            true
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (m, k, n, a, ar, b, bc, c);
            false
        }
    },
    #[inline]
    unsafe fn gemm_shared_b(
        mkn: [usize; 3],
        a: (*const Self, isize, Wrap),
        b: Operand<Self>,
        c: (*mut Self, isize),
        at: &[(usize, usize)],
    ) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: forwarded from the caller, whose contract is the kernel's.
            unsafe { super::packed::sgemm_shared_b(mkn, a, b, c, at) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (mkn, a, b, c, at);
            false
        }
    }
);
gemm_impl!(f64, none, no_chunks, no_sharing);
