//! Gathers by integer ids: `index_select`, its adjoint `index_add`, and `one_hot`.

use crate::storage::{any_match, float_match};
use crate::{CpuStorage, DType};
use adjoint_backend::Real;

/// Splits `shape` around `axis` into (outer, axis length, inner).
fn split(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    let outer = shape[..axis].iter().product();
    let inner = shape[axis + 1..].iter().product();
    (outer, shape[axis], inner)
}

/// `out[o, j, i] = x[o, ids[j], i]`.
pub fn index_select(x: &CpuStorage, shape: &[usize], axis: usize, ids: &CpuStorage) -> CpuStorage {
    let ids = ids.as_u32();
    let (outer, len, inner) = split(shape, axis);
    any_match!(x, |v, Wrap| {
        let mut out = Vec::with_capacity(outer * ids.len() * inner);
        for o in 0..outer {
            for &id in ids {
                let start = (o * len + id as usize) * inner;
                out.extend_from_slice(&v[start..start + inner]);
            }
        }
        Wrap(out)
    })
}

/// Zeros of `shape` with `src[o, j, i]` added at `[o, ids[j], i]`.
pub fn index_add(src: &CpuStorage, shape: &[usize], axis: usize, ids: &CpuStorage) -> CpuStorage {
    let ids = ids.as_u32();
    let (outer, len, inner) = split(shape, axis);
    float_match!(src, |v, Wrap| Wrap(scatter(v, ids, (outer, len, inner))))
}

fn scatter<T: Real>(src: &[T], ids: &[u32], (outer, len, inner): (usize, usize, usize)) -> Vec<T> {
    let mut out = vec![T::zero(); outer * len * inner];
    for o in 0..outer {
        for (j, &id) in ids.iter().enumerate() {
            let from = (o * ids.len() + j) * inner;
            let to = (o * len + id as usize) * inner;
            for (d, &s) in out[to..to + inner].iter_mut().zip(&src[from..from + inner]) {
                *d = *d + s;
            }
        }
    }
    out
}

/// `out[i, c] = (ids[i] == c)`; an id at or above `classes` gives a row of zeros.
pub fn one_hot(ids: &CpuStorage, classes: usize, dtype: DType) -> CpuStorage {
    let ids = ids.as_u32();
    let mut out = vec![0.0; ids.len() * classes];
    for (i, &id) in ids.iter().enumerate() {
        // An id at or above `classes` (an ignored label) keeps its row of zeros.
        if (id as usize) < classes {
            out[i * classes + id as usize] = 1.0;
        }
    }
    CpuStorage::from_f64(&out, dtype)
}
