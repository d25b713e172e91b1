//! Tests of the forward rules (JVPs) of the operators and float methods, against central
//! finite differences in `f64`, against the reverse rules through the transpose identity
//! `⟨J·v, w⟩ = ⟨v, Jᵀ·w⟩`, and at hand-computed values. The rules under test come from
//! tables that the rule macros write (`operators::TABLE`, `methods::UNARY_TABLE`, ...), so
//! that a rule added to a table is tested without a second list to maintain.
//!
//! # Tolerance
//! The central difference `(g(h) − g(−h)) / 2h` along a direction, with
//! `h = STEP · max(1, |x|)`, has a truncation error of about `h² |g'''| / 6 ≈ 1e-12 |g'''|` and a
//! rounding error of about `ε |g| / h`; the check allows `TOL · (1 + |ẏ|)` plus the rounding
//! term `8 ε |g| / 2h` (as the integration tests' `check_vjp`). The transpose identity only
//! differs by the order of a few roundings: it allows `8 ε` times the sum of the magnitudes of
//! its terms.

mod methods;
mod operators;

/// Relative step of the central differences.
const STEP: f64 = 1e-6;
/// Relative and absolute tolerance of the finite-difference check (see the module docs).
const TOL: f64 = 1e-6;

/// Tangents of the two inputs of a binary rule.
pub(crate) type Tangents2 = (Option<f64>, Option<f64>);
/// What a forward rule returns: the value and its tangent.
pub(crate) type Forward = (f64, Option<f64>);

/// A unary rule in `f64`: its value, its forward rule and its reverse rule `w ↦ x̄`.
pub(crate) struct Unary {
    pub name: &'static str,
    pub value: fn(f64) -> f64,
    pub jvp: fn(f64, Option<f64>) -> Forward,
    pub vjp: fn(f64, f64) -> f64,
}

/// A binary rule in `f64`: its value, its forward rule and its reverse rule `w ↦ (x̄, ō)`.
pub(crate) struct Binary {
    pub name: &'static str,
    pub value: fn(f64, f64) -> f64,
    pub jvp: fn(f64, f64, Tangents2) -> Forward,
    pub vjp: fn(f64, f64, f64) -> (f64, f64),
}

/// An operator's rule, and its forward rule with `&a ∘ b`, `a ∘ &b` and `&a ∘ &b`.
pub(crate) struct Operator {
    pub rule: Binary,
    pub by_reference: fn(f64, f64, Tangents2) -> [Forward; 3],
}

/// Directions of the binary checks: each input alone, then both.
const DIRECTIONS: [Tangents2; 3] = [
    (Some(0.7), None),
    (None, Some(-1.3)),
    (Some(0.7), Some(-1.3)),
];
/// Cotangents of the transpose checks.
const COTANGENTS: [f64; 2] = [0.9, -1.6];

/// Whether `a` and `b` are the same value (both NaN counting as the same).
fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// Checks `analytic = g'(0)` by central differences, where `g(s)` is the function along the
/// direction; `scale` is `max(1, |x|)` of the point. Returns `false` (nothing checked) where
/// `g` is not finite at the three points, i.e. the point lies outside the domain.
fn check_directional(what: &str, g: impl Fn(f64) -> f64, scale: f64, analytic: f64) -> bool {
    let h = STEP * scale;
    let (g0, gp, gm) = (g(0.0), g(h), g(-h));
    if !(g0.is_finite() && gp.is_finite() && gm.is_finite()) {
        return false;
    }
    let fd = (gp - gm) / (2.0 * h);
    let tol =
        TOL * (1.0 + analytic.abs()) + 8.0 * f64::EPSILON * gp.abs().max(gm.abs()) / (2.0 * h);
    assert!(
        analytic.is_finite() && (fd - analytic).abs() <= tol,
        "{what}: forward rule gives {analytic}, finite differences {fd} (tolerance {tol:e})"
    );
    true
}

