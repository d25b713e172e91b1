//! Stride-1 `f32` convolutions in AVX2 + FMA that read the image where it lies: no unfolded
//! columns, no packed copy of them and no folding back.
//!
//! With stride 1, row `k = (c, ki, kj)` of an image's unfolding, restricted to output row
//! `oy`, is row `oy + ki·d₀` of input channel `c` from column `kj·d₁` on: `ow` contiguous
//! elements of the (zero-padded, `Hp × Wp`) image, starting at `offset[k] + oy·Wp` with
//! `offset[k] = c·Hp·Wp + ki·d₀·Wp + kj·d₁`. A register tile of [`MR`] rows by [`NV`] runs
//! of up to eight consecutive pixels of an output row therefore loads its right operand from
//! the image itself, through a table of offsets:
//!
//! * forward, `Y[o, oy, ox] = b[o] + Σₖ W[o, k]·X[offset[k] + oy·Wp + ox]`: tiles of `MR`
//!   output channels, `W` packed once per call into runs of `MR` rows;
//! * input tangent, `X̄[offset[k] + oy·Wp + ox] += Σₒ W[o, k]·Ȳ[o, oy, ox]`: the same kernel
//!   on `Wᵀ` and the rows of `Ȳ`, each tile adding its sums into `X̄` where `col2im` would
//!   have put them. The taps are ordered channel fastest, so a tile's `MR` consecutive taps
//!   are `MR` different channels when there are at least `MR`, and its rows do not overlap
//!   in `X̄` (overlapping rows would still be added in order, only slower);
//! * weight tangent, `W̄ᵀ[k, o] += Σ_{oy, ox} X[offset[k] + oy·Wp + ox]·Ȳᵀ[oy·ow + ox, o]`:
//!   tiles of [`MR_W`] taps by [`NR_W`] output channels, each row broadcast from the image and
//!   `Ȳ` transposed once per image into blocks of `NR_W` channels.
//!
//! Images are split into one contiguous range per rayon thread, as in [`super::conv_gemm`];
//! the weight tangent's per-thread sums are added at the end. The sums run over the inner
//! dimension in another order than the GEMM path's, so results agree to rounding, not bits.
//!
//! In the MNIST CNN step the `im2col` path spent 17% of its samples writing the columns
//! twice (the unfolding, then the GEMM's packing of them) and 3% folding them back;
//! with these kernels the step went from 52 to 37–39 ms on two AVX2 cores (docs/tensors.md,
//! 19th session). Masked stores are kept to the edges: AMD's Zen 2 runs them as long
//! microcoded sequences.

use super::conv_gemm::split;
use super::simd::has_avx2_fma;
use super::zeroed;
use crate::Conv2dSpec;
use rayon::prelude::*;
use std::arch::x86_64::{
    __m256, __m256i, _mm256_add_ps, _mm256_broadcast_ss, _mm256_cmpgt_epi32, _mm256_fmadd_ps,
    _mm256_loadu_ps, _mm256_maskload_ps, _mm256_maskstore_ps, _mm256_permute2f128_ps,
    _mm256_set1_epi32, _mm256_set1_ps, _mm256_setr_epi32, _mm256_setzero_ps, _mm256_shuffle_ps,
    _mm256_storeu_ps, _mm256_unpackhi_ps, _mm256_unpacklo_ps,
};
use std::mem::MaybeUninit;

/// Rows of a forward or input-tangent tile: output channels, or taps.
const MR: usize = 6;
/// Runs of eight pixels per such tile: twelve accumulators, two loads of the image and one
/// broadcast in the sixteen AVX registers (with four rows of three vectors, every register,
/// LLVM spilled an accumulator in the loop and ran at under half the speed).
const NV: usize = 2;
/// Rows (taps) of a weight-tangent tile.
const MR_W: usize = 6;
/// Columns (output channels) of a weight-tangent tile: two vectors, twelve accumulators.
const NR_W: usize = 16;

/// The sums of one tile of `R` rows: `sums[r][h]` holds run `h` of row `r`.
type Sums<const R: usize> = [[__m256; NV]; R];

/// Up to eight consecutive pixels of one output row, the unit of a tile's columns: where it
/// starts in the output plane and in the padded input plane, and how many pixels it holds
/// (none for the second run of a lone last one).
#[derive(Clone, Copy)]
struct Run {
    out: usize,
    image: usize,
    lanes: usize,
}

