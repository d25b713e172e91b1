//! CUDA backend of adjoint, on `cudarc`.
//!
//! Not implemented yet: this crate holds its place in the workspace. It arrives with the cuda
//! issue, after the CPU tensor backend.

#![warn(missing_docs)]
