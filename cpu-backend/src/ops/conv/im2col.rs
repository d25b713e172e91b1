//! `im2col` and its adjoint `col2im` for NCHW convolution and pooling, per image.
//!
//! Column layout of one image: `[C·kh·kw, oh·ow]`; row `(c, ki, kj)` holds, for each output
//! pixel `(oi, oj)`, the input pixel `(oi·s₀ + ki·d₀ − p₀, oj·s₁ + kj·d₁ − p₁)` of channel `c`.
//! Batched forms lay images one after the other (`[N, C·kh·kw, oh·ow]`) and run in parallel.

use crate::storage::float_match;
use crate::{Conv2dGeometry, CpuStorage};
use adjoint_backend::Real;
use rayon::prelude::*;

/// The input coordinate read at output position `o` by kernel tap `k` along axis `d`.
#[inline(always)]
pub(crate) fn coord(g: &Conv2dGeometry, d: usize, o: usize, k: usize) -> Option<usize> {
    let v = (o * g.stride[d] + k * g.dilation[d]).checked_sub(g.padding[d])?;
    (v < g.input[d]).then_some(v)
}

/// The output positions `lo..hi` along axis `d` whose tap `k` reads inside the input, and the
/// input coordinate read at `lo` (consecutive positions read `stride` apart).
#[inline(always)]
pub(crate) fn valid_range(
    g: &Conv2dGeometry,
    d: usize,
    k: usize,
    out: usize,
) -> (usize, usize, usize) {
    let (s, off) = (g.stride[d], k * g.dilation[d]);
    // o·s + off − p ≥ 0  ⇔  o ≥ ⌈(p − off)/s⌉;   o·s + off − p < in  ⇔  o < ⌈(in + p − off)/s⌉.
    let lo = g.padding[d].saturating_sub(off).div_ceil(s);
    let hi = (g.input[d] + g.padding[d])
        .saturating_sub(off)
        .div_ceil(s)
        .min(out);
    let first = (lo * s + off).saturating_sub(g.padding[d]);
    (lo, hi.max(lo), first)
}

/// Fills `row` (`oh·ow` columns) with row `r = (c, ki, kj)` of the unfolding of one image `x`
/// (`[C, H, W]`); padding positions are left untouched.
pub(crate) fn unfold_row<T: Copy>(x: &[T], g: &Conv2dGeometry, r: usize, row: &mut [T]) {
    let [oh, ow] = g.output().expect("geometry validated by the caller");
    let [h, w] = g.input;
    let taps = g.kernel[0] * g.kernel[1];
    let (c, ki, kj) = (r / taps, (r % taps) / g.kernel[1], r % g.kernel[1]);
    let plane = &x[c * h * w..][..h * w];
    let (lo, hi, first) = valid_range(g, 1, kj, ow);
    let s = g.stride[1];
    for oi in 0..oh {
        let Some(y) = coord(g, 0, oi, ki) else {
            continue;
        };
        let src = &plane[y * w..][..w];
        let dst = &mut row[oi * ow..][lo..hi];
        if s == 1 {
            copy_short(dst, &src[first..first + (hi - lo)]);
        } else {
            for (j, d) in dst.iter_mut().enumerate() {
                *d = src[first + j * s];
            }
        }
    }
}

/// `dst.copy_from_slice(src)` for the short runs of an unfolding (one output row: 24 elements
/// in the MNIST CNN), as moves of eight elements at a time: `copy_from_slice` of a length only
/// known at run time is a call to `memmove`, and its fixed cost per call was ~4% of the CNN
/// step (almost half a million calls per unfolding of a batch).
#[inline(always)]
fn copy_short<T: Copy>(dst: &mut [T], src: &[T]) {
    assert_eq!(dst.len(), src.len(), "copy_short: lengths differ");
    let (dst8, dst_rest) = dst.as_chunks_mut::<8>();
    let (src8, src_rest) = src.as_chunks::<8>();
    for (d, s) in dst8.iter_mut().zip(src8) {
        *d = *s;
    }
    for (d, s) in dst_rest.iter_mut().zip(src_rest) {
        *d = *s;
    }
}

