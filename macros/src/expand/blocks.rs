//! `#[differentiable]` on an `impl` or `trait` block: the block's `#[differentiable]` methods
//! are expanded knowing the block's generic parameters, so that their pullbacks can be declared
//! to capture only those (`impl use<B> + FnOnce(..)`) and never borrow `self` or reference
//! arguments. Without it a method's pullback keeps its receiver borrowed (Rust 2024 captures
//! every lifetime in scope, and a precise capture list must name the impl's parameters).

use crate::diag::Errors;
use crate::parse::attr::DiffArgs;
use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{Attribute, GenericParam, Generics, ImplItem, ItemImpl, ItemTrait, TraitItem};

/// How one marked method is expanded: the driver's function expansion.
pub type ExpandFn = fn(DiffArgs, TokenStream, Errors) -> TokenStream;

/// Expands `#[differentiable] impl .. { .. }`, each marked method by `function`.
pub fn impl_block(args: TokenStream, mut block: ItemImpl, function: ExpandFn) -> TokenStream {
    if let Some(e) = no_arguments(args) {
        return quote!(#e #block);
    }
    let enclosing = parameters(&block.generics, false);
    let mut expanded = Vec::new();
    block.items.retain(|item| match item {
        ImplItem::Fn(f) if marked(&f.attrs) => {
            expanded.push(expand(f.to_token_stream(), &enclosing, function));
            false
        }
        _ => true,
    });
    let (attrs, defaultness, unsafety, generics, trait_, self_ty) = (
        &block.attrs,
        &block.defaultness,
        &block.unsafety,
        &block.generics,
        &block.trait_,
        &block.self_ty,
    );
    let (impl_generics, _, where_clause) = generics.split_for_impl();
    let trait_ = trait_
        .as_ref()
        .map(|(bang, path, for_)| quote!(#bang #path #for_));
    let items = &block.items;
    quote! {
        #(#attrs)*
        #defaultness #unsafety impl #impl_generics #trait_ #self_ty #where_clause {
            #(#items)*
            #(#expanded)*
        }
    }
}

/// Expands `#[differentiable] trait .. { .. }`, each marked method by `function`.
pub fn trait_block(args: TokenStream, mut block: ItemTrait, function: ExpandFn) -> TokenStream {
    if let Some(e) = no_arguments(args) {
        return quote!(#e #block);
    }
    let enclosing = parameters(&block.generics, true);
    let mut expanded = Vec::new();
    block.items.retain(|item| match item {
        TraitItem::Fn(f) if marked(&f.attrs) => {
            expanded.push(expand(f.to_token_stream(), &enclosing, function));
            false
        }
        _ => true,
    });
    let items = &block.items;
    let (attrs, vis, unsafety, auto, ident, generics) = (
        &block.attrs,
        &block.vis,
        &block.unsafety,
        &block.auto_token,
        &block.ident,
        &block.generics,
    );
    let colon = &block.colon_token;
    let supertraits = &block.supertraits;
    let where_clause = &generics.where_clause;
    quote! {
        #(#attrs)*
        #vis #unsafety #auto trait #ident #generics #colon #supertraits #where_clause {
            #(#items)*
            #(#expanded)*
        }
    }
}

fn no_arguments(args: TokenStream) -> Option<TokenStream> {
    (!args.is_empty()).then(|| {
        syn::Error::new_spanned(args, "#[differentiable] on an impl or trait takes no arguments; put `wrt(..)` on the methods")
            .to_compile_error()
    })
}

/// Whether a method carries `#[differentiable]` (also written by path).
fn marked(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "differentiable")
    })
}

/// The block's type and const parameters, and `Self` for a trait.
fn parameters(generics: &Generics, with_self: bool) -> Vec<TokenStream> {
    let mut out: Vec<TokenStream> = if with_self {
        vec![quote!(Self)]
    } else {
        Vec::new()
    };
    out.extend(generics.params.iter().filter_map(|g| match g {
        GenericParam::Type(t) => Some(t.ident.to_token_stream()),
        GenericParam::Const(c) => Some(c.ident.to_token_stream()),
        GenericParam::Lifetime(_) => None,
    }));
    out
}

/// One method: its `#[differentiable(..)]` attribute is taken off and applied here.
fn expand(method: TokenStream, enclosing: &[TokenStream], function: ExpandFn) -> TokenStream {
    let mut item: crate::parse::item::FnItem = match syn::parse2(method) {
        Ok(item) => item,
        Err(e) => return e.to_compile_error(),
    };
    let position = item.attrs.iter().position(|a| {
        a.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "differentiable")
    });
    let attr = item.attrs.remove(position.expect("marked"));
    let mut errors = Errors::default();
    let mut args = match &attr.meta {
        syn::Meta::Path(_) => DiffArgs::default(),
        syn::Meta::List(list) => syn::parse2::<DiffArgs>(list.tokens.clone()).unwrap_or_else(|e| {
            errors.add(e);
            DiffArgs::default()
        }),
        syn::Meta::NameValue(nv) => {
            errors.push(
                syn::spanned::Spanned::span(nv),
                "expected `#[differentiable]` or `#[differentiable(wrt(..))]`",
            );
            DiffArgs::default()
        }
    };
    args.enclosing = Some(enclosing.to_vec());
    function(args, item.to_token_stream(), errors)
}
