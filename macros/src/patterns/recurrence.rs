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
//! (`core/src/ops/recurrence/site.rs`) where method lookup picks the tensor op, or, for other
//! types, the loop of the step's unfused rules, which the macro writes out here.

use crate::patterns::affine::{Affine, Position, affine, bare};
use crate::patterns::scan;
use proc_macro2::{Ident, TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Expr, ExprForLoop, Pat, Stmt};

/// What a leaf of the step's expression is.
#[derive(Clone, Copy, PartialEq)]
pub enum Role {
    /// The carried value.
    Carry,
    /// The loop's element.
    Element,
    /// An operand every step shares.
    Fixed,
}

/// A loop of the recurrence form (see the module docs).
pub struct Recurrence<'a> {
    /// The carried variable `h`.
    pub carry: &'a Ident,
    /// The loop's element `x`.
    pub element: &'a Ident,
    /// The step's expression.
    pub cell: Affine<'a>,
    /// Each leaf's role, in the site's order.
    pub roles: Vec<Role>,
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
pub fn recurrence(f: &ExprForLoop) -> Option<Recurrence<'_>> {
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
pub fn rename(tokens: TokenStream, from: &Ident, to: &Ident) -> TokenStream {
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