/// Unfolds one image `x` (`[C, H, W]`) into the `C·kh·kw` rows of `oh·ow` columns that start
/// every `stride` elements of `cols` (pre-filled with the padding value).
pub(crate) fn unfold_image<T: Copy>(x: &[T], g: &Conv2dGeometry, cols: &mut [T], stride: usize) {
    let [oh, ow] = g.output().expect("geometry validated by the caller");
    for r in 0..g.channels * g.kernel[0] * g.kernel[1] {
        unfold_row(x, g, r, &mut cols[r * stride..][..oh * ow]);
    }
}

/// Adds the columns of one image (rows every `stride` elements) back into `image`
/// (`[C, H, W]`): the adjoint of [`unfold_image`].
pub(crate) fn fold_image<T: Real>(cols: &[T], g: &Conv2dGeometry, image: &mut [T], stride: usize) {
    let [oh, ow] = g.output().expect("geometry validated by the caller");
    let [h, w] = g.input;
    let taps = g.kernel[0] * g.kernel[1];
    for r in 0..g.channels * taps {
        let row = &cols[r * stride..][..oh * ow];
        let (c, ki, kj) = (r / taps, (r % taps) / g.kernel[1], r % g.kernel[1]);
        let plane = &mut image[c * h * w..][..h * w];
        let (lo, hi, first) = valid_range(g, 1, kj, ow);
        let s = g.stride[1];
        for oi in 0..oh {
            let Some(y) = coord(g, 0, oi, ki) else {
                continue;
            };
            let dst = &mut plane[y * w..][..w];
            let src = &row[oi * ow..][lo..hi];
            if s == 1 {
                // Contiguous on both sides: a plain vector add.
                for (d, &v) in dst[first..first + src.len()].iter_mut().zip(src) {
                    *d = *d + v;
                }
            } else {
                for (j, &v) in src.iter().enumerate() {
                    let xx = first + j * s;
                    dst[xx] = dst[xx] + v;
                }
            }
        }
    }
}

/// The number of column elements of one image.
pub(crate) fn cols_per_image(g: &Conv2dGeometry) -> usize {
    let [oh, ow] = g.output().expect("geometry validated by the caller");
    g.channels * g.kernel[0] * g.kernel[1] * oh * ow
}

/// Columns `[N, C·kh·kw, oh·ow]`; padding reads `fill`.
pub fn im2col(x: &CpuStorage, g: &Conv2dGeometry, fill: f64) -> CpuStorage {
    float_match!(x, |v, Wrap| Wrap(unfold(v, g, fill)))
}

fn unfold<T: Real + Send + Sync>(x: &[T], g: &Conv2dGeometry, fill: f64) -> Vec<T> {
    let [oh, ow] = g.output().expect("geometry validated by the caller");
    let fill = T::from(fill).expect("fill value fits");
    let image = g.channels * g.input[0] * g.input[1];
    let mut out = vec![fill; g.batch * cols_per_image(g)];
    out.par_chunks_mut(cols_per_image(g).max(1))
        .enumerate()
        .for_each(|(n, cols)| unfold_image(&x[n * image..][..image], g, cols, oh * ow));
    out
}

/// Sums the columns back into NCHW (the adjoint of [`im2col`]).
pub fn col2im(cols: &CpuStorage, g: &Conv2dGeometry) -> CpuStorage {
    float_match!(cols, |v, Wrap| Wrap(fold(v, g)))
}

fn fold<T: Real + Send + Sync>(cols: &[T], g: &Conv2dGeometry) -> Vec<T> {
    let [oh, ow] = g.output().expect("geometry validated by the caller");
    let per = cols_per_image(g);
    let image = g.channels * g.input[0] * g.input[1];
    let mut out = vec![T::zero(); g.batch * image];
    out.par_chunks_mut(image.max(1))
        .enumerate()
        .for_each(|(n, img)| fold_image(&cols[n * per..][..per], g, img, oh * ow));
    out
}
