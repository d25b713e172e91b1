//! Forward mode through tensor code: an MLP loss and a mix of elementwise, broadcasting,
//! reduction and layout ops. The tangent along a random direction is checked against central
//! finite differences in f64 and against the gradient from the pullback (⟨∇f, v⟩).

use adjoint::prelude::*;

/// A deterministic f64 tensor of `shape` with entries in [-1, 1).
fn tensor(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let data: Vec<f64> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect();
    Tensor::from_vec(data, shape)
}

/// Softmax cross-entropy of a 2-layer tanh MLP (tanh keeps finite differences smooth).
#[differentiable(forward)]
fn mlp_loss(
    w1: &Tensor,
    b1: &Tensor,
    w2: &Tensor,
    #[no_derivative] x: &Tensor,
    #[no_derivative] labels: &Tensor,
) -> Tensor {
    let h = (x.matmul(w1) + b1).tanh();
    let logits = h.matmul(w2);
    cross_entropy(&logits, labels)
}

/// Mixed ops: scalar arithmetic, broadcasting, reductions, layout.
#[differentiable(forward)]
fn mixed(a: &Tensor, b: &Tensor) -> Tensor {
    let c = a.tanh() * 2.0 - b;
    let d = c.t().matmul(&a.sigmoid()).mean(&[0], false);
    let e = (d.exp() + 1.0).ln() / 3.0;
    e.sum_all() + a.softmax(-1).sum_all() * 0.5 + b.mse(&a.sin())
}

fn dense(t: TensorTangent) -> Tensor {
    t.unwrap()
}

fn dot(a: &Tensor, b: &Tensor) -> f64 {
    (a * b).sum_all().to_scalar()
}

#[test]
fn mlp_tangent_matches_finite_differences_and_the_gradient() {
    let (w1, b1, w2) = (tensor(&[5, 4], 1), tensor(&[4], 2), tensor(&[4, 3], 3));
    let x = tensor(&[6, 5], 4);
    let labels = Tensor::from_vec(vec![0_u32, 2, 1, 1, 0, 2], &[6]);
    let (v1, vb, v2) = (tensor(&[5, 4], 5), tensor(&[4], 6), tensor(&[4, 3], 7));
    let (value, t) = mlp_loss_jvp(
        &w1,
        &b1,
        &w2,
        &x,
        &labels,
        &TensorTangent::Dense(v1.clone()),
        &TensorTangent::Dense(vb.clone()),
        &TensorTangent::Dense(v2.clone()),
    );
    let t = dense(t).to_scalar();
    assert_eq!(
        value.to_scalar(),
        mlp_loss(&w1, &b1, &w2, &x, &labels).to_scalar()
    );
    let h = 1e-6;
    let at = |s: f64| {
        mlp_loss(
            &(&w1 + &(&v1 * s)),
            &(&b1 + &(&vb * s)),
            &(&w2 + &(&v2 * s)),
            &x,
            &labels,
        )
        .to_scalar()
    };
    let fd = (at(h) - at(-h)) / (2.0 * h);
    assert!((t - fd).abs() < 1e-7 * (1.0 + fd.abs()), "{t} vs {fd}");
    let (g1, gb, g2) = gradient(mlp_loss_vjp(&w1, &b1, &w2, &x, &labels));
    let want = dot(&dense(g1), &v1) + dot(&dense(gb), &vb) + dot(&dense(g2), &v2);
    assert!(
        (t - want).abs() < 1e-12 * (1.0 + want.abs()),
        "{t} vs {want}"
    );
}

#[test]
fn mixed_ops_tangent() {
    let (a, b) = (tensor(&[3, 4], 8), tensor(&[3, 4], 9));
    let (va, vb) = (tensor(&[3, 4], 10), tensor(&[3, 4], 11));
    let (_, t) = mixed_jvp(
        &a,
        &b,
        &TensorTangent::Dense(va.clone()),
        &TensorTangent::Dense(vb.clone()),
    );
    let t = dense(t).to_scalar();
    let h = 1e-6;
    let at = |s: f64| mixed(&(&a + &(&va * s)), &(&b + &(&vb * s))).to_scalar();
    let fd = (at(h) - at(-h)) / (2.0 * h);
    assert!((t - fd).abs() < 1e-7 * (1.0 + fd.abs()), "{t} vs {fd}");
    let (ga, gb) = gradient(mixed_vjp(&a, &b));
    let want = dot(&dense(ga), &va) + dot(&dense(gb), &vb);
    assert!(
        (t - want).abs() < 1e-12 * (1.0 + want.abs()),
        "{t} vs {want}"
    );
}
