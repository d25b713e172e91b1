//! Everyday styles the 34th session made differentiable: enums carrying values (an
//! interpreter of a tiny instruction list, an optional reading, a unit system), stacks drained
//! by `while let .. pop()`, windows and chunks, accumulators with `&mut self` methods, field
//! writes through `&mut` parameters, struct patterns in `match`, and a hand-written rule for a
//! method.

use crate::common::{check, check_vec};
use adjoint::prelude::*;

/// One instruction of a tiny stack-free machine.
#[derive(Clone, Debug, Differentiable)]
pub enum Op {
    Add(f64),
    Mul(f64),
    Neg,
}

/// Runs [Mul(a), Neg, Add(b), Mul(b)] on x: f = (b − ax)·b; ∂x = −ab, ∂a = −xb,
/// ∂b = 2b − ax.
#[differentiable]
fn interpret(x: f64, a: f64, b: f64) -> f64 {
    let program = [Op::Mul(a), Op::Neg, Op::Add(b), Op::Mul(b)];
    let mut acc = x;
    for op in program.iter() {
        acc = match op.clone() {
            Op::Add(c) => acc + c,
            Op::Mul(c) => acc * c,
            Op::Neg => -acc,
        };
    }
    acc
}

/// A sensor reading that may be missing or scaled.
#[derive(Clone, Debug, Differentiable)]
pub enum Reading {
    Missing,
    Value(f64),
    Scaled { value: f64, by: f64 },
}

/// The reading's value, `fallback` when missing.
#[differentiable]
fn value_or(r: Reading, fallback: f64) -> f64 {
    match r {
        Reading::Missing => fallback,
        Reading::Value(v) => v,
        Reading::Scaled { value, by } => value * by,
    }
}

/// x times the reading of kind 0 (missing: y), 1 (x) or 2 (x scaled by y):
/// f = xy, x², x²y; ∂ = (y, x), (2x, 0), (2xy, x²).
#[differentiable]
fn read_and_scale(x: f64, y: f64, kind: u8) -> f64 {
    let r = match kind {
        0 => Reading::Missing,
        1 => Reading::Value(x),
        _ => Reading::Scaled { by: y, value: x },
    };
    value_or(r, y) * x
}

/// A length in one of two units.
#[derive(Clone, Debug, Differentiable)]
pub enum Length {
    Metres(f64),
    Feet(f64),
}

/// The sum of lengths in metres (a foot is 0.3048 m), with `if let` for the metric ones:
/// f = a + 0.3048·b + 2a (the metric length counted again); ∂a = 3, ∂b = 0.3048.
#[differentiable]
fn total_metres(a: f64, b: f64) -> f64 {
    let lengths = [Length::Metres(a), Length::Feet(b)];
    let mut total = 0.0;
    for l in lengths.iter() {
        total += match l.clone() {
            Length::Metres(m) => m,
            Length::Feet(f) => 0.3048 * f,
        };
        if let Length::Metres(m) = l.clone() {
            total += 2.0 * m;
        }
    }
    total
}

/// Horner's rule from the top of a stack: popping v_{n−1} first, acc ← acc·w + x gives
/// f = Σⱼ vⱼ wʲ; ∂vⱼ = wʲ.
#[differentiable]
fn horner_from_stack(v: Vec<f64>, w: f64) -> f64 {
    let mut stack = v.clone();
    let mut acc = 0.0;
    while let Some(x) = stack.pop() {
        acc = acc * w + x;
    }
    acc
}

/// A worklist that halves what is above 2: from [x, 2x, 3x] with x near 0.9 the leaves sum
/// to 1.5x + 2x + x = 4.5x; ∂x = 4.5.
#[differentiable]
fn halving_worklist(x: f64) -> f64 {
    let mut work = vec![x, 2.0 * x, 3.0 * x];
    let mut total = 0.0;
    while let Some(y) = work.pop() {
        if y > 2.0 {
            work.push(0.5 * y);
        } else {
            total += y;
        }
    }
    total
}

/// Σ of the means of the windows of 3: ∂vᵢ = (windows holding i)/3, for 5 elements
/// (1, 2, 3, 2, 1)/3.
#[differentiable]
fn moving_average_sum(v: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for w in v.windows(3) {
        s += (w[0] + w[1] + w[2]) / 3.0;
    }
    s
}

