//! Convolution as `im2col` + GEMM, one image at a time.
//!
//! The images of the batch are split into one contiguous range per rayon thread; each thread
//! unfolds one image at a time into its own column buffer `[C·kh·kw, oh·ow]` (kept in cache
//! and reused) and runs single-threaded GEMMs per group:
//!
//! * forward: `Y_g = W_g · cols_g`, written in place into the image's `[O, oh, ow]` block;
//! * input tangent: `cols̄_g = W_gᵀ · Ȳ_g`, folded back into the image (`col2im`);
//! * weight tangent: `W̄_g += Ȳ_g · cols_gᵀ` (or `W̄_gᵀ += cols_g · Ȳ_gᵀ` when that transposes
//!   less, its `cols_g` read from the image itself at stride 1, without an unfolding) into
//!   the thread's own `W̄` (the GEMM accumulates, `β = 1`); the threads' sums are added at
//!   the end.
//!
//! An image's output tangent `Ȳ_g` is contiguous, so no GEMM operand is ever gathered. With
//! fewer images than threads, the images run one after the other and each GEMM is split
//! across the threads instead ([`gemm_parallel`]).

use super::batch::split;
use super::im2col::{cols_per_image, fold_image, unfold_image};
use crate::Conv2dSpec;
use crate::ops::gemm::{Epilogue, Gemm, Operand, Output, Wrap, gemm_parallel};
use ndarray::ArrayView3;
use rayon::prelude::*;
use std::ops::Range;

/// Sizes of one convolution: output channels per group, `C/G·kh·kw`, output pixels per
/// image, elements of one input image, of one output image and of one image's columns.
struct Dims {
    og: usize,
    ck: usize,
    l: usize,
    image: usize,
    out: usize,
    cols: usize,
}

fn dims(s: &Conv2dSpec) -> Dims {
    let g = &s.geometry;
    assert!(
        s.groups > 0
            && s.out_channels.is_multiple_of(s.groups)
            && g.channels.is_multiple_of(s.groups),
        "conv2d: {} input and {} output channels do not split into {} groups (the caller must \
         validate the spec)",
        g.channels,
        s.out_channels,
        s.groups
    );
    let [oh, ow] = g.output().expect("validated by the caller");
    let l = oh * ow;
    let cols = cols_per_image(g);
    Dims {
        og: s.out_channels / s.groups,
        ck: cols / l.max(1) / s.groups,
        l,
        image: g.channels * g.input[0] * g.input[1],
        out: s.out_channels * l,
        cols,
    }
}

/// `C = A·B + β·C`, serially when `serial`, else split across the threads.
///
/// # Safety
/// As [`Gemm::gemm`].
unsafe fn product<T: Gemm>(
    serial: bool,
    mkn: [usize; 3],
    a: Operand<T>,
    b: Operand<T>,
    beta: T,
    c: Output<T>,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        if serial {
            T::gemm(mkn, a, b, beta, c)
        } else {
            gemm_parallel(mkn, a, b, beta, c, Epilogue::NONE)
        }
    }
}

/// Calls `task(images, serial)` on the ranges of [`split`], in parallel, and returns the
/// results in batch order (none for an empty batch).
fn over_images<R: Send>(batch: usize, task: impl Fn(Range<usize>, bool) -> R + Sync) -> Vec<R> {
    let (images, serial) = split(batch);
    (0..batch)
        .step_by(images)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|start| task(start..batch.min(start + images), serial))
        .collect()
}

/// Calls `f(n, block, columns, serial)` for every image `n` of the ranges of [`split`], one
/// range per task: `block` is image `n`'s `per` elements of `out`, `columns` a zeroed scratch
/// buffer of `cols` elements owned by the task and reused across its images.
fn for_each_image<O: Send, T: Gemm>(
    out: &mut [O],
    per: usize,
    cols: usize,
    batch: usize,
    f: impl Fn(usize, &mut [O], &mut [T], bool) + Sync,
) {
    let (images, serial) = split(batch);
    out.par_chunks_mut(images * per.max(1))
        .enumerate()
        .for_each(|(range, block)| {
            let mut columns = vec![T::zero(); cols];
            for (i, image) in block.chunks_mut(per.max(1)).enumerate() {
                f(range * images + i, image, &mut columns, serial);
            }
        });
}

