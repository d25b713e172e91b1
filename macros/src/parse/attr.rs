//! Arguments of `#[differentiable(...)]`.

use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Ident, Token, parenthesized};

/// `#[differentiable]`, `#[differentiable(wrt(x, y))]`, `#[differentiable(associated)]`.
#[derive(Default)]
pub struct DiffArgs {
    /// The parameters to differentiate, when given explicitly.
    pub wrt: Option<Vec<Ident>>,
    /// The function is an associated function of an impl or trait (without `self` and
    /// without `Self` in its signature, the macro cannot tell).
    pub associated: bool,
    /// `forward`: also write the forward-mode companions `f_jvp` (see [`crate::forward`]).
    pub forward: bool,
    /// Set when `#[differentiable]` is on the enclosing `impl` or `trait`: its type and const
    /// parameters (and `Self` in a trait), which the companions' precise captures must name.
    pub enclosing: Option<Vec<proc_macro2::TokenStream>>,
}

impl Parse for DiffArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut args = DiffArgs::default();
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            if key == "wrt" {
                if args.wrt.is_some() {
                    return Err(syn::Error::new(key.span(), "`wrt` is given twice"));
                }
                let content;
                parenthesized!(content in input);
                let names = Punctuated::<Ident, Token![,]>::parse_terminated_with(
                    &content,
                    Ident::parse_any,
                )?;
                args.wrt = Some(names.into_iter().collect());
            } else if key == "associated" {
                args.associated = true;
            } else if key == "forward" {
                args.forward = true;
            } else {
                return Err(syn::Error::new(
                    key.span(),
                    format!(
                        "unknown argument `{key}`: expected `wrt(param, ...)`, `associated` or `forward`"
                    ),
                ));
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(args)
    }
}
