//! The rule of a write to part of an active local: `p.x = v`, `p.a.0 = v`.

use crate::Differentiable;

/// `s` with the part that `set` writes replaced by `v`: the value of `p.x = v` as a new version
/// of `p` (`#[differentiable]` writes `p = field_write(p, v, |s, v| s.x = v, |t| ..)`).
///
/// Derivative: the new `s` is the old one with the part swapped for `v`, so for the adjoint
/// `t` of the new `s`, `v̄ = t.x` and the old `s̄ = t` with `x` zeroed: `take` moves the part
/// out of `t` and leaves zero in its place.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn field_write<S: Differentiable, V: Differentiable>(
    mut s: S,
    v: V,
    set: impl FnOnce(&mut S, V),
    take: impl FnOnce(&mut S::Tangent) -> V::Tangent,
    _needs: [bool; 2],
) -> (S, impl FnOnce(S::Tangent) -> (S::Tangent, V::Tangent)) {
    set(&mut s, v);
    (s, move |mut t: S::Tangent| {
        let part = take(&mut t);
        (t, part)
    })
}
