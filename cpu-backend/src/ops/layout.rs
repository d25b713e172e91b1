//! Layout primitives: permute, broadcast, narrow, cat.

use super::elementwise::PAR_MIN;
use super::{into_vec, view};
use crate::CpuStorage;
use crate::storage::any_match;
use ndarray::IxDyn;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// A contiguous copy with permuted axes. A swap of the last two axes (`Tensor::t`, the
/// common case) is a tiled transpose of each matrix ([`transpose_matrices`]); any other
/// permutation is ndarray's copy into standard layout.
pub fn permute(x: &CpuStorage, shape: &[usize], perm: &[usize]) -> CpuStorage {
    let r = shape.len();
    let swaps_last_two = r >= 2
        && perm[r - 2] == r - 1
        && perm[r - 1] == r - 2
        && perm[..r - 2].iter().enumerate().all(|(i, &p)| i == p);
    any_match!(x, |v, Wrap| {
        if swaps_last_two {
            Wrap(transpose_matrices(v, shape[r - 2], shape[r - 1]))
        } else {
            let p = view(v, shape).permuted_axes(IxDyn(perm));
            Wrap(into_vec(p.as_standard_layout().into_owned()))
        }
    })
}

/// The edge of [`transpose_matrices`]' tiles: a tile's 16 source rows stay in L1 while its
/// 16 destination rows are written, 64 bytes of each for 4-byte elements.
const TILE: usize = 16;

/// `v` as consecutive `rows × cols` row-major matrices, each transposed into a `cols × rows`
/// one. Each band of [`TILE`] destination rows is filled tile by tile (the band's source
/// columns read from `TILE` source rows at a time); bands run in parallel for long buffers.
fn transpose_matrices<T: Copy + Send + Sync>(v: &[T], rows: usize, cols: usize) -> Vec<T> {
    let size = rows * cols;
    if v.is_empty() || size == 0 {
        return Vec::new();
    }
    assert!(
        v.len().is_multiple_of(size),
        "permute: a buffer of {} elements does not hold whole {rows} × {cols} matrices",
        v.len()
    );
    let mut out = Vec::with_capacity(v.len());
    let dst = &mut out.spare_capacity_mut()[..v.len()];
    for (src, dst) in v.chunks_exact(size).zip(dst.chunks_exact_mut(size)) {
        // Destination rows `j0..j0 + band.len() / rows`: source columns `j0..`.
        let fill = |(b, band): (usize, &mut [MaybeUninit<T>])| {
            let j0 = b * TILE;
            for i0 in (0..rows).step_by(TILE) {
                let i1 = (i0 + TILE).min(rows);
                for (j, row) in band.chunks_exact_mut(rows).enumerate() {
                    for i in i0..i1 {
                        row[i].write(src[i * cols + j0 + j]);
                    }
                }
            }
        };
        if v.len() >= PAR_MIN {
            dst.par_chunks_mut(TILE * rows).enumerate().for_each(fill);
        } else {
            dst.chunks_mut(TILE * rows).enumerate().for_each(fill);
        }
    }
    // SAFETY: the capacity is `v.len()`, a whole number of matrices (asserted), and every element of every destination matrix was written: its
    // bands cover its `cols` rows, each band row's `rows` elements by the tiles `i0..i1`.
    unsafe { out.set_len(v.len()) };
    out
}

