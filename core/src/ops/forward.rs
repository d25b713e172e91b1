//! Helpers of the forward-mode (JVP) rules of the tensor ops, `<op>_jvp_full(.., t)`.
//!
//! A rule gets one `Option` tangent per input (`None`: the zero tangent, nothing computed) and
//! returns the value with the directional derivative `ẏ = J·ṫ`; `ẏ` is `None` exactly when
//! every input tangent is `None`, and the symbolic zero [`TensorTangent::Zero`] where the
//! inputs' tangents are all zero but not all `None` (no zeros are allocated). Three shapes of
//! rule cover most ops:
//! * [`linear`]: an op linear in its input applies itself to the tangent (`reshape`, `sum`,
//!   `narrow`, …): `ẏ = op(ṫ)`;
//! * [`self_adjoint`]: an op whose Jacobian is symmetric (every elementwise function of one
//!   tensor, `softmax`, masks) runs its own pullback on the tangent: `ẏ = Jᵀ·ṫ = J·ṫ`;
//! * [`sum_terms`]: the tangent of an op of several inputs is the sum of one term per input,
//!   `ẏ = Σᵢ Jᵢ·ṫᵢ`.

use crate::TangentVector;
use crate::tensor::{Backend, Tensor, TensorTangent};

/// A tangent as passed to a forward rule: by value or by reference.
pub(crate) trait TangentArg<B: Backend> {
    /// The dense tangent (a reference-count increment), or `None` for the symbolic zero.
    fn dense_tensor(self) -> Option<Tensor<B>>;
}

impl<B: Backend> TangentArg<B> for TensorTangent<B> {
    fn dense_tensor(self) -> Option<Tensor<B>> {
        self.dense()
    }
}

impl<B: Backend> TangentArg<B> for &TensorTangent<B> {
    fn dense_tensor(self) -> Option<Tensor<B>> {
        self.dense_ref().cloned()
    }
}

/// `Some(f(ṫ))` for a dense tangent, `Some(Zero)` for the symbolic zero, `None` for `None`:
/// the tangent of an op that is linear in its input (`f` is the op itself).
pub(crate) fn linear<B: Backend>(
    t: Option<impl TangentArg<B>>,
    f: impl FnOnce(&Tensor<B>) -> Tensor<B>,
) -> Option<TensorTangent<B>> {
    t.map(|t| match t.dense_tensor() {
        Some(t) => TensorTangent::Dense(f(&t)),
        None => TensorTangent::Zero,
    })
}

/// The forward rule of an op with a symmetric Jacobian (`J = Jᵀ`): `rule(need)` is the op's
/// reverse rule, asked for its input's tangent when `need`, and `first` picks that tangent out
/// of the pullback's slots; `ẏ = Jᵀ·ṫ`, the pullback applied to the tangent.
#[track_caller]
pub(crate) fn self_adjoint<B: Backend, P, R>(
    t: Option<&TensorTangent<B>>,
    rule: impl FnOnce(bool) -> (Tensor<B>, P),
    first: impl FnOnce(R) -> TensorTangent<B>,
) -> (Tensor<B>, Option<TensorTangent<B>>)
where
    P: FnOnce(TensorTangent<B>) -> R,
{
    let (y, pb) = rule(t.is_some());
    let ty = t.map(|t| first(pb(t.clone())));
    (y, ty)
}

/// `Σᵢ termᵢ`, each term broadcast to `shape`: `None` when every term is `None`, the symbolic
/// zero when every term present is zero.
#[track_caller]
pub(crate) fn sum_terms<B: Backend>(
    shape: &[usize],
    terms: impl IntoIterator<Item = Option<TensorTangent<B>>>,
) -> Option<TensorTangent<B>> {
    let widen = |t: TensorTangent<B>| match t.dense() {
        Some(t) if t.shape() != shape => TensorTangent::Dense(t.broadcast_to(shape)),
        Some(t) => TensorTangent::Dense(t),
        None => TensorTangent::Zero,
    };
    terms
        .into_iter()
        .flatten()
        .map(widen)
        .reduce(TangentVector::plus)
}

/// The zero tangent of an op whose value does not depend on its inputs' values (comparisons,
/// constants): `Some(Zero)` when any input tangent is given.
pub(crate) fn zero_if<B: Backend>(any: bool) -> Option<TensorTangent<B>> {
    any.then_some(TensorTangent::Zero)
}

/// `<m>_jvp_full` methods of ops with a symmetric Jacobian in their first input (the tensor),
/// from their `<m>_vjp_full` by [`self_adjoint`]: one line per op, its constant arguments and
/// their tangent slots (always `None`).
macro_rules! self_adjoint_jvp {
    ($($(#[$doc:meta])* $jvp:ident = $vjp:ident($($arg:ident: $ty:ty => $slot:ty),*);)*) => {
        impl<B: Backend> Tensor<B> {$(
            $(#[$doc])*
            #[track_caller]
            pub fn $jvp(
                &self,
                $($arg: $ty,)*
                t: (Option<&TensorTangent<B>>, $(Option<$slot>,)*),
            ) -> (Self, Option<TensorTangent<B>>) {
                $crate::ops::forward::self_adjoint(
                    t.0,
                    |n| self.$vjp($($arg,)* [n, $($crate::ops::forward::self_adjoint_jvp!(@false $arg)),*]),
                    |r| r.0,
                )
            }
        )*}
    };
    (@false $arg:ident) => {
        false
    };
}
pub(crate) use self_adjoint_jvp;

/// `<m>_jvp_full` methods of ops linear in their first input (the tensor), by [`linear`]:
/// one line per op, its constant arguments with their tangent slots, and the op on the
/// tangent.
macro_rules! linear_jvp {
    ($($(#[$doc:meta])* $jvp:ident($($arg:ident: $ty:ty => $slot:ty),*) => |$d:ident| $op:expr;)*) => {
        impl<B: Backend> Tensor<B> {$(
            $(#[$doc])*
            #[track_caller]
            pub fn $jvp(
                &self,
                $($arg: $ty,)*
                t: (Option<&TensorTangent<B>>, $(Option<$slot>,)*),
            ) -> (Self, Option<TensorTangent<B>>) {
                let value = |$d: &Self| $op;
                (value(self), $crate::ops::forward::linear(t.0, value))
            }
        )*}
    };
}
pub(crate) use linear_jvp;

/// The forward rule of an op with a one-element value (a loss) from its reverse rule:
/// `ẏ = ⟨∇y, ẋ⟩ = Σ (Jᵀ·1) ⊙ ẋ`, the gradient (`first` picks it out of the pullback's slots)
/// against the tangent.
#[track_caller]
pub(crate) fn through_gradient<B: Backend, P, R>(
    t: Option<&TensorTangent<B>>,
    rule: impl FnOnce(bool) -> (Tensor<B>, P),
    first: impl FnOnce(R) -> TensorTangent<B>,
) -> (Tensor<B>, Option<TensorTangent<B>>)
where
    P: FnOnce(TensorTangent<B>) -> R,
{
    let (y, pb) = rule(t.is_some_and(|t| !t.is_zero()));
    let ty = t.map(|t| match t.dense_ref() {
        Some(d) => {
            let g = first(pb(TensorTangent::Dense(y.ones_like()))).to_tensor_like(d);
            TensorTangent::Dense(g.mul(d).sum_all().reshape(y.shape()))
        }
        None => TensorTangent::Zero,
    });
    (y, ty)
}
