//! Reductions over axes and `argmax`.

use super::elementwise::PAR_MIN;
use super::simd::wide;
use crate::storage::float_match;
use crate::{CpuStorage, ReduceOp};
use adjoint_backend::Real;
use rayon::prelude::*;

/// `op` over `axes` of `x` (of `shape`); the reduced axes are kept with size 1.
pub fn reduce(op: ReduceOp, x: &CpuStorage, shape: &[usize], axes: &[usize]) -> CpuStorage {
    float_match!(x, |v, Wrap| Wrap(reduce_typed(op, v, shape, axes)))
}

fn reduce_typed<T: Real + Send + Sync>(
    op: ReduceOp,
    data: &[T],
    shape: &[usize],
    axes: &[usize],
) -> Vec<T> {
    // One monomorphic copy of the loops per operation, so the inner loops hold no `match`.
    match op {
        ReduceOp::Sum => reduce_with(data, shape, axes, T::zero(), |a, x| a + x),
        ReduceOp::Max => reduce_with(data, shape, axes, op.identity(), |a, x| {
            ReduceOp::Max.combine(a, x)
        }),
        ReduceOp::Min => reduce_with(data, shape, axes, op.identity(), |a, x| {
            ReduceOp::Min.combine(a, x)
        }),
    }
}

/// Runs of adjacent axes that are all reduced or all kept, merged into one axis each:
/// `(length, reduced)`, outermost first. Reducing `[0, 2, 3]` of `[N, C, H, W]` gives
/// `[(N, true), (C, false), (H·W, true)]`.
fn merged_axes(shape: &[usize], axes: &[usize]) -> Vec<(usize, bool)> {
    let mut merged: Vec<(usize, bool)> = Vec::with_capacity(shape.len());
    for (a, &n) in shape.iter().enumerate() {
        let reduced = axes.contains(&a);
        match merged.last_mut() {
            Some((len, r)) if *r == reduced => *len *= n,
            _ => merged.push((n, reduced)),
        }
    }
    merged
}

/// `combine` over `data` grouped by [`merged_axes`]: one pass over the input in memory
/// order. The innermost merged axis is a contiguous run: folded into one output element
/// when it is reduced ([`fold_run`]), combined element by element into a row of the output
/// when it is kept; the odometer over the outer axes only moves the output offset.
fn reduce_with<T: Real + Send + Sync>(
    data: &[T],
    shape: &[usize],
    axes: &[usize],
    identity: T,
    combine: impl Fn(T, T) -> T + Copy + Send + Sync,
) -> Vec<T> {
    let merged = merged_axes(shape, axes);
    if let [(rows, true), (cols, false)] = merged[..] {
        return fold_columns(data, [rows, cols], identity, combine);
    }
    let kept: usize = merged.iter().filter(|m| !m.1).map(|m| m.0).product();
    let mut out = vec![identity; kept];
    let Some(&(run, run_reduced)) = merged.last() else {
        // Rank 0: one element and no axis, so the reduction is the element itself.
        return data.to_vec();
    };
    if data.is_empty() || run == 0 {
        return out;
    }
    let outer = &merged[..merged.len() - 1];
    // Output stride of each outer merged axis (0 for reduced ones).
    let mut strides = vec![0; outer.len()];
    let mut stride = if run_reduced { 1 } else { run };
    for (s, &(n, reduced)) in strides.iter_mut().zip(outer).rev() {
        if !reduced {
            *s = stride;
            stride *= n;
        }
    }
    let mut index = vec![0; outer.len()];
    let mut offset = 0;
    for chunk in data.chunks_exact(run) {
        if run_reduced {
            out[offset] = combine(out[offset], fold_run(chunk, identity, combine));
        } else {
            for (o, &x) in out[offset..offset + run].iter_mut().zip(chunk) {
                *o = combine(*o, x);
            }
        }
        // Advance the odometer over the outer axes, innermost first.
        for a in (0..outer.len()).rev() {
            index[a] += 1;
            offset += strides[a];
            if index[a] < outer[a].0 {
                break;
            }
            offset -= strides[a] * index[a];
            index[a] = 0;
        }
    }
    out
}

/// Columns that [`fold_columns`] combines at once: eight AVX2 vectors of `f32`, whose
/// running values stay in registers down all the rows.
const COLUMNS: usize = 64;

