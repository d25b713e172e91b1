//! Layout primitives: permute, broadcast, narrow, cat.

use super::{into_vec, view};
use crate::CpuStorage;
use crate::storage::any_match;
use ndarray::{Axis, IxDyn, Slice, concatenate};

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

/// Concatenation along `axis`.
pub fn cat(parts: &[(&CpuStorage, &[usize])], axis: usize) -> CpuStorage {
    let first = parts.first().expect("cat of at least one part").0;
    any_match!(first, |_v, Wrap| {
        let views: Vec<_> = parts
            .iter()
            .map(|(s, sh)| match s {
                Wrap(d) => view(d, sh),
                other => panic!(
                    "cat: dtypes {:?} and {:?} differ",
                    first.dtype(),
                    other.dtype()
                ),
            })
            .collect();
        let joined = concatenate(Axis(axis), &views).expect("shapes agree off the axis");
        Wrap(into_vec(joined))
    })
}
