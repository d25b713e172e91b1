//! Emission: the code the macro writes, from the lowered body and its graph.

pub mod names;
pub mod reverse;