/// `x` repeated along its size-1 axes up to `out_shape` (`shape` has `out_shape`'s rank, or
/// fewer axes, aligned to its last ones).
///
/// The output is written run by run: its trailing axes that `x` does not repeat are one
/// contiguous run of `x` (copied), or, when `x` repeats all of its trailing axes, one element
/// repeated; an odometer over the axes before them gives each run's source.
pub fn broadcast(x: &CpuStorage, shape: &[usize], out_shape: &[usize]) -> CpuStorage {
    let rank = out_shape.len();
    assert!(
        shape.len() <= rank
            && shape
                .iter()
                .rev()
                .zip(out_shape.iter().rev())
                .all(|(&s, &o)| s == o || s == 1),
        "broadcast: {shape:?} does not broadcast to {out_shape:?}"
    );
    // `x`'s sizes aligned to `out_shape`, and its strides (0 along repeated axes).
    let mut from = vec![1; rank];
    from[rank - shape.len()..].copy_from_slice(shape);
    let mut strides = vec![0; rank];
    let mut step = 1;
    for a in (0..rank).rev() {
        if from[a] == out_shape[a] {
            strides[a] = step;
        }
        step *= from[a];
    }
    // The trailing axes of one run: all copied (sizes equal) or all repeated (`x`'s size 1).
    let copied = |a: usize| from[a] == out_shape[a];
    let last_copied = rank > 0 && copied(rank - 1);
    let mut lead = rank;
    while lead > 0 && (copied(lead - 1) == last_copied || out_shape[lead - 1] == 1) {
        lead -= 1;
    }
    let run: usize = out_shape[lead..].iter().product();
    let total: usize = out_shape.iter().product();
    any_match!(x, |v, Wrap| {
        let mut out = Vec::with_capacity(total);
        if total > 0 {
            let mut index = vec![0; lead];
            loop {
                let src: usize = index.iter().zip(&strides).map(|(i, s)| i * s).sum();
                if last_copied {
                    out.extend_from_slice(&v[src..src + run]);
                } else {
                    out.resize(out.len() + run, v[src]);
                }
                // The next index of the leading axes, the last one fastest.
                let Some(a) = (0..lead).rev().find(|&a| index[a] + 1 < out_shape[a]) else {
                    break;
                };
                index[a] += 1;
                index[a + 1..].fill(0);
            }
        }
        Wrap(out)
    })
}

/// Elements `start..start + len` along `axis`: for each index of the leading axes, one
/// contiguous block of `len × trailing sizes` elements.
pub fn narrow(
    x: &CpuStorage,
    shape: &[usize],
    axis: usize,
    start: usize,
    len: usize,
) -> CpuStorage {
    assert!(
        start + len <= shape[axis],
        "narrow: {start}..{} is out of bounds of axis {axis} of {shape:?}",
        start + len
    );
    let inner: usize = shape[axis + 1..].iter().product();
    let (row, block) = (shape[axis] * inner, len * inner);
    any_match!(x, |v, Wrap| {
        let mut out = Vec::with_capacity(v.len() / shape[axis].max(1) * len);
        if block > 0 {
            for src in v.chunks_exact(row) {
                out.extend_from_slice(&src[start * inner..start * inner + block]);
            }
        }
        Wrap(out)
    })
}

/// Concatenation along `axis`: for each index of the leading axes, each part's contiguous
/// block of `size along axis × trailing sizes` elements in turn (plain copies; a loop that
/// stacks its per-iteration rows does this with many small parts).
pub fn cat(parts: &[(&CpuStorage, &[usize])], axis: usize) -> CpuStorage {
    let (first, first_shape) = *parts.first().expect("cat of at least one part");
    let outer: usize = first_shape[..axis].iter().product();
    any_match!(first, |_v, Wrap| {
        let blocks: Vec<(&[_], usize)> = parts
            .iter()
            .map(|(s, shape)| match s {
                Wrap(d) => (d.as_slice(), shape[axis..].iter().product()),
                other => panic!(
                    "cat: dtypes {:?} and {:?} differ",
                    first.dtype(),
                    other.dtype()
                ),
            })
            .collect();
        let mut out = Vec::with_capacity(blocks.iter().map(|(d, _)| d.len()).sum());
        for o in 0..outer {
            for &(d, block) in &blocks {
                out.extend_from_slice(&d[o * block..(o + 1) * block]);
            }
        }
        Wrap(out)
    })
}
