//! `if`/`else if`/`else`, `if let` and `match` as regions (see [`crate::lower::region`]): the arms,
//! what their patterns bind, and the construct rebuilt around the rewritten arm bodies.

use crate::ir::graph::Act;
use crate::lower::Lowering;
use crate::lower::region::Arm;
use crate::patterns::bindings::pattern_names;
use crate::patterns::bindings::payload_pattern;
use crate::patterns::variant_match;
use proc_macro2::TokenStream;
use quote::quote;
use syn::{Expr, parse_quote};

impl Lowering<'_> {
    pub(crate) fn if_else(&mut self, e: &syn::ExprIf) -> (Expr, Act) {
        if let Expr::Let(l) = &*e.cond
            && self.mentions_active(&l.expr)
            && let Some(m) = variant_match::if_let_as_match(e)
        {
            // `if let Enum::V(x) = active { .. }`: a `match` with a catch-all arm.
            return self.match_arms(&m);
        }
        let mut arms = Vec::new();
        let mut conds = Vec::new();
        let mut current = e;
        loop {
            let mut bound_as = Act::Inactive;
            let (bound, payload, cond) = match &*current.cond {
                Expr::Let(l) => {
                    let (scrutinee, act) = self.expr(&l.expr);
                    let act = match act {
                        a if !crate::ir::graph::is_inactive(&a) && self.reject_ref_mut(&l.pat) => {
                            Act::Inactive
                        }
                        a => a,
                    };
                    bound_as = poisoned(&act);
                    let mut cond = l.clone();
                    cond.expr = Box::new(scrutinee);
                    let (bound, payload) = match (&act, payload_pattern(&l.pat)) {
                        (Act::Active(id), Some(Some(name))) => (Vec::new(), Some((name, *id))),
                        (Act::Active(_), Some(None)) => (pattern_names(&l.pat), None),
                        (Act::Active(_), None) => return self.opaque(&Expr::If(e.clone())),
                        _ => (pattern_names(&l.pat), None),
                    };
                    (bound, payload, Box::new(Expr::Let(cond)))
                }
                cond if self.condition_writes(cond) => return self.opaque(&Expr::If(e.clone())),
                _ => (Vec::new(), None, current.cond.clone()),
            };
            conds.push(cond);
            arms.push(crate::lower::region::Arm {
                block: current.then_branch.clone(),
                bound,
                payload,
                bound_as: bound_as.clone(),
                looping: false,
            });
            match current.else_branch.as_ref().map(|(_, b)| &**b) {
                Some(Expr::If(next)) => current = next,
                Some(Expr::Block(b)) => {
                    arms.push(crate::lower::region::Arm {
                        block: b.block.clone(),
                        bound: Vec::new(),
                        payload: None,
                        bound_as: Act::Inactive,
                        looping: false,
                    });
                    break;
                }
                Some(_) => return self.opaque(&Expr::If(e.clone())),
                None => {
                    arms.push(crate::lower::region::Arm {
                        block: parse_quote!({}),
                        bound: Vec::new(),
                        payload: None,
                        bound_as: Act::Inactive,
                        looping: false,
                    });
                    break;
                }
            }
        }
        self.branches(arms, Expr::If(e.clone()), move |bodies| {
            let mut bodies = bodies.into_iter().rev();
            let mut out = bodies.next().expect("an else arm");
            for (cond, body) in conds.iter().rev().zip(bodies) {
                out = quote!(if #cond #body else #out);
            }
            out
        })
    }

    pub(crate) fn match_arms(&mut self, m: &syn::ExprMatch) -> (Expr, Act) {
        if self.mentions_active(&m.expr)
            && let Some(rewritten) = variant_match::as_data_match(m)
        {
            // Arms binding enum payloads: the variant is data, the payloads are read by rules.
            return self.expr(&rewritten);
        }
        if self.mentions_active(&m.expr)
            && let Some(chain) = crate::patterns::scalar_match::as_if_chain(m)
        {
            // A `match` that only compares or binds an active value: an `if` chain on it.
            return self.expr(&chain);
        }
        let (scrutinee, act) = self.expr(&m.expr);
        let mut arms = Vec::new();
        for arm in &m.arms {
            let rejected = !crate::ir::graph::is_inactive(&act) && self.reject_ref_mut(&arm.pat);
            let body = &arm.body;
            let block = parse_quote!({ #body });
            let (bound, payload) = match (&act, payload_pattern(&arm.pat)) {
                _ if rejected => (pattern_names(&arm.pat), None),
                (Act::Active(id), Some(Some(name))) => (Vec::new(), Some((name, *id))),
                (Act::Active(_), Some(None)) => (pattern_names(&arm.pat), None),
                (Act::Active(_), None) => return self.opaque(&Expr::Match(m.clone())),
                _ => (pattern_names(&arm.pat), None),
            };
            if let Some((name, _)) = &payload
                && self
                    .lookup(name)
                    .is_some_and(|a| !crate::ir::graph::is_inactive(a))
            {
                return self.opaque(&Expr::Match(m.clone()));
            }
            arms.push(Arm {
                block,
                bound,
                payload,
                bound_as: poisoned(&act),
                looping: false,
            });
        }
        let heads: Vec<TokenStream> = m
            .arms
            .iter()
            .map(|arm| {
                let (pat, guard) = (&arm.pat, arm.guard.as_ref().map(|(i, g)| quote!(#i #g)));
                quote!(#pat #guard)
            })
            .collect();
        self.branches(arms, Expr::Match(m.clone()), move |bodies| {
            let arms = heads
                .iter()
                .zip(bodies)
                .map(|(head, body)| quote!(#head => #body,));
            quote!(match #scrutinee { #(#arms)* })
        })
    }
}

/// What names bound by a pattern over a scrutinee with activity `act` are: poisoned with it,
/// or data.
pub(crate) fn poisoned(act: &Act) -> Act {
    match act {
        Act::Poison(..) => act.clone(),
        _ => Act::Inactive,
    }
}
