//! Sweep lines of the masked fill and the triangular parts of matrices.

use super::Op;
use super::draw::{Case, Rng, case};
use adjoint::__private::NoTangent;
use adjoint::prelude::*;

/// `tril` or `triu` on a batch of matrices (rank 2–4, empty and size-1 axes) with a diagonal
/// offset in `-4..=4`, past every corner of these sizes.
fn band<P>(
    r: &mut Rng,
    f: impl Fn(&Tensor, isize) -> (Tensor, P) + 'static,
    jvp: impl Fn(&Tensor, isize, Option<&TensorTangent>) -> (Tensor, Option<TensorTangent>) + 'static,
) -> Case
where
    P: FnOnce(TensorTangent) -> (TensorTangent, NoTangent) + 'static,
{
    let shape = r.shape(2, 4);
    let k = r.between(0, 8) as isize - 4;
    case(vec![r.values(&shape)], format!("k {k}"), move |xs| {
        f(&xs[0], k)
    })
    .with_jvp(move |xs, ts| jvp(&xs[0], k, ts[0].as_ref()))
}

/// The lines.
pub fn ops() -> Vec<Op> {
    vec![
        Op {
            name: "masked_fill",
            draw: |r| {
                let shape = r.shape(0, 3);
                let mask_shape = r.partner(&shape);
                // Zeros about half the time; the others any nonzero value, of either sign.
                let set = r
                    .values(&mask_shape)
                    .gt(&Tensor::from_vec(vec![0.0_f64], &[]));
                let mask = if r.chance(0.5) {
                    set.mul(&r.values(&mask_shape))
                } else {
                    set
                };
                let value = r.uniform(-3.0, 3.0);
                let params = format!(
                    "mask {:?} {:?}, value {value}",
                    mask.shape(),
                    mask.to_vec_f64()
                );
                let mask2 = mask.clone();
                case(vec![r.values(&shape)], params, move |xs| {
                    let mask = mask.to_dtype(xs[0].dtype());
                    let (y, pb) = xs[0].masked_fill_vjp_full(&mask, value, [true, false, false]);
                    (y, move |d| pb(d).0)
                })
                .with_jvp(move |xs, ts| {
                    let mask = mask2.to_dtype(xs[0].dtype());
                    xs[0].masked_fill_jvp_full(&mask, value, (ts[0].as_ref(), None, None))
                })
            },
        },
        Op {
            name: "tril",
            draw: |r| {
                band(
                    r,
                    |x, k| x.tril_vjp_full(k, [true, false]),
                    |x, k, t| x.tril_jvp_full(k, (t, None)),
                )
            },
        },
        Op {
            name: "triu",
            draw: |r| {
                band(
                    r,
                    |x, k| x.triu_vjp_full(k, [true, false]),
                    |x, k, t| x.triu_jvp_full(k, (t, None)),
                )
            },
        },
    ]
}
