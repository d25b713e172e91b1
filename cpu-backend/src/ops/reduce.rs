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
    let v = view(data, shape);
    let mut out = Vec::with_capacity(data.len() / shape[axis].max(1));
    let lanes = v.lanes(Axis(axis));
    // `lanes` iterates the other axes in row-major order, matching the keepdim output.
    for lane in lanes {
        let mut best = 0usize;
        let mut best_value = T::neg_infinity();
        for (i, &x) in lane.iter().enumerate() {
            if x > best_value || (i == 0) || x.is_nan() && !best_value.is_nan() {
                best = i;
                best_value = x;
            }
        }
        out.push(best as u32);
    }
    out
}
