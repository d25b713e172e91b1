//! Writes to fields of a local: `p.x = e`, `p.inner.w = e`, `t.0 = e` (and `p.x op= e`, read
//! as `p.x = p.x op e`) on a local `p` that is active or becomes so. The new `p` is the value
//! of the rule `field_write(p, e, set, take)` (core's `rules/fields.rs`), whose pullback gives
//! `e` the written part of `p`'s adjoint and the old `p` the rest:
//!
//! ```text
//! p.a.b = e  ⇒  p = field_write(p, e, |s, v| s.a.b = v, |t| replace(&mut t.a.b, zero()))
//! ```
//!
//! The tangent of a struct has the struct's field names (`#[derive(Differentiable)]`) and a
//! tuple's tangent is a tuple, so the same path reaches the part in the value and in the
//! tangent.
//!
//! A field of an element of a local collection (`v[i].x = e`, from `for p in v.iter_mut() {
//! p.x = e }` too) is a write of the whole element, which the lowering differentiates:
//!
//! ```text
//! v[i].a = e  ⇒  { let value = e; let at = i; let mut el = v[at].clone(); el.a = value; v[at] = el; }
//! ```
//!
//! Through a `&mut` the lowering follows (an inout parameter, `let r = &mut a`), the referent
//! is copied, written and written back: `r.a = e  ⇒  { let value = e; let mut c = (*r).clone();
//! c.a = value; *r = c; }`.
//!
//! Other places with an index (`p.v[i] = e`) or a method call on the way stay unfollowed.

use crate::ir::graph::{Act, is_inactive};
use crate::lower::Lowering;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Ident, Member, parse_quote, parse_quote_spanned};

impl Lowering<'_> {
    /// `place = value` for a field place of a local, as a new version of the local; `None`
    /// when `place` is not one, or when neither the local nor the value is active (data).
    pub(crate) fn field_write(
        &mut self,
        place: &Expr,
        value: &Expr,
        original: Expr,
    ) -> Option<(Expr, Act)> {
        let (root, members) = field_place(place)?;
        let name = root.to_string();
        if self.followed(&name).is_some() && !self.ref_names.contains(&name) {
            // Through a `&mut` the lowering follows (an inout parameter `p: &mut P`, or
            // `let r = &mut a`): the referent copied, its field written, and written back
            // through `*r`, each a write the lowering differentiates.
            let written: Expr = parse_quote_spanned!(place.span()=> {
                let __adjoint_value = #value;
                let mut __adjoint_referent = (*#root).clone();
                __adjoint_referent #(.#members)* = __adjoint_value;
                *#root = __adjoint_referent;
            });
            return Some(self.expr(&written));
        }
        // A reference parameter (`stats: &Stats`) is not the value the rule would take by
        // value.
        if self.ref_names.contains(&name) {
            return None;
        }
        let current = self.lookup(&name)?.clone();
        // Data written into data is the caller's plain write (decided before lowering `value`,
        // which the caller would otherwise lower a second time).
        if is_inactive(&current) && !self.mentions_active(value) {
            return None;
        }
        let (rewritten, act) = self.expr(value);
        let operand = self.operand(value, &rewritten);
        let span = place.span();
        let path = quote!(#(.#members)*);
        let spans = vec![root.span(), value.span()];
        let (new, result) = self.rule(vec![current, act], spans, span, original.clone(), |n| {
            // The value first: it may read the local the rule then takes by value.
            quote_spanned! {span=> {
                let __adjoint_part = #operand;
                ::adjoint::__private::field_write(
                    #root,
                    __adjoint_part,
                    |__s, __v| __s #path = __v,
                    |__t| ::core::mem::replace(&mut __t #path, ::adjoint::__private::zero()),
                    [#(#n),*],
                )
            }}
        });
        if !self.assign(&name, result.clone()) && !is_inactive(&result) {
            self.report(span, crate::lower::mutation::non_local_write(place));
        }
        Some(match result {
            Act::Active(id) if self.is_useful(id) => (parse_quote!(#root = #new), Act::Inactive),
            _ => {
                let mut kept = original;
                if let Expr::Assign(a) = &mut kept {
                    *a.right = rewritten;
                }
                (kept, Act::Inactive)
            }
        })
    }
}

impl Lowering<'_> {
    /// `v[i].a.b = value` on a local `v` that is active or takes an active value, as the
    /// element copied, its field written, and the element written back (each a write the
    /// lowering follows); `None` for any other place. `value` is evaluated first, then `i`,
    /// once each, as in the assignment.
    pub(crate) fn element_field_write(
        &mut self,
        place: &Expr,
        value: &Expr,
    ) -> Option<(Expr, Act)> {
        let (element, members) = element_field_place(place)?;
        let name = crate::patterns::bindings::local_name(&element.expr)?.to_string();
        let current = self.lookup(&name)?.clone();
        if is_inactive(&current) && !self.mentions_active(value) {
            return None;
        }
        let (collection, index) = (&element.expr, &element.index);
        let written: Expr = parse_quote!({
            let __adjoint_value = #value;
            let __adjoint_at = #index;
            let mut __adjoint_element = #collection[__adjoint_at].clone();
            __adjoint_element #(.#members)* = __adjoint_value;
            #collection[__adjoint_at] = __adjoint_element;
        });
        Some(self.expr(&written))
    }
}

/// `v[i].a.b` as the element `v[i]` and the members `a`, `b`; `None` for any other place.
fn element_field_place(place: &Expr) -> Option<(syn::ExprIndex, Vec<Member>)> {
    let Expr::Field(f) = place else { return None };
    let (element, mut members) = match &*f.base {
        Expr::Index(i) => (i.clone(), Vec::new()),
        Expr::Paren(p) => (element_field_place(&p.expr).map(|(e, _)| e)?, Vec::new()),
        base => element_field_place(base)?,
    };
    members.push(f.member.clone());
    Some((element, members))
}

/// `p.a.0.b` as its root local `p` and the members `a`, `0`, `b`; `None` for any other place.
fn field_place(place: &Expr) -> Option<(Ident, Vec<Member>)> {
    match place {
        Expr::Field(f) => {
            let (root, mut members) = match &*f.base {
                Expr::Path(p) if p.qself.is_none() => (p.path.get_ident()?.clone(), Vec::new()),
                Expr::Paren(p) => {
                    return field_place(&Expr::Field(syn::ExprField {
                        base: p.expr.clone(),
                        ..f.clone()
                    }));
                }
                base => field_place(base)?,
            };
            members.push(f.member.clone());
            Some((root, members))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_places_are_a_local_and_its_members() {
        let place: Expr = parse_quote!(p.inner.0.w);
        let (root, members) = field_place(&place).unwrap();
        assert_eq!(root, "p");
        assert_eq!(quote!(#(.#members)*).to_string(), ". inner . 0 . w");
        assert!(field_place(&parse_quote!(p.v[i].x)).is_none());
        assert!(field_place(&parse_quote!(p)).is_none());
        assert!(field_place(&parse_quote!(f().x)).is_none());
    }
}
