//! gmm: the log posterior of a Gaussian mixture with a Wishart prior on its precision
//! matrices (the eval's README), and its gradient with respect to α, μ, q and l from the
//! pullback of the loops below.
//!
//! With Qₖ lower triangular (diagonal exp(qₖ), strictly lower part lₖ by columns) and
//! βᵢₖ = αₖ + Σⱼ qₖⱼ − ½‖Qₖ(xᵢ − μₖ)‖²,
//!
//! F = −N·(D/2·ln 2π + LSE(α)) + Σᵢ LSE(βᵢ)
//!     + K·(n·D·ln(γ/√2) − ln Γ_D(n/2)) − Σₖ (γ²/2·‖Qₖ‖²_F − m·Σⱼ qₖⱼ),   n = D + m + 1.
//!
//! Its derivatives (what the pullback computes, by the chain rule through the same loops):
//! with wᵢₖ = softmax(βᵢ)ₖ and rᵢₖ = Qₖ(xᵢ − μₖ),
//! ∂F/∂αₖ = Σᵢ wᵢₖ − N·softmax(α)ₖ, ∂F/∂μₖ = Σᵢ wᵢₖ Qₖᵀrᵢₖ,
//! ∂F/∂qₖⱼ = Σᵢ wᵢₖ (1 − e^{qₖⱼ}(xᵢ − μₖ)ⱼ rᵢₖⱼ) − γ² e^{2qₖⱼ} + m,
//! ∂F/∂(Qₖ)ⱼₗ = −Σᵢ wᵢₖ rᵢₖⱼ (xᵢ − μₖ)ₗ − γ² (Qₖ)ⱼₗ for j > l.

use super::rows::Rows;
use super::{Input, Module, timed};
use adjoint::prelude::*;
use serde::{Deserialize, Serialize};

/// The eval's input.
#[derive(Deserialize)]
pub struct Gmm {
    /// The dimension D.
    pub d: usize,
    /// The number of components K.
    pub k: usize,
    /// The number of points N.
    pub n: usize,
    /// The weights' parameters α, K of them.
    pub alpha: Vec<f64>,
    /// The means, K rows of D.
    pub mu: Rows,
    /// The logarithms of the diagonals of Q, K rows of D.
    pub q: Rows,
    /// The strictly lower parts of Q by columns, K rows of D(D − 1)/2.
    pub l: Rows,
    /// The points, N rows of D.
    pub x: Rows,
    /// The Wishart prior's additional degrees of freedom.
    pub m: usize,
    /// The Wishart prior's precision γ.
    pub gamma: f64,
}

impl Input for Gmm {
    fn check(&self) -> Result<(), String> {
        let (d, k, n) = (self.d, self.k, self.n);
        if d == 0 || k == 0 {
            return Err(format!(
                "`d` is {d} and `k` is {k}; both must be at least 1"
            ));
        }
        if self.alpha.len() != k {
            return Err(format!(
                "`alpha` has {} numbers; expected k = {k}",
                self.alpha.len()
            ));
        }
        self.mu.expect("mu", k, d)?;
        self.q.expect("q", k, d)?;
        self.l.expect("l", k, d * (d - 1) / 2)?;
        self.x.expect("x", n, d)
    }
}

/// The Wishart prior's constants: γ and the additional degrees of freedom m.
#[derive(Clone, Copy, Debug)]
pub struct Wishart {
    /// The precision γ.
    pub gamma: f64,
    /// The additional degrees of freedom m.
    pub m: usize,
}

/// ln Γ(a) for a positive multiple of ½, by Γ(a) = (a − 1)·Γ(a − 1) down to Γ(1) = 1 or
/// Γ(½) = √π (the only arguments the prior's constant needs).
///
/// # Panics
/// If `a` is not a positive multiple of ½.
fn ln_gamma_of_half_integer(a: f64) -> f64 {
    assert!(
        a > 0.0 && (2.0 * a).fract() == 0.0,
        "ln Γ({a}): only positive multiples of ½ are supported"
    );
    let (mut x, mut sum) = (a, 0.0);
    while x > 1.0 {
        x -= 1.0;
        sum += x.ln();
    }
    if x == 0.5 {
        sum + 0.5 * std::f64::consts::PI.ln()
    } else {
        sum
    }
}

