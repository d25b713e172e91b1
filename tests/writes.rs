//! Writes the lowering must see: an inout call `g(&mut v)` inside a branch or a loop,
//! `std::mem::{swap, replace, take}`, writes through a `&mut` reference to a local (`let r =
//! &mut a; *r = ..`, reborrows), and tuple assignment `(a, b) = (b, a)`. Each of these once
//! compiled to a silently wrong derivative; every gradient here is checked against the
//! hand-computed value in its comment and against central finite differences. The writes
//! the lowering cannot follow are rejected at their span (`tests/ui/writes/`).

// Plain assignments through references (`*r = *r * y`) are what is tested.
#![allow(clippy::assign_op_pattern)]

mod common;

use adjoint::prelude::*;
use common::{assert_close, check, check_gradient};

/// x₁ = x₀·y + y (an inout parameter): ∂x₁/∂x₀ = y, ∂x₁/∂y = x₀ + 1.
#[differentiable]
fn step(x: &mut f64, y: f64) {
    *x = *x * y + y;
}

// ---------------------------------------------------------------------------------------------
// Inout calls inside regions
// ---------------------------------------------------------------------------------------------

/// v = x²; if go { v = v·y + y }; f = v·x. Taken: f = x³y + xy, ∂x = 3x²y + y, ∂y = x³ + x;
/// not taken: f = x³, ∂x = 3x², ∂y = 0.
#[differentiable]
fn inout_in_if(x: f64, y: f64, go: bool) -> f64 {
    let mut v = x * x;
    if go {
        step(&mut v, y);
    }
    v * x
}

#[test]
fn inout_call_in_a_branch() {
    let (x, y) = (1.5, 2.0);
    check!(|x, y| inout_in_if(x, y, true), |x, y| inout_in_if_vjp(x, y, true); x, y
        => (3.0 * x * x * y + y, x * x * x + x));
    check!(|x, y| inout_in_if(x, y, false), |x, y| inout_in_if_vjp(x, y, false); x, y
        => (3.0 * x * x, 0.0));
}

/// v = x, then n times v = v·y + y. n = 2: v = xy² + y² + y, ∂x = y², ∂y = 2xy + 2y + 1.
#[differentiable]
fn inout_in_for(x: f64, y: f64, n: usize) -> f64 {
    let mut v = x;
    for _ in 0..n {
        step(&mut v, y);
    }
    v
}

/// The same with `while`: v = x, then v = v·y + y while v < 10. x = 1.5, y = 2: v = 5, 12,
/// so two steps, as above.
#[differentiable]
fn inout_in_while(x: f64, y: f64) -> f64 {
    let mut v = x;
    while v < 10.0 {
        step(&mut v, y);
    }
    v
}

#[test]
fn inout_call_in_a_loop() {
    let (x, y) = (1.5, 2.0);
    let want = (y * y, 2.0 * x * y + 2.0 * y + 1.0);
    check!(|x, y| inout_in_for(x, y, 2), |x, y| inout_in_for_vjp(x, y, 2); x, y => want);
    check!(inout_in_while, inout_in_while_vjp; x, y => want);
}

// ---------------------------------------------------------------------------------------------
// std::mem::{swap, replace, take}
// ---------------------------------------------------------------------------------------------

/// Sorted pair: lo = min(x, y), hi = max(x, y); f = 2·lo + 3·hi. At x > y: f = 2y + 3x,
/// ∂x = 3, ∂y = 2; at x < y: ∂x = 2, ∂y = 3.
#[differentiable]
fn ordered(x: f64, y: f64) -> f64 {
    let (mut lo, mut hi) = (x, y);
    if lo > hi {
        std::mem::swap(&mut lo, &mut hi);
    }
    2.0 * lo + 3.0 * hi
}

