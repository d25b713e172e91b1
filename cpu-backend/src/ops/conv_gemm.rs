//! Convolution as `im2col` + GEMM over chunks of images.
//!
//! A chunk of `b` images is unfolded side by side into one column buffer `[C·kh·kw, b·oh·ow]`
//! (at most [`COLS_BUDGET`] elements, so it stays in cache and is reused); then per group:
//!
//! * forward: `Y_g = W_g · cols_g`, one GEMM per image written in place into `[N, O, oh, ow]`
//!   (as fast as one GEMM over the chunk plus a scatter, measured, and simpler);
//! * input tangent: `cols̄_g = W_gᵀ · Ȳ_g` over the chunk, folded back image by image in
//!   parallel (`col2im`);
//! * weight tangent: `W̄_g += Ȳ_g · cols_gᵀ` (the GEMM accumulates, `β = 1`).
//!
//! Chunking keeps small convolutions (few channels) from running many tiny GEMMs and large
//! ones from materialising the columns of the whole batch.

use super::conv::{cols_per_image, fold_image, unfold_row};
use crate::{Conv2dSpec, CpuStorage};
use adjoint_backend::Real;
use rayon::prelude::*;

/// The largest size (elements) of one chunk's column buffer and of its output block: small
/// enough to stay in cache (and to be reused rather than returned to the OS between calls).
const COLS_BUDGET: usize = 1 << 19;

/// `C = A·B + β·C` with explicit (row, column) strides: `matrixmultiply`'s `sgemm`/`dgemm`.
pub(crate) trait Gemm: Real + Send + Sync {
    /// # Safety
    /// The pointers must address matrices of the given sizes and strides.
    unsafe fn gemm(
        mkn: [usize; 3],
        a: (*const Self, [isize; 2]),
        b: (*const Self, [isize; 2]),
        beta: Self,
        c: (*mut Self, [isize; 2]),
    );
}

macro_rules! gemm_impl {
    ($t:ty, $f:path) => {
        impl Gemm for $t {
            unsafe fn gemm(
                [m, k, n]: [usize; 3],
                (a, [ar, ac]): (*const Self, [isize; 2]),
                (b, [br, bc]): (*const Self, [isize; 2]),
                beta: Self,
                (c, [cr, cc]): (*mut Self, [isize; 2]),
            ) {
                // SAFETY: forwarded from the caller.
                unsafe { $f(m, k, n, 1.0, a, ar, ac, b, br, bc, beta, c, cr, cc) }
            }
        }
    };
}
gemm_impl!(f32, matrixmultiply::sgemm);
gemm_impl!(f64, matrixmultiply::dgemm);

/// Sizes of one convolution: output channels per group, `C/G·kh·kw`, output pixels, images
/// per chunk, elements per input image.
struct Dims {
    og: usize,
    ck: usize,
    l: usize,
    chunk: usize,
    image: usize,
}

fn dims(s: &Conv2dSpec) -> Dims {
    let g = &s.geometry;
    let [oh, ow] = g.output().expect("validated by the caller");
    let l = oh * ow;
    let per_image = cols_per_image(g).max(1);
    Dims {
        og: s.out_channels / s.groups,
        ck: per_image / l.max(1) / s.groups,
        l,
        chunk: (COLS_BUDGET / per_image)
            .min(COLS_BUDGET / (s.out_channels / s.groups * l).max(1))
            .clamp(1, g.batch.max(1)),
        image: g.channels * g.input[0] * g.input[1],
    }
}

/// Calls `f(first image, images in chunk, columns)` per chunk, the columns holding the chunk's
/// unfolded images side by side (row stride `chunk·l`) when `unfold` is set.
fn chunks<T: Gemm>(
    x: Option<&[T]>,
    s: &Conv2dSpec,
    d: &Dims,
    mut f: impl FnMut(usize, usize, &mut [T]),
) {
    let stride = d.chunk * d.l;
    let mut cols = vec![T::zero(); s.groups * d.ck * stride];
    for n0 in (0..s.geometry.batch).step_by(d.chunk) {
        let b = d.chunk.min(s.geometry.batch - n0);
        if let Some(x) = x {
            // Rows are independent: unfold them in parallel, each across the chunk's images.
            cols.par_chunks_mut(stride)
                .enumerate()
                .for_each(|(r, row)| {
                    for i in 0..b {
                        let image = &x[(n0 + i) * d.image..][..d.image];
                        unfold_row(image, &s.geometry, r, &mut row[i * d.l..][..d.l]);
                    }
                });
        }
        f(n0, b, &mut cols);
    }
}