/// The largest sum of two neighbours, by `windows(2)`: ∂ is 1 at the best pair.
#[differentiable]
fn best_pair(v: Vec<f64>) -> f64 {
    let mut best = f64::NEG_INFINITY;
    for w in v.windows(2) {
        let s = w[0] + w[1];
        if s > best {
            best = s;
        }
    }
    best
}

/// Products within chunks of two, the odd one out squared: for five elements
/// v₀v₁ + v₂v₃ + v₄²; ∂ = (v₁, v₀, v₃, v₂, 2v₄).
#[differentiable]
fn chunk_products(v: Vec<f64>) -> f64 {
    v.chunks(2).map(|c| c[0] * c[c.len() - 1]).sum()
}

/// Running statistics, updated in place.
#[derive(Clone, Debug, Differentiable)]
pub struct Stats {
    sum: f64,
    sum_sq: f64,
}

#[differentiable]
impl Stats {
    /// Records one observation.
    #[differentiable]
    pub fn record(&mut self, x: f64) {
        self.sum += x;
        self.sum_sq += x * x;
    }
}

/// The population variance by an accumulator: Σx²/n − (Σx/n)²; ∂vᵢ = 2(vᵢ − mean)/n.
#[differentiable]
fn variance(v: Vec<f64>) -> f64 {
    let n = v.len() as f64;
    let mut stats = Stats {
        sum: 0.0,
        sum_sq: 0.0,
    };
    for x in v.iter() {
        stats.record(*x);
    }
    let mean = stats.sum / n;
    stats.sum_sq / n - mean * mean
}

/// A 2-D point moved in place through a `&mut` parameter.
#[derive(Clone, Debug, Differentiable)]
pub struct Pos {
    x: f64,
    y: f64,
}

/// One step of rotation by a small angle t (first order): x ← x − t·y, y ← y + t·x.
#[differentiable]
fn nudge(p: &mut Pos, t: f64) {
    let (x, y) = (p.x, p.y);
    p.x = x - t * y;
    p.y = y + t * x;
}

/// Two nudges of (1, 0) by t, then the squared radius: (1 − t²)² + (2t)² = 1 + 2t² + t⁴;
/// ∂t = 4t + 4t³.
#[differentiable]
fn nudged_radius(t: f64) -> f64 {
    let mut p = Pos { x: 1.0, y: 0.0 };
    nudge(&mut p, t);
    nudge(&mut p, t);
    p.x * p.x + p.y * p.y
}

/// A `match` destructuring a struct, with a guard: |p|₁ in the first quadrant, else 0;
/// ∂ = (1, 1) or (0, 0). p = Pos { x: a, y: b·a }.
#[differentiable]
fn first_quadrant(a: f64, b: f64) -> f64 {
    let p = Pos { x: a, y: b * a };
    match p {
        Pos { x, y } if x > 0.0 && y > 0.0 => x + y,
        Pos { .. } => 0.0,
    }
}

/// A clipped linear unit with a hand-written rule on its method.
#[derive(Clone, Debug, Differentiable)]
pub struct Clip {
    limit: f64,
}

impl Clip {
    /// min(x, limit).
    pub fn apply(&self, x: f64) -> f64 {
        x.min(self.limit)
    }

    /// Its rule: the adjoint goes to x below the limit, to the limit above.
    #[derivative_of(Clip::apply)]
    pub fn apply_rule(&self, x: f64) -> (f64, impl use<> + FnOnce(f64) -> (ClipTangent, f64)) {
        let below = x < self.limit;
        (x.min(self.limit), move |d| {
            let (dx, dl) = if below { (d, 0.0) } else { (0.0, d) };
            (ClipTangent { limit: dl }, dx)
        })
    }
}

/// clip(x², limit = y)·x: below, x³ (∂ = (3x², 0)); above, y·x (∂ = (y, x)).
#[differentiable]
fn clipped_cube(x: f64, y: f64) -> f64 {
    let c = Clip { limit: y };
    c.apply(x * x) * x
}

/// The sign kept beside a magnitude.
#[derive(Clone, Debug, Differentiable)]
pub enum Signed {
    Pos(f64),
    Neg(f64),
}

/// sign(x)·√|x| through an enum built by a branch: ∂x = 1/(2√|x|).
#[differentiable]
fn signed_sqrt(x: f64) -> f64 {
    let s = if x >= 0.0 {
        Signed::Pos(x)
    } else {
        Signed::Neg(-x)
    };
    match s {
        Signed::Pos(m) => m.sqrt(),
        Signed::Neg(m) => -m.sqrt(),
    }
}

