//! Shape arithmetic: NumPy broadcasting and axis normalisation.
//!
//! # Broadcasting
//! Two shapes broadcast when, aligned at their last axes, every pair of sizes is equal or one
//! of them is 1; the missing leading axes of the shorter shape count as 1. The result takes the
//! larger size on each axis. This is exactly NumPy's rule; nothing else is broadcast implicitly
//! (no rank promotion of matrices to batches except in `matmul`'s batch axes, no scalar
//! conversion of one-element tensors).

use super::Shape;
use super::error::{TensorError, ensure};

/// The broadcast shape of `a` and `b`.
pub fn broadcast_shapes(
    op: &'static str,
    a: &[usize],
    b: &[usize],
) -> Result<Vec<usize>, TensorError> {
    broadcast_shape(op, a, b).map(|s| s.to_vec())
}

/// [`broadcast_shapes`] as an inline [`Shape`]: what the ops use, so that checking a shape
/// allocates nothing up to rank 4.
pub(crate) fn broadcast_shape(
    op: &'static str,
    a: &[usize],
    b: &[usize],
) -> Result<Shape, TensorError> {
    // The common cases first, without building aligned copies: equal shapes, and one shape
    // a suffix of the other (a bias row added to a batch of rows).
    let is_suffix = |short: &[usize], long: &[usize]| {
        short.len() <= long.len()
            && short
                .iter()
                .rev()
                .zip(long.iter().rev())
                .all(|(x, y)| x == y)
    };
    if is_suffix(b, a) {
        return Ok(super::shape_of(a));
    }
    if is_suffix(a, b) {
        return Ok(super::shape_of(b));
    }
    let rank = a.len().max(b.len());
    let (pa, pb) = (aligned(a, rank), aligned(b, rank));
    let mut out = Shape::with_capacity(rank);
    for (&x, &y) in pa.iter().zip(pb.iter()) {
        ensure(x == y || x == 1 || y == 1, op, || {
            format!(
                "shapes {a:?} and {b:?} do not broadcast (sizes must match or be 1, aligned at the last axis)"
            )
        })?;
        out.push(if x == 1 { y } else { x });
    }
    Ok(out)
}

/// `shape` with leading 1s up to `rank`, inline up to rank 4 (no allocation per elementwise
/// op).
pub fn aligned(shape: &[usize], rank: usize) -> Shape {
    let mut out = Shape::from_elem(1, rank);
    out[rank - shape.len()..].copy_from_slice(shape);
    out
}

/// `axis` checked against `rank`; negative values count from the end (`-1` is the last).
pub fn normalize_axis(
    op: &'static str,
    axis: isize,
    rank: usize,
    shape: &[usize],
) -> Result<usize, TensorError> {
    let a = if axis < 0 { axis + rank as isize } else { axis };
    ensure(a >= 0 && (a as usize) < rank, op, || {
        format!("axis {axis} is out of range for shape {shape:?}")
    })?;
    Ok(a as usize)
}

/// Distinct sorted axes, each checked (negative values count from the end).
pub fn normalize_axes(
    op: &'static str,
    axes: &[isize],
    shape: &[usize],
) -> Result<Vec<usize>, TensorError> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        out.push(normalize_axis(op, a, shape.len(), shape)?);
    }
    out.sort_unstable();
    let before = out.len();
    out.dedup();
    ensure(out.len() == before, op, || {
        format!("axes {axes:?} repeat an axis of shape {shape:?}")
    })?;
    Ok(out)
}

/// The axes of `from` (aligned to its rank) that must be summed to get `to` after broadcasting.
pub fn reduced_axes(from: &[usize], to: &[usize]) -> Shape {
    let lead = from.len() - to.len();
    (0..from.len())
        .filter(|&i| i < lead || (to[i - lead] == 1 && from[i] != 1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::broadcast_shapes;

    #[test]
    fn broadcast_shapes_of_every_kind() {
        let ok = |a: &[usize], b: &[usize]| broadcast_shapes("op", a, b).unwrap();
        // Equal shapes, one a suffix of the other (either way, scalars included), and sizes
        // of 1 on either side.
        assert_eq!(ok(&[2, 3], &[2, 3]), vec![2, 3]);
        assert_eq!(ok(&[4, 1, 32], &[32]), vec![4, 1, 32]);
        assert_eq!(ok(&[32], &[4, 1, 32]), vec![4, 1, 32]);
        assert_eq!(ok(&[], &[2, 3]), vec![2, 3]);
        assert_eq!(ok(&[2, 3], &[]), vec![2, 3]);
        assert_eq!(ok(&[3, 1], &[1, 5]), vec![3, 5]);
        assert_eq!(ok(&[1, 3], &[3, 1]), vec![3, 3]);
        assert_eq!(ok(&[2, 1, 4], &[3, 1]), vec![2, 3, 4]);
        let err = broadcast_shapes("add", &[2, 3], &[4])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("add") && err.contains("[2, 3]") && err.contains("[4]"),
            "{err}"
        );
    }
}
