//! A corpus of ordinary Rust functions in everyday style that `#[differentiable]` must take as
//! written: early `return`, `if`/`else if` chains and `match`, `for` over ranges and iterator
//! chains, `while` with active conditions, `loop` with `break value`, labelled loops and
//! blocks, reductions, closures, `Vec` and array writes, tuples, structs, `std::mem::swap`,
//! float methods, `f32`, generic `Float` code, recursion, helper functions, compound
//! assignments and `without_derivative`; in-place writes through `iter_mut()`, sorts,
//! sub-slices and `match` on ranges; enums carrying values, stacks, windows and chunks,
//! `&mut self` accumulators, writes through `&mut` parameters and method rules (everyday.rs).
//!
//! Every gradient is compared with an exact value (a closed form in the doc comment, or the
//! dual-number derivative of the same generic code) and with central finite differences.

use adjoint::prelude::*;

mod everyday;
mod exits_and_branches;
mod floats_and_recursion;
mod in_place;
mod loops;
mod reductions_and_writes;
mod structs;

/// The exact gradient of a function of `N` scalars by dual numbers, one coordinate at a time:
/// coordinate `i` is the `eps` part of `f` at the point with `eps = 1` on input `i` only.
fn dual_gradient<const N: usize>(
    f: impl Fn([Dual<f64>; N]) -> Dual<f64>,
    at: [f64; N],
) -> [f64; N] {
    std::array::from_fn(|i| {
        let point = std::array::from_fn(|j| {
            if i == j {
                Dual::variable(at[j])
            } else {
                Dual::constant(at[j])
            }
        });
        f(point).eps
    })
}

/// A point in the plane (read and written in `structs`, iterated over in `loops`).
#[derive(Clone, Debug, Differentiable)]
struct Pt {
    x: f64,
    y: f64,
}