/// The convolution, plus `bias[o]` on output channel `o` when given: the bias is written into
/// each image's output block first and the GEMM adds to it (`β = 1`), so it costs no extra
/// pass over the output.
pub(super) fn forward<T: Gemm>(x: &[T], w: &[T], bias: Option<&[T]>, s: &Conv2dSpec) -> Vec<T> {
    let d = dims(s);
    let beta = if bias.is_some() { T::one() } else { T::zero() };
    let len = s.geometry.batch * d.out;
    // Every element of `y` is written before it is read (the bias fill, or the β = 0 GEMM
    // that covers each image's whole `o × l` block, writing β·C = 0 even when there are no
    // input channels and k = 0), so it is not zeroed first.
    let mut y: Vec<T> = Vec::with_capacity(len);
    // The unfolding never writes padding positions, so they stay zero in `cols`.
    for_each_image(
        &mut y.spare_capacity_mut()[..len],
        d.out,
        d.cols,
        s.geometry.batch,
        |n, image, cols, serial| {
            if let Some(bias) = bias {
                for (channel, &b) in image.chunks_mut(d.l).zip(bias) {
                    for v in channel {
                        v.write(b);
                    }
                }
            }
            let image = image.as_mut_ptr().cast::<T>();
            unfold_image(&x[n * d.image..][..d.image], &s.geometry, cols, d.l);
            for grp in 0..s.groups {
                // SAFETY: W_g is og × ck (row stride ck); the group's columns are ck × l; its
                // output block is og × l inside the image's `out = o·l` elements (groups·og =
                // o), which with β = 1 the bias fill initialized and with β = 0 the GEMM only
                // writes.
                unsafe {
                    product(
                        serial,
                        [d.og, d.ck, d.l],
                        (w[grp * d.og * d.ck..].as_ptr(), [d.ck as isize, 1]),
                        (cols[grp * d.ck * d.l..].as_ptr(), [d.l as isize, 1]),
                        beta,
                        (image.add(grp * d.og * d.l), [d.l as isize, 1]),
                    );
                }
            }
        },
    );
    // SAFETY: the capacity is `len`, and every element was written (see above).
    unsafe { y.set_len(len) };
    y
}

pub(super) fn forward_plain<T: Gemm>(x: &[T], w: &[T], s: &Conv2dSpec) -> Vec<T> {
    forward(x, w, None, s)
}

pub(super) fn backward_input<T: Gemm>(dy: &[T], w: &[T], s: &Conv2dSpec) -> Vec<T> {
    let d = dims(s);
    let mut dx = vec![T::zero(); s.geometry.batch * d.image];
    for_each_image(
        &mut dx,
        d.image,
        d.cols,
        s.geometry.batch,
        |n, image, dcols, serial| {
            let dy = &dy[n * d.out..][..d.out];
            for grp in 0..s.groups {
                // SAFETY: W_gᵀ through swapped strides is ck × og; the image's Ȳ_g is
                // og × l; the group's block of `dcols` is ck × l.
                unsafe {
                    product(
                        serial,
                        [d.ck, d.og, d.l],
                        (w[grp * d.og * d.ck..].as_ptr(), [1, d.ck as isize]),
                        (dy[grp * d.og * d.l..].as_ptr(), [d.l as isize, 1]),
                        T::zero(),
                        (dcols[grp * d.ck * d.l..].as_mut_ptr(), [d.l as isize, 1]),
                    );
                }
            }
            fold_image(dcols, &s.geometry, image, d.l);
        },
    );
    dx
}

