//! The products of the types and CPUs without a kernel of their own: the `gemm` crate's
//! ([`library`]), and the stand-ins that tell [`super::dispatch`] there is no own kernel.

use super::product::{Epilogue, Operand, Output};
use adjoint_backend::Real;
use std::ops::Range;

/// `C = α·A·B + β·C` on this thread by the `gemm` crate (which detects the CPU's vector
/// extensions at run time: on AVX2 its `f32` tiles are 6 rows × 16 columns of `C`, two
/// vectors of `B` and six broadcasts of `A` per step of the inner dimension).
///
/// # Safety
/// As [`Gemm::gemm`](super::Gemm::gemm).
pub(super) unsafe fn library<T: Real + 'static>(
    [m, k, n]: [usize; 3],
    (a, [ar, ac]): Operand<T>,
    (b, [br, bc]): Operand<T>,
    (alpha, beta): (T, T),
    (c, [cr, cc]): Output<T>,
) {
    // SAFETY: the caller's contract. The crate computes `dst ← α·dst + β·lhs·rhs` with column
    // strides before row strides, reading `dst` only if told to: our `β` is its `α`, and our
    // `α` its `β`.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c,
            cc,
            cr,
            beta != T::zero(),
            a,
            ac,
            ar,
            b,
            bc,
            br,
            beta,
            alpha,
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    }
}

/// No kernel of its own for this type (or this CPU architecture): the `gemm` crate runs
/// every product.
pub(super) unsafe fn none<T>(
    _: [usize; 3],
    _: Operand<T>,
    _: Operand<T>,
    _: T,
    _: Output<T>,
    _: Epilogue<T>,
) -> bool {
    false
}

/// No chunk loop of its own for this type (or this CPU architecture).
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn no_chunks<T>(
    _: [usize; 3],
    _: Operand<T>,
    _: Operand<T>,
    _: T,
    _: Output<T>,
    _: Epilogue<T>,
    _: bool,
    _: &mut dyn FnMut() -> Option<Range<usize>>,
) -> bool {
    false
}

/// No packing shared between chunks: each chunk is a product of its own.
pub(super) fn no_sharing<T>(
    _: [usize; 3],
    _: Operand<T>,
    _: Operand<T>,
    _: T,
    _: Output<T>,
    _: bool,
) -> bool {
    false
}