/// Whether [`forward`], [`backward_input`] and [`backward_weight`] can run an `f32`
/// convolution: stride 1 on a CPU with AVX2 and FMA, and nothing empty.
pub(crate) fn supported(s: &Conv2dSpec) -> bool {
    let g = &s.geometry;
    has_avx2_fma()
        && g.stride == [1, 1]
        && g.channels > 0
        && s.out_channels > 0
        && g.output().is_some_and(|[h, w]| h * w > 0)
}

/// Whether the backend runs an `f32` convolution here rather than on the GEMM path: when it
/// is [`supported`], has at least one image per thread (fewer run on the GEMM path, which
/// splits each product across the threads), and the CPU lacks AVX-512F. With AVX-512F the
/// GEMM path's own kernel does twice the work per instruction of these AVX2 tiles (the CNN
/// step took 21.5 ms with it on a Xeon), and these kernels were never measured there.
pub(crate) fn applies(s: &Conv2dSpec) -> bool {
    supported(s)
        && s.geometry.batch >= rayon::current_num_threads()
        && !super::gemm_avx512::available()
}

/// The sizes and offset tables of one convolution.
struct Plan {
    groups: usize,
    /// Input channels per group.
    cg: usize,
    /// Output channels per group.
    og: usize,
    /// Taps per group, `cg·kh·kw`.
    ck: usize,
    /// The input's height and width, and its padding.
    input: [usize; 2],
    padding: [usize; 2],
    /// The zero-padded input's height and width.
    padded: [usize; 2],
    /// The output's height and width.
    out: [usize; 2],
    /// `offset[k]` of tap `k = (c, ki, kj)` (the unfolding's order) in a group's padded
    /// channels.
    offsets: Vec<isize>,
    /// The taps ordered `(ki, kj, c)`, channel fastest: the rows of the input tangent's tiles.
    scatter: Vec<usize>,
    /// Each output row cut into runs of eight pixels (the last of a row maybe shorter), in
    /// pairs: a tile's columns.
    runs: Vec<[Run; NV]>,
}

