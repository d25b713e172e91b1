//! Loops that are one recurrence: `for x in xs { h = f(h.matmul(w) + x.matmul(u) + b) }`.
//!
//! An Elman RNN's loop is a fused affine expression (`fusion.rs`) per step. Taped, every step
//! records a pullback with its own copies of the weights' handles, and the backward pass adds
//! each step's weight tangents into the sums one by one. Seen whole, the loop is one rule: the
//! carried value's initial value and the operands every step shares are its slots, the loop's
//! elements are data, and its pullback, given `h̄_T`, returns the slots' tangents summed over
//! the steps. A backend can then run the loop as one kernel (`core/src/ops/recurrence.rs`).
//!
//! The form is strict, so that the rewrite never changes what the loop computes:
//! * the loop is `for x in iter` with a plain name `x` and a body of exactly one statement,
//!   `h = <affine expression>;`, assigning a local `h` that `iter` does not mention;
//! * every leaf of the expression is `h` itself (exactly once, by value or borrowed), `x` (in
//!   a product, at least once: a loop over a counter stays a loop of fused ops), or an operand
//!   that mentions neither and is a path or a field of one (`w`, `&self.b`): reading it once
//!   before the loop gives what every step would have read.
//!
//! Anything else is lowered as a loop (`region.rs`). The call is a site
//! (`core/src/__private/recurrence.rs`) where method lookup picks the tensor op, or, for other
//! types, the loop of the step's unfused rules, which the macro writes out here.

use crate::ir::graph::Act;
use crate::lower::fusion::{Affine, Position, affine, bare};
use crate::lower::{Lowering, is_inactive};
use crate::patterns::scan;
use proc_macro2::{Ident, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, ExprForLoop, Pat, Stmt};

/// What a leaf of the step's expression is.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    /// The carried value.
    Carry,
    /// The loop's element.
    Element,
    /// An operand every step shares.
    Fixed,
}

/// A loop of the recurrence form (see the module docs).
pub(crate) struct Recurrence<'a> {
    /// The carried variable `h`.
    carry: &'a Ident,
    /// The loop's element `x`.
    element: &'a Ident,
    /// The step's expression.
    cell: Affine<'a>,
    /// Each leaf's role, in the site's order.
    roles: Vec<Role>,
}

/// The name an expression is, under parentheses and shared borrows: `h`, `&h`, `(&h)`.
fn name_of(e: &Expr) -> Option<&Ident> {
    match bare(e) {
        Expr::Reference(r) if r.mutability.is_none() => name_of(&r.expr),
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident(),
        _ => None,
    }
}

/// Whether `e` (under parentheses and shared borrows) is a path or a field of one.
fn is_place(e: &Expr) -> bool {
    match bare(e) {
        Expr::Reference(r) if r.mutability.is_none() => is_place(&r.expr),
        Expr::Path(p) => p.qself.is_none(),
        Expr::Field(f) => is_place(&f.base),
        _ => false,
    }
}

/// The loop `f` as a recurrence, if it has the form.
pub(crate) fn recurrence(f: &ExprForLoop) -> Option<Recurrence<'_>> {
    let [Stmt::Expr(Expr::Assign(assign), Some(_))] = f.body.stmts.as_slice() else {
        return None;
    };
    let Pat::Ident(pat) = &*f.pat else {
        return None;
    };
    let plain_pattern = pat.attrs.is_empty()
        && pat.by_ref.is_none()
        && pat.mutability.is_none()
        && pat.subpat.is_none();
    let carry = name_of(&assign.left).filter(|_| matches!(&*assign.left, Expr::Path(_)))?;
    let element = &pat.ident;
    // The slots are read before the iterator is made: it must not borrow the carried value.
    let iter_reads_carry = scan::idents(f.expr.to_token_stream()).contains(carry);
    if !plain_pattern || !assign.attrs.is_empty() || carry == element || iter_reads_carry {
        return None;
    }
    let cell = affine(&assign.right)?;
    let mut roles = Vec::new();
    for (position, leaf) in cell.leaves() {
        let role = match name_of(leaf) {
            Some(name) if name == carry => Role::Carry,
            Some(name) if name == element && !matches!(position, Position::Term) => Role::Element,
            _ => {
                let mentioned = scan::idents(leaf.to_token_stream());
                if !is_place(leaf) || mentioned.iter().any(|id| id == carry || id == element) {
                    return None;
                }
                Role::Fixed
            }
        };
        roles.push(role);
    }
    let count = |role| roles.iter().filter(|&&r| r == role).count();
    (count(Role::Carry) == 1 && count(Role::Element) >= 1).then_some(Recurrence {
        carry,
        element,
        cell,
        roles,
    })
}

/// `tokens` with every identifier `from` (not after a `.`) replaced by `to`.
fn rename(tokens: TokenStream, from: &Ident, to: &Ident) -> TokenStream {
    let mut after_dot = false;
    tokens
        .into_iter()
        .map(|tt| {
            let out = match tt {
                TokenTree::Ident(id) if !after_dot && id == *from => {
                    TokenTree::Ident(Ident::new(&to.to_string(), id.span()))
                }
                TokenTree::Group(g) => {
                    let mut group =
                        proc_macro2::Group::new(g.delimiter(), rename(g.stream(), from, to));
                    group.set_span(g.span());
                    TokenTree::Group(group)
                }
                other => other,
            };
            after_dot = matches!(&out, TokenTree::Punct(p) if p.as_char() == '.');
            out
        })
        .collect()
}

