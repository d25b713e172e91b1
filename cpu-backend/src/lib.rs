//! CPU backend of adjoint, on `ndarray`.
//!
//! Not implemented yet: this crate holds its place in the workspace. The `Tensor` type, the
//! `Backend` trait and this backend arrive with the tensors-cpu issue; until then adjoint
//! differentiates scalar code only.