/// Straight-line swaps by the three paths: a = x², b = y; swap, swap back, swap: a = y,
/// b = x²; f = a·b² = y x⁴, ∂x = 4yx³, ∂y = x⁴.
#[differentiable]
fn swapped_thrice(x: f64, y: f64) -> f64 {
    use std::mem;
    let mut a = x * x;
    let mut b = y;
    core::mem::swap(&mut a, &mut b);
    mem::swap(&mut a, &mut b);
    std::mem::swap(&mut b, &mut a);
    a * b * b
}

/// old = replace(&mut a, y²): old = x·y, a = y²; f = old·a + a = xy³ + y², ∂x = y³,
/// ∂y = 3xy² + 2y.
#[differentiable]
fn replaced(x: f64, y: f64) -> f64 {
    let mut a = x * y;
    let old = std::mem::replace(&mut a, y * y);
    old * a + a
}

/// old = take(&mut a): old = x·y, a = 0; f = old + a·x + 2 = xy + 2, ∂x = y, ∂y = x.
#[differentiable]
fn taken(x: f64, y: f64) -> f64 {
    let mut a = x * y;
    let old = std::mem::take(&mut a);
    old + a * x + 2.0
}

/// Replacing inside a loop: a = x; n times { old = replace(&mut a, a·y); s += old }.
/// n = 3: s = x + xy + xy², ∂x = 1 + y + y², ∂y = x + 2xy.
#[differentiable]
fn replaced_in_loop(x: f64, y: f64, n: usize) -> f64 {
    let mut a = x;
    let mut s = 0.0;
    for _ in 0..n {
        let next = a * y;
        let old = std::mem::replace(&mut a, next);
        s += old;
    }
    s
}

#[test]
fn mem_swap_replace_take() {
    check!(ordered, ordered_vjp; 3.0, 1.0 => (3.0, 2.0));
    check!(ordered, ordered_vjp; 1.0, 3.0 => (2.0, 3.0));
    let (x, y) = (1.5, 2.0);
    check!(swapped_thrice, swapped_thrice_vjp; x, y => (4.0 * y * x.powi(3), x.powi(4)));
    check!(replaced, replaced_vjp; x, y => (y.powi(3), 3.0 * x * y * y + 2.0 * y));
    check!(taken, taken_vjp; x, y => (y, x));
    check!(|x, y| replaced_in_loop(x, y, 3), |x, y| replaced_in_loop_vjp(x, y, 3); x, y
        => (1.0 + y + y * y, x + 2.0 * x * y));
}

// ---------------------------------------------------------------------------------------------
// Writes through `&mut` references to locals
// ---------------------------------------------------------------------------------------------

/// a = 1; r = &mut a; *r = x²; f = a = x², ∂x = 2x (5 at x = 2.5).
#[differentiable]
fn through_ref(x: f64) -> f64 {
    let mut a = 1.0;
    let r = &mut a;
    *r = x * x;
    a
}

/// a = x; r = &mut a; *r *= y; *r += x; then a reborrow: *r2 = *r2 · x; f = a + y.
/// a = (xy + x)·x = x²y + x², f = x²y + x² + y, ∂x = 2xy + 2x, ∂y = x² + 1.
#[differentiable]
fn compound_through_ref(x: f64, y: f64) -> f64 {
    let mut a = x;
    let r = &mut a;
    *r *= y;
    *r += x;
    let r2 = &mut *r;
    *r2 = *r2 * x;
    a + y
}

/// Reads through the reference have the local's activity: a = x·y; r = &mut a;
/// b = *r · *r; *r = 2 (data); f = a + b = 2 + x²y², ∂x = 2xy², ∂y = 2x²y.
#[differentiable]
fn read_then_overwrite(x: f64, y: f64) -> f64 {
    let mut a = x * y;
    let r = &mut a;
    let b = *r * *r;
    *r = 2.0;
    a + b
}

