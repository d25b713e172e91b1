//! Forward mode over iterator chains of active collections (`enumerate`, `rev`, `zip`, and
//! the reductions `.map(..).sum()`, `.product()`), written as loops over indices as in
//! reverse mode: each `_jvp` against the reverse-mode gradient (⟨∇f, v⟩) and central finite
//! differences.

use adjoint::prelude::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

/// Σ aᵢbᵢ as `zip(..).map(..).sum()`.
#[differentiable(forward)]
fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a.iter().zip(b.iter()).map(|(x, y)| *x * *y).sum()
}

/// Σ i·aᵢ² over `enumerate`, then Π aᵢ by `product()`.
#[differentiable(forward)]
fn weighted(a: [f64; 3]) -> f64 {
    let mut s = 0.0;
    for (i, x) in a.iter().enumerate() {
        s += i as f64 * *x * *x;
    }
    s + a.iter().product::<f64>()
}

/// Horner over the coefficients from the last (`rev`), leaving early (`break 'terms`) once
/// the partial value passes 100.
#[differentiable(forward)]
fn horner(c: [f64; 4], x: f64) -> f64 {
    let mut p = 0.0;
    'terms: for &ci in c.iter().rev() {
        p = p * x + ci;
        if p > 100.0 {
            break 'terms;
        }
    }
    p
}

#[test]
fn chains_in_forward_mode_agree_with_reverse_and_differences() {
    let (a, b) = ([1.0, -2.0, 0.5], [0.3, 0.7, -1.1]);
    let (da, db) = ([0.2, -0.4, 1.0], [1.0, 0.5, -0.3]);
    let (value, tangent) = dot_jvp(a, b, da, db);
    assert_eq!(value, dot(a, b));
    let (ga, gb) = gradient(dot_vjp(a, b));
    let want: f64 = (0..3).map(|i| ga[i] * da[i] + gb[i] * db[i]).sum();
    assert!(close(tangent, want), "dot: {tangent} against {want}");
    // Exactly: ⟨b, da⟩ + ⟨a, db⟩.
    let exact: f64 = (0..3).map(|i| b[i] * da[i] + a[i] * db[i]).sum();
    assert!(close(tangent, exact));

    let (_, tangent) = weighted_jvp(a, da);
    let g = gradient(weighted_vjp(a));
    let want: f64 = (0..3).map(|i| g[i] * da[i]).sum();
    assert!(close(tangent, want), "weighted: {tangent} against {want}");
    let h = 1e-6;
    let shifted = |s: f64| weighted([a[0] + s * da[0], a[1] + s * da[1], a[2] + s * da[2]]);
    let fd = (shifted(h) - shifted(-h)) / (2.0 * h);
    assert!(
        (tangent - fd).abs() < 1e-6,
        "weighted: {tangent} against differences {fd}"
    );

    // At x = 8 the loop leaves after three terms (3, 24.5, 194 > 100).
    for x in [0.7, 8.0] {
        let c = [1.0, -2.0, 0.5, 3.0];
        let dc = [0.1, 0.2, -0.3, 0.4];
        let (value, tangent) = horner_jvp(c, x, dc, 1.0);
        assert_eq!(value, horner(c, x));
        let (gc, gx) = gradient(horner_vjp(c, x));
        let want = (0..4).map(|i| gc[i] * dc[i]).sum::<f64>() + gx;
        assert!(
            close(tangent, want),
            "horner at {x}: {tangent} against {want}"
        );
    }
}
