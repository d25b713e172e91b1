//! Sorting an active collection: the macro sorts indices by the user's comparison on a copy
//! without derivative (`patterns/reorders.rs` in the macros), and these give the user's
//! closure its parameter types from that copy.

use super::indexing::Elements;

/// `f`, typed as a comparison of two elements of `keys`: how a sort of an active collection
/// (`v.sort_by(|a, b| ..)`, rewritten by the macro to sort indices) gives the user's closure
/// its parameter types.
#[inline(always)]
pub fn comparator_for<C: Elements + ?Sized, F: FnMut(&C::Elem, &C::Elem) -> core::cmp::Ordering>(
    _keys: &C,
    f: F,
) -> F {
    f
}

/// `f`, typed as a key of an element of `keys` (`v.sort_by_key(|t| ..)`, see
/// [`comparator_for`]).
#[inline(always)]
pub fn key_for<C: Elements + ?Sized, K: Ord, F: FnMut(&C::Elem) -> K>(_keys: &C, f: F) -> F {
    f
}
