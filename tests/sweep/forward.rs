//! The forward-rule checks of a sweep case, in `F64`: the rule's value is the op's; its tangent
//! `J·v` along a random direction `v` matches central differences `(f(x + hv) − f(x − hv))/2h`
//! elementwise; the transpose identity `⟨J·v, w⟩ = ⟨v, Jᵀ·w⟩` holds against the pullback of a
//! random `w`; and no tangent in (`None` for every input) gives no tangent out.

use super::draw::{Case, Rng};
use adjoint::prelude::*;

/// The step of the central differences.
const H: f64 = 1e-6;

/// `|a − b| ≤ tol·(1 + |b|)` elementwise, or the first element that differs.
fn close(what: &str, a: &[f64], b: &[f64], tol: f64) -> Result<(), String> {
    if a.len() != b.len() {
        return Err(format!("{what}: {} elements against {}", a.len(), b.len()));
    }
    let off = |i: usize| {
        let e = (a[i] - b[i]).abs();
        e.is_nan() || e > tol * (1.0 + b[i].abs())
    };
    match (0..a.len()).find(|&i| off(i)) {
        Some(i) => Err(format!("{what}[{i}]: {} against {}", a[i], b[i])),
        None => Ok(()),
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `x + s·v` for every input.
fn moved(xs: &[Tensor], vs: &[Tensor], s: f64) -> Vec<Tensor> {
    xs.iter().zip(vs).map(|(x, v)| x + &(v * s)).collect()
}

/// The forward checks of `case`; the number of checks made.
pub fn check_forward(case: &Case, seed: u64) -> Result<usize, String> {
    let jvp = case
        .jvp
        .as_ref()
        .ok_or("no forward rule: its line gives no `with_jvp`")?;
    let mut r = Rng::new(seed);
    let xs = &case.inputs;
    let vs: Vec<Tensor> = xs.iter().map(|x| r.values(x.shape())).collect();
    let given: Vec<Option<TensorTangent>> = vs.iter().map(|v| Some(v.clone().into())).collect();
    let (y, ty) = jvp(xs, &given);
    let (y_rev, pb) = (case.run)(xs);
    if y.shape() != y_rev.shape() {
        return Err(format!(
            "forward value has shape {:?}, the op's {:?}",
            y.shape(),
            y_rev.shape()
        ));
    }
    close("forward value", &y.to_vec_f64(), &y_rev.to_vec_f64(), 1e-12)?;
    let jv = ty
        .ok_or("forward tangent is None for given tangents")?
        .to_tensor_like(&y);
    if jv.shape() != y.shape() {
        return Err(format!(
            "forward tangent has shape {:?}, the value {:?}",
            jv.shape(),
            y.shape()
        ));
    }
    let jv = jv.to_vec_f64();
    let plus = (case.run)(&moved(xs, &vs, H)).0.to_vec_f64();
    let minus = (case.run)(&moved(xs, &vs, -H)).0.to_vec_f64();
    let fd: Vec<f64> = plus
        .iter()
        .zip(&minus)
        .map(|(p, m)| (p - m) / (2.0 * H))
        .collect();
    close("J·v against central differences", &jv, &fd, 1e-6)?;
    let w = r.values(y.shape());
    let back = pb(TensorTangent::Dense(w.clone()));
    let vjw: f64 = back
        .into_iter()
        .zip(xs.iter().zip(&vs))
        .map(|(g, (x, v))| dot(&g.to_tensor_like(x).to_vec_f64(), &v.to_vec_f64()))
        .sum();
    close(
        "⟨J·v, w⟩ against ⟨v, Jᵀ·w⟩",
        &[dot(&jv, &w.to_vec_f64())],
        &[vjw],
        1e-10,
    )?;
    let none: Vec<Option<TensorTangent>> = xs.iter().map(|_| None).collect();
    if jvp(xs, &none).1.is_some() {
        return Err("no tangent in gives a tangent out".into());
    }
    Ok(jv.len() + 2)
}
