//! Reductions and closures; `Vec` and array writes.

use crate::common::{check, check_vec};
use adjoint::prelude::*;

// ---------------------------------------------------------------------------------------------
// Reductions and closures.

/// The population variance by `.map(..).sum::<f64>()`, the closure capturing the active mean:
/// ∂vᵢ = 2(vᵢ − m)/n.
#[differentiable]
fn variance(v: Vec<f64>) -> f64 {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n
}

/// The geometric mean by `.product()`: g = (Π vᵢ)^(1/3), ∂vᵢ = g/(3vᵢ).
#[differentiable]
fn geometric_mean(v: [f64; 3]) -> f64 {
    v.iter().product::<f64>().powf(1.0 / 3.0)
}

/// Horner's rule by `.fold(..)`: p = Σ cᵢ x^(3−i); ∂c = (x³, x², x, 1), ∂x = p'(x).
#[differentiable]
fn fold_horner(c: [f64; 4], x: f64) -> f64 {
    c.iter().fold(0.0, |acc, ci| acc * x + ci)
}

/// The unit vector by `.map(..).collect::<Vec<_>>()`, read back: f = u₀ + 2u₁ with
/// u = v/‖v‖; ∇ = (w − u (u·w))/‖v‖ with w = (1, 2, 0).
#[differentiable]
fn unit_projection(v: [f64; 3]) -> f64 {
    let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let u = v.iter().map(|x| x / n).collect::<Vec<_>>();
    u[0] + 2.0 * u[1]
}

/// log Σ eˣⁱ shifted by the maximum found by `fold` with `max`: ∇ = softmax(x).
#[differentiable]
fn stable_logsumexp(x: [f64; 4]) -> f64 {
    let m = x.iter().fold(f64::NEG_INFINITY, |m, xi| m.max(*xi));
    let s = x.iter().map(|xi| (xi - m).exp()).sum::<f64>();
    m + s.ln()
}

/// A quadratic q(t) = a t² + b t bound by `let`, capturing a and b: q(1) + q(2) + q(−1) =
/// 6a + 2b; ∇ = (6, 2).
#[differentiable]
fn quadratic_at_points(a: f64, b: f64) -> f64 {
    let q = |t: f64| a * t * t + b * t;
    q(1.0) + q(2.0) + q(-1.0)
}

/// A closure returning a tuple, destructured: (r, θ) = (‖(x, y)‖, atan2(y, x)), f = r·θ;
/// ∂x = θx/r − r y/r², ∂y = θy/r + r x/r².
#[differentiable]
fn polar_closure(x: f64, y: f64) -> f64 {
    let polar = |a: f64, b: f64| (a.hypot(b), b.atan2(a));
    let (r, theta) = polar(x, y);
    r * theta
}

/// A closure called in a loop, capturing the active scale s: Σ tanh(s vᵢ);
/// ∂vᵢ = s sech²(s vᵢ), ∂s = Σ vᵢ sech²(s vᵢ).
#[differentiable]
fn scaled_tanh_sum(v: [f64; 3], s: f64) -> f64 {
    let act = |t: f64| (s * t).tanh();
    let mut total = 0.0;
    for i in 0..3 {
        total += act(v[i]);
    }
    total
}

#[test]
fn reductions_and_closures() {
    let v = [0.5, -1.5, 2.0, 0.25];
    let m = v.iter().sum::<f64>() / 4.0;
    let got = gradient(variance_vjp(v.to_vec()));
    check_vec("variance", variance, v, &got, v.map(|x| (x - m) / 2.0));
    let w = [1.5, 2.0, 0.5];
    let gm = geometric_mean(w);
    check!(geometric_mean, geometric_mean_vjp; w => w.map(|x| gm / (3.0 * x)));
    let (c, x) = ([1.0, -2.0, 0.5, 3.0], 0.7_f64);
    let dp = 3.0 * c[0] * x * x + 2.0 * c[1] * x + c[2];
    check!(fold_horner, fold_horner_vjp; c, x => ([x * x * x, x * x, x, 1.0], dp));
    let u = [1.0, 2.0, -0.5];
    let n = (1.0f64 + 4.0 + 0.25).sqrt();
    let unit = u.map(|x| x / n);
    let dot = unit[0] + 2.0 * unit[1];
    let want = [1.0, 2.0, 0.0];
    let want: [f64; 3] = std::array::from_fn(|i| (want[i] - unit[i] * dot) / n);
    check!(unit_projection, unit_projection_vjp; u => want);
    let x4 = [0.3, -1.2, 2.5, 1.0];
    let total: f64 = x4.iter().map(|x| x.exp()).sum();
    check!(stable_logsumexp, stable_logsumexp_vjp; x4 => x4.map(|x| x.exp() / total));
    check!(quadratic_at_points, quadratic_at_points_vjp; 0.4, -1.1 => (6.0, 2.0));
    let (x, y) = (0.6_f64, 0.8_f64);
    let (r, th) = (1.0, y.atan2(x));
    check!(polar_closure, polar_closure_vjp; x, y => (th * x / r - y / r, th * y / r + x / r));
    let (v3, s) = ([0.5, -1.0, 2.0], 0.7_f64);
    let sech2 = |t: f64| 1.0 - (s * t).tanh().powi(2);
    let ds: f64 = v3.iter().map(|t| t * sech2(*t)).sum();
    check!(scaled_tanh_sum, scaled_tanh_sum_vjp; v3, s => (v3.map(|t| s * sech2(t)), ds));
}

