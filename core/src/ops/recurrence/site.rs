//! Choosing the rule of a recurrence loop: one op for the whole loop where the operands are
//! tensors, the loop of the step's unfused rules otherwise.
//!
//! The macro rewrites `for x in xs { h = f(h.matmul(w) + x.matmul(u) + b) }`
//! (`macros/src/recurrence.rs`) without knowing the operands' types, so it emits both and lets
//! method lookup pick, as for a fused expression (`ops/affine/site.rs`):
//!
//! ```text
//! recurrence((h, w, u, b), xs, [n0, .., n3], |h, x, n| /* one step's unfused rules */)
//!     .operands()
//!     .rule([Leaf::Carry, Leaf::Fixed(1), Leaf::Element, Leaf::Fixed(2), Leaf::Fixed(3)],
//!           2, 0b00, Epilogue::Tanh)
//! ```
//!
//! The inherent [`Recurrence::operands`] exists only when the slots (the initial value, then
//! the operands every step shares) and the loop's elements are tensors or references to them;
//! its [`RecurrenceTensors::rule`] runs the loop as one op (`recurrence_rule`, in `mod.rs`
//! beside this file). [`RecurrencePlain::operands`] takes the site by reference, so lookup
//! reaches it only for other types; it runs the step closure once per element, and its
//! [`PlainRecurrence::rule`] gives the pullback that runs the steps' pullbacks in reverse,
//! summing the shared operands' tangents.

use super::{Leaf, recurrence_rule};
use crate::ops::affine::Epilogue;
use crate::ops::affine::site::{AsTensor, IntoTuple, TensorLeaves};
use crate::tensor::{Backend, Tensor, TensorTangent};
use crate::{Differentiable, TangentVector};
use std::cell::Cell;

/// A recurrence's slots, its elements, the tangents it needs and its step closure `step`.
pub struct Recurrence<L, I, F, const S: usize>(Cell<Option<(L, I, F)>>, [bool; S]);

/// The site of a recurrence over `slots` and the elements of `xs` (see the module docs).
/// (The bound on `step` gives the closure its argument types.)
#[inline(always)]
pub fn recurrence<L: First, I: IntoIterator, F, R, const S: usize>(
    slots: L,
    xs: I,
    needs: [bool; S],
    step: F,
) -> Recurrence<L, I, F, S>
where
    F: FnMut(L::Head, I::Item, [bool; S]) -> R,
{
    Recurrence(Cell::new(Some((slots, xs, step))), needs)
}

/// `rules(leaves, needs)`: one step of a recurrence's unfused loop, the step's fused
/// expression by its unfused rules (the bound gives the closure its argument types).
#[inline(always)]
pub fn step<L, R, const N: usize>(
    leaves: L,
    needs: [bool; N],
    rules: impl FnOnce(L, [bool; N]) -> R,
) -> R {
    rules(leaves, needs)
}

impl<L, I, F, const S: usize> Recurrence<L, I, F, S> {
    #[inline(always)]
    fn parts(&self) -> (L, I, F) {
        self.0.take().expect("a recurrence's rule is chosen once")
    }
}

impl<L, I, F, const S: usize> Recurrence<L, I, F, S>
where
    L: TensorLeaves<S>,
    I: IntoIterator,
    I::Item: AsTensor<Backend = L::Backend>,
{
    /// Tensor slots and elements, as handles of their own (a borrowed one is cloned, sharing
    /// its buffer), so that the pullback borrows nothing.
    #[inline(always)]
    pub fn operands(self) -> RecurrenceTensors<L::Backend, S> {
        let (slots, xs, _) = self.parts();
        let xs = xs.into_iter().map(AsTensor::into_tensor).collect();
        RecurrenceTensors(slots.into_tensors(), xs, self.1)
    }
}

/// The tensor slots and elements of a recurrence and the tangents it needs.
pub struct RecurrenceTensors<B: Backend, const S: usize>([Tensor<B>; S], Vec<Tensor<B>>, [bool; S]);

impl<B: Backend, const S: usize> RecurrenceTensors<B, S>
where
    [TensorTangent<B>; S]: IntoTuple,
{
    /// The loop as one rule: each step is the fused expression over `leaves` (`products`
    /// products first, product `k` reading its right operand transposed if bit `k` of
    /// `transposed` is set, then the other terms, then `act`).
    #[inline(always)]
    #[track_caller]
    #[allow(clippy::type_complexity)] // a rule's shape: (value, pullback), as every rule's
    pub fn rule<const N: usize>(
        self,
        leaves: [Leaf; N],
        products: usize,
        transposed: u32,
        act: Epilogue,
    ) -> (
        Tensor<B>,
        impl FnOnce(TensorTangent<B>) -> <[TensorTangent<B>; S] as IntoTuple>::Tuple + use<B, S, N>,
    ) {
        let RecurrenceTensors(slots, xs, needs) = self;
        let (h, pullback) = recurrence_rule(slots, xs, leaves, (products, transposed, act), needs);
        (h, move |d| pullback(d).into_tuple())
    }
}