/// Copies the `[b, O, l]` block of images `n0..n0+b` of group `grp` to/from `[og, b·l]`.
fn gather<T: Copy>(
    y: &[T],
    s: &Conv2dSpec,
    d: &Dims,
    (n0, b, grp): (usize, usize, usize),
    tmp: &mut [T],
) {
    for i in 0..b {
        for o in 0..d.og {
            let src = &y[((n0 + i) * s.out_channels + grp * d.og + o) * d.l..][..d.l];
            tmp[o * b * d.l + i * d.l..][..d.l].copy_from_slice(src);
        }
    }
}
fn forward<T: Gemm>(x: &[T], w: &[T], s: &Conv2dSpec) -> Vec<T> {
    let d = dims(s);
    let mut y = vec![T::zero(); s.geometry.batch * s.out_channels * d.l];
    chunks(Some(x), s, &d, |n0, b, cols| {
        for i in 0..b {
            let image = &mut y[(n0 + i) * s.out_channels * d.l..][..s.out_channels * d.l];
            for grp in 0..s.groups {
                // SAFETY: W_g is og × ck; image i's columns of the group are ck × l at column
                // offset i·l with row stride chunk·l; the output block of the group is og × l,
                // written in place in `y` (row stride l).
                unsafe {
                    T::gemm(
                        [d.og, d.ck, d.l],
                        (w[grp * d.og * d.ck..].as_ptr(), [d.ck as isize, 1]),
                        (
                            cols[grp * d.ck * d.chunk * d.l + i * d.l..].as_ptr(),
                            [(d.chunk * d.l) as isize, 1],
                        ),
                        T::zero(),
                        (image[grp * d.og * d.l..].as_mut_ptr(), [d.l as isize, 1]),
                    );
                }
            }
        }
    });
    y
}

fn backward_input<T: Gemm>(dy: &[T], w: &[T], s: &Conv2dSpec) -> Vec<T> {
    let d = dims(s);
    let mut dx = vec![T::zero(); s.geometry.batch * d.image];
    let mut tmp = vec![T::zero(); d.og * d.chunk * d.l];
    let stride = d.chunk * d.l;
    chunks(None, s, &d, |n0, b, dcols| {
        for grp in 0..s.groups {
            gather(dy, s, &d, (n0, b, grp), &mut tmp);
            // SAFETY: W_gᵀ through swapped strides is ck × og; tmp is og × (b·l); the group's
            // block of dcols is ck × (b·l) with row stride chunk·l.
            unsafe {
                T::gemm(
                    [d.ck, d.og, b * d.l],
                    (w[grp * d.og * d.ck..].as_ptr(), [1, d.ck as isize]),
                    (tmp.as_ptr(), [(b * d.l) as isize, 1]),
                    T::zero(),
                    (
                        dcols[grp * d.ck * stride..].as_mut_ptr(),
                        [stride as isize, 1],
                    ),
                );
            }
        }
        // Images are independent: fold them in parallel.
        let dcols = &*dcols;
        dx[n0 * d.image..(n0 + b) * d.image]
            .par_chunks_mut(d.image)
            .enumerate()
            .for_each(|(i, image)| fold_image(&dcols[i * d.l..], &s.geometry, image, stride));
    });
    dx
}

fn backward_weight<T: Gemm>(x: &[T], dy: &[T], s: &Conv2dSpec) -> Vec<T> {
    let d = dims(s);
    let mut dw = vec![T::zero(); s.out_channels * d.ck];
    let mut tmp = vec![T::zero(); d.og * d.chunk * d.l];
    let stride = d.chunk * d.l;
    chunks(Some(x), s, &d, |n0, b, cols| {
        for grp in 0..s.groups {
            gather(dy, s, &d, (n0, b, grp), &mut tmp);
            // SAFETY: tmp is og × (b·l); the group's columns transposed through swapped
            // strides are (b·l) × ck; dW_g is og × ck.
            unsafe {
                T::gemm(
                    [d.og, b * d.l, d.ck],
                    (tmp.as_ptr(), [(b * d.l) as isize, 1]),
                    (cols[grp * d.ck * stride..].as_ptr(), [1, stride as isize]),
                    T::one(),
                    (dw[grp * d.og * d.ck..].as_mut_ptr(), [d.ck as isize, 1]),
                );
            }
        }
    });
    dw
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

/// The convolution of NCHW `x` with `w`.
pub fn conv2d(x: &CpuStorage, w: &CpuStorage, s: &Conv2dSpec) -> CpuStorage {
    dispatch!(forward, x, w, s)
}

/// The input tangent of a convolution.
pub fn conv2d_backward_input(dy: &CpuStorage, w: &CpuStorage, s: &Conv2dSpec) -> CpuStorage {
    dispatch!(backward_input, dy, w, s)
}

/// The weight tangent of a convolution.
pub fn conv2d_backward_weight(x: &CpuStorage, dy: &CpuStorage, s: &Conv2dSpec) -> CpuStorage {
    dispatch!(backward_weight, x, dy, s)
}
