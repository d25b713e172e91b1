//! A convolution's sizes and offset tables ([`Plan`]), the tile sizes, and whether these
//! kernels run a convolution ([`supported`]).

use crate::Conv2dSpec;
use crate::ops::simd::has_avx2_fma;

/// Rows of a forward or input-tangent tile: output channels, or taps.
pub(super) const MR: usize = 6;
/// Runs of eight pixels per such tile: twelve accumulators, two loads of the image and one
/// broadcast in the sixteen AVX registers (with four rows of three vectors, every register,
/// LLVM spilled an accumulator in the loop and ran at under half the speed).
pub(super) const NV: usize = 2;
/// Rows (taps) of a weight-tangent tile.
pub(super) const MR_W: usize = 6;
/// Columns (output channels) of a weight-tangent tile: two vectors, twelve accumulators.
pub(super) const NR_W: usize = 16;

/// Up to eight consecutive pixels of one output row, the unit of a tile's columns: where it
/// starts in the output plane and in the padded input plane, and how many pixels it holds
/// (none for the second run of a lone last one).
#[derive(Clone, Copy)]
pub(super) struct Run {
    pub(super) out: usize,
    pub(super) image: usize,
    pub(super) lanes: usize,
}

/// Whether [`forward`](super::forward), [`backward_input`](super::backward_input) and
/// [`backward_weight`](super::backward_weight) can run an `f32`
/// convolution: stride 1 on a CPU with AVX2 and FMA, and nothing empty.
pub(crate) fn supported(s: &Conv2dSpec) -> bool {
    let g = &s.geometry;
    has_avx2_fma()
        && g.stride == [1, 1]
        && g.channels > 0
        && s.out_channels > 0
        && g.output().is_some_and(|[h, w]| h * w > 0)
}

/// The sizes and offset tables of one convolution.
pub(super) struct Plan {
    pub(super) groups: usize,
    /// Input channels per group.
    pub(super) cg: usize,
    /// Output channels per group.
    pub(super) og: usize,
    /// Taps per group, `cg·kh·kw`.
    pub(super) ck: usize,
    /// The input's height and width, and its padding.
    pub(super) input: [usize; 2],
    pub(super) padding: [usize; 2],
    /// The zero-padded input's height and width.
    pub(super) padded: [usize; 2],
    /// The output's height and width.
    pub(super) out: [usize; 2],
    /// `offset[k]` of tap `k = (c, ki, kj)` (the unfolding's order) in a group's padded
    /// channels.
    pub(super) offsets: Vec<isize>,
    /// The taps ordered `(ki, kj, c)`, channel fastest: the rows of the input tangent's tiles.
    pub(super) scatter: Vec<usize>,
    /// Each output row cut into runs of eight pixels (the last of a row maybe shorter), in
    /// pairs: a tile's columns.
    pub(super) runs: Vec<[Run; NV]>,
}

impl Plan {
    pub(super) fn new(s: &Conv2dSpec) -> Plan {
        let g = &s.geometry;
        let ([kh, kw], [d0, d1]) = (g.kernel, g.dilation);
        let padded = [g.input[0] + 2 * g.padding[0], g.input[1] + 2 * g.padding[1]];
        let plane = padded[0] * padded[1];
        let cg = g.channels / s.groups;
        let taps = kh * kw;
        let offsets = (0..cg * taps)
            .map(|k| {
                let (c, ki, kj) = (k / taps, k / kw % kh, k % kw);
                (c * plane + ki * d0 * padded[1] + kj * d1) as isize
            })
            .collect();
        let scatter = (0..taps)
            .flat_map(|t| (0..cg).map(move |c| c * taps + t))
            .collect();
        let [oh, ow] = g.output().expect("validated by the caller");
        let runs: Vec<Run> = (0..oh)
            .flat_map(|oy| {
                (0..ow).step_by(8).map(move |ox| Run {
                    out: oy * ow + ox,
                    image: oy * padded[1] + ox,
                    lanes: 8.min(ow - ox),
                })
            })
            .collect();
        let runs = runs
            .chunks(NV)
            .map(|pair| {
                std::array::from_fn(|h| {
                    pair.get(h).copied().unwrap_or(Run {
                        lanes: 0,
                        ..pair[0]
                    })
                })
            })
            .collect();
        Plan {
            groups: s.groups,
            cg,
            og: s.out_channels / s.groups,
            ck: cg * taps,
            input: g.input,
            padding: g.padding,
            padded,
            out: [oh, ow],
            offsets,
            scatter,
            runs,
        }
    }

    /// The plan of a convolution these kernels run ([`supported`]).
    ///
    /// # Panics
    /// If they cannot (a programmer error: the callers check first), naming `op`.
    pub(super) fn checked(s: &Conv2dSpec, op: &str) -> Plan {
        assert!(
            supported(s),
            "conv_direct::{op}: the caller must check `supported`"
        );
        Plan::new(s)
    }

    /// Elements of one input image, `C·H·W`.
    pub(super) fn image_len(&self) -> usize {
        self.groups * self.cg * self.input[0] * self.input[1]
    }

    /// Elements of one output image, `O·oh·ow`.
    pub(super) fn out_len(&self) -> usize {
        self.groups * self.og * self.out_plane()
    }

    /// Elements of one zero-padded input image, `C·Hp·Wp`.
    pub(super) fn padded_len(&self) -> usize {
        self.groups * self.cg * self.padded_plane()
    }

    pub(super) fn padded_plane(&self) -> usize {
        self.padded[0] * self.padded[1]
    }

    pub(super) fn out_plane(&self) -> usize {
        self.out[0] * self.out[1]
    }

    pub(super) fn is_padded(&self) -> bool {
        self.padding != [0, 0]
    }

    /// Copies image `x` (`[C, H, W]`) into the interior of `padded` (`[C, Hp, Wp]`), whose
    /// border stays as it is (zero).
    pub(super) fn pad(&self, x: &[f32], padded: &mut [f32]) {
        let ([h, w], [p0, p1], [hp, wp]) = (self.input, self.padding, self.padded);
        for (src, dst) in x.chunks_exact(h * w).zip(padded.chunks_exact_mut(hp * wp)) {
            for (row, dst) in src.chunks_exact(w).zip(dst[p0 * wp..].chunks_exact_mut(wp)) {
                dst[p1..p1 + w].copy_from_slice(row);
            }
        }
    }

    /// Copies the interior of `padded` (`[C, Hp, Wp]`) into image `x` (`[C, H, W]`).
    pub(super) fn crop(&self, padded: &[f32], x: &mut [f32]) {
        let ([h, w], [p0, p1], [hp, wp]) = (self.input, self.padding, self.padded);
        for (dst, src) in x.chunks_exact_mut(h * w).zip(padded.chunks_exact(hp * wp)) {
            for (row, src) in dst.chunks_exact_mut(w).zip(src[p0 * wp..].chunks_exact(wp)) {
                row.copy_from_slice(&src[p1..p1 + w]);
            }
        }
    }
}
