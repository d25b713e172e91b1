//! One image's convolution, input tangent and weight tangent, and the packed weights and
//! transposed output tangents they read.

use std::arch::x86_64::{
    __m256, _mm256_add_ps, _mm256_broadcast_ss, _mm256_fmadd_ps, _mm256_loadu_ps,
    _mm256_setzero_ps, _mm256_storeu_ps,
};

use super::plan::{MR, MR_W, NR_W, Plan};
use super::tile::{Target, row_of, tiles};
use std::mem::MaybeUninit;

/// `W` (`[O, ck]`) packed for the forward tiles: per group and run of [`MR`] output
/// channels, `ck` steps of `MR` weights (zeros beyond the group's channels).
pub(super) fn pack_rows(w: &[f32], p: &Plan) -> Vec<f32> {
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
pub(super) fn pack_taps(w: &[f32], p: &Plan) -> Vec<f32> {
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
pub(super) unsafe fn forward_image(
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
pub(super) unsafe fn input_image(
    p: &Plan,
    dy: &[f32],
    packed: &[f32],
    steps: &[isize],
    dx: &mut [f32],
) {
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
pub(super) unsafe fn transpose_blocks(p: &Plan, dy: &[f32], out: &mut [f32]) {
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
    // `out[(j + t)·NR_W..][..8]` with `j + t < l`; the transpose needs AVX, which this build
    // has.
    unsafe {
        let (src, dst) = (rows.as_ptr(), out.as_mut_ptr());
        for j in (0..full).step_by(8) {
            let r: [__m256; 8] = std::array::from_fn(|i| _mm256_loadu_ps(src.add(i * l + j)));
            let columns = crate::ops::simd::transpose8x8(r);
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
pub(super) unsafe fn weight_image(p: &Plan, x: &[f32], dyt: &[f32], dwt: &mut [f32]) {
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
