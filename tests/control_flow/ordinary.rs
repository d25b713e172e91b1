//! Ordinary Rust the macro must take as written: `clamp` on floats, const generic arrays, and
//! `#[no_derivative]` fields of any type (`Option`, `Vec<usize>`, `String`, `bool`) read from
//! an active struct. Gradients exact and against finite differences.

use crate::common::check;
use adjoint::prelude::*;

/// x·clamp(x, −1, 1): x² inside (2x), −x below (−1), x above (1).
#[differentiable]
fn clamped(x: f64) -> f64 {
    x.clamp(-1.0, 1.0) * x
}

/// clamp with active bounds: clamp(x, a, b) picks the input it is.
#[differentiable]
fn clamp_between(x: f64, a: f64, b: f64) -> f64 {
    x.clamp(a, b) * 2.0
}

/// A const generic length: √(Σ vᵢ² / N), ∂vᵢ = vᵢ / (N · rms).
#[differentiable]
fn rms<const N: usize>(v: [f64; N]) -> f64 {
    let mut s = 0.0;
    for i in 0..N {
        s += v[i] * v[i];
    }
    (s / N as f64).sqrt()
}

/// A weight and data fields of every kind.
#[derive(Clone, Differentiable)]
struct Cfg {
    w: f64,
    #[no_derivative]
    limit: Option<f64>,
    #[no_derivative]
    ids: Vec<usize>,
    #[no_derivative]
    name: String,
    #[no_derivative]
    on: bool,
}

/// y = w·x, doubled when `on`, halved above `limit`, plus the number of ids and of the name's
/// bytes (data).
#[allow(clippy::collapsible_if)] // an `if` inside `if let` is the construct under test
#[differentiable]
fn configured(c: Cfg, x: f64) -> f64 {
    let mut y = c.w * x;
    if c.on {
        y = y * 2.0;
    }
    if let Some(l) = c.limit {
        if y > l {
            y = y * 0.5;
        }
    }
    y + c.ids.len() as f64 + c.name.len() as f64
}

#[test]
fn clamp_picks_the_input_it_is() {
    check!(clamped, clamped_vjp; 0.5 => 1.0);
    check!(clamped, clamped_vjp; -3.0 => -1.0);
    check!(clamped, clamped_vjp; 2.0 => 1.0);
    check!(clamp_between, clamp_between_vjp; 0.5, -1.0, 2.0 => (2.0, 0.0, 0.0));
    check!(clamp_between, clamp_between_vjp; -4.0, -1.0, 2.0 => (0.0, 2.0, 0.0));
    check!(clamp_between, clamp_between_vjp; 3.0, -1.0, 2.0 => (0.0, 0.0, 2.0));
    let (x, t) = (Dual::new(-4.0, 1.0), Dual::constant(-1.0));
    assert_eq!(x.clamp(t, Dual::constant(2.0)).eps, 0.0);
}

#[test]
fn const_generic_lengths() {
    let v = [3.0, 4.0];
    let r = rms(v);
    check!(rms::<2>, rms_vjp::<2>; v => [3.0 / (2.0 * r), 4.0 / (2.0 * r)]);
    let (value, pullback) = rms_vjp([1.0, 1.0, 1.0]);
    assert_eq!((value, pullback(1.0)), (1.0, [1.0 / 3.0; 3]));
}

#[test]
fn no_derivative_fields_of_any_type() {
    let cfg = |w: f64, limit: Option<f64>, on: bool| Cfg {
        w,
        limit,
        ids: vec![7, 8],
        name: "ab".into(),
        on,
    };
    // on, no limit: y = 2wx + 4; ∂w = 2x, ∂x = 2w.
    let (x, w) = (1.5, 0.8);
    let (dc, dx) = gradient(configured_vjp(cfg(w, None, true), x));
    assert_eq!((dc.w, dx), (2.0 * x, 2.0 * w));
    assert_eq!(configured(cfg(w, None, true), x), 2.0 * w * x + 4.0);
    // off, limit 1 below wx = 1.2: halved, ∂w = x/2, ∂x = w/2.
    let (dc, dx) = gradient(configured_vjp(cfg(w, Some(1.0), false), x));
    assert_eq!((dc.w, dx), (x / 2.0, w / 2.0));
    check!(
        |w, x| configured(cfg(w, Some(1.0), false), x),
        |w, x| {
            let (value, pullback) = configured_vjp(cfg(w, Some(1.0), false), x);
            (value, move |seed: f64| {
                let (dc, dx) = pullback(seed);
                (dc.w, dx)
            })
        };
        w, x => (x / 2.0, w / 2.0)
    );
}

/// `let (s, c) = x.sin_cos()`, a method returning a pair: s·c·y = y sin(2x)/2;
/// ∂x = y cos 2x, ∂y = sin x cos x. Both modes.
#[differentiable(forward)]
fn sine_cosine(x: f64, y: f64) -> f64 {
    let (s, c) = x.sin_cos();
    s * c * y
}

#[test]
fn sin_cos_returns_a_pair_with_a_derivative() {
    let (x, y) = (0.4_f64, 1.5);
    let got = gradient(sine_cosine_vjp(x, y));
    let want = (y * (2.0 * x).cos(), x.sin() * x.cos());
    crate::common::assert_close("sine_cosine", got, want);
    crate::common::check_gradient("sine_cosine", |(x, y)| sine_cosine(x, y), (x, y), got);
    let (_, t) = sine_cosine_jvp(x, y, 0.3, -0.5);
    assert!(
        (t - (want.0 * 0.3 - want.1 * 0.5)).abs() < 1e-12,
        "sine_cosine jvp {t}"
    );
}
