//! The affine recurrence `hₜ = f(Σₖ Aₖ·op(Bₖ) + Σⱼ cⱼ)`, `t = 1..T`: a loop whose body is one
//! [fused affine expression](super::affine) of the carried value `h`, the loop's element `xₜ`
//! and operands that do not change in the loop (weights, biases).
//!
//! Nobody calls it by name. `#[differentiable]` code writes the loop,
//!
//! ```text
//! for x in xs {
//!     h = (h.matmul(w) + x.matmul(u) + b).tanh();
//! }
//! ```
//!
//! and the macro lowers it as one rule (`macros/src/recurrence.rs`) where the operands are
//! tensors (`site.rs` beside this file dispatches). The rule owns the loop, forward
//! and backward: its pullback gets `h̄_T` and returns the tangents of `h₀` and of each
//! unchanging operand, summed over the steps, so that no step has a record of its own.
//!
//! Derivative, with `zₜ` the step's sum and `hₜ = f(zₜ)`: from `h̄_T`, for `t = T..1`,
//! `z̄ₜ = h̄ₜ·f′(zₜ)` (from `hₜ`, as `affine_rule`'s), `h̄ₜ₋₁ = Σ z̄ₜ·op(B)ᵀ` over the products
//! `h` is a factor of (and `z̄ₜ` itself, summed to `h`'s shape, where `h` is a term), and each
//! unchanging operand's tangent is its tangent in step `t` (as `affine_rule` gives it)
//! summed over `t`: for a weight `W` of `hₜ₋₁·W`, `W̄ = Σₜ hₜ₋₁ᵀ·z̄ₜ`; for a bias, `c̄ = Σₜ Σ↓ z̄ₜ`.
//!
//! A backend may run the whole loop as one kernel ([`Backend::recurrence`]): the CPU backend
//! does for the Elman form `h·op(W) [+ x·op(U)] + c`, where a step of 32 units costs less than
//! the bookkeeping of a fused op (a buffer, its handle, the shape checks and a pullback record
//! per step). Otherwise, and for any other form, each step is the fused op and its pullback, so
//! the values and the errors are the fused op's.

pub(crate) mod site;

use super::affine::{Epilogue, affine_rule};
use crate::TangentVector;
use crate::tensor::{Backend, Shape, Tensor, TensorTangent};
use adjoint_backend::{RecurrenceNeeds, RecurrenceSpec};

/// What an operand of the step's affine expression is, in the order of
/// `affine_rule`'s leaves (the factors of each product, then the other terms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leaf {
    /// The carried value `hₜ₋₁` (slot 0 of the rule).
    Carry,
    /// The loop's element `xₜ`.
    Element,
    /// The operand in slot `i ≥ 1`, the same in every step.
    Fixed(usize),
}

/// Rule of the loop `for x in xs { h = f(…) }` over the step's `leaves` (see the module docs):
/// `slots[0]` is `h₀`, `slots[i]` the operand of every [`Leaf::Fixed`]`(i)`; the value `h_T`
/// and the pullback from `h̄_T` to the tangents of all `S` slots.
///
/// # Panics
/// If `leaves` has no [`Leaf::Carry`], more than one, or a `Fixed` slot out of range; as
/// `affine_rule` if a step's shapes do not fit.
#[track_caller]
pub(crate) fn recurrence_rule<B: Backend, const S: usize, const N: usize>(
    slots: [Tensor<B>; S],
    xs: Vec<Tensor<B>>,
    leaves: [Leaf; N],
    affine: (usize, u32, Epilogue),
    needs: [bool; S],
) -> (
    Tensor<B>,
    impl FnOnce(TensorTangent<B>) -> [TensorTangent<B>; S] + use<B, S, N>,
) {
    let carries = leaves.iter().filter(|&&l| l == Leaf::Carry).count();
    assert!(
        carries == 1
            && leaves
                .iter()
                .all(|l| !matches!(l, Leaf::Fixed(i) if *i == 0 || *i >= S)),
        "recurrence_rule: the leaves {leaves:?} must name the carried value once and only slots 1..{S}"
    );
    // The Elman form by the backend's kernel, where it has one.
    if let Some(elman) = Elman::of(&slots, &xs, &leaves, affine)
        && let Some(states) = elman.forward(&slots, &xs)
    {
        let (h, pullback) = elman.rule(states, slots, xs, needs);
        return (h, Pullback::Kernel(pullback).run());
    }
    let (h, pullback) = by_steps(slots, xs, leaves, affine, needs);
    (h, Pullback::Steps(pullback).run())
}

/// A pullback of either kind, as one type.
enum Pullback<K, P> {
    Kernel(K),
    Steps(P),
}

