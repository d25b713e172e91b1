//! Methods with loops and branches.

use crate::common::{assert_close, check_gradient};
use adjoint::prelude::*;

/// A cubic c₀x³ + c₁x² + c₂x + c₃; its tangent is `([f64; 4],)`.
#[derive(Clone, Copy, Debug)]
struct Poly([f64; 4]);

impl Differentiable for Poly {
    type Tangent = ([f64; 4],);
    fn move_by(&mut self, t: &([f64; 4],)) {
        for i in 0..4 {
            self.0[i] += t.0[i];
        }
    }
}

impl Poly {
    /// Horner over the coefficients: ∂self = ((x³, x², x, 1),), ∂x = 3c₀x² + 2c₁x + c₂.
    #[differentiable]
    fn eval(&self, x: f64) -> f64 {
        let mut acc = 0.0;
        for i in 0..4 {
            acc = acc * x + self.0[i];
        }
        acc
    }

    /// A method calling a method, then branching: p > 10 → 10 + ln(p − 9), whose gradient is
    /// the one of [`Poly::eval`] divided by p − 9; else p.
    #[differentiable]
    fn capped(&self, x: f64) -> f64 {
        let p = self.eval(x);
        if p > 10.0 {
            10.0 + (p - 10.0).ln_1p()
        } else {
            p
        }
    }

    /// Σ (cᵢ₊₁ − cᵢ)² by a `while` on data: ∂cⱼ = 2(cⱼ − cⱼ₋₁) − 2(cⱼ₊₁ − cⱼ).
    #[differentiable]
    fn roughness(&self) -> f64 {
        let mut i = 0;
        let mut s = 0.0;
        while i < 3 {
            let d = self.0[i + 1] - self.0[i];
            s += d * d;
            i += 1;
        }
        s
    }
}

/// An exponential moving average with rate r: `Decay(r)`, tangent `(f64,)`.
#[derive(Clone, Copy, Debug)]
struct Decay(f64);

impl Differentiable for Decay {
    type Tangent = (f64,);
    fn move_by(&mut self, t: &(f64,)) {
        self.0 += t.0;
    }
}

impl Decay {
    /// x rⁿ by a loop: ∂self = (n x rⁿ⁻¹,), ∂x = rⁿ.
    #[differentiable]
    fn apply(&self, x: f64, n: usize) -> f64 {
        let mut y = x;
        for _ in 0..n {
            y = y * self.0;
        }
        y
    }

    /// m = x₀, then m ← r m + (1 − r) xᵢ: m = r³x₀ + (1 − r)(r²x₁ + r x₂ + x₃);
    /// ∂x = (r³, (1 − r)r², (1 − r)r, 1 − r),
    /// ∂r = 3r²x₀ + (1 − r)(2r x₁ + x₂) − (r²x₁ + r x₂ + x₃).
    #[differentiable]
    fn smooth(&self, xs: [f64; 4]) -> f64 {
        let mut m = xs[0];
        for i in 1..4 {
            m = self.0 * m + (1.0 - self.0) * xs[i];
        }
        m
    }
}

#[test]
fn methods() {
    let (c, x) = ([0.5, -1.0, 2.0, 0.25], 1.3_f64);
    let dx = 3.0 * c[0] * x * x + 2.0 * c[1] * x + c[2];
    let powers = [x * x * x, x * x, x, 1.0];
    let ((dc,), got_dx) = gradient(Poly(c).eval_vjp(x));
    assert_close("Poly::eval", (dc, got_dx), (powers, dx));
    check_gradient("Poly::eval", |(c, x)| Poly(c).eval(x), (c, x), (dc, got_dx));

    // p(3) = 13.5 − 9 + 6 + 0.25 = 10.75 > 10: scaled by 1/(p − 9).
    let x = 3.0_f64;
    let p = Poly(c).eval(x);
    assert!(p > 10.0);
    let scale = 1.0 / (p - 9.0);
    let want = (
        [x * x * x, x * x, x, 1.0].map(|v| v * scale),
        (3.0 * c[0] * x * x + 2.0 * c[1] * x + c[2]) * scale,
    );
    let (dc, dx) = gradient(Poly(c).capped_vjp(x));
    assert_close("Poly::capped", (dc.0, dx), want);
    check_gradient(
        "Poly::capped",
        |(c, x)| Poly(c).capped(x),
        (c, x),
        (dc.0, dx),
    );
    let ((dc,), dx) = gradient(Poly(c).capped_vjp(1.0));
    assert_close("Poly::capped/below", (dc, dx), ([1.0; 4], 1.5 - 2.0 + 2.0));

    let (dc,) = gradient(Poly(c).roughness_vjp());
    let want: [f64; 4] = std::array::from_fn(|j| {
        let left = if j > 0 { 2.0 * (c[j] - c[j - 1]) } else { 0.0 };
        let right = if j < 3 { -2.0 * (c[j + 1] - c[j]) } else { 0.0 };
        left + right
    });
    assert_close("Poly::roughness", dc, want);
    check_gradient("Poly::roughness", |c| Poly(c).roughness(), c, dc);

    let (r, x) = (0.8_f64, 1.5_f64);
    let ((dr,), dx) = gradient(Decay(r).apply_vjp(x, 5));
    assert_close("Decay::apply", (dr, dx), (5.0 * x * r.powi(4), r.powi(5)));
    check_gradient(
        "Decay::apply",
        |(r, x)| Decay(r).apply(x, 5),
        (r, x),
        (dr, dx),
    );

    let xs = [1.0, -2.0, 0.5, 3.0];
    let ((dr,), dxs) = gradient(Decay(r).smooth_vjp(xs));
    let want_x = [r.powi(3), (1.0 - r) * r * r, (1.0 - r) * r, 1.0 - r];
    let want_r = 3.0 * r * r * xs[0] + (1.0 - r) * (2.0 * r * xs[1] + xs[2])
        - (r * r * xs[1] + r * xs[2] + xs[3]);
    assert_close("Decay::smooth", (dr, dxs), (want_r, want_x));
    check_gradient(
        "Decay::smooth",
        |(r, xs)| Decay(r).smooth(xs),
        (r, xs),
        (dr, dxs),
    );
}
