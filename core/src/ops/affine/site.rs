//! Choosing the rule of a fused affine expression: one fused op where the operands are
//! tensors, the unfused rules otherwise.
//!
//! The macro rewrites `f(a.matmul(b) + c.matmul(d) + e)` (`macros/src/fusion.rs`) without
//! knowing the operands' types, so it emits both rules and lets method lookup pick:
//!
//! ```text
//! fused((&a, b, &c, d, e), [n0, .., n4], |(a, b, c, d, e), n| /* the unfused rules */)
//!     .operands()
//!     .rule(2, 0b00, Epilogue::Tanh)
//! ```
//!
//! The inherent [`Fused::operands`] takes the site by value and exists only when every
//! operand is a tensor, or a reference to one ([`TensorLeaves`]); its [`Tensors::rule`] runs
//! the fused op (`affine_rule`, in `mod.rs` beside this file). [`FusedPlain::operands`]
//! takes the site by reference, so method lookup, which tries the receiver by value before
//! borrowing it, reaches it only for other types (a user type with its own `matmul`, a float
//! bias); its [`Plain::rule`] calls the closure: the rules the expression would have had
//! unfused.

use super::{Epilogue, affine_rule};
use crate::tensor::{Backend, Tensor, TensorTangent};
use std::cell::Cell;

/// A fused expression's operands, the tangents it needs, and its unfused rules `plain`.
pub struct Fused<L, F, const N: usize>(Cell<Option<(L, F)>>, [bool; N]);

/// The site of a fused expression over `leaves` (see the module docs).
#[inline(always)]
pub fn fused<L, R, F: FnOnce(L, [bool; N]) -> R, const N: usize>(
    leaves: L,
    needs: [bool; N],
    plain: F,
) -> Fused<L, F, N> {
    Fused(Cell::new(Some((leaves, plain))), needs)
}

impl<L, F, const N: usize> Fused<L, F, N> {
    #[inline(always)]
    fn parts(&self) -> (L, F) {
        self.0
            .take()
            .expect("a fused expression's rule is chosen once")
    }
}

/// A tensor, or a reference to one, as an operand of a fused expression.
pub trait AsTensor {
    /// The tensor's backend.
    type Backend: Backend;
    /// The tensor.
    fn as_tensor(&self) -> &Tensor<Self::Backend>;
    /// The tensor as a handle of its own (moved, or a clone sharing the buffer).
    fn into_tensor(self) -> Tensor<Self::Backend>;
}

impl<B: Backend> AsTensor for Tensor<B> {
    type Backend = B;
    #[inline(always)]
    fn as_tensor(&self) -> &Tensor<B> {
        self
    }
    #[inline(always)]
    fn into_tensor(self) -> Tensor<B> {
        self
    }
}

impl<T: AsTensor> AsTensor for &T {
    type Backend = T::Backend;
    #[inline(always)]
    fn as_tensor(&self) -> &Tensor<T::Backend> {
        (**self).as_tensor()
    }
    #[inline(always)]
    fn into_tensor(self) -> Tensor<T::Backend> {
        self.as_tensor().clone()
    }
}

/// A tuple of `N` tensor operands of one backend.
pub trait TensorLeaves<const N: usize> {
    /// Their backend.
    type Backend: Backend;
    /// The operands as handles of their own.
    fn into_tensors(self) -> [Tensor<Self::Backend>; N];
}

/// An array of tangents as the tuple the generated pullback code destructures.
pub trait IntoTuple {
    /// The tuple.
    type Tuple;
    /// The elements in order.
    fn into_tuple(self) -> Self::Tuple;
}

macro_rules! tensor_leaves {
    ($($n:literal: $($t:ident $x:ident),+;)*) => {$(
        impl<Bk: Backend, $($t: AsTensor<Backend = Bk>),+> TensorLeaves<$n> for ($($t,)+) {
            type Backend = Bk;
            #[inline(always)]
            fn into_tensors(self) -> [Tensor<Bk>; $n] {
                let ($($x,)+) = self;
                [$($x.into_tensor()),+]
            }
        }

        impl<T> IntoTuple for [T; $n] {
            type Tuple = ($(tensor_leaves!(@same $t T),)+);
            #[inline(always)]
            fn into_tuple(self) -> Self::Tuple {
                let [$($x),+] = self;
                ($($x,)+)
            }
        }
    )*};
    (@same $t:ident $u:ident) => { $u };
}

tensor_leaves! {
    1: A0 a0;
    2: A0 a0, A1 a1;
    3: A0 a0, A1 a1, A2 a2;
    4: A0 a0, A1 a1, A2 a2, A3 a3;
    5: A0 a0, A1 a1, A2 a2, A3 a3, A4 a4;
    6: A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5;
    7: A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6;
    8: A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7;
}

impl<L: TensorLeaves<N>, F, const N: usize> Fused<L, F, N> {
    /// Tensor operands, as handles of their own (a borrowed one is cloned, sharing its
    /// buffer): the fused rule's pullback then borrows nothing (a temporary operand,
    /// `x.matmul(&w.t())`, ends with its statement).
    #[inline(always)]
    pub fn operands(self) -> Tensors<L::Backend, N> {
        let (leaves, _) = self.parts();
        Tensors(leaves.into_tensors(), self.1)
    }
}

/// The tensor operands of a fused expression and the tangents it needs.
pub struct Tensors<B: Backend, const N: usize>([Tensor<B>; N], [bool; N]);

impl<B: Backend, const N: usize> Tensors<B, N>
where
    [TensorTangent<B>; N]: IntoTuple,
{
    /// The fused rule: `products` products first (product `k` reading its right operand
    /// transposed if bit `k` of `transposed` is set), then the biases.
    #[inline(always)]
    #[track_caller]
    #[allow(clippy::type_complexity)] // a rule's shape: (value, pullback), as every rule's
    pub fn rule(
        self,
        products: usize,
        transposed: u32,
        act: Epilogue,
    ) -> (
        Tensor<B>,
        impl FnOnce(TensorTangent<B>) -> <[TensorTangent<B>; N] as IntoTuple>::Tuple + use<B, N>,
    ) {
        let (y, pullback) = affine_rule(self.0, products, transposed, act, self.1);
        (y, move |d| pullback(d).into_tuple())
    }
}

/// The operands of any other type, with the unfused rules.
pub struct Plain<L, F, const N: usize>(L, F, [bool; N]);

impl<L, R, F: FnOnce(L, [bool; N]) -> R, const N: usize> Plain<L, F, N> {
    /// The unfused rules, called on the operands.
    #[inline(always)]
    pub fn rule(self, _products: usize, _transposed: u32, _act: Epilogue) -> R {
        (self.1)(self.0, self.2)
    }
}

/// The operands of a fused expression whose types are not all tensors.
pub trait FusedPlain {
    /// The operands and the unfused rules.
    type Plain;

    /// The operands and the unfused rules.
    fn operands(self) -> Self::Plain;
}

impl<L, F, const N: usize> FusedPlain for &Fused<L, F, N> {
    type Plain = Plain<L, F, N>;
    #[inline(always)]
    fn operands(self) -> Plain<L, F, N> {
        let (leaves, plain) = self.parts();
        Plain(leaves, plain, self.1)
    }
}