/// The weight tangent, summed over the images: per image and group `W̄_g += Ȳ_g · cols_gᵀ`, or,
/// when a group has fewer output channels than columns per pixel (`og < ck`, the second
/// MNIST convolution's 64 against 288), `W̄_gᵀ += cols_g · Ȳ_gᵀ`, transposed once at the end.
/// Both products contract the pixels, contiguous in both operands, so the GEMM transposes its
/// right operand into panels; the second form transposes `Ȳ_g` (`og × l`) instead of
/// `cols_g` (`ck × l`): 4.5 times fewer elements per image there, and at stride 1 its
/// `cols_g` is read from the image itself ([`ImageRows`]) where the GEMM can.
pub(super) fn backward_weight<T: Gemm>(x: &[T], dy: &[T], s: &Conv2dSpec) -> Vec<T> {
    weight_tangent(x, dy, s, true)
}

/// [`backward_weight`], reading the unfolding's rows from the images where it can when
/// `from_images`, else always unfolding them.
fn weight_tangent<T: Gemm>(x: &[T], dy: &[T], s: &Conv2dSpec, from_images: bool) -> Vec<T> {
    let d = dims(s);
    let (og, ck) = (d.og, d.ck);
    let transposed = og < ck;
    let image_rows = (from_images && transposed)
        .then(|| ImageRows::new(s, og))
        .flatten();
    let partial = |images: Range<usize>, serial: bool| {
        let mut dw = vec![T::zero(); s.out_channels * ck];
        // Allocated when an image is first unfolded (with its padding zeros).
        let mut cols = Vec::new();
        // Read from the images until the GEMM declines (then for none of them).
        let mut image_rows = image_rows.as_ref().filter(|_| serial);
        let mut padded = Vec::new();
        for n in images {
            let (x, dy) = (&x[n * d.image..][..d.image], &dy[n * d.out..][..d.out]);
            if let Some(rows) = image_rows {
                if rows.add_weight_tangent(x, dy, &mut dw, &mut padded, s, &d) {
                    continue;
                }
                image_rows = None;
            }
            if cols.is_empty() {
                cols = vec![T::zero(); d.cols];
            }
            unfold_image(x, &s.geometry, &mut cols, d.l);
            for grp in 0..s.groups {
                let (dy_g, cols_g) = (
                    dy[grp * og * d.l..].as_ptr(),
                    cols[grp * ck * d.l..].as_ptr(),
                );
                // Both are read row by row as themselves, or transposed (swapped strides).
                let (itself, transpose) = ([d.l as isize, 1], [1, d.l as isize]);
                let (mkn, a, b, row) = if transposed {
                    // W̄_gᵀ (ck × og) += cols_g · Ȳ_gᵀ.
                    ([ck, d.l, og], (cols_g, itself), (dy_g, transpose), og)
                } else {
                    // W̄_g (og × ck) += Ȳ_g · cols_gᵀ.
                    ([og, d.l, ck], (dy_g, itself), (cols_g, transpose), ck)
                };
                let dw_g = (dw[grp * og * ck..].as_mut_ptr(), [row as isize, 1]);
                // SAFETY: the image's Ȳ_g is og × l (row stride l) and the group's columns
                // ck × l, each read as itself or transposed; the group's block of `dw` holds
                // og × ck elements, as W̄_g (row stride ck) or W̄_gᵀ (row stride og).
                unsafe { product(serial, mkn, a, b, T::one(), dw_g) };
            }
        }
        dw
    };
    let sum = over_images(s.geometry.batch, partial)
        .into_iter()
        .reduce(|mut dw, p| {
            for (a, b) in dw.iter_mut().zip(p) {
                *a = *a + b;
            }
            dw
        })
        .unwrap_or_else(|| vec![T::zero(); s.out_channels * ck]);
    if !transposed {
        return sum;
    }
    // Each group's `W̄_g` in order: its `W̄_gᵀ` block read with the last two axes swapped.
    ArrayView3::from_shape((s.groups, ck, og), &sum)
        .expect("the weight tangent holds groups × ck × og elements")
        .permuted_axes([0, 2, 1])
        .iter()
        .copied()
        .collect()
}