// ---------------------------------------------------------------------------------------------
// `Vec` and array writes.

/// `push` in a loop, reading the previous element: v₀ = x, vᵢ = vᵢ₋₁x + 1, so
/// v₃ = x⁴ + x² + x + 1; f' = 4x³ + 2x + 1.
#[differentiable]
fn pushed_recurrence(x: f64) -> f64 {
    let mut v = Vec::new();
    v.push(x);
    for i in 1..4 {
        let next = v[i - 1] * x + 1.0;
        v.push(next);
    }
    v[3]
}

/// `w[i] = ..` and `w[i] += ..` into a `vec!` of zeros: wᵢ = vᵢ + ½vᵢ₋₁, f = Σ wᵢ²;
/// ∂vⱼ = 2wⱼ + wⱼ₊₁.
#[differentiable]
fn smoothed_energy(v: Vec<f64>) -> f64 {
    let mut w = vec![0.0; v.len()];
    for i in 0..v.len() {
        w[i] = v[i];
        if i > 0 {
            w[i] += 0.5 * v[i - 1];
        }
    }
    w.iter().map(|x| x * x).sum::<f64>()
}

/// Prefix sums in place in a `mut` parameter: Pᵢ = Σ_{j≤i} vⱼ, f = Σ Pᵢ²;
/// ∂vⱼ = Σ_{i≥j} 2Pᵢ.
#[differentiable]
fn prefix_energy(mut v: Vec<f64>) -> f64 {
    for i in 1..v.len() {
        v[i] += v[i - 1];
    }
    let mut s = 0.0;
    for p in v.iter() {
        s += p * p;
    }
    s
}

/// A const generic array written element by element, `out[i] *= ..`: Σ (i + 1) aᵢ²;
/// ∂aᵢ = 2(i + 1)aᵢ.
#[differentiable]
fn weighted_squares<const N: usize>(a: [f64; N]) -> f64 {
    let mut out = [0.0; N];
    for i in 0..N {
        out[i] = a[i] * (i + 1) as f64;
        out[i] *= a[i];
    }
    out.iter().sum()
}

/// Insertion sort of a copy by `swap` in a `while` whose condition compares active elements
/// (reorders.rs `swap_sorted` is the bubble sort, arrays.rs `sort_weighted` swaps through a
/// temporary), then a rank-weighted sum: Σ (k + 1)·(k-th smallest); ∂vᵢ = 1 + rank of vᵢ.
#[differentiable]
fn rank_weighted(v: [f64; 3]) -> f64 {
    let mut s = v;
    for i in 1..3 {
        let mut j = i;
        while j > 0 && s[j - 1] > s[j] {
            s.swap(j - 1, j);
            j -= 1;
        }
    }
    s[0] + 2.0 * s[1] + 3.0 * s[2]
}

#[test]
fn vec_and_array_writes() {
    let x = 0.9_f64;
    check!(pushed_recurrence, pushed_recurrence_vjp; x => 4.0 * x.powi(3) + 2.0 * x + 1.0);
    let v = [0.5, -1.5, 2.0, 0.25];
    let w = [0.5, -1.25, 1.25, 1.25];
    let want = [
        2.0 * w[0] + w[1],
        2.0 * w[1] + w[2],
        2.0 * w[2] + w[3],
        2.0 * w[3],
    ];
    let got = gradient(smoothed_energy_vjp(v.to_vec()));
    check_vec("smoothed_energy", smoothed_energy, v, &got, want);
    let p = [0.5, -1.0, 1.0, 1.25];
    let want: [f64; 4] = std::array::from_fn(|j| p[j..].iter().map(|q| 2.0 * q).sum());
    let got = gradient(prefix_energy_vjp(v.to_vec()));
    check_vec("prefix_energy", prefix_energy, v, &got, want);
    let a = [0.5, -1.5, 2.0];
    check!(weighted_squares::<3>, weighted_squares_vjp::<3>; a => [1.0, -6.0, 12.0]);
    // Ranks: 0.5 is the middle one, −1.5 the smallest, 2.0 the largest.
    check!(rank_weighted, rank_weighted_vjp; a => [2.0, 1.0, 3.0]);
}