/// Writes through a reference inside a branch and a loop: a = x; r = &mut a;
/// if go { *r = *r · y }; n times *r += x; f = a. go, n = 2: a = xy + 2x, ∂x = y + 2, ∂y = x.
#[differentiable]
fn ref_in_regions(x: f64, y: f64, go: bool, n: usize) -> f64 {
    let mut a = x;
    let r = &mut a;
    if go {
        *r = *r * y;
    }
    for _ in 0..n {
        *r += x;
    }
    a
}

/// A reference made inside the loop body: s = 0; n times { r = &mut s; *r += x·y };
/// f = s = nxy, ∂x = ny, ∂y = nx.
#[differentiable]
fn ref_made_in_loop(x: f64, y: f64, n: usize) -> f64 {
    let mut s = 0.0;
    for _ in 0..n {
        let r = &mut s;
        *r += x * y;
    }
    s
}

/// An element written through a reference to a local array: v = [x, y]; r = &mut v;
/// r[0] = x·y; f = v[0] + v[1]·x = xy + xy, ∂x = 2y, ∂y = 2x.
#[differentiable]
fn element_through_ref(x: f64, y: f64) -> f64 {
    let mut v = [x, y];
    let r = &mut v;
    r[0] = x * y;
    v[0] + v[1] * x
}

/// Swapping through references: r = &mut a, s = &mut b; swap(r, s); a = y, b = x²;
/// f = a·b = yx², ∂x = 2xy, ∂y = x².
#[differentiable]
fn swap_through_refs(x: f64, y: f64) -> f64 {
    let mut a = x * x;
    let mut b = y;
    let r = &mut a;
    let s = &mut b;
    std::mem::swap(r, s);
    a * b
}

/// Inout calls through a reference: a = x; r = &mut a; step(r, y); step(&mut *r, y);
/// a = xy² + y² + y, ∂x = y², ∂y = 2xy + 2y + 1.
#[differentiable]
fn inout_through_ref(x: f64, y: f64) -> f64 {
    let mut a = x;
    let r = &mut a;
    step(r, y);
    step(&mut *r, y);
    a
}

/// A push through a reference: v = [x]; r = &mut v; r.push(x·y); f = v[0] + v[1]·y =
/// x + xy², ∂x = 1 + y², ∂y = 2xy.
#[differentiable]
fn push_through_ref(x: f64, y: f64) -> f64 {
    let mut v = vec![x];
    let r = &mut v;
    r.push(x * y);
    v[0] + v[1] * y
}

/// v₀ ← v₀·k, v₁ ← v₁ + v₀ on an inout array: ∂v₀'/∂v₀ = k, ∂v₁'/∂v₀ = k, ∂v₁'/∂v₁ = 1,
/// ∂v₀'/∂k = v₀, ∂v₁'/∂k = v₀.
#[differentiable]
fn scale_first(v: &mut [f64; 2], k: f64) {
    v[0] = v[0] * k;
    v[1] = v[1] + v[0];
}

/// Calls `scale_first` on a local array: v = [x, y]; f = v₀ + 2v₁ = xk + 2(y + xk) = 3xk + 2y,
/// ∂x = 3k, ∂y = 2 (k = 1.5 fixed).
#[differentiable]
fn calls_scale_first(x: f64, y: f64) -> f64 {
    let mut v = [x, y];
    scale_first(&mut v, 1.5);
    v[0] + 2.0 * v[1]
}

/// A reference pointed at `a`, then at `b`: a = x, b = y; r = &mut a; *r += 1; r = &mut b;
/// *r = x·y; f = a + 2b = x + 1 + 2xy, ∂x = 1 + 2y, ∂y = 2x.
#[differentiable]
fn repointed(x: f64, y: f64) -> f64 {
    let mut a = x;
    let mut b = y;
    let mut r = &mut a;
    *r += 1.0;
    r = &mut b;
    *r = x * y;
    a + 2.0 * b
}