/// The rows of an image's unfolding read from the image itself, for `W̄_gᵀ += cols_g · Ȳ_gᵀ`.
/// At stride 1 the rows of tap `(kᵢ, kⱼ)` for a group's channels are the (zero-padded,
/// `Hp × Wp`) image from `kᵢ·d₀·Wp + kⱼ·d₁` on, channels `Hp·Wp` apart, in runs of `ow`
/// pixels `Wp` apart ([`Wrap`]); their products with `Ȳ_gᵀ`, packed once for all taps, go
/// to the rows of `W̄_gᵀ` of that tap, `kh·kw` rows apart. The sums are the unfolded form's
/// to the bit (the same products, in the same order).
///
/// In the MNIST CNN step, skipping the second unfolding of each image (its values aside)
/// took 0.91 ms off 17.1 (16 of 16 paired in-process rounds, 27th session).
struct ImageRows {
    /// The padded image's height and width.
    padded: [usize; 2],
    /// The breaks between output rows.
    wrap: Wrap,
    /// Per tap, where its rows start in a group's image and in the group's `W̄_gᵀ`.
    taps: Vec<(usize, usize)>,
}

impl ImageRows {
    /// The taps of the convolution `s` with `og` output channels per group; `None` at a
    /// stride other than 1 or for an empty output.
    fn new(s: &Conv2dSpec, og: usize) -> Option<ImageRows> {
        let g = &s.geometry;
        let [oh, ow] = g.output().expect("validated by the caller");
        if g.stride != [1, 1] || oh == 0 || ow == 0 {
            return None;
        }
        let [hp, wp] = [0, 1].map(|i| g.input[i] + 2 * g.padding[i]);
        let taps = (0..g.kernel[0] * g.kernel[1])
            .map(|t| {
                let (ki, kj) = (t / g.kernel[1], t % g.kernel[1]);
                (ki * g.dilation[0] * wp + kj * g.dilation[1], t * og)
            })
            .collect();
        Some(ImageRows {
            padded: [hp, wp],
            wrap: Wrap::every(ow, (wp - ow) as isize),
            taps,
        })
    }