impl<K, P> Pullback<K, P> {
    fn run<B: Backend, const S: usize>(
        self,
    ) -> impl FnOnce(TensorTangent<B>) -> [TensorTangent<B>; S]
    where
        K: FnOnce(TensorTangent<B>) -> [TensorTangent<B>; S],
        P: FnOnce(TensorTangent<B>) -> [TensorTangent<B>; S],
    {
        move |d| match self {
            Pullback::Kernel(k) => k(d),
            Pullback::Steps(p) => p(d),
        }
    }
}

/// The loop as one fused op per step (any form, any shapes).
#[track_caller]
fn by_steps<B: Backend, const S: usize, const N: usize>(
    slots: [Tensor<B>; S],
    xs: Vec<Tensor<B>>,
    leaves: [Leaf; N],
    affine: (usize, u32, Epilogue),
    needs: [bool; S],
) -> (
    Tensor<B>,
    impl FnOnce(TensorTangent<B>) -> [TensorTangent<B>; S] + use<B, S, N>,
) {
    let any = needs.iter().any(|&n| n);
    // The carried value's tangent flows back to the earlier steps whenever anything is needed.
    let leaf_needs = leaves.map(|leaf| match leaf {
        Leaf::Carry => any,
        Leaf::Element => false,
        Leaf::Fixed(i) => needs[i],
    });
    let mut h = slots[0].clone();
    let mut steps = Vec::with_capacity(if any { xs.len() } else { 0 });
    let (products, transposed, act) = affine;
    for x in xs {
        let mut carry = Some(h);
        let step = leaves.map(|leaf| match leaf {
            Leaf::Carry => carry.take().expect("one carried leaf"),
            Leaf::Element => x.clone(),
            Leaf::Fixed(i) => slots[i].clone(),
        });
        let (y, pullback) = affine_rule(step, products, transposed, act, leaf_needs);
        if any {
            steps.push(pullback);
        }
        h = y;
    }
    (h, move |d: TensorTangent<B>| {
        let mut out: [TensorTangent<B>; S] = std::array::from_fn(|_| TensorTangent::Zero);
        let mut carry = d;
        for pullback in steps.into_iter().rev() {
            let tangents = pullback(carry);
            carry = TensorTangent::Zero;
            for (leaf, t) in leaves.iter().zip(tangents) {
                match *leaf {
                    Leaf::Carry => carry = t,
                    Leaf::Element => {}
                    Leaf::Fixed(i) => out[i].plus_assign(t),
                }
            }
        }
        out[0] = if needs[0] { carry } else { TensorTangent::Zero };
        out
    })
}

/// What a bias of the Elman form adds to: every row (`n` elements), or every element.
#[derive(Clone, Copy, PartialEq)]
enum Bias {
    Rows,
    Elements,
}

/// The Elman form of a recurrence, `h·op(W) [+ x·op(U)] + Σ c`, with its slots and shapes:
/// what [`Backend::recurrence`] runs as one kernel.
struct Elman {
    spec: RecurrenceSpec,
    /// The slot of `W`.
    w: usize,
    /// The slot of `U`, when the step has an input product.
    u: Option<usize>,
    /// Each bias's slot and kind.
    biases: Vec<(usize, Bias)>,
}

impl Elman {
    /// The form of the loop, if it has it: the carried value `[m, n]` times a shared `[n, n]`
    /// weight, at most one product of the element `[m, k]` (every element that shape) with a
    /// shared weight, biases of `n` or `m·n` elements, one float dtype, at least one step.
    fn of<B: Backend, const S: usize, const N: usize>(
        slots: &[Tensor<B>; S],
        xs: &[Tensor<B>],
        leaves: &[Leaf; N],
        (products, transposed, act): (usize, u32, Epilogue),
    ) -> Option<Self> {
        let (&[m, n], false) = (slots[0].shape(), xs.is_empty()) else {
            return None;
        };
        let dtype = slots[0].dtype();
        let float = |t: &Tensor<B>| t.dtype() == dtype;
        let t = |k: usize| transposed >> k & 1 == 1;
        let (mut w, mut input, mut input_first) = (None, None, false);
        for k in 0..products {
            match (leaves[2 * k], leaves[2 * k + 1]) {
                (Leaf::Carry, Leaf::Fixed(i)) if w.is_none() => w = Some((i, t(k))),
                (Leaf::Element, Leaf::Fixed(i)) if input.is_none() => {
                    input = Some((i, t(k)));
                    input_first = w.is_none();
                }
                _ => return None,
            }
        }
        let (w, w_transposed) = w?;
        let square = slots[w].shape() == [n, n] && float(&slots[w]);
        let (u, u_transposed, k) = match input {
            Some((u, u_transposed)) => {
                let k = xs[0].shape().get(1).copied()?;
                let rows = if u_transposed { [n, k] } else { [k, n] };
                let fits = slots[u].shape() == rows
                    && float(&slots[u])
                    && xs.iter().all(|x| x.shape() == [m, k] && float(x));
                if !fits {
                    return None;
                }
                (Some(u), u_transposed, Some(k))
            }
            None => (None, false, None),
        };
        let mut biases = Vec::new();
        for leaf in &leaves[2 * products..] {
            let Leaf::Fixed(i) = *leaf else { return None };
            let c = &slots[i];
            let kind = match c.shape() {
                s if s == [m, n] => Bias::Elements,
                [q] | [1, q] if *q == n => Bias::Rows,
                _ => return None,
            };
            if !float(c) {
                return None;
            }
            biases.push((i, kind));
        }
        let fits = square && dtype.is_float() && products >= 1;
        fits.then(|| Elman {
            spec: RecurrenceSpec {
                steps: xs.len(),
                m,
                n,
                input: k,
                w_transposed,
                u_transposed,
                input_first,
                act: act.ops(),
            },
            w,
            u,
            biases,
        })
    }

