//! The three convolutions over a batch: the images split into one contiguous range per rayon
//! thread, as on the GEMM path.

use super::super::batch::split;
use super::image::{
    forward_image, input_image, pack_rows, pack_taps, transpose_blocks, weight_image,
};
use super::plan::{NR_W, Plan};
use crate::Conv2dSpec;
use crate::ops::zeroed;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// The image an image-range task reads: `x` itself, or its copy into `padded` when the
/// convolution pads.
fn padded_image<'a>(p: &Plan, x: &'a [f32], padded: &'a mut Vec<f32>) -> &'a [f32] {
    if !p.is_padded() {
        return x;
    }
    // Sized (and its border zeroed) once per task; each image rewrites the interior.
    padded.resize(p.padded_len(), 0.0);
    p.pad(x, padded);
    padded
}

/// `batch` blocks of `per` elements, block `n` written by `image(input_n, block_n, scratch)`
/// where `input_n` is the `n`-th run of `input_per` elements of `input`; the images split
/// into one contiguous range per rayon thread, `scratch` a buffer of each range's own, reused
/// across its images. No block is zeroed first.
///
/// # Safety
/// `image` writes every element of its block.
unsafe fn per_image(
    batch: usize,
    per: usize,
    (input, input_per): (&[f32], usize),
    image: impl Fn(&[f32], &mut [MaybeUninit<f32>], &mut Vec<f32>) + Sync,
) -> Vec<f32> {
    let len = batch * per;
    let mut out = Vec::with_capacity(len);
    let (images, _) = split(batch);
    out.spare_capacity_mut()[..len]
        .par_chunks_mut(images * per)
        .zip(input.par_chunks(images * input_per))
        .for_each(|(out, input)| {
            let mut scratch = Vec::new();
            for (block, input) in out.chunks_exact_mut(per).zip(input.chunks_exact(input_per)) {
                image(input, block, &mut scratch);
            }
        });
    // SAFETY: the capacity is `len`, and `image` wrote every element of every block (the
    // caller's contract).
    unsafe { out.set_len(len) };
    out
}

/// The convolution of NCHW `x` with `w`, plus `bias[o]` on channel `o` when given.
///
/// # Panics
/// If [`supported`](super::supported) is false (a programmer error: the caller checks it).
pub(crate) fn forward(x: &[f32], w: &[f32], bias: Option<&[f32]>, s: &Conv2dSpec) -> Vec<f32> {
    let p = Plan::checked(s, "forward");
    let packed = pack_rows(w, &p);
    let batch = s.geometry.batch;
    // SAFETY: `forward_image` writes every element of its block; `supported` checked AVX2
    // and FMA, and the buffers have the sizes the plan gives them.
    unsafe {
        per_image(batch, p.out_len(), (x, p.image_len()), |x, y, padded| {
            let x = padded_image(&p, x, padded);
            forward_image(&p, x, &packed, bias, y)
        })
    }
}

/// The input tangent of a convolution, from its output tangent `dy`.
///
/// # Panics
/// If [`supported`](super::supported) is false.
pub(crate) fn backward_input(dy: &[f32], w: &[f32], s: &Conv2dSpec) -> Vec<f32> {
    let p = Plan::checked(s, "backward_input");
    let packed = pack_taps(w, &p);
    let steps: Vec<isize> = (0..p.og).map(|o| (o * p.out_plane()) as isize).collect();
    let batch = s.geometry.batch;
    // SAFETY: each block is zeroed first, just before its sums are added ([`zeroed`]);
    // AVX2 and FMA as in `forward`.
    unsafe {
        per_image(batch, p.image_len(), (dy, p.out_len()), |dy, dx, padded| {
            let dx = zeroed(dx);
            if p.is_padded() {
                padded.clear();
                padded.resize(p.padded_len(), 0.0);
                input_image(&p, dy, &packed, &steps, padded);
                p.crop(padded, dx);
            } else {
                input_image(&p, dy, &packed, &steps, dx);
            }
        })
    }
}

/// The weight tangent of a convolution, summed over the images.
///
/// # Panics
/// If [`supported`](super::supported) is false.
pub(crate) fn backward_weight(x: &[f32], dy: &[f32], s: &Conv2dSpec) -> Vec<f32> {
    let p = Plan::checked(s, "backward_weight");
    let chunks = p.og.div_ceil(NR_W);
    let (image, out) = (p.image_len(), p.out_len());
    let sums = p.groups * chunks * p.ck * NR_W;
    let (images, _) = split(s.geometry.batch);
    let partials: Vec<Vec<f32>> = x
        .par_chunks(images * image)
        .zip(dy.par_chunks(images * out))
        .map(|(x, dy)| {
            let (mut padded, mut dwt) = (Vec::new(), vec![0.0; sums]);
            let mut dyt = vec![0.0; p.groups * chunks * p.out_plane() * NR_W];
            for (x, dy) in x.chunks_exact(image).zip(dy.chunks_exact(out)) {
                let x = padded_image(&p, x, &mut padded);
                // SAFETY: as in `forward`.
                unsafe {
                    transpose_blocks(&p, dy, &mut dyt);
                    weight_image(&p, x, &dyt, &mut dwt);
                }
            }
            dwt
        })
        .collect();
    let mut dw = vec![0.0; s.out_channels * p.ck];
    for (i, v) in dw.iter_mut().enumerate() {
        let (o, k) = (i / p.ck, i % p.ck);
        let (g, oo) = (o / p.og, o % p.og);
        let at = ((g * chunks + oo / NR_W) * p.ck + k) * NR_W + oo % NR_W;
        *v = partials.iter().map(|dwt| dwt[at]).sum();
    }
    dw
}
