//! Tensor helpers of the integration tests: random `f64` tensors and central differences over
//! every element of tensor parameters.

use adjoint::prelude::*;

/// Asserts that two lists of tensors (tangents computed two ways) agree element by element up
/// to rounding ([`EXACT_TOL`](super::EXACT_TOL), relative to `max(1, |want|)`).
pub fn assert_same(what: &str, got: &[Tensor], want: &[Tensor]) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.shape(), w.shape(), "{what}: tangent {i}");
        for (a, b) in g.to_vec_f64().into_iter().zip(w.to_vec_f64()) {
            assert!(
                (a - b).abs() <= super::EXACT_TOL * b.abs().max(1.0),
                "{what}: tangent {i}: {a} vs {b}"
            );
        }
    }
}

/// A tensor of `shape` with entries uniform in [−1, 1), in `f64` for finite differences.
pub fn f64_tensor(shape: &[usize], seed: u64) -> Tensor {
    Tensor::rand_uniform_on(shape, -1.0, 1.0, seed, DType::F64, &Cpu)
}

/// `∂f/∂p[j]` by central differences for every element of every parameter, against `grads`.
pub fn check_against_fd(f: &dyn Fn(&[Tensor]) -> f64, params: &[Tensor], grads: &[Tensor]) {
    const H: f64 = 1e-6;
    for (i, (p, g)) in params.iter().zip(grads).enumerate() {
        assert_eq!(p.shape(), g.shape(), "param {i}");
        let (values, g) = (p.to_vec_f64(), g.to_vec_f64());
        for j in 0..p.len() {
            let at = |delta: f64| {
                let mut v = values.clone();
                v[j] += delta;
                let mut ps = params.to_vec();
                ps[i] = Tensor::from_vec(v, p.shape());
                f(&ps)
            };
            let fd = (at(H) - at(-H)) / (2.0 * H);
            assert!(
                (fd - g[j]).abs() < 1e-6 * (1.0 + fd.abs()),
                "param {i}[{j}]: pullback {} vs finite differences {fd}",
                g[j]
            );
        }
    }
}
