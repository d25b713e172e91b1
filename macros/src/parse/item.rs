//! The function a macro is applied to: a free function, an inherent or trait-impl method, or a
//! trait method with or without a default body.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Block, Signature, Token, Visibility};

/// A function item in any position.
#[derive(Clone)]
pub struct FnItem {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub sig: Signature,
    /// `None` for a required trait method (`fn f(&self) -> f64;`).
    pub body: Option<Block>,
}

impl Parse for FnItem {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let sig: Signature = input.parse()?;
        let body = if input.peek(Token![;]) {
            input.parse::<Token![;]>()?;
            None
        } else {
            Some(input.parse()?)
        };
        Ok(FnItem {
            attrs,
            vis,
            sig,
            body,
        })
    }
}

impl ToTokens for FnItem {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        for attr in &self.attrs {
            attr.to_tokens(tokens);
        }
        self.vis.to_tokens(tokens);
        self.sig.to_tokens(tokens);
        match &self.body {
            Some(body) => body.to_tokens(tokens),
            None => <Token![;]>::default().to_tokens(tokens),
        }
    }
}
