//! Places: a local variable followed by field and index accesses (`x`, `p.x`, `v[i]`,
//! `self.w[i][j]`). A place's tangent is the same accesses applied to the root's tangent,
//! which has the same shape (a tangent struct has the fields of its struct, the tangent of a
//! `Vec` is a `Vec`).

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::Expr;

/// A place rooted at a local variable.
pub struct Place {
    /// The root variable (`self` for a receiver).
    pub root: String,
    /// The accesses after the root, as written (`.x[i]`); empty for the variable itself.
    pub accesses: TokenStream,
    /// The index expressions among the accesses (`i`), which must be data.
    pub indices: TokenStream,
}

/// The place `e` denotes, if it is one.
pub fn place(e: &Expr) -> Option<Place> {
    match e {
        Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => Some(Place {
            root: p.path.get_ident()?.to_string(),
            accesses: TokenStream::new(),
            indices: TokenStream::new(),
        }),
        Expr::Field(f) => {
            let mut base = place(&f.base)?;
            let member = &f.member;
            base.accesses.extend(quote!(.#member));
            Some(base)
        }
        // A sub-slice `v[a..b]` is no place forward mode follows (its tangent would be a
        // sub-slice of a `Vec` tangent, which may be shorter than the value).
        Expr::Index(i) if matches!(&*i.index, Expr::Range(_)) => None,
        Expr::Index(i) => {
            let mut base = place(&i.expr)?;
            let index = &i.index;
            base.accesses.extend(quote!([#index]));
            base.indices.extend(quote!((#index)));
            Some(base)
        }
        Expr::Paren(p) => place(&p.expr),
        _ => None,
    }
}

impl Place {
    /// Whether the place is the variable itself.
    pub fn is_variable(&self) -> bool {
        self.accesses.is_empty()
    }

    /// The tangent of the place, read by reference: `base.map(|__t| &__t.x[i])`.
    pub fn tangent_ref(&self, base_ref: TokenStream) -> TokenStream {
        if self.is_variable() {
            return base_ref;
        }
        let acc = &self.accesses;
        quote!(#base_ref.map(|__t| &__t #acc))
    }

    /// The tangent of the place, read by value (copied, as the place itself is).
    pub fn tangent_copy(&self, base_ref: TokenStream) -> TokenStream {
        let acc = &self.accesses;
        quote!(#base_ref.map(|__t| __t #acc))
    }

    /// The tangent of the place, cloned.
    pub fn tangent_clone(&self, base_ref: TokenStream) -> TokenStream {
        let acc = &self.accesses;
        quote!(#base_ref.map(|__t| __t #acc .clone()))
    }

    /// The index expressions of the accesses, for the activity check (field names are not
    /// variables).
    pub fn mentions(&self) -> String {
        self.indices.to_token_stream().to_string()
    }
}