impl Plan {
    fn new(s: &Conv2dSpec) -> Plan {
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
    fn checked(s: &Conv2dSpec, op: &str) -> Plan {
        assert!(
            supported(s),
            "conv_direct::{op}: the caller must check `supported`"
        );
        Plan::new(s)
    }

    /// Elements of one input image, `C·H·W`.
    fn image_len(&self) -> usize {
        self.groups * self.cg * self.input[0] * self.input[1]
    }

    /// Elements of one output image, `O·oh·ow`.
    fn out_len(&self) -> usize {
        self.groups * self.og * self.out_plane()
    }

    /// Elements of one zero-padded input image, `C·Hp·Wp`.
    fn padded_len(&self) -> usize {
        self.groups * self.cg * self.padded_plane()
    }

    fn padded_plane(&self) -> usize {
        self.padded[0] * self.padded[1]
    }

    fn out_plane(&self) -> usize {
        self.out[0] * self.out[1]
    }

    fn is_padded(&self) -> bool {
        self.padding != [0, 0]
    }

    /// Copies image `x` (`[C, H, W]`) into the interior of `padded` (`[C, Hp, Wp]`), whose
    /// border stays as it is (zero).
    fn pad(&self, x: &[f32], padded: &mut [f32]) {
        let ([h, w], [p0, p1], [hp, wp]) = (self.input, self.padding, self.padded);
        for (src, dst) in x.chunks_exact(h * w).zip(padded.chunks_exact_mut(hp * wp)) {
            for (row, dst) in src.chunks_exact(w).zip(dst[p0 * wp..].chunks_exact_mut(wp)) {
                dst[p1..p1 + w].copy_from_slice(row);
            }
        }
    }

    /// Copies the interior of `padded` (`[C, Hp, Wp]`) into image `x` (`[C, H, W]`).
    fn crop(&self, padded: &[f32], x: &mut [f32]) {
        let ([h, w], [p0, p1], [hp, wp]) = (self.input, self.padding, self.padded);
        for (dst, src) in x.chunks_exact_mut(h * w).zip(padded.chunks_exact(hp * wp)) {
            for (row, src) in dst.chunks_exact_mut(w).zip(src[p0 * wp..].chunks_exact(wp)) {
                row.copy_from_slice(&src[p1..p1 + w]);
            }
        }
    }
}

/// The lanes of each run of a tile as masks for `maskload`/`maskstore`: lane `i` of vector
/// `h` is set when `i < runs[h].lanes`.
#[inline(always)]
fn masks(runs: &[Run; NV]) -> [__m256i; NV] {
    // SAFETY: AVX2 is enabled in every caller (the kernels' `target_feature` functions).
    unsafe {
        let index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        runs.map(|run| _mm256_cmpgt_epi32(_mm256_set1_epi32(run.lanes as i32), index))
    }
}

/// `Σₚ a[p] ⊗ (b₀[offsets[p]..][..8], b₁[offsets[p]..][..8])`: the sums of one tile of `R`
/// rows, `a` holding [`MR`] elements per step `p` (the first `R` read). With `MASKED`, only
/// the lanes of `masks` are read (the others sum to zero).
///
/// # Safety
/// AVX2 and FMA; `a` addresses `MR·offsets.len()` elements and `b[h] + offsets[p]` the lanes
/// read for every `p` and `h`.
#[inline(always)]
unsafe fn tile_sums<const R: usize, const MASKED: bool>(
    a: *const f32,
    b: [*const f32; NV],
    offsets: &[isize],
    masks: &[__m256i; NV],
) -> Sums<R> {
    // SAFETY: the caller's contract.
    unsafe {
        let mut sums = [[_mm256_setzero_ps(); NV]; R];
        let mut a = a;
        for &offset in offsets {
            let v: [__m256; NV] = std::array::from_fn(|h| {
                if MASKED {
                    _mm256_maskload_ps(b[h].offset(offset), masks[h])
                } else {
                    _mm256_loadu_ps(b[h].offset(offset))
                }
            });
            for (r, sums) in sums.iter_mut().enumerate() {
                let x = _mm256_broadcast_ss(&*a.add(r));
                for (sum, &v) in sums.iter_mut().zip(&v) {
                    *sum = _mm256_fmadd_ps(x, v, *sum);
                }
            }
            a = a.add(MR);
        }
        sums
    }
}

/// Where a tile writes: run `h` of row `r` at `rows[r] + at[h]` (rows `≥ R` unused); with
/// `add` it adds to what is there, and `bias[r]` is added to row `r` if given.
#[derive(Clone, Copy)]
struct Target {
    rows: [*mut f32; MR],
    at: [usize; NV],
    add: bool,
    bias: Option<[f32; MR]>,
}

/// Writes `sums` to `t`; with `MASKED`, only the lanes of `masks`.
///
/// # Safety
/// AVX2; every `t.rows[r] + t.at[h]` with `r < R` addresses the lanes written.
#[inline(always)]
unsafe fn write<const R: usize, const MASKED: bool>(
    sums: &Sums<R>,
    t: &Target,
    masks: &[__m256i; NV],
) {
    // SAFETY: the caller's contract.
    unsafe {
        for (r, (sums, &row)) in sums.iter().zip(&t.rows).enumerate() {
            for (h, (&sum, &at)) in sums.iter().zip(&t.at).enumerate() {
                let out = row.add(at);
                let mut sum = sum;
                if t.add {
                    let old = if MASKED {
                        _mm256_maskload_ps(out, masks[h])
                    } else {
                        _mm256_loadu_ps(out)
                    };
                    sum = _mm256_add_ps(old, sum);
                }
                if let Some(bias) = t.bias {
                    sum = _mm256_add_ps(sum, _mm256_set1_ps(bias[r]));
                }
                if MASKED {
                    _mm256_maskstore_ps(out, masks[h], sum);
                } else {
                    _mm256_storeu_ps(out, sum);
                }
            }
        }
    }
}

/// One tile of `R` rows over the runs `runs`, read at `b` and written to `t`.
///
/// # Safety
/// As [`tile_sums`] and [`write()`].
#[inline(always)]
unsafe fn tile<const R: usize>(
    a: *const f32,
    b: [*const f32; NV],
    offsets: &[isize],
    runs: &[Run; NV],
    t: &Target,
) {
    // SAFETY: the caller's contract.
    unsafe {
        if runs.iter().all(|run| run.lanes == 8) {
            let all = [_mm256_set1_epi32(-1); NV];
            write::<R, false>(&tile_sums::<R, false>(a, b, offsets, &all), t, &all);
        } else {
            let masks = masks(runs);
            write::<R, true>(&tile_sums::<R, true>(a, b, offsets, &masks), t, &masks);
        }
    }
}

/// [`tile`] with `rows` (1 to [`MR`]) rows.
///
/// # Safety
/// As [`tile`].
#[inline(always)]
unsafe fn tiles(
    rows: usize,
    a: *const f32,
    b: [*const f32; NV],
    offsets: &[isize],
    runs: &[Run; NV],
    t: &Target,
) {
    // SAFETY: the caller's contract, for `rows` rows.
    unsafe {
        match rows {
            6 => tile::<6>(a, b, offsets, runs, t),
            5 => tile::<5>(a, b, offsets, runs, t),
            4 => tile::<4>(a, b, offsets, runs, t),
            3 => tile::<3>(a, b, offsets, runs, t),
            2 => tile::<2>(a, b, offsets, runs, t),
            _ => tile::<1>(a, b, offsets, runs, t),
        }
    }
}

/// `rows` (at most `MR`) items from `first`, the last repeated to fill the tile.
fn row_of(first: usize, rows: usize, r: usize) -> usize {
    first + r.min(rows - 1)
}

/// `W` (`[O, ck]`) packed for the forward tiles: per group and run of [`MR`] output
/// channels, `ck` steps of `MR` weights (zeros beyond the group's channels).
fn pack_rows(w: &[f32], p: &Plan) -> Vec<f32> {
    let panels = p.og.div_ceil(MR);
    let mut packed = vec![0.0; p.groups * panels * p.ck * MR];
    for (i, step) in packed.chunks_exact_mut(MR).enumerate() {
        let (k, panel) = (i % p.ck, i / p.ck);
        let (g, first) = (panel / panels, panel % panels * MR);
        for (r, v) in step.iter_mut().enumerate() {
            if first + r < p.og {
                *v = w[(g * p.og + first + r) * p.ck + k];
            }
        }
    }
    packed
}

/// `Wᵀ` packed for the input tangent's tiles: per group and run of [`MR`] taps in the order
/// of `scatter`, `og` steps of `MR` weights (zeros beyond the group's taps).
fn pack_taps(w: &[f32], p: &Plan) -> Vec<f32> {
    let panels = p.ck.div_ceil(MR);
    let mut packed = vec![0.0; p.groups * panels * p.og * MR];
    for (i, step) in packed.chunks_exact_mut(MR).enumerate() {
        let (o, panel) = (i % p.og, i / p.og);
        let (g, first) = (panel / panels, panel % panels * MR);
        for (r, v) in step.iter_mut().enumerate() {
            if let Some(&k) = p.scatter.get(first + r) {
                *v = w[(g * p.og + o) * p.ck + k];
            }
        }
    }
    packed
}

/// The forward convolution of one padded image `x` into its output block `y`, every element
/// of which it writes (the runs cover each output row, the tiles every output channel).
///
/// # Safety
/// AVX2 and FMA; `x` holds the padded image (`C·Hp·Wp`), `y` `O·oh·ow` elements, `packed`
/// is [`pack_rows`]'s, `bias` (if any) `O` elements.
#[target_feature(enable = "avx2,fma")]
unsafe fn forward_image(
    p: &Plan,
    x: &[f32],
    packed: &[f32],
    bias: Option<&[f32]>,
    y: &mut [MaybeUninit<f32>],
) {
    let panels = p.og.div_ceil(MR);
    let (x, y) = (x.as_ptr(), y.as_mut_ptr().cast::<f32>());
    for g in 0..p.groups {
        // SAFETY: every offset is inside the buffers the caller describes: the group's
        // channels, a run's pixels `(oy, ox)` with `ox < ow`, read at `oy + ki·d₀ < Hp`,
        // `ox + kj·d₁ < Wp`; the tile reads and writes only the runs' lanes.
        unsafe {
            let xg = x.add(g * p.cg * p.padded_plane());
            for runs in &p.runs {
                let b = runs.map(|run| xg.add(run.image));
                for panel in 0..panels {
                    let (first, rows) = (panel * MR, MR.min(p.og - panel * MR));
                    let a = packed.as_ptr().add((g * panels + panel) * p.ck * MR);
                    let o = |r| g * p.og + row_of(first, rows, r);
                    let t = Target {
                        rows: std::array::from_fn(|r| y.add(o(r) * p.out_plane())),
                        at: runs.map(|run| run.out),
                        add: false,
                        bias: bias.map(|b| std::array::from_fn(|r| b[o(r)])),
                    };
                    tiles(rows, a, b, &p.offsets, runs, &t);
                }
            }
        }
    }
}

/// Adds the input tangent of one image, from its output tangent `dy`, into the padded
/// image `dx`.
///
/// # Safety
/// AVX2 and FMA; `dx` holds `C·Hp·Wp` elements, `dy` `O·oh·ow`, `packed` is
/// [`pack_taps`]'s and `steps[o] = o·oh·ow` for `o < og`.
#[target_feature(enable = "avx2,fma")]
unsafe fn input_image(p: &Plan, dy: &[f32], packed: &[f32], steps: &[isize], dx: &mut [f32]) {
    let panels = p.ck.div_ceil(MR);
    let (dy, dx) = (dy.as_ptr(), dx.as_mut_ptr());
    for g in 0..p.groups {
        // SAFETY: as in `forward_image`, with the roles of the image and the output swapped:
        // the tile reads the group's rows of `dy` and adds into the padded image where its
        // taps read in the forward pass.
        unsafe {
            let (dyg, dxg) = (
                dy.add(g * p.og * p.out_plane()),
                dx.add(g * p.cg * p.padded_plane()),
            );
            for runs in &p.runs {
                let b = runs.map(|run| dyg.add(run.out));
                for panel in 0..panels {
                    let (first, rows) = (panel * MR, MR.min(p.ck - panel * MR));
                    let a = packed.as_ptr().add((g * panels + panel) * p.og * MR);
                    let t = Target {
                        rows: std::array::from_fn(|r| {
                            dxg.offset(p.offsets[p.scatter[row_of(first, rows, r)]])
                        }),
                        at: runs.map(|run| run.image),
                        add: true,
                        bias: None,
                    };
                    tiles(rows, a, b, steps, runs, &t);
                }
            }
        }
    }
}

/// Transposes one image's output tangent `dy` (`[O, oh·ow]`) into `out`, laid out
/// `[groups, chunks, oh·ow, NR_W]`: per group, blocks of [`NR_W`] output channels with the
/// pixels outermost. Lanes beyond a group's channels are not written (they stay zero).
///
/// # Safety
/// AVX2, as for every convolution with a [`Plan`] ([`Plan::checked`]).
unsafe fn transpose_blocks(p: &Plan, dy: &[f32], out: &mut [f32]) {
    let (l, chunks) = (p.out_plane(), p.og.div_ceil(NR_W));
    for g in 0..p.groups {
        for first in (0..p.og).step_by(8) {
            let rows = &dy[(g * p.og + first) * l..];
            let block = &mut out[(g * chunks + first / NR_W) * l * NR_W + first % NR_W..];
            if first + 8 <= p.og {
                // SAFETY: AVX2 (the caller's contract); rows `first..first + 8` are the
                // group's, and the block holds `l` pixels of `NR_W` lanes from lane
                // `first % NR_W ≤ NR_W − 8` (`first` is a multiple of 8).
                unsafe { transpose8(&rows[..8 * l], l, block) };
                continue;
            }
            for (r, row) in rows
                .chunks_exact(l)
                .take(p.og.min(first + 8) - first)
                .enumerate()
            {
                for (j, &v) in row.iter().enumerate() {
                    block[j * NR_W + r] = v;
                }
            }
        }
    }
}

/// Eight rows of `l` elements (`rows`, row stride `l`) into `l` rows of eight lanes `NR_W`
/// apart in `out`.
///
/// # Safety
/// AVX2; `out` holds `(l − 1)·NR_W + 8` elements.
#[target_feature(enable = "avx2")]
unsafe fn transpose8(rows: &[f32], l: usize, out: &mut [f32]) {
    let full = l / 8 * 8;
    // SAFETY: loads read `rows[i·l + j..][..8]` with `j + 8 ≤ full ≤ l`, stores write
    // `out[(j + t)·NR_W..][..8]` with `j + t < l`.
    unsafe {
        let (src, dst) = (rows.as_ptr(), out.as_mut_ptr());
        for j in (0..full).step_by(8) {
            let r: [__m256; 8] = std::array::from_fn(|i| _mm256_loadu_ps(src.add(i * l + j)));
            // Pairs, then quads, then halves: the standard 8 × 8 transpose in 24 shuffles.
            let t0 = _mm256_unpacklo_ps(r[0], r[1]);
            let t1 = _mm256_unpackhi_ps(r[0], r[1]);
            let t2 = _mm256_unpacklo_ps(r[2], r[3]);
            let t3 = _mm256_unpackhi_ps(r[2], r[3]);
            let t4 = _mm256_unpacklo_ps(r[4], r[5]);
            let t5 = _mm256_unpackhi_ps(r[4], r[5]);
            let t6 = _mm256_unpacklo_ps(r[6], r[7]);
            let t7 = _mm256_unpackhi_ps(r[6], r[7]);
            let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
            let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
            let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
            let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
            let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
            let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
            let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
            let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
            let columns = [
                _mm256_permute2f128_ps::<0x20>(s0, s4),
                _mm256_permute2f128_ps::<0x20>(s1, s5),
                _mm256_permute2f128_ps::<0x20>(s2, s6),
                _mm256_permute2f128_ps::<0x20>(s3, s7),
                _mm256_permute2f128_ps::<0x31>(s0, s4),
                _mm256_permute2f128_ps::<0x31>(s1, s5),
                _mm256_permute2f128_ps::<0x31>(s2, s6),
                _mm256_permute2f128_ps::<0x31>(s3, s7),
            ];
            for (t, &column) in columns.iter().enumerate() {
                _mm256_storeu_ps(dst.add((j + t) * NR_W), column);
            }
        }
        for j in full..l {
            for i in 0..8 {
                *dst.add(j * NR_W + i) = *src.add(i * l + j);
            }
        }
    }
}

/// Adds the weight tangent of one image into `dwt` (`[groups, chunks, ck, NR_W]`), from the
/// padded image `x` and its transposed output tangent `dyt` ([`transpose_blocks`]).
///
/// # Safety
/// AVX2 and FMA; the buffers hold what their layouts say.
#[target_feature(enable = "avx2,fma")]
unsafe fn weight_image(p: &Plan, x: &[f32], dyt: &[f32], dwt: &mut [f32]) {
    let ([oh, ow], wp) = (p.out, p.padded[1]);
    let (l, chunks) = (p.out_plane(), p.og.div_ceil(NR_W));
    let (x, dyt, dwt) = (x.as_ptr(), dyt.as_ptr(), dwt.as_mut_ptr());
    for g in 0..p.groups {
        // SAFETY: rows read the group's padded channels at `offset[k] + oy·Wp + ox` with
        // `oy < oh`, `ox < ow` (inside the plane, as in `forward_image`); `dyt`'s block holds
        // `l` rows of `NR_W` lanes, `dwt`'s `ck` rows of `NR_W`.
        unsafe {
            let xg = x.add(g * p.cg * p.padded_plane());
            for chunk in 0..chunks {
                let block = dyt.add((g * chunks + chunk) * l * NR_W);
                let out = dwt.add((g * chunks + chunk) * p.ck * NR_W);
                for first in (0..p.ck).step_by(MR_W) {
                    let rows = MR_W.min(p.ck - first);
                    let image: [*const f32; MR_W] =
                        std::array::from_fn(|r| xg.offset(p.offsets[row_of(first, rows, r)]));
                    let mut sums = [[_mm256_setzero_ps(); 2]; MR_W];
                    for oy in 0..oh {
                        let (b, at) = (block.add(oy * ow * NR_W), oy * wp);
                        for ox in 0..ow {
                            let v = [
                                _mm256_loadu_ps(b.add(ox * NR_W)),
                                _mm256_loadu_ps(b.add(ox * NR_W + 8)),
                            ];
                            for (row, sums) in image.iter().zip(sums.iter_mut()) {
                                let x = _mm256_broadcast_ss(&*row.add(at + ox));
                                sums[0] = _mm256_fmadd_ps(x, v[0], sums[0]);
                                sums[1] = _mm256_fmadd_ps(x, v[1], sums[1]);
                            }
                        }
                    }
                    for (r, sums) in sums.iter().enumerate().take(rows) {
                        let target = out.add((first + r) * NR_W);
                        for (h, &sum) in sums.iter().enumerate() {
                            let old = _mm256_loadu_ps(target.add(8 * h));
                            _mm256_storeu_ps(target.add(8 * h), _mm256_add_ps(old, sum));
                        }
                    }
                }
            }
        }
    }
}

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
/// If [`supported`] is false (a programmer error: the caller checks it).
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
/// If [`supported`] is false.
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
/// If [`supported`] is false.
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
