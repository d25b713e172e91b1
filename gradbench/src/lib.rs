//! adjoint as a [GradBench](https://github.com/gradbench/gradbench) tool.
//!
//! GradBench's evals send a tool JSON lines (`start`, `define`, `evaluate`, `analysis`) and check
//! its derivatives against a hand-derived C++ reference. Every eval here writes its primal as
//! ordinary Rust over `f64` (slices, `Vec`, loops, recursion, in-place updates) following the
//! algorithm of that reference, and obtains every derivative from `#[differentiable]` alone:
//! no hand-written derivative of an eval's own code.
//!
//! [`respond`] answers one message; the binary (`src/main.rs`) loops it over stdin.

pub mod evals;
pub mod protocol;
pub mod runs;

pub use protocol::respond;
