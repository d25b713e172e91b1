//! Emission: the code the macro writes, from the lowered body and its graph.

pub mod companions;
pub mod fused;
pub mod loops;
pub mod names;
pub mod region;
pub mod reverse;