/// The product of the means of the pairs of `chunks_exact(2)`: for four elements
/// m₁m₂ with m₁ = (v₀ + v₁)/2, m₂ = (v₂ + v₃)/2; ∂ = (m₂, m₂, m₁, m₁)/2.
#[differentiable]
fn pair_means_product(v: Vec<f64>) -> f64 {
    let mut p = 1.0;
    for c in v.chunks_exact(2) {
        p *= 0.5 * (c[0] + c[1]);
    }
    p
}

/// The energy of the first two of [x, 2x, 3x] after `truncate(2)`: 5x²; ∂x = 10x.
#[differentiable]
fn truncated_energy(x: f64) -> f64 {
    let mut v = vec![x, 2.0 * x, 3.0 * x];
    v.truncate(2);
    v.iter().map(|t| t * t).sum()
}

#[test]
fn everyday_styles_of_the_34th_session() {
    let (x, a, b) = (0.7, 1.5, -0.4);
    check!(interpret, interpret_vjp; x, a, b => (-a * b, -x * b, 2.0 * b - a * x));

    let (x, y) = (1.5, 0.8);
    check!(|x, y| read_and_scale(x, y, 0), |x, y| read_and_scale_vjp(x, y, 0); x, y => (y, x));
    check!(|x, y| read_and_scale(x, y, 1), |x, y| read_and_scale_vjp(x, y, 1); x, y
        => (2.0 * x, 0.0));
    check!(|x, y| read_and_scale(x, y, 2), |x, y| read_and_scale_vjp(x, y, 2); x, y
        => (2.0 * x * y, x * x));
    check!(total_metres, total_metres_vjp; 2.0, 3.0 => (3.0, 0.3048));

    let v = [1.0, -2.0, 0.5, 3.0, 1.5];
    let w = 0.6_f64;
    let (dv, _) = gradient(horner_from_stack_vjp(v.to_vec(), w));
    let powers: [f64; 5] = std::array::from_fn(|j| w.powi(j as i32));
    check_vec(
        "horner_from_stack",
        |v| horner_from_stack(v, w),
        v,
        &dv,
        powers,
    );
    check!(halving_worklist, halving_worklist_vjp; 0.9 => 4.5);

    let got = gradient(moving_average_sum_vjp(v.to_vec()));
    let thirds = [1.0, 2.0, 3.0, 2.0, 1.0].map(|k: f64| k / 3.0);
    check_vec("moving_average_sum", moving_average_sum, v, &got, thirds);
    let pairs = [1.0, 3.0, 2.0, 0.5, 0.25];
    let got = gradient(best_pair_vjp(pairs.to_vec()));
    check_vec(
        "best_pair",
        best_pair,
        pairs,
        &got,
        [0.0, 1.0, 1.0, 0.0, 0.0],
    );
    let got = gradient(chunk_products_vjp(v.to_vec()));
    check_vec(
        "chunk_products",
        chunk_products,
        v,
        &got,
        [v[1], v[0], v[3], v[2], 2.0 * v[4]],
    );

    let got = gradient(variance_vjp(v.to_vec()));
    let mean = v.iter().sum::<f64>() / 5.0;
    let want = v.map(|x| 2.0 * (x - mean) / 5.0);
    check_vec("variance", variance, v, &got, want);

    let t = 0.3_f64;
    check!(nudged_radius, nudged_radius_vjp; t => 4.0 * t + 4.0 * t.powi(3));
    check!(first_quadrant, first_quadrant_vjp; 0.5, 2.0 => (1.0 + 2.0, 0.5));
    check!(first_quadrant, first_quadrant_vjp; -0.5, 2.0 => (0.0, 0.0));

    check!(clipped_cube, clipped_cube_vjp; 0.5, 1.0 => (3.0 * 0.25, 0.0));
    check!(clipped_cube, clipped_cube_vjp; 2.0, 1.0 => (1.0, 2.0));

    for x in [2.25_f64, -0.64] {
        check!(signed_sqrt, signed_sqrt_vjp; x => 0.5 / x.abs().sqrt());
    }
    let q = [1.0, 2.0, -0.5, 1.5];
    let (m1, m2) = (1.5, 0.5);
    let got = gradient(pair_means_product_vjp(q.to_vec()));
    check_vec(
        "pair_means_product",
        pair_means_product,
        q,
        &got,
        [m2, m2, m1, m1].map(|m| m / 2.0),
    );
    check!(truncated_energy, truncated_energy_vjp; 0.7 => 7.0);
}
