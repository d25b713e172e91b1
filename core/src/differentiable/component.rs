//! Tuple tangents built from, or split into, one component: the adjoints of `t.I`, of a
//! tuple pattern and of the arguments of a tuple-struct constructor; and the typed adjoint of
//! a struct literal, whose fields are read by name.

use super::{Differentiable, TangentVector};
use core::marker::PhantomData;

/// A tuple tangent whose component `I` is known and the others are zero: the adjoint of
/// `t.I` or of a tuple pattern.
pub trait Component<const I: usize>: TangentVector {
    /// The type of component `I`.
    type Part;
    /// The tangent with `part` at position `I` and zeros elsewhere.
    fn from_component(part: Self::Part) -> Self;
    /// Component `I`, taken out (leaving zero): the adjoint of an argument of a tuple-struct
    /// constructor.
    fn take_component(&mut self) -> Self::Part;
}

/// See [`Component::take_component`].
#[inline(always)]
pub fn take_component<const I: usize, T: Component<I>>(t: &mut T) -> T::Part {
    t.take_component()
}

/// The adjoint of a struct literal `S { .. }` as `S::Tangent`, the type named by the literal's
/// value (`witness`, taken by the forward pass) rather than by its path, which may leave out
/// inferred generic arguments (`GenLin { w }` for `GenLin<f64>`): the pullback reads the
/// fields of the tangent struct from it.
#[inline(always)]
pub fn struct_tangent<S: Differentiable>(
    _witness: &PhantomData<S>,
    adjoint: S::Tangent,
) -> S::Tangent {
    adjoint
}

/// See [`Component`].
#[inline(always)]
pub fn from_component<const I: usize, T: Component<I>>(part: T::Part) -> T {
    T::from_component(part)
}

macro_rules! component_impl {
    ($idx:tt $part:ident [$($t:ident),+]) => {
        impl<$($t: TangentVector),+> Component<$idx> for ($($t,)+) {
            type Part = $part;
            #[inline(always)]
            fn from_component(part: $part) -> Self {
                let mut t = <Self as TangentVector>::zero();
                t.$idx = part;
                t
            }
            #[inline(always)]
            fn take_component(&mut self) -> $part {
                core::mem::replace(&mut self.$idx, $part::zero())
            }
        }
    };
}

macro_rules! component_impls {
    ($( $list:tt => $(($idx:tt $part:ident))+; )*) => {
        $( $( component_impl!($idx $part $list); )+ )*
    };
}

component_impls! {
    [A] => (0 A);
    [A, B] => (0 A) (1 B);
    [A, B, C] => (0 A) (1 B) (2 C);
    [A, B, C, D] => (0 A) (1 B) (2 C) (3 D);
    [A, B, C, D, E] => (0 A) (1 B) (2 C) (3 D) (4 E);
    [A, B, C, D, E, F] => (0 A) (1 B) (2 C) (3 D) (4 E) (5 F);
    [A, B, C, D, E, F, G] => (0 A) (1 B) (2 C) (3 D) (4 E) (5 F) (6 G);
    [A, B, C, D, E, F, G, H] => (0 A) (1 B) (2 C) (3 D) (4 E) (5 F) (6 G) (7 H);
}