/// `combine` down the columns of a row-major `rows × cols` matrix into one row (a bias's
/// tangent, `Σᵢ z̄[i, :]`), each column in row order (the values of the general loop, to the
/// bit): blocks of [`COLUMNS`] columns, compiled for AVX2 where the CPU has it, split
/// between the threads from [`PAR_MIN`] elements on. The general loop added each row into
/// the output row in memory, baseline SSE2 on one thread: the MNIST MLP's two `128 × 512`
/// bias tangents were about 1% of its step's samples.
fn fold_columns<T: Real + Send + Sync>(
    data: &[T],
    [rows, cols]: [usize; 2],
    identity: T,
    combine: impl Fn(T, T) -> T + Copy + Send + Sync,
) -> Vec<T> {
    let mut out = vec![identity; cols];
    if rows == 0 || cols == 0 {
        return out;
    }
    let fold = |start: usize, out: &mut [T]| {
        wide(|| {
            for (b, out) in out.chunks_mut(COLUMNS).enumerate() {
                let j0 = start + b * COLUMNS;
                let mut acc = [identity; COLUMNS];
                for row in data.chunks_exact(cols) {
                    let row = &row[j0..j0 + out.len()];
                    for (a, &x) in acc.iter_mut().zip(row) {
                        *a = combine(*a, x);
                    }
                }
                out.copy_from_slice(&acc[..out.len()]);
            }
        })
    };
    let threads = rayon::current_num_threads();
    if rows * cols >= PAR_MIN && threads > 1 && cols > COLUMNS {
        let per = cols.div_ceil(threads).next_multiple_of(COLUMNS);
        out.par_chunks_mut(per)
            .enumerate()
            .for_each(|(i, out)| fold(i * per, out));
    } else {
        fold(0, &mut out);
    }
    out
}

/// `combine` over a contiguous run in eight independent lanes, so the loop vectorizes (one
/// running accumulator is a dependency chain the compiler may not reorder for floats).
fn fold_run<T: Real>(run: &[T], identity: T, combine: impl Fn(T, T) -> T + Copy) -> T {
    let mut lanes = [identity; 8];
    let chunks = run.chunks_exact(8);
    let tail = chunks
        .remainder()
        .iter()
        .fold(identity, |a, &x| combine(a, x));
    for chunk in chunks {
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            *lane = combine(*lane, x);
        }
    }
    lanes.iter().fold(tail, |a, &l| combine(a, l))
}

/// The index of the first largest element along `axis`, as `U32`.
pub fn argmax(x: &CpuStorage, shape: &[usize], axis: usize) -> CpuStorage {
    let ids = float_match!(x, |v, Wrap| argmax_typed(v, shape, axis));
    CpuStorage::U32(ids)
}

fn argmax_typed<T: Real>(data: &[T], shape: &[usize], axis: usize) -> Vec<u32> {
    let len = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    if len == 0 || inner == 0 {
        return vec![0; outer * inner];
    }
    assert!(
        len < 1 << 24,
        "argmax: an axis of {len} elements is too long"
    );
    // Row-major sweeps over the `len` slices of `inner` contiguous values of each outer index
    // (cache-friendly whatever the axis), in two passes that vectorize: the maximum of each
    // lane (NaN wins), then the first position holding it, found with arithmetic on `T`
    // (`hit·(1 − found)`) rather than branches. Indices stay exact in `T` below 2^24.
    let mut out = Vec::with_capacity(outer * inner);
    let (mut best, mut ids, mut found) = (
        vec![T::zero(); inner],
        vec![T::zero(); inner],
        vec![T::zero(); inner],
    );
    for block in data.chunks(len * inner) {
        best.copy_from_slice(&block[..inner]);
        for slice in block.chunks(inner).skip(1) {
            for (b, &x) in best.iter_mut().zip(slice) {
                *b = if (x > *b) | x.is_nan() { x } else { *b };
            }
        }
        ids.fill(T::zero());
        found.fill(T::zero());
        for (j, slice) in block.chunks(inner).enumerate() {
            let j = T::from(j).expect("checked above");
            for (((id, f), &b), &x) in ids.iter_mut().zip(&mut found).zip(&best).zip(slice) {
                let hit = if (x == b) | (x.is_nan() & b.is_nan()) {
                    T::one()
                } else {
                    T::zero()
                };
                let first = hit * (T::one() - *f);
                *id = *id + first * j;
                *f = *f + first;
            }
        }
        out.extend(ids.iter().map(|&i| i.to_u32().expect("an index")));
    }
    out
}
