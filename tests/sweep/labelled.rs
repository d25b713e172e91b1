//! Sweep lines of the labelled losses: `nll` and `cross_entropy`, plain and `_ignoring`, on
//! scores `[…, C]` of a leading shape of rank 0–2 (empty and size-1 axes) against `U32`
//! labels of that shape.

use super::Op;
use super::draw::{Case, Rng, case};
use adjoint::prelude::*;

/// Scores `[…, C]` with `C ≥ 1` and labels below `C`.
fn scores(r: &mut Rng) -> (Tensor, Tensor) {
    let lead = r.shape(0, 2);
    let c = r.dim1();
    (r.values(&[&lead[..], &[c]].concat()), r.ids(&lead, c))
}

/// Scores `[…, C]`, an id to ignore and labels that take it about one time in three: the id
/// is a class below `C` half the time, else one at or above it (`C`, `C + 2` or
/// `u32::MAX`); `C` is 0 (1 in 12) only with every label the ignored id.
fn scores_ignoring(r: &mut Rng) -> (Tensor, Tensor, u32) {
    let lead = r.shape(0, 2);
    let c = r.dim();
    let ignore = match r.below(4) {
        _ if c == 0 => [0, 2, u32::MAX][r.below(3)],
        0 | 1 => r.below(c) as u32,
        2 => (c + 2 * r.below(2)) as u32,
        _ => u32::MAX,
    };
    let n = lead.iter().product();
    let labels = (0..n)
        .map(|_| match c {
            0 => ignore,
            _ if r.chance(1.0 / 3.0) => ignore,
            _ => r.below(c) as u32,
        })
        .collect();
    let x = r.values(&[&lead[..], &[c]].concat());
    (x, Tensor::from_vec::<u32>(labels, &lead), ignore)
}

/// The params of a case: the labels (and the ignored id).
fn labels_text(labels: &Tensor, ignore: Option<u32>) -> String {
    let ignore = ignore.map_or(String::new(), |k| format!(", ignoring {k}"));
    format!(
        "labels {:?} {:?}{ignore}",
        labels.shape(),
        labels.to_vec_u32()
    )
}

/// A case of a plain loss.
fn plain<P>(
    r: &mut Rng,
    f: impl Fn(&Tensor, &Tensor) -> (Tensor, P) + 'static,
    jvp: impl Fn(&Tensor, &Tensor, Option<&TensorTangent>) -> (Tensor, Option<TensorTangent>) + 'static,
) -> Case
where
    P: FnOnce(TensorTangent) -> (TensorTangent, TensorTangent) + 'static,
{
    let (x, labels) = scores(r);
    let l2 = labels.clone();
    case(vec![x], labels_text(&labels, None), move |xs| {
        let (y, pb) = f(&xs[0], &labels);
        (y, move |d| pb(d).0)
    })
    .with_jvp(move |xs, ts| jvp(&xs[0], &l2, ts[0].as_ref()))
}

/// A case of an `_ignoring` loss.
fn ignoring<P, N>(
    r: &mut Rng,
    f: impl Fn(&Tensor, &Tensor, u32) -> (Tensor, P) + 'static,
    jvp: impl Fn(&Tensor, &Tensor, u32, Option<&TensorTangent>) -> (Tensor, Option<TensorTangent>)
    + 'static,
) -> Case
where
    P: FnOnce(TensorTangent) -> (TensorTangent, TensorTangent, N) + 'static,
{
    let (x, labels, k) = scores_ignoring(r);
    let l2 = labels.clone();
    case(vec![x], labels_text(&labels, Some(k)), move |xs| {
        let (y, pb) = f(&xs[0], &labels, k);
        (y, move |d| pb(d).0)
    })
    .with_jvp(move |xs, ts| jvp(&xs[0], &l2, k, ts[0].as_ref()))
}

/// The lines.
pub fn ops() -> Vec<Op> {
    vec![
        Op {
            name: "nll",
            draw: |r| {
                plain(
                    r,
                    |x, l| x.nll_vjp_full(l, [true, false]),
                    |x, l, t| x.nll_jvp_full(l, (t, None)),
                )
            },
        },
        Op {
            name: "cross_entropy",
            draw: |r| {
                plain(
                    r,
                    |x, l| x.cross_entropy_vjp_full(l, [true, false]),
                    |x, l, t| x.cross_entropy_jvp_full(l, (t, None)),
                )
            },
        },
        Op {
            name: "nll_ignoring",
            draw: |r| {
                ignoring(
                    r,
                    |x, l, k| x.nll_ignoring_vjp_full(l, k, [true; 3]),
                    |x, l, k, t| x.nll_ignoring_jvp_full(l, k, (t, None, None)),
                )
            },
        },
        Op {
            name: "cross_entropy_ignoring",
            draw: |r| {
                ignoring(
                    r,
                    |x, l, k| x.cross_entropy_ignoring_vjp_full(l, k, [true; 3]),
                    |x, l, k, t| x.cross_entropy_ignoring_jvp_full(l, k, (t, None, None)),
                )
            },
        },
    ]
}