/// A recurrence over other types, run: the last value and each step's pullback.
pub struct PlainRecurrence<C, P>(C, Vec<P>);

/// A tuple of tangents with one more in front: the carried value's tangent before the shared
/// operands' sums, as the pullback returns them (one per slot).
pub trait Prepend<T> {
    /// `(t, self.0, self.1, …)`.
    type Tuple;
    /// `(t, self.0, self.1, …)`.
    fn prepend(self, t: T) -> Self::Tuple;
}

impl<C: Differentiable, P> PlainRecurrence<C, P> {
    /// The loop's value, and its pullback: each step's pullback in reverse, from the value's
    /// tangent to the previous value's, adding the shared operands' tangents into the sums
    /// `A`; the tangent of the initial value first, then the sums.
    #[inline(always)]
    #[allow(clippy::type_complexity)] // a rule's shape: (value, pullback), as every rule's
    pub fn rule<A, const N: usize>(
        self,
        _leaves: [Leaf; N],
        _products: usize,
        _transposed: u32,
        _act: Epilogue,
    ) -> (
        C,
        impl FnOnce(C::Tangent) -> <A as Prepend<C::Tangent>>::Tuple,
    )
    where
        P: FnOnce(C::Tangent, &mut A) -> C::Tangent,
        A: TangentVector + Prepend<C::Tangent>,
    {
        let PlainRecurrence(h, tape) = self;
        (h, move |d| {
            let mut sums = A::zero();
            let mut carry = d;
            for pullback in tape.into_iter().rev() {
                carry = pullback(carry, &mut sums);
            }
            sums.prepend(carry)
        })
    }
}

/// The slots of a recurrence whose types are not all tensors.
pub trait RecurrencePlain {
    /// The loop, run.
    type Plain;

    /// The loop, run by the step's unfused rules.
    fn operands(self) -> Self::Plain;
}

impl<L: First, I: IntoIterator, F, P, const S: usize> RecurrencePlain for &Recurrence<L, I, F, S>
where
    F: FnMut(L::Head, I::Item, [bool; S]) -> (L::Head, P),
{
    type Plain = PlainRecurrence<L::Head, P>;
    /// Runs the loop: `step(h, x, needs)` gives the next value and the step's pullback (kept
    /// only where a tangent is needed). The closure, which borrows the shared operands, ends
    /// here: the pullback holds only what the steps' pullbacks hold.
    #[inline(always)]
    fn operands(self) -> PlainRecurrence<L::Head, P> {
        let (slots, xs, mut step) = self.parts();
        let needs = self.1;
        let any = needs.iter().any(|&n| n);
        let (mut h, mut tape) = (slots.first(), Vec::new());
        for x in xs {
            let (next, pullback) = step(h, x, needs);
            if any {
                tape.push(pullback);
            }
            h = next;
        }
        PlainRecurrence(h, tape)
    }
}

/// The first element of a tuple of slots: the initial value (the step closure reads the
/// shared operands itself).
pub trait First {
    /// The first element's type.
    type Head;
    /// The first element.
    fn first(self) -> Self::Head;
}

// `First` and `Prepend` for the tuples of up to 8 slots.
macro_rules! tuples {
    ($($h:ident $(, $a:ident)*;)*) => {$(
        impl<$h, $($a),*> First for ($h, $($a,)*) {
            type Head = $h;
            #[inline(always)]
            fn first(self) -> $h {
                self.0
            }
        }

        impl<T, $($a),*> Prepend<T> for ($($a,)*) {
            type Tuple = (T, $($a,)*);
            #[inline(always)]
            #[allow(non_snake_case)]
            fn prepend(self, t: T) -> Self::Tuple {
                let ($($a,)*) = self;
                (t, $($a,)*)
            }
        }
    )*};
}

tuples! {
    H;
    H, A1;
    H, A1, A2;
    H, A1, A2, A3;
    H, A1, A2, A3, A4;
    H, A1, A2, A3, A4, A5;
    H, A1, A2, A3, A4, A5, A6;
    H, A1, A2, A3, A4, A5, A6, A7;
}