#[test]
fn writes_through_references() {
    check!(through_ref, through_ref_vjp; 2.5 => 5.0);
    let (x, y) = (1.5, 2.0);
    check!(compound_through_ref, compound_through_ref_vjp; x, y
        => (2.0 * x * y + 2.0 * x, x * x + 1.0));
    check!(read_then_overwrite, read_then_overwrite_vjp; x, y
        => (2.0 * x * y * y, 2.0 * x * x * y));
    check!(|x, y| ref_in_regions(x, y, true, 2), |x, y| ref_in_regions_vjp(x, y, true, 2); x, y
        => (y + 2.0, x));
    check!(|x, y| ref_in_regions(x, y, false, 3), |x, y| ref_in_regions_vjp(x, y, false, 3); x, y
        => (4.0, 0.0));
    check!(|x, y| ref_made_in_loop(x, y, 3), |x, y| ref_made_in_loop_vjp(x, y, 3); x, y
        => (3.0 * y, 3.0 * x));
    check!(element_through_ref, element_through_ref_vjp; x, y => (2.0 * y, 2.0 * x));
    check!(swap_through_refs, swap_through_refs_vjp; x, y => (2.0 * x * y, x * x));
    check!(inout_through_ref, inout_through_ref_vjp; x, y
        => (y * y, 2.0 * x * y + 2.0 * y + 1.0));
    check!(push_through_ref, push_through_ref_vjp; x, y => (1.0 + y * y, 2.0 * x * y));
    check!(calls_scale_first, calls_scale_first_vjp; x, y => (3.0 * 1.5, 2.0));
    check!(repointed, repointed_vjp; x, y => (1.0 + 2.0 * y, 2.0 * x));
}

// ---------------------------------------------------------------------------------------------
// Tuple assignment
// ---------------------------------------------------------------------------------------------

/// (x·y, x + y): ∂ of the first = (y, x), of the second = (1, 1).
#[differentiable]
fn pair(x: f64, y: f64) -> (f64, f64) {
    (x * y, x + y)
}

/// a = x, b = y²; (a, b) = (b, a): a = y², b = x; f = 2a + 3b = 2y² + 3x, ∂x = 3, ∂y = 4y.
#[differentiable]
fn tuple_swap(x: f64, y: f64) -> f64 {
    let (mut a, mut b) = (x, y * y);
    (a, b) = (b, a);
    2.0 * a + 3.0 * b
}

/// (a, b) = pair(x, y): a = xy, b = x + y; (a, _) = pair(b, a): a = (x + y)xy; f = a·b =
/// xy(x + y)², ∂x = y(x + y)² + 2xy(x + y), ∂y = x(x + y)² + 2xy(x + y).
#[differentiable]
fn tuple_from_call(x: f64, y: f64) -> f64 {
    let (mut a, b);
    (a, b) = pair(x, y);
    (a, _) = pair(b, a);
    a * b
}

/// Nested, inside a branch: a = x, b = x·y, c = y; ((a, b), c) = ((c, a), b) rotates them to
/// a = y, b = x, c = xy. f = a + 2b + 3c; taken: y + 2x + 3xy, ∂x = 2 + 3y, ∂y = 1 + 3x; not
/// taken: x + 2xy + 3y, ∂x = 1 + 2y, ∂y = 2x + 3.
#[differentiable]
fn tuple_rotate(x: f64, y: f64, go: bool) -> f64 {
    let (mut a, mut b, mut c) = (x, x * y, y);
    if go {
        ((a, b), c) = ((c, a), b);
    }
    a + 2.0 * b + 3.0 * c
}

/// (a, b) = (b, a + b) three times from (x, y): a = x + 2y, b = 2x + 3y; f = a·b,
/// ∂x = b + 2a = 4x + 7y, ∂y = 2b + 3a = 7x + 12y.
#[differentiable]
fn fibonacci_pair(x: f64, y: f64, n: usize) -> f64 {
    let (mut a, mut b) = (x, y);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a * b
}

