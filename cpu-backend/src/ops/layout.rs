//! Layout primitives: permute, broadcast, narrow, cat.

use super::view;
use crate::CpuStorage;
use crate::storage::any_match;
use ndarray::{Axis, IxDyn, Slice};

/// A contiguous copy with permuted axes.
pub fn permute(x: &CpuStorage, shape: &[usize], perm: &[usize]) -> CpuStorage {
    any_match!(x, |v, Wrap| {
        let p = view(v, shape).permuted_axes(IxDyn(perm));
        Wrap(p.as_standard_layout().iter().copied().collect())
    })
}

/// `x` repeated along its size-1 axes up to `out_shape`.
pub fn broadcast(x: &CpuStorage, shape: &[usize], out_shape: &[usize]) -> CpuStorage {
    any_match!(x, |v, Wrap| {
        let b = view(v, shape);
        let b = b
            .broadcast(IxDyn(out_shape))
            .expect("shape broadcasts to out_shape");
        Wrap(b.iter().copied().collect())
    })
}

/// Elements `start..start + len` along `axis`.
pub fn narrow(
    x: &CpuStorage,
    shape: &[usize],
    axis: usize,
    start: usize,
    len: usize,
) -> CpuStorage {
    any_match!(x, |v, Wrap| {
        let s = view(v, shape);
        let s = s.slice_axis(Axis(axis), Slice::from(start..start + len));
        Wrap(s.iter().copied().collect())
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
