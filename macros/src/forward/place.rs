//! Places: a local variable followed by field and index accesses (`x`, `p.x`, `v[i]`,
//! `self.w[i][j]`). A place's tangent is the same accesses applied to the root's tangent,
//! which has the same shape (a tangent struct has the differentiated fields of its struct, the
//! tangent of a `Vec` is a `Vec`), a named field read through the tangent struct's
//! `__tangent_w()` (`None` for a `#[no_derivative]` field, which it lacks).

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::Expr;

/// A place rooted at a local variable.
pub struct Place {
    /// The root variable (`self` for a receiver).
    pub root: String,
    /// The index expressions among the accesses (`i`), which must be data.
    pub indices: TokenStream,
    /// The accesses after the root, one by one (`.x`, `[i]`); none for the variable itself.
    steps: Vec<Step>,
}

/// One access of a place, as its tangent is read.
enum Step {
    /// A named field `.w`: read through the tangent struct's `__tangent_w()` (`None` for a
    /// `#[no_derivative]` field, which the tangent struct does not have).
    Named(syn::Ident),
    /// A tuple field `.0` or an index `[i]`, the same on the tangent.
    Same(TokenStream),
}

/// The place `e` denotes, if it is one.
pub fn place(e: &Expr) -> Option<Place> {
    match e {
        Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => Some(Place {
            root: p.path.get_ident()?.to_string(),
            indices: TokenStream::new(),
            steps: Vec::new(),
        }),
        Expr::Field(f) => {
            let mut base = place(&f.base)?;
            let member = &f.member;
            base.steps.push(match member {
                syn::Member::Named(name) => Step::Named(name.clone()),
                syn::Member::Unnamed(_) => Step::Same(quote!(.#member)),
            });
            Some(base)
        }
        // A sub-slice `v[a..b]` is no place forward mode follows (its tangent would be a
        // sub-slice of a `Vec` tangent, which may be shorter than the value).
        Expr::Index(i) if matches!(&*i.index, Expr::Range(_)) => None,
        Expr::Index(i) => {
            let mut base = place(&i.expr)?;
            let index = &i.index;
            base.indices.extend(quote!((#index)));
            base.steps.push(Step::Same(quote!([#index])));
            Some(base)
        }
        Expr::Paren(p) => place(&p.expr),
        _ => None,
    }
}

impl Place {
    /// Whether the place is the variable itself.
    pub fn is_variable(&self) -> bool {
        self.steps.is_empty()
    }

    /// The accesses after the root, as written (`.x[i]`).
    pub fn accesses(&self) -> TokenStream {
        self.steps
            .iter()
            .map(|step| match step {
                Step::Named(name) => quote!(.#name),
                Step::Same(acc) => acc.clone(),
            })
            .collect()
    }

    /// The tangent of the place, read by reference (`Option<&T>`):
    /// `base.and_then(|__t| __t.__tangent_x()).map(|__t| &__t[i])` for `.x[i]`, runs of tuple
    /// fields and indices in one `map`.
    pub fn tangent_ref(&self, base_ref: TokenStream) -> TokenStream {
        let mut out = base_ref;
        let mut same = TokenStream::new();
        for step in &self.steps {
            match step {
                Step::Same(acc) => same.extend(acc.clone()),
                Step::Named(name) => {
                    if !same.is_empty() {
                        out = quote!(#out.map(|__t| &__t #same));
                        same = TokenStream::new();
                    }
                    let method = quote::format_ident!("__tangent_{}", name);
                    out = quote!(#out.and_then(|__t| __t.#method()));
                }
            }
        }
        if !same.is_empty() {
            out = quote!(#out.map(|__t| &__t #same));
        }
        out
    }

    /// The tangent of the place, read by value (copied, as the place itself is).
    pub fn tangent_copy(&self, base_ref: TokenStream) -> TokenStream {
        let read = self.tangent_ref(base_ref);
        quote!(#read.copied())
    }

    /// The tangent of the place, cloned.
    pub fn tangent_clone(&self, base_ref: TokenStream) -> TokenStream {
        let read = self.tangent_ref(base_ref);
        quote!(#read.cloned())
    }

    /// The index expressions of the accesses, for the activity check (field names are not
    /// variables).
    pub fn mentions(&self) -> String {
        self.indices.to_token_stream().to_string()
    }
}