/// ln Γ_p(a), the multivariate gamma function: p(p − 1)/4·ln π + Σⱼ₌₁ᵖ ln Γ(a + (1 − j)/2).
fn ln_multigamma(a: f64, p: usize) -> f64 {
    let mut out = 0.25 * (p * (p.saturating_sub(1))) as f64 * std::f64::consts::PI.ln();
    for j in 1..=p {
        out += ln_gamma_of_half_integer(a + 0.5 * (1.0 - j as f64));
    }
    out
}

/// The part of F that depends on no parameter: −N·D/2·ln 2π + K·(n·D·ln(γ/√2) − ln Γ_D(n/2)).
fn constant(d: usize, k: usize, n: usize, wishart: Wishart) -> f64 {
    let dof = d + wishart.m + 1;
    let prior = (dof * d) as f64 * (wishart.gamma.ln() - 0.5 * 2f64.ln())
        - ln_multigamma(0.5 * dof as f64, d);
    -((n * d) as f64) * 0.5 * (2.0 * std::f64::consts::PI).ln() + k as f64 * prior
}

/// F, computed as the C++ reference does: exp(q) and Σ q per component first, then per point
/// and component βᵢₖ, the log-sum-exp over components, and the Wishart prior. Q(x − μ) is
/// computed by rows of Q (the reference accumulates it by columns; the sums are the same up to
/// rounding), reading each component's lower part from a copy laid out by rows.
// Loops over index ranges: the pullback runs such loops again instead of taping them; the
// arguments are the eval's arrays and sizes as the reference takes them.
#[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
#[differentiable]
pub fn gmm(
    alpha: &[f64],
    mu: &[f64],
    q: &[f64],
    l: &[f64],
    #[no_derivative] x: &[f64],
    d: usize,
    k: usize,
    n: usize,
    #[no_derivative] wishart: Wishart,
) -> f64 {
    let lsz = d * (d - 1) / 2;
    let mut qdiags = vec![0.0; d * k];
    for i in 0..d * k {
        qdiags[i] = q[i].exp();
    }
    let mut sum_qs = vec![0.0; k];
    for ik in 0..k {
        let mut s = 0.0;
        for j in 0..d {
            s += q[ik * d + j];
        }
        sum_qs[ik] = s;
    }
    // The lower part of each Qₖ by rows: row j holds (Qₖ)ⱼ₀ … (Qₖ)ⱼ,ⱼ₋₁ at j(j − 1)/2.
    let mut lrows = vec![0.0; k * lsz];
    for ik in 0..k {
        for j in 1..d {
            for i in 0..j {
                // Column i starts at i(2D − i − 1)/2; row j is the (j − i − 1)-th below the diagonal.
                lrows[ik * lsz + j * (j - 1) / 2 + i] =
                    l[ik * lsz + i * (2 * d - i - 1) / 2 + j - i - 1];
            }
        }
    }
    // βᵢₖ for every point and component, row by row (no buffer is made inside the loop, so
    // that its pullback can run it again instead of recording every step).
    let mut beta = vec![0.0; n * k];
    for t in 0..n * k {
        let (ix, ik) = (t / k, t % k);
        let mut sqnorm = 0.0;
        for j in 0..d {
            let mut s = qdiags[ik * d + j] * (x[ix * d + j] - mu[ik * d + j]);
            for i in 0..j {
                s += lrows[ik * lsz + j * (j - 1) / 2 + i] * (x[ix * d + i] - mu[ik * d + i]);
            }
            sqnorm += s * s;
        }
        beta[t] = alpha[ik] + sum_qs[ik] - 0.5 * sqnorm;
    }
    let mut slse = 0.0;
    for ix in 0..n {
        let mut mx = beta[ix * k];
        for ik in 1..k {
            mx = mx.max(beta[ix * k + ik]);
        }
        let mut semx = 0.0;
        for ik in 0..k {
            semx += (beta[ix * k + ik] - mx).exp();
        }
        slse += semx.ln() + mx;
    }
    let mut amx = alpha[0];
    for ik in 1..k {
        amx = amx.max(alpha[ik]);
    }
    let mut asum = 0.0;
    for ik in 0..k {
        asum += (alpha[ik] - amx).exp();
    }
    let lse_alpha = asum.ln() + amx;
    let mut prior = 0.0;
    for ik in 0..k {
        let mut frobenius = 0.0;
        for j in 0..d {
            frobenius += qdiags[ik * d + j] * qdiags[ik * d + j];
        }
        for j in 0..lsz {
            frobenius += l[ik * lsz + j] * l[ik * lsz + j];
        }
        prior += 0.5 * wishart.gamma * wishart.gamma * frobenius - wishart.m as f64 * sum_qs[ik];
    }
    constant(d, k, n, wishart) + slse - n as f64 * lse_alpha - prior
}