#[test]
fn tuple_assignment() {
    let (x, y) = (1.5, 2.0);
    check!(tuple_swap, tuple_swap_vjp; x, y => (3.0, 4.0 * y));
    let s = x + y;
    check!(tuple_from_call, tuple_from_call_vjp; x, y
        => (y * s * s + 2.0 * x * y * s, x * s * s + 2.0 * x * y * s));
    check!(|x, y| tuple_rotate(x, y, true), |x, y| tuple_rotate_vjp(x, y, true); x, y
        => (2.0 + 3.0 * y, 1.0 + 3.0 * x));
    check!(|x, y| tuple_rotate(x, y, false), |x, y| tuple_rotate_vjp(x, y, false); x, y
        => (1.0 + 2.0 * y, 2.0 * x + 3.0));
    check!(|x, y| fibonacci_pair(x, y, 3), |x, y| fibonacci_pair_vjp(x, y, 3); x, y
        => (4.0 * x + 7.0 * y, 7.0 * x + 12.0 * y));
}

/// A point whose fields are written after it is built.
#[derive(Clone, Debug, Differentiable)]
struct Point {
    x: f64,
    y: f64,
}

/// A struct inside a struct, and a tuple field.
#[derive(Clone, Debug, Differentiable)]
struct Body {
    at: Point,
    spin: (f64, f64),
}

/// `p.x = ..` and `p.y += ..` on a point built from data, then read: p = (x², 1 + xy), and
/// f = p.x · p.y = x² + x³y; ∇ = (2x + 3x²y, x³).
#[differentiable]
fn written_fields(x: f64, y: f64) -> f64 {
    let mut p = Point { x: 0.0, y: 1.0 };
    p.x = x * x;
    p.y += x * y;
    p.x * p.y
}

/// Writes over an active point: the old x is overwritten (its derivative must vanish), y is
/// scaled in place. p = (x, y) → (3y, 2y·x): f = 3y + 2xy; ∇ = (2y, 3 + 2x).
#[differentiable]
fn overwritten_field(x: f64, y: f64) -> f64 {
    let mut p = Point { x, y };
    p.x = 3.0 * p.y;
    p.y *= 2.0 * x;
    p.x + p.y
}

/// Nested places: `b.at.x`, a tuple field `b.spin.1`, and a whole-field write `b.at = ..`
/// afterwards reading the old `b.at.y` through the new point. With b = ((x, y), (0, 0)):
/// at.x ← x·y, spin.1 ← at.x + y = xy + y, at ← (at.y, spin.1) = (y, xy + y);
/// f = at.x · at.y + spin.1 = y(xy + y) + xy + y; ∇ = (y² + y, 2xy + 2y + x + 1).
#[differentiable]
fn nested_places(x: f64, y: f64) -> f64 {
    let mut b = Body {
        at: Point { x, y },
        spin: (0.0, 0.0),
    };
    b.at.x = x * y;
    b.spin.1 = b.at.x + y;
    b.at = Point {
        x: b.at.y,
        y: b.spin.1,
    };
    b.at.x * b.at.y + b.spin.1
}

/// A tuple local: `t.0 = ..` inside a loop, t = (s, k): s ← s·x + k, k ← k + 1 (data), three
/// times from (1, 0): s = x, then x² + 1, then x³ + x + 2.
#[differentiable]
fn tuple_field_in_loop(x: f64) -> f64 {
    let mut t = (1.0, 0.0);
    for _ in 0..3 {
        t.0 = t.0 * x + t.1;
        t.1 += 1.0;
    }
    t.0
}

/// Data written into part of an active tuple: p = (x, x) → (2, x), f = p.0 · p.1 = 2x; the
/// overwritten part's derivative must vanish: df/dx = 2, not 2x + 2.
#[differentiable]
fn data_into_active_field(x: f64) -> f64 {
    let mut p = (x, x);
    p.0 = 2.0;
    p.0 * p.1
}

