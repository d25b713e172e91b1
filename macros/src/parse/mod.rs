//! Parsing: the attribute's arguments, the item, and what its signature says is
//! differentiated.

pub mod attr;
pub mod item;
pub mod signature;