    /// `U` and the elements, when the step has an input product.
    fn input<'a, B: Backend, const S: usize>(
        &self,
        slots: &'a [Tensor<B>; S],
        xs: &'a [Tensor<B>],
    ) -> Option<(&'a B::Storage, Vec<&'a B::Storage>)> {
        self.u
            .map(|u| (slots[u].storage(), xs.iter().map(Tensor::storage).collect()))
    }

    /// The states `h₀ … h_T` by the backend's kernel, if it has one.
    fn forward<B: Backend, const S: usize>(
        &self,
        slots: &[Tensor<B>; S],
        xs: &[Tensor<B>],
    ) -> Option<B::Storage> {
        let input = self.input(slots, xs);
        let biases: Vec<&B::Storage> = self
            .biases
            .iter()
            .map(|&(i, _)| slots[i].storage())
            .collect();
        B::recurrence(
            &self.spec,
            slots[0].storage(),
            slots[self.w].storage(),
            input.as_ref().map(|(u, xs)| (*u, xs.as_slice())),
            &biases,
        )
    }

    /// `h_T` from the kernel's `states`, and the pullback by the backend's backward kernel.
    fn rule<B: Backend, const S: usize>(
        self,
        states: B::Storage,
        slots: [Tensor<B>; S],
        xs: Vec<Tensor<B>>,
        needs: [bool; S],
    ) -> (
        Tensor<B>,
        impl FnOnce(TensorTangent<B>) -> [TensorTangent<B>; S] + use<B, S>,
    ) {
        let RecurrenceSpec { steps, m, n, .. } = self.spec;
        let all = [steps + 1, m, n];
        let h = Tensor::<B>::from_storage(B::narrow(&states, &all, 0, steps, 1), [m, n]);
        let states = Tensor::<B>::from_storage(states, all);
        let shapes: [Shape; S] = std::array::from_fn(|i| slots[i].shape_owned());
        let bias_needs = |kind| self.biases.iter().any(|&(i, k)| k == kind && needs[i]);
        let kernel_needs = RecurrenceNeeds {
            h0: needs[0],
            w: needs[self.w],
            u: self.u.is_some_and(|u| needs[u]),
            rows: bias_needs(Bias::Rows),
            steps: bias_needs(Bias::Elements),
        };
        let w = slots[self.w].clone();
        // The elements only where `Ū` is needed.
        let (slots, xs) = match kernel_needs.u {
            true => (Some(slots), xs),
            false => (None, Vec::new()),
        };
        (h, move |d: TensorTangent<B>| {
            let mut out: [TensorTangent<B>; S] = std::array::from_fn(|_| TensorTangent::Zero);
            let Some(d) = d.settled().dense() else {
                return out;
            };
            assert_eq!(d.shape(), [m, n], "recurrence: h̄_T of another shape");
            let input = slots.as_ref().and_then(|slots| self.input(slots, &xs));
            let g = B::recurrence_backward(
                &self.spec,
                states.storage(),
                w.storage(),
                input.as_ref().map(|(u, xs)| (*u, xs.as_slice())),
                d.storage(),
                kernel_needs,
            );
            let flat = |t: Option<B::Storage>| {
                t.map(|t| {
                    let len = B::len(&t);
                    Tensor::<B>::from_storage(t, [len])
                })
            };
            let (rows, by_step) = (flat(g.rows), flat(g.steps));
            let mut add = |i: usize, t: Option<Tensor<B>>| {
                if let Some(t) = t.filter(|_| needs[i]) {
                    out[i].plus_assign(TensorTangent::Dense(t.with_shape(&shapes[i])));
                }
            };
            add(0, flat(g.h0));
            add(self.w, flat(g.w));
            if let Some(u) = self.u {
                add(u, flat(g.u));
            }
            for &(i, kind) in &self.biases {
                let sum = match kind {
                    Bias::Rows => &rows,
                    Bias::Elements => &by_step,
                };
                add(i, sum.clone());
            }
            out
        })
    }
}