/// Struct update syntax: `Point { x: .., ..p }` from an active point (x replaced by data: only
/// y's derivative is left) and from a data point with an active field. f = q.x·q.y + r.x·r.y
/// with q = (1, y), r = (x², 2): f = y + 2x²; ∇ = (4x, 1).
#[differentiable]
fn updated_points(x: f64, y: f64) -> f64 {
    let p = Point { x, y };
    let q = Point { x: 1.0, ..p };
    let base = Point { x: 0.0, y: 2.0 };
    let r = Point { x: x * x, ..base };
    q.x * q.y + r.x * r.y
}

/// A field write in one arm of a branch: p.x ← x² when `square`, else p is left as (x, y);
/// f = p.x + p.y.
#[differentiable]
fn field_write_in_branch(x: f64, y: f64, square: bool) -> f64 {
    let mut p = Point { x, y };
    if square {
        p.x = x * x;
    }
    p.x + p.y
}

#[test]
fn field_writes() {
    check!(updated_points, updated_points_vjp; 0.6, -0.4 => (4.0 * 0.6, 1.0));
    check!(|x, y| field_write_in_branch(x, y, true), |x, y| field_write_in_branch_vjp(x, y, true); 0.6, -0.4 => (1.2, 1.0));
    check!(|x, y| field_write_in_branch(x, y, false), |x, y| field_write_in_branch_vjp(x, y, false); 0.6, -0.4 => (1.0, 1.0));
    check!(data_into_active_field, data_into_active_field_vjp; 0.9 => 2.0);
    let (x, y) = (0.7, -1.3);
    check!(written_fields, written_fields_vjp; x, y => (2.0 * x + 3.0 * x * x * y, x * x * x));
    check!(overwritten_field, overwritten_field_vjp; x, y => (2.0 * y, 3.0 + 2.0 * x));
    check!(
        nested_places,
        nested_places_vjp;
        x, y => (y * y + y, 2.0 * x * y + 2.0 * y + x + 1.0)
    );
    // s: 1 → x + 0 → x² + 1 → x³ + x + 2, so ds/dx = 3x² + 1.
    check!(tuple_field_in_loop, tuple_field_in_loop_vjp; x => 3.0 * x * x + 1.0);
}

/// A point whose fields `std::mem` exchanges, replaces and takes.
#[derive(Clone, Debug, Differentiable)]
struct Pair2 {
    x: f64,
    y: f64,
}

/// `mem::swap(&mut p.x, &mut p.y)`, then 2x + y (so 2y_old + x_old): ∂p = (1, 2).
#[differentiable(forward)]
fn swap_fields(p: Pair2) -> f64 {
    let mut p = p;
    std::mem::swap(&mut p.x, &mut p.y);
    2.0 * p.x + p.y
}

/// `mem::replace(&mut v[1], s·s)` returns the old v₁, then old·v₁ + v₀ = v₁_old·s² + v₀:
/// ∂v = (1, s², 0), ∂s = 2s·v₁.
#[differentiable(forward)]
fn replace_element(v: [f64; 3], s: f64) -> f64 {
    let mut v = v;
    let old = std::mem::replace(&mut v[1], s * s);
    old * v[1] + v[0]
}

/// `mem::take(&mut p.y)` leaves 0 and returns y, then swaps a local with a field:
/// t = y, p.y = 0; swap(t, p.x) gives t = x, p.x = y; result 3t + p.x = 3x + y: ∂p = (3, 1).
#[differentiable(forward)]
fn take_and_swap_with_local(p: Pair2) -> f64 {
    let mut p = p;
    let mut t = std::mem::take(&mut p.y);
    std::mem::swap(&mut t, &mut p.x);
    3.0 * t + p.x + p.y
}