impl Lowering<'_> {
    /// Lowers a [`recurrence`] loop over the lowered `iter` as one rule, or `None` (lower it as
    /// a loop) when the carried variable is not a local or nothing in it is active.
    pub(crate) fn recurrence(
        &mut self,
        r: Recurrence<'_>,
        f: &ExprForLoop,
        iter: &Expr,
    ) -> Option<(Expr, Act)> {
        let Recurrence {
            carry,
            element,
            cell,
            roles,
        } = r;
        let carry_act = self.lookup(&carry.to_string())?.clone();
        let (c, x) = (format_ident!("__c"), format_ident!("__x"));
        // Slot 0 is the initial value; each shared operand has a slot of its own.
        let (mut acts, mut spans) = (vec![carry_act], vec![carry.span()]);
        let mut slot_values = vec![quote!(#carry)];
        let (mut step_leaves, mut leaf_roles, mut leaf_needs) =
            (Vec::new(), Vec::new(), Vec::new());
        let mut fixed_slots = Vec::new();
        for ((position, leaf), role) in cell.leaves().into_iter().zip(&roles) {
            match role {
                Role::Carry | Role::Element => {
                    let (from, to) = if *role == Role::Carry {
                        (carry, &c)
                    } else {
                        (element, &x)
                    };
                    let renamed: Expr =
                        syn::parse2(rename(leaf.to_token_stream(), from, to)).ok()?;
                    step_leaves.push(self.leaf(position, leaf, &renamed));
                    if *role == Role::Carry {
                        leaf_roles.push(quote!(::adjoint::__private::Leaf::Carry));
                        leaf_needs.push(quote!(__any));
                    } else {
                        leaf_roles.push(quote!(::adjoint::__private::Leaf::Element));
                        leaf_needs.push(quote!(false));
                    }
                }
                Role::Fixed => {
                    let (lowered, act) = self.expr(leaf);
                    let value = self.leaf(position, leaf, &lowered);
                    let slot = slot_values.len();
                    step_leaves.push(value.clone());
                    slot_values.push(value);
                    leaf_roles.push(quote!(::adjoint::__private::Leaf::Fixed(#slot)));
                    leaf_needs.push(quote!(__n[#slot]));
                    fixed_slots.push(step_leaves.len() - 1);
                    acts.push(act);
                    spans.push(leaf.span());
                }
            }
        }
        if acts.iter().all(is_inactive) {
            return None;
        }
        let slots = slot_values.len();
        let (pat, body) = (&f.pat, &f.body);
        // The loop as written, where no tangent is needed.
        let original: Expr = syn::parse_quote!({
            let mut #carry = #carry;
            for #pat in #iter #body
            #carry
        });
        let span = cell.span();
        let (count, transposed, epilogue) =
            (cell.products.len(), cell.transposed_mask(), cell.epilogue());
        let plain = cell.plain_rules();
        let g: Vec<Ident> = (0..step_leaves.len())
            .map(|i| format_ident!("__g{}", i))
            .collect();
        let carry_leaf = roles.iter().position(|&r| r == Role::Carry)?;
        let g_carry = &g[carry_leaf];
        let sums: Vec<Ident> = (1..slots).map(|i| format_ident!("__a{}", i)).collect();
        let g_fixed = fixed_slots.iter().map(|&i| &g[i]);
        let holes = (1..slots).map(|_| quote!(_));
        let any = (0..slots).map(|i| quote!(__n[#i]));
        let step = quote!(|#c, #x, __n: [bool; #slots]| {
            let __any = false #(|| #any)*;
            let (__y, __pb) = ::adjoint::__private::step(
                (#(#step_leaves,)*),
                [#(#leaf_needs),*],
                #plain,
            );
            (__y, move |__d, __acc: &mut (#(#holes,)*)| {
                let (#(#g,)*) = __pb(::adjoint::__private::settled(__d));
                let (#(#sums,)*) = __acc;
                #(::adjoint::__private::plus_assign(#sums, ::adjoint::__private::arg_tangent(#g_fixed));)*
                ::adjoint::__private::arg_tangent(#g_carry)
            })
        });
        let (value, act) = self.rule(acts, spans, span, original, |n| {
            quote_spanned!(span=> {
                #[allow(unused_imports)]
                use ::adjoint::__private::RecurrencePlain as _;
                ::adjoint::__private::recurrence((#(#slot_values,)*), #iter, [#(#n),*], #step)
                    .operands()
                    .rule(
                        [#(#leaf_roles),*],
                        #count,
                        #transposed,
                        ::adjoint::__private::Epilogue::#epilogue,
                    )
            })
        });
        self.assign(&carry.to_string(), act);
        Some((syn::parse_quote!({ #carry = #value; }), Act::Inactive))
    }
}
