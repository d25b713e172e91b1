//! The register tiles: the sums of `R` rows over two runs of eight pixels, read from the image
//! through a table of offsets, and their stores.

use std::arch::x86_64::{
    __m256, __m256i, _mm256_add_ps, _mm256_broadcast_ss, _mm256_cmpgt_epi32, _mm256_fmadd_ps,
    _mm256_loadu_ps, _mm256_maskload_ps, _mm256_maskstore_ps, _mm256_set1_epi32, _mm256_set1_ps,
    _mm256_setr_epi32, _mm256_setzero_ps, _mm256_storeu_ps,
};

use super::plan::{MR, NV, Run};

/// The sums of one tile of `R` rows: `sums[r][h]` holds run `h` of row `r`.
type Sums<const R: usize> = [[__m256; NV]; R];

/// The lanes of each run of a tile as masks for `maskload`/`maskstore`: lane `i` of vector
/// `h` is set when `i < runs[h].lanes`.
#[inline(always)]
pub(super) fn masks(runs: &[Run; NV]) -> [__m256i; NV] {
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
pub(super) unsafe fn tile_sums<const R: usize, const MASKED: bool>(
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
pub(super) struct Target {
    pub(super) rows: [*mut f32; MR],
    pub(super) at: [usize; NV],
    pub(super) add: bool,
    pub(super) bias: Option<[f32; MR]>,
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
pub(super) unsafe fn tiles(
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
pub(super) fn row_of(first: usize, rows: usize, r: usize) -> usize {
    first + r.min(rows - 1)
}
