//! Control flow inside `#[differentiable]` functions, one module per construct:
//! - [`branches`]: `if`/`else if`/`else`, `if let`, `match` (guards included);
//! - [`scalar_matches`]: `match` on an active float with ranges, `|`, bindings and guards;
//! - [`loops`]: `for` over ranges and data iterators, `while` with active conditions, carried
//!   variables, a loop of a million iterations;
//! - [`arrays`]: element reads and writes of arrays and `Vec`s, `push`, array and `vec!`
//!   literals;
//! - [`ordinary`]: `clamp`, const generic arrays, `#[no_derivative]` fields of any type;
//! - [`closures`]: closures bound to a name and called in the body, inlined;
//! - [`mixed`]: branches inside loops and loops inside branches;
//! - [`recursion`]: direct recursion;
//! - [`reorders`]: `swap`, `reverse`, `fill`, `sort_by`, `sort_by_key` on active collections;
//! - [`iterators`]: iterator chains over active collections, `for` loops and reductions;
//! - [`slices`]: sub-slices `&v[a..b]` of active collections, and `fold` with `f64::max`;
//! - [`mut_iterators`]: `for t in v.iter_mut()` and `&mut v`, writes through the element;
//! - [`labelled`]: `break 'outer` and `continue 'outer` from nested loops, labelled blocks;
//! - [`values`]: `break value` from a `loop` (also `'outer`) and from a labelled block;
//! - [`generic`]: generic loops in `f32` and `f64`;
//! - [`methods`]: methods with loops and branches;
//! - [`lone_methods`]: `#[differentiable]` on single methods, called on locals and fields;
//! - [`rnn`]: an Elman RNN over plain arrays and over `Vec`s;
//! - [`recomputed`]: loops that the pullback runs again instead of taping, and those it must not;
//! - [`corpus`]: a corpus of ordinary functions in everyday style, one construct family per test;
//! - [`properties`]: finite differences at random points away from the branch boundaries.
//!
//! Every gradient is checked against the math in the doc comment of its function (up to
//! rounding, [`common::EXACT_TOL`]) and against central finite differences.
//!
//! One test binary for all the modules: each file under `tests/` is a binary of its own that
//! links the whole crate.

// The functions index arrays in `for i in 0..n` loops and write `acc = acc * x` on purpose:
// those are the constructs under test.
#![allow(clippy::needless_range_loop, clippy::assign_op_pattern)]

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/elman.rs"]
mod elman;
mod enums;

mod arrays;
mod branches;
mod closures;
mod corpus;
mod generic;
mod iterators;
mod labelled;
mod lone_methods;
mod loops;
mod methods;
mod mixed;
mod mut_iterators;
mod ordinary;
mod properties;
mod recomputed;
mod recursion;
mod reorders;
mod rnn;
mod scalar_matches;
mod slices;
mod stacks;
mod values;