#[test]
fn mem_calls_on_fields_and_elements() {
    let p = Pair2 { x: 0.5, y: -1.5 };
    let g = gradient(swap_fields_vjp(p.clone()));
    assert_eq!((g.x, g.y), (1.0, 2.0));
    check_gradient(
        "swap_fields",
        |(x, y)| swap_fields(Pair2 { x, y }),
        (p.x, p.y),
        (g.x, g.y),
    );
    let g = gradient(take_and_swap_with_local_vjp(p.clone()));
    assert_eq!((g.x, g.y), (3.0, 1.0));
    let f = |(x, y)| take_and_swap_with_local(Pair2 { x, y });
    check_gradient("take_and_swap_with_local", f, (p.x, p.y), (g.x, g.y));
    let (v, s) = ([0.5, -1.5, 2.0], 0.7);
    let got = gradient(replace_element_vjp(v, s));
    assert_close("replace_element", got, ([1.0, s * s, 0.0], 2.0 * s * v[1]));
    check_gradient(
        "replace_element",
        |(v, s)| replace_element(v, s),
        (v, s),
        got,
    );
    // Forward mode agrees with reverse.
    let (_, t) = swap_fields_jvp(p.clone(), Pair2Tangent { x: 0.3, y: -0.2 });
    assert!(
        (t - (0.3 + 2.0 * -0.2)).abs() < 1e-12,
        "swap_fields jvp {t}"
    );
    let (_, t) = replace_element_jvp(v, s, [0.1, 0.2, 0.3], 0.5);
    let want = 0.1 + s * s * 0.2 + 2.0 * s * v[1] * 0.5;
    assert!(
        (t - want).abs() < 1e-12,
        "replace_element jvp {t} against {want}"
    );
}

// ---------------------------------------------------------------------------------------------
// Field writes through followed references
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, Differentiable)]
pub struct Lin {
    w: f64,
    b: f64,
}

/// p.w ← p.w·s, p.b ← p.b + s² through an inout struct parameter.
#[differentiable(forward)]
fn rescale(p: &mut Lin, s: f64) {
    p.w *= s;
    p.b += s * s;
}

/// p = Lin { w, b: 1 }; rescale(&mut p, s); f = p.w·p.b = ws(1 + s²):
/// ∂w = s(1 + s²), ∂s = w(1 + 3s²).
#[differentiable(forward)]
fn rescaled(w: f64, s: f64) -> f64 {
    let mut p = Lin { w, b: 1.0 };
    rescale(&mut p, s);
    p.w * p.b
}

/// Field writes through a local `&mut`: p = Lin { w: 0, b: y }; r = &mut p; r.w = xy;
/// r.b += x; f = p.w + p.b = xy + y + x: ∂x = y + 1, ∂y = x + 1.
#[differentiable]
fn field_through_alias(x: f64, y: f64) -> f64 {
    let mut p = Lin { w: 0.0, b: y };
    let r = &mut p;
    r.w = x * y;
    r.b += x;
    p.w + p.b
}

#[test]
fn field_writes_through_mut_references() {
    let (w, s) = (2.0, 3.0);
    check!(rescaled, rescaled_vjp; w, s => (s * (1.0 + s * s), w * (1.0 + 3.0 * s * s)));
    let (_, t) = rescaled_jvp(w, s, 0.5, -1.0);
    assert_eq!(t, 0.5 * 30.0 - 56.0);
    let (x, y) = (1.5, 2.0);
    check!(field_through_alias, field_through_alias_vjp; x, y => (y + 1.0, x + 1.0));
}

// ---------------------------------------------------------------------------------------------
// `&mut self` methods (Swift's `mutating func`)
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, Differentiable)]
pub struct Acc {
    total: f64,
    scale: f64,
}

#[differentiable]
impl Acc {
    /// total ← total·scale + x².
    #[differentiable]
    pub fn add(&mut self, x: f64) {
        self.total = self.total * self.scale + x * x;
    }
}