/// Checks `⟨J·v, w⟩ = ⟨v, Jᵀ·w⟩` given `J·v`, and the terms `vᵢ · (Jᵀ·w)ᵢ`.
fn check_transpose(what: &str, jv: f64, w: f64, terms: &[f64]) {
    let lhs = jv * w;
    let rhs: f64 = terms.iter().sum();
    let tol = 8.0 * f64::EPSILON * terms.iter().map(|t| t.abs()).sum::<f64>();
    assert!(
        (lhs - rhs).abs() <= tol,
        "{what}: ⟨J·v, w⟩ = {lhs} but ⟨v, Jᵀ·w⟩ = {rhs} (tolerance {tol:e})"
    );
}

/// Checks a unary rule at `x`; returns whether `x` was in its domain (finite differences ran).
fn check_unary(rule: &Unary, x: f64) -> bool {
    let what = format!("{} at {x}", rule.name);
    let (y, none) = (rule.jvp)(x, None);
    assert!(none.is_none(), "{what}: no tangent in gave {none:?}");
    assert!(same(y, (rule.value)(x)), "{what}: value {y}");
    let v = 0.7;
    let (_, jv) = (rule.jvp)(x, Some(v));
    let jv = jv.unwrap_or_else(|| panic!("{what}: a tangent in gave none out"));
    if !check_directional(&what, |s| (rule.value)(x + s * v), x.abs().max(1.0), jv) {
        return false;
    }
    for w in COTANGENTS {
        check_transpose(&what, jv, w, &[v * (rule.vjp)(x, w)]);
    }
    true
}

/// Checks a binary rule at `(x, o)` in each of [`DIRECTIONS`]; returns whether the point was
/// in its domain.
fn check_binary(rule: &Binary, x: f64, o: f64) -> bool {
    let what = format!("{} at ({x}, {o})", rule.name);
    let (y, none) = (rule.jvp)(x, o, (None, None));
    assert!(none.is_none(), "{what}: no tangent in gave {none:?}");
    assert!(same(y, (rule.value)(x, o)), "{what}: value {y}");
    let scale = x.abs().max(o.abs()).max(1.0);
    for t in DIRECTIONS {
        let what = format!("{what} along {t:?}");
        let (vx, vo) = (t.0.unwrap_or(0.0), t.1.unwrap_or(0.0));
        let (_, jv) = (rule.jvp)(x, o, t);
        let jv = jv.unwrap_or_else(|| panic!("{what}: a tangent in gave none out"));
        let along = |s: f64| (rule.value)(x + s * vx, o + s * vo);
        if !check_directional(&what, along, scale, jv) {
            return false;
        }
        for w in COTANGENTS {
            let (dx, d_o) = (rule.vjp)(x, o, w);
            check_transpose(&what, jv, w, &[vx * dx, vo * d_o]);
        }
    }
    true
}

/// Points of the unary checks: off the integers and halves (the jumps of `floor`, `round`,
/// `fract`, ...), inside and outside the domains of `ln`, `asin`, ...
const UNARY_POINTS: [f64; 7] = [-2.3, -0.83, -0.31, 0.27, 0.64, 1.37, 2.9];
/// Grid of the binary checks: no ties, no zero divisor, `x / o` off the integers.
const FIRST: [f64; 5] = [-1.7, -0.6, 0.45, 1.3, 2.6];
const SECOND: [f64; 4] = [-1.2, 0.35, 0.8, 2.1];
/// A rule must be checked at this many points of its domain at least.
const MIN_POINTS: usize = 3;

/// Checks every rule of `rules` on [`UNARY_POINTS`].
fn check_unary_table(rules: &[Unary]) {
    for rule in rules {
        let checked = UNARY_POINTS
            .iter()
            .filter(|&&x| check_unary(rule, x))
            .count();
        assert!(
            checked >= MIN_POINTS,
            "{}: only {checked} points in its domain",
            rule.name
        );
    }
}

/// Checks every rule of `rules` on the grid `FIRST × SECOND`.
fn check_binary_table<'a>(rules: impl IntoIterator<Item = &'a Binary>) {
    for rule in rules {
        let grid = FIRST
            .iter()
            .flat_map(|&x| SECOND.iter().map(move |&o| (x, o)));
        let checked = grid.filter(|&(x, o)| check_binary(rule, x, o)).count();
        assert!(
            checked >= MIN_POINTS,
            "{}: only {checked} points in its domain",
            rule.name
        );
    }
}