    /// Adds image `x`'s weight tangent with its output tangent `dy` to `dw` (`W̄ᵀ` of every
    /// group), padding `x` into `padded` if the convolution pads; returns whether it ran:
    /// `false` (nothing added) for a type or CPU without the GEMM ([`Gemm::gemm_shared_b`]).
    fn add_weight_tangent<T: Gemm>(
        &self,
        x: &[T],
        dy: &[T],
        dw: &mut [T],
        padded: &mut Vec<T>,
        s: &Conv2dSpec,
        d: &Dims,
    ) -> bool {
        let g = &s.geometry;
        let ([h, w], [p0, p1], [hp, wp]) = (g.input, g.padding, self.padded);
        let image: &[T] = if p0 == 0 && p1 == 0 {
            x
        } else {
            // The padding stays zero from one image to the next: only the interior is copied.
            padded.resize(g.channels * hp * wp, T::zero());
            for (plane, from) in padded.chunks_mut(hp * wp).zip(x.chunks(h * w)) {
                for (row, from) in plane[p0 * wp..].chunks_mut(wp).zip(from.chunks(w)) {
                    row[p1..p1 + w].copy_from_slice(from);
                }
            }
            padded
        };
        let (og, ck, taps) = (d.og, d.ck, self.taps.len());
        let channels = g.channels / s.groups;
        for grp in 0..s.groups {
            let a = image[grp * channels * hp * wp..].as_ptr();
            let dy_g = (dy[grp * og * d.l..].as_ptr(), [1, d.l as isize]);
            let dw_g = dw[grp * og * ck..].as_mut_ptr();
            // SAFETY: tap `(kᵢ, kⱼ)` reads channel `c < channels` of the group at
            // `c·Hp·Wp + kᵢ·d₀·Wp + kⱼ·d₁ + y·Wp + x` for output pixels `y < oh`, `x < ow`; at
            // stride 1, `oh − 1 + (kh − 1)·d₀ = Hp − 1` and `ow − 1 + (kw − 1)·d₁ = Wp − 1`,
            // so every read lies in the group's planes. `Ȳ_gᵀ` is `l × og` (the group's
            // `og × l` block, transposed). The tap's rows of `W̄_gᵀ` (`ck × og`, row
            // `c·taps + t`) are `channels` rows `taps·og` apart from `t·og`: disjoint between
            // taps, inside the group's block.
            let ran = unsafe {
                T::gemm_shared_b(
                    [channels, d.l, og],
                    (a, (hp * wp) as isize, self.wrap),
                    dy_g,
                    (dw_g, (taps * og) as isize),
                    &self.taps,
                )
            };
            if !ran {
                // The GEMM declines by type, CPU and layout, the same for every group.
                debug_assert_eq!(grp, 0, "a group's weight tangent was left half added");
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::{ImageRows, dims, weight_tangent};
    use crate::{Conv2dGeometry, Conv2dSpec};

    /// The weight tangent with the unfolding's rows read from the images is the unfolded
    /// form's to the bit, `f32`: the MNIST CNN's second layer, padding with dilation, groups,
    /// a single output row and a single output pixel, each with fewer output channels per
    /// group than columns per pixel (the form that reads them); and the images are read
    /// where the CPU has the GEMM for it.
    #[test]
    fn weight_tangent_from_images_is_the_unfolded_forms() {
        let spec = |channels, input, out_channels, groups, padding, dilation| Conv2dSpec {
            geometry: Conv2dGeometry {
                batch: 5,
                channels,
                input,
                kernel: [3, 3],
                stride: [1, 1],
                padding,
                dilation,
            },
            out_channels,
            groups,
        };
        for s in [
            spec(32, [26, 26], 64, 1, [0, 0], [1, 1]),
            spec(5, [9, 30], 7, 1, [1, 2], [1, 2]),
            spec(8, [11, 13], 6, 2, [1, 0], [2, 1]),
            // One output row (no break inside it), and one output pixel.
            spec(4, [3, 9], 2, 1, [0, 0], [1, 1]),
            spec(4, [3, 3], 2, 1, [0, 0], [1, 1]),
        ] {
            let g = s.geometry;
            let [oh, ow] = g.output().expect("fits");
            let value =
                |i: usize, seed: usize| ((i * 7919 + seed * 104_729) % 2003) as f32 / 1001.0 - 1.0;
            let x: Vec<f32> = (0..g.batch * g.channels * g.input[0] * g.input[1])
                .map(|i| value(i, 1))
                .collect();
            let dy: Vec<f32> = (0..g.batch * s.out_channels * oh * ow)
                .map(|i| value(i, 2))
                .collect();
            let unfolded = weight_tangent(&x, &dy, &s, false);
            let from_images = weight_tangent(&x, &dy, &s, true);
            assert!(unfolded.iter().any(|&v| v != 0.0));
            let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&from_images), bits(&unfolded), "{s:?}");
            #[cfg(target_arch = "x86_64")]
            if crate::ops::gemm::packed::available() {
                let d = dims(&s);
                let mut dw = vec![0.0; s.out_channels * d.ck];
                let image = &x[..d.image];
                let dy = &dy[..d.out];
                let rows = ImageRows::new(&s, d.og).expect("stride 1");
                assert!(rows.add_weight_tangent(image, dy, &mut dw, &mut Vec::new(), &s, &d));
            } else {
                println!("no AVX-512F nor AVX2: both forms unfolded the images");
            }
        }
    }
}
