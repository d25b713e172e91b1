//! Which local variables carry a tangent in forward mode, and how it is held.
//!
//! Every tracked variable `x` has a tangent variable `__t_x` next to it: an `Option` whose
//! `None` is the zero tangent. A variable is *tracked* once an active value was written to it;
//! it stays tracked (a later inactive write sets `__t_x = None`), so the set only grows along
//! the program and merging the arms of a branch is a union.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};
use std::collections::HashMap;

/// How a tracked variable's tangent is held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// `__t_x: Option<T::Tangent>`: locals and parameters taken by value.
    Owned,
    /// `__t_x: Option<&T::Tangent>`: a `&T` parameter, a reference local.
    Ref,
    /// `__t_x: &mut Option<T::Tangent>`: a differentiated `&mut T` parameter.
    Inout,
}

/// The tangent variable of `name`.
pub fn tangent_ident(name: &str) -> Ident {
    format_ident!("__t_{}", name, span = Span::mixed_site())
}

/// Block scopes, innermost last; `None` marks a variable that carries no tangent.
#[derive(Clone, Default)]
pub struct Scopes {
    blocks: Vec<HashMap<String, Option<Hold>>>,
}

impl Scopes {
    pub fn push(&mut self) {
        self.blocks.push(HashMap::new());
    }

    pub fn pop(&mut self) {
        self.blocks.pop();
    }

    /// Declares `name` in the innermost block (a `let`, a loop variable, a parameter).
    pub fn declare(&mut self, name: &str, hold: Option<Hold>) {
        self.blocks
            .last_mut()
            .expect("a scope is open")
            .insert(name.to_string(), hold);
    }

    /// How `name`'s tangent is held, or `None` when it carries none.
    pub fn hold(&self, name: &str) -> Option<Hold> {
        self.blocks
            .iter()
            .rev()
            .find_map(|b| b.get(name))
            .copied()
            .flatten()
    }

    /// Marks the visible `name` as tracked (owned), where it was declared.
    pub fn track(&mut self, name: &str) {
        if let Some(slot) = self.blocks.iter_mut().rev().find_map(|b| b.get_mut(name))
            && slot.is_none()
        {
            *slot = Some(Hold::Owned);
        }
    }

    /// The visible locals that carry no tangent (candidates for promotion).
    pub fn untracked(&self) -> Vec<String> {
        let mut seen = HashMap::new();
        for block in self.blocks.iter().rev() {
            for (name, hold) in block {
                seen.entry(name.clone()).or_insert(hold.is_some());
            }
        }
        let mut out: Vec<String> = seen
            .into_iter()
            .filter(|(_, tracked)| !tracked)
            .map(|(n, _)| n)
            .collect();
        out.sort();
        out
    }

    /// `__t_x` read as an `Option<&T::Tangent>`.
    pub fn tangent_ref(&self, name: &str) -> Option<TokenStream> {
        let t = tangent_ident(name);
        Some(match self.hold(name)? {
            Hold::Owned | Hold::Inout => quote!(#t.as_ref()),
            Hold::Ref => quote!(#t),
        })
    }

    /// `__t_x` read by value, as `x` itself is read (moved, or copied for a float).
    pub fn tangent_value(&self, name: &str) -> Option<TokenStream> {
        let t = tangent_ident(name);
        Some(match self.hold(name)? {
            Hold::Owned | Hold::Ref => quote!(#t),
            Hold::Inout => quote!((*#t)),
        })
    }

    /// The place the tangent of `x` is assigned through: `__t_x` or `*__t_x`.
    pub fn tangent_place(&self, name: &str) -> Option<TokenStream> {
        let t = tangent_ident(name);
        Some(match self.hold(name)? {
            Hold::Owned => quote!(#t),
            Hold::Inout => quote!((*#t)),
            Hold::Ref => return None,
        })
    }
}