/// The gradient as the eval sends it back: one field per independent variable, by rows.
#[derive(Serialize)]
pub struct GmmGradient {
    /// ∂F/∂α.
    pub alpha: Vec<f64>,
    /// ∂F/∂μ, K rows of D.
    pub mu: Vec<Vec<f64>>,
    /// ∂F/∂q, K rows of D.
    pub q: Vec<Vec<f64>>,
    /// ∂F/∂l, K rows of D(D − 1)/2.
    pub l: Vec<Vec<f64>>,
}

impl Gmm {
    fn wishart(&self) -> Wishart {
        Wishart {
            gamma: self.gamma,
            m: self.m,
        }
    }

    /// F at the input.
    pub fn objective(&self) -> f64 {
        let (mu, q, l, x) = (&self.mu.data, &self.q.data, &self.l.data, &self.x.data);
        gmm(
            &self.alpha,
            mu,
            q,
            l,
            x,
            self.d,
            self.k,
            self.n,
            self.wishart(),
        )
    }

    /// ∇F at the input, from `gmm`'s pullback (a tangent left empty is zero).
    pub fn jacobian(&self) -> GmmGradient {
        let (mu, q, l, x) = (&self.mu.data, &self.q.data, &self.l.data, &self.x.data);
        let pulled = gmm_vjp(
            &self.alpha,
            mu,
            q,
            l,
            x,
            self.d,
            self.k,
            self.n,
            self.wishart(),
        );
        let (mut da, mut dmu, mut dq, mut dl) = gradient(pulled);
        let (d, k) = (self.d, self.k);
        let lsz = d * (d - 1) / 2;
        da.resize(k, 0.0);
        dmu.resize(k * d, 0.0);
        dq.resize(k * d, 0.0);
        dl.resize(k * lsz, 0.0);
        GmmGradient {
            alpha: da,
            mu: Rows::split(&dmu, d),
            q: Rows::split(&dq, d),
            l: (0..k)
                .map(|ik| dl[ik * lsz..(ik + 1) * lsz].to_vec())
                .collect(),
        }
    }
}

/// `objective` = F, `jacobian` = ∇F with respect to α, μ, q and l.
pub const MODULE: Module = Module {
    name: "gmm",
    functions: &[
        ("objective", |input| timed(input, Gmm::objective)),
        ("jacobian", |input| timed(input, Gmm::jacobian)),
    ],
};

#[cfg(test)]
mod tests {
    use crate::evals::evaluate;
    use serde_json::json;

    fn input() -> serde_json::Value {
        json!({"d": 2, "k": 2, "n": 1, "m": 0, "gamma": 1.0, "alpha": [0.1, 0.2],
               "mu": [[0.0, 1.0], [1.0, 0.0]], "q": [[0.1, 0.2], [0.3, 0.4]],
               "l": [[0.5], [0.6]], "x": [[0.2, 0.3]]})
    }

    #[test]
    fn bad_shapes_name_the_field_and_the_shapes() {
        let mut bad = input();
        bad["l"] = json!([[0.5, 0.1], [0.6]]);
        let e = evaluate("gmm", "jacobian", bad).err().unwrap().to_string();
        assert!(
            e.contains("`l` row 0 has 2 numbers; expected 2 rows of 1"),
            "{e}"
        );
        let mut bad = input();
        bad["alpha"] = json!([0.1]);
        let e = evaluate("gmm", "objective", bad).err().unwrap().to_string();
        assert!(e.contains("`alpha` has 1 numbers; expected k = 2"), "{e}");
        let mut bad = input();
        bad["x"] = json!([[0.2, 0.3], [0.1, 0.1]]);
        let e = evaluate("gmm", "objective", bad).err().unwrap().to_string();
        assert!(e.contains("`x` has 2 rows; expected 1 rows of 2"), "{e}");
        assert!(evaluate("gmm", "jacobian", input()).is_ok());
    }

    #[test]
    fn ln_gamma_of_half_integers() {
        // Γ(5) = 24, Γ(7/2) = 15√π/8.
        assert!((super::ln_gamma_of_half_integer(5.0) - 24f64.ln()).abs() < 1e-14);
        let want = (15.0 * std::f64::consts::PI.sqrt() / 8.0).ln();
        assert!((super::ln_gamma_of_half_integer(3.5) - want).abs() < 1e-14);
    }
}