impl Lin {
    /// w ← w·s, b ← b + w (marked alone, not through its `impl`).
    #[differentiable]
    fn shift(&mut self, s: f64) {
        self.w *= s;
        self.b += self.w;
    }
}

/// a = Acc { total: 1, scale: y }; a.add(x); a.add(2x): t₁ = y + x², t₂ = t₁y + 4x²,
/// ∂x = 2xy + 8x, ∂y = 2y + x².
#[differentiable]
fn accumulate(x: f64, y: f64) -> f64 {
    let mut a = Acc {
        total: 1.0,
        scale: y,
    };
    a.add(x);
    a.add(2.0 * x);
    a.total
}

/// n calls in a loop on an accumulator built from data: t ← 2t + x² from t = 1, n = 3:
/// t = 8 + 7x², ∂x = 14x.
#[differentiable]
fn accumulate_loop(x: f64, n: usize) -> f64 {
    let mut a = Acc {
        total: 1.0,
        scale: 2.0,
    };
    for _ in 0..n {
        a.add(x);
    }
    a.total
}

/// In a branch: f = (y + x²)·x when taken, x otherwise (∂x = y + 3x², ∂y = x; or 1, 0); and a
/// lone method: p = Lin { w: x, b: y }; p.shift(y); f += p.b = y + xy (∂x = y, ∂y = 1 + x).
#[differentiable]
fn mutated_in_branch(x: f64, y: f64, go: bool) -> f64 {
    let mut a = Acc {
        total: 1.0,
        scale: y,
    };
    if go {
        a.add(x);
    }
    let mut p = Lin { w: x, b: y };
    p.shift(y);
    a.total * x + p.b
}

#[test]
fn mut_self_methods_change_their_receiver() {
    let mut a = Acc {
        total: 1.0,
        scale: 2.0,
    };
    let ((), pb) = a.add_vjp(3.0);
    assert_eq!(a.total, 11.0, "the receiver is written back");
    let mut t = AccTangent {
        total: 1.0,
        scale: 0.0,
    };
    let dx = pb((), (&mut t,));
    // ∂t'/∂t = scale, ∂t'/∂scale = t, ∂t'/∂x = 2x.
    assert_eq!((t.total, t.scale, dx), (2.0, 1.0, 6.0));

    let (x, y) = (1.5, 2.0);
    check!(accumulate, accumulate_vjp; x, y => (2.0 * x * y + 8.0 * x, 2.0 * y + x * x));
    check!(|x| accumulate_loop(x, 3), |x| accumulate_loop_vjp(x, 3); x => 14.0 * x);
    check!(|x, y| mutated_in_branch(x, y, true), |x, y| mutated_in_branch_vjp(x, y, true); x, y
        => (y + 3.0 * x * x + y, x + 1.0 + x));
    check!(|x, y| mutated_in_branch(x, y, false), |x, y| mutated_in_branch_vjp(x, y, false); x, y
        => (1.0 + y, 1.0 + x));
}

/// An inout call on a variable that is data until the call writes an active value into it:
/// v = 2; step(&mut v, y) gives v = 3y, ∂y = 3. (Its derivative was lost, silently, until the
/// 34th session: the argument was passed as data because `v` was.)
#[differentiable]
fn inout_from_data(y: f64) -> f64 {
    let mut v = 2.0;
    step(&mut v, y);
    v
}

/// The same for a struct: p = Pos(1, 0) (data); rescale(&mut p, s) makes p = (s, s²);
/// f = p.w + p.b; ∂s = 1 + 2s.
#[differentiable]
fn rescaled_from_data(s: f64) -> f64 {
    let mut p = Lin { w: 1.0, b: 0.0 };
    rescale(&mut p, s);
    p.w + p.b
}

#[test]
fn inout_calls_on_data_take_active_values() {
    check!(inout_from_data, inout_from_data_vjp; 0.3 => 3.0);
    check!(rescaled_from_data, rescaled_from_data_vjp; 0.4 => 1.8);
}
