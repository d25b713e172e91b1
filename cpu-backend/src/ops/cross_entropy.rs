//! The mean softmax cross-entropy and its derivative in one pass over the scores
//! ([`Backend::cross_entropy`](adjoint_backend::Backend::cross_entropy)).
//!
//! Composed, the loss is nine calls (the one-hot matrix, the log-softmax, its product with
//! the one-hot matrix, the sum, the scaling; in the backward pass the exponential, the
//! difference and two scalings), each with a buffer of its own: for the MNIST MLP's
//! `[128, 10]` scores almost all of each call is fixed cost. Here the exponentials of one
//! copy of the scores give both the loss and its derivative. Built on the backend's own
//! log-softmax ([`super::softmax`]) instead, the loss and its derivative took a second pass of
//! exponentials and a buffer more: 5.4 µs against 2.4 at `[128, 10]` (26th session).

use super::math::Elementary;
use super::simd::wide;
use super::softmax::shift_row;
use crate::CpuStorage;
use crate::storage::float_match;
use adjoint_backend::Real;

/// `loss = −(1/N) Σᵢ log softmax(zᵢ)[labelᵢ]` of the `[n, c]` scores `z` (rows of `c`)
/// against `labels` (`n` ids below `c` or equal to `ignore`, checked by the caller), over the
/// `N` rows whose label is not `ignore` (0 when there are none), as a one-element buffer,
/// and, when `grad`, `∂loss/∂z = (softmax(z) − onehot) / N`, zero on the ignored rows.
///
/// With `mᵢ = max zᵢ` and `sᵢ = Σⱼ e^(zᵢⱼ − mᵢ)`: `log softmax(zᵢ)[l] = zᵢₗ − mᵢ − ln sᵢ`
/// and `softmax(zᵢ)ⱼ = e^(zᵢⱼ − mᵢ) / sᵢ`.
///
/// # Panics
/// If `labels` is not a `U32` buffer of `n` ids below `c` (or equal to `ignore`) or `z` not a
/// float buffer of `n · c` elements (the caller checks both).
pub fn cross_entropy(
    z: &CpuStorage,
    labels: &CpuStorage,
    [n, c]: [usize; 2],
    ignore: Option<u32>,
    grad: bool,
) -> (CpuStorage, Option<CpuStorage>) {
    let labels = labels.as_u32();
    assert!(
        labels.len() == n && z.len() == n * c,
        "cross_entropy: scores of {} elements and {} labels for shape [{n}, {c}]",
        z.len(),
        labels.len()
    );
    float_match!(z, |v, Wrap| {
        let (loss, g) = typed(v, labels, c, ignore, grad);
        (Wrap(vec![loss]), g.map(Wrap))
    })
}

fn typed<T: Real + Elementary>(
    z: &[T],
    labels: &[u32],
    c: usize,
    ignore: Option<u32>,
    grad: bool,
) -> (T, Option<Vec<T>>) {
    let counts = |l: &u32| Some(*l) != ignore;
    let rows = labels.iter().filter(|l| counts(l)).count();
    let scale = T::one() / T::from(rows.max(1)).expect("a row count is a float");
    if c == 0 {
        return (T::zero(), grad.then(Vec::new));
    }
    let mut e = z.to_vec();
    // Σᵢ (zᵢₗ − mᵢ), taken before the shifted scores become their exponentials (in the same
    // pass: as a pass of its own, the fused loss at `[128, 10]` took 2.15 µs against 1.89).
    let mut picked = T::zero();
    for (row, label) in e.chunks_exact_mut(c).zip(labels) {
        shift_row(row);
        if counts(label) {
            picked = picked + row[*label as usize];
        }
    }
    // One loop over all the rows, which vectorizes (rows of ten scores would not).
    wide(|| {
        for x in e.iter_mut() {
            *x = x.exp_elementwise();
        }
    });
    let mut log_sums = T::zero();
    for (row, label) in e.chunks_exact_mut(c).zip(labels) {
        if !counts(label) {
            if grad {
                row.fill(T::zero());
            }
            continue;
        }
        let sum = row.iter().fold(T::zero(), |s, &x| s + x);
        log_sums = log_sums + sum.ln();
        if grad {
            let per = scale / sum;
            for x in row.iter_mut() {
                *x = *x * per;
            }
            let l = *label as usize;
            row[l] = row[l] - scale;
        }
    }
    ((log_sums - picked) * scale, grad.then_some(e))
}
