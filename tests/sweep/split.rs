//! Sweep lines of `split` and `chunk`, whose value is a vector of parts: the case's value is
//! the parts flattened one after the other, `y = [vec(x₀), vec(x₁), …]`, so that the
//! cotangent of `y` seeds every part. One time in four a part is left out of `y`: its tangent
//! is then the symbolic zero, or missing (a shorter vector) when it is the last part.

use super::Op;
use super::draw::{Case, Rng, case};
use adjoint::__private::NoTangent;
use adjoint::prelude::*;

/// The pullback of a split's rule.
type PartsPullback = Box<dyn FnOnce(Vec<TensorTangent>) -> (TensorTangent, NoTangent, NoTangent)>;

/// A shape of rank 1–3 and an axis of it (negative half the time) with its length.
fn along(r: &mut Rng) -> (Vec<usize>, isize, usize) {
    let shape = r.shape(1, 3);
    let axis = r.axis(shape.len());
    let len = shape[axis.rem_euclid(shape.len() as isize) as usize];
    (shape, axis, len)
}

/// `1..=4` sizes (zeros allowed) that add up to `len`.
fn sizes(r: &mut Rng, len: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = (1..r.between(1, 4)).map(|_| r.between(0, len)).collect();
    cuts.extend([0, len]);
    cuts.sort_unstable();
    cuts.windows(2).map(|w| w[1] - w[0]).collect()
}

/// The case of `split` (the rule's parts and pullback) on values of `shape`, its value the
/// parts flattened, some part maybe left out.
fn parts_case(
    r: &mut Rng,
    shape: &[usize],
    params: String,
    split: impl Fn(&Tensor) -> (Vec<Tensor>, PartsPullback) + 'static,
    jvp: impl Fn(&Tensor, Option<&TensorTangent>) -> (Vec<Tensor>, Option<Vec<TensorTangent>>) + 'static,
) -> Case {
    let left_out = r.chance(0.25).then(|| r.below(4));
    let params = format!("{params}, part {left_out:?} left out of y");
    case(vec![r.values(shape)], params, move |xs| {
        let (parts, pb) = split(&xs[0]);
        // A lone part is always kept.
        let left_out = left_out.filter(|&k| k < parts.len() && parts.len() > 1);
        let kept: Vec<Tensor> = (0..parts.len())
            .filter(|&k| Some(k) != left_out)
            .map(|k| parts[k].reshape(&[parts[k].len()]))
            .collect();
        let y = Tensor::cat(&kept[..], 0);
        let shapes: Vec<Vec<usize>> = parts.iter().map(|p| p.shape().to_vec()).collect();
        (y, move |d: TensorTangent| {
            let Some(d) = d.dense() else {
                return pb(Vec::new());
            };
            let mut start = 0;
            let mut dp: Vec<TensorTangent> = shapes
                .iter()
                .enumerate()
                .map(|(k, s)| {
                    if Some(k) == left_out {
                        return TensorTangent::Zero;
                    }
                    let n = s.iter().product();
                    start += n;
                    TensorTangent::Dense(d.narrow(0, start - n, n).reshape(s))
                })
                .collect();
            if left_out == Some(shapes.len() - 1) {
                dp.pop();
            }
            pb(dp)
        })
    })
    .with_jvp(move |xs, ts| {
        let (parts, tangents) = jvp(&xs[0], ts[0].as_ref());
        let left_out = left_out.filter(|&k| k < parts.len() && parts.len() > 1);
        let flat = |t: &Tensor| t.reshape(&[t.len()]);
        let kept = |v: &[Tensor]| -> Tensor {
            let v: Vec<Tensor> = (0..v.len())
                .filter(|&k| Some(k) != left_out)
                .map(|k| flat(&v[k]))
                .collect();
            Tensor::cat(&v[..], 0)
        };
        let tangent = tangents.map(|ts| {
            let dense: Vec<Tensor> = parts
                .iter()
                .enumerate()
                .map(|(k, p)| {
                    ts.get(k)
                        .and_then(TensorTangent::dense_ref)
                        .cloned()
                        .unwrap_or_else(|| p.zeros_like())
                })
                .collect();
            TensorTangent::Dense(kept(&dense))
        });
        (kept(&parts), tangent)
    })
}

/// The lines.
pub fn ops() -> Vec<Op> {
    vec![
        Op {
            name: "split",
            draw: |r| {
                let (shape, axis, len) = along(r);
                let sizes = sizes(r, len);
                let params = format!("axis {axis}, sizes {sizes:?}");
                let sizes2 = sizes.clone();
                parts_case(
                    r,
                    &shape,
                    params,
                    move |x| {
                        let (p, pb) = x.split_vjp_full(&sizes, axis, [true, false, false]);
                        (p, Box::new(pb))
                    },
                    move |x, t| x.split_jvp_full(&sizes2, axis, (t, None, None)),
                )
            },
        },
        Op {
            name: "chunk",
            draw: |r| {
                let (shape, axis, _) = along(r);
                let n = r.between(1, 4);
                let params = format!("axis {axis}, {n} chunks");
                parts_case(
                    r,
                    &shape,
                    params,
                    move |x| {
                        let (p, pb) = x.chunk_vjp_full(n, axis, [true, false, false]);
                        (p, Box::new(pb))
                    },
                    move |x, t| x.chunk_jvp_full(n, axis, (t, None, None)),
                )
            },
        },
    ]
}
