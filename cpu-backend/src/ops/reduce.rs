//! Reductions over axes and `argmax`.

use super::{into_vec, view};
use crate::storage::float_match;
use crate::{CpuStorage, ReduceOp};
use adjoint_backend::Real;
use ndarray::{Axis, IxDyn};

/// `op` over `axes` of `x` (of `shape`); the reduced axes are kept with size 1.
pub fn reduce(op: ReduceOp, x: &CpuStorage, shape: &[usize], axes: &[usize]) -> CpuStorage {
    float_match!(x, |v, Wrap| Wrap(reduce_typed(op, v, shape, axes)))
}

fn reduce_typed<T: Real>(op: ReduceOp, data: &[T], shape: &[usize], axes: &[usize]) -> Vec<T> {
    if axes.len() == shape.len() || data.len() <= 1 && !data.is_empty() {
        let all = data
            .iter()
            .fold(op.identity(), |acc, &x| op.combine(acc, x));
        return vec![all];
    }
    // Fast path: reducing the trailing axes of a row-major buffer is a fold per row.
    let trailing = axes
        .iter()
        .enumerate()
        .all(|(i, &a)| a == shape.len() - axes.len() + i);
    if trailing {
        let row: usize = axes.iter().map(|&a| shape[a]).product();
        if row == 0 {
            let rows: usize = shape[..shape.len() - axes.len()].iter().product();
            return vec![op.identity(); rows];
        }
        return data
            .chunks(row)
            .map(|r| r.iter().fold(op.identity(), |acc, &x| op.combine(acc, x)))
            .collect();
    }
    let mut current = view(data, shape).to_owned();
    for &a in axes {
        current = current
            .fold_axis(Axis(a), op.identity(), |&acc, &x| op.combine(acc, x))
            .insert_axis(Axis(a));
    }
    let out_shape: Vec<usize> = current.shape().to_vec();
    into_vec(
        current
            .into_shape_with_order(IxDyn(&out_shape))
            .expect("same length"),
    )
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
