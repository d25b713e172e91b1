//! The forward companions of a function: the public `f_jvp` and the uniform one.

use super::Forward;
use super::scope::{Hold, Scopes, tangent_ident};
use crate::diag::Errors;
use crate::emit::companions::{cfgs, inlines, is_method_form};
use crate::parse::attr::DiffArgs;
use crate::parse::item::FnItem;
use crate::parse::signature::{FnSignature, Param};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

/// The tangent slot of a parameter in the uniform forward convention.
pub fn slot_type(p: &Param) -> TokenStream {
    let t = p.tangent_type();
    match (p.wrt, p.inout, p.by_ref) {
        (false, ..) => quote!(::core::option::Option<::adjoint::__private::NoTangent>),
        (true, true, _) => quote!(&mut ::core::option::Option<#t>),
        (true, false, true) => quote!(::core::option::Option<&#t>),
        (true, false, false) => quote!(::core::option::Option<#t>),
    }
}

/// How a tracked parameter's tangent is held in the body.
fn hold(p: &Param) -> Hold {
    match (p.inout, p.by_ref) {
        (true, _) => Hold::Inout,
        (false, true) => Hold::Ref,
        (false, false) => Hold::Owned,
    }
}

/// The name of the public tangent argument of `p`: `dx` (`dself` for the receiver).
fn tangent_arg(p: &Param, sig: &FnSignature) -> syn::Ident {
    let plain = format!("d{}", p.name);
    if sig.params.iter().any(|q| q.name == plain) {
        format_ident!("d_{}_", p.name)
    } else {
        format_ident!("{}", plain)
    }
}

/// `f_jvp` and the uniform forward companion, or the errors of the rewrite.
pub fn companions(
    item: &FnItem,
    sig: &FnSignature,
    args: &DiffArgs,
) -> Result<TokenStream, Errors> {
    if let Some(receiver) = sig.params.iter().find(|p| p.inout && p.name == "self") {
        let mut errors = Errors::default();
        errors.push(
            receiver.span,
            "forward mode: a `&mut self` method is not supported yet (reverse mode differentiates it); write `#[differentiable]` without `forward` on it, or take `self` by `&` and return the new value",
        );
        return Err(errors);
    }
    let (stmts, tail) = forward_body(item, sig)?;
    let name = &item.sig.ident;
    let span = name.span();
    let generics = &item.sig.generics;
    let where_clause = &item.sig.generics.where_clause;
    let decls: Vec<&TokenStream> = sig.params.iter().map(|p| &p.decl).collect();
    let slots = sig.params.iter().map(slot_type);
    let receive = sig.params.iter().map(|p| {
        if p.wrt {
            let t = tangent_ident(&p.name);
            quote!(mut #t)
        } else {
            quote!(_)
        }
    });
    let ret = &sig.ret;
    let ret_tangent = sig.ret_tangent();
    let cfgs = cfgs(item);
    let vis = &item.vis;
    let uniform_sig = quote_spanned! {span=>
        #generics (#(#decls,)* __t: (#(#slots,)*)) -> (#ret, ::core::option::Option<#ret_tangent>) #where_clause
    };
    // The body is printed once, for the scan of the fallbacks and for the companion.
    let body = quote!(#(#stmts)* #tail);
    let fallbacks =
        crate::missing::fallbacks(&body, &[("_jvp_full", crate::missing::Mode::Forward)]);
    let uniform_body = quote! {{
        use ::adjoint::__private::FloatMethods as _;
        #fallbacks
        let (#(#receive,)*) = __t;
        #body
    }};
    let allow = quote!(#[allow(unused, unused_mut, unused_parens, unused_braces, clippy::all, clippy::pedantic)]);
    let (uniform_path, uniform_item) = if is_method_form(item, sig, args) {
        let full =
            crate::emit::names::forward_method(&proc_macro2::Ident::new(&name.to_string(), span));
        (
            quote!(Self::#full),
            quote! {
                #(#cfgs)* #[doc(hidden)] #[inline] #allow
                #vis fn #full #uniform_sig #uniform_body
            },
        )
    } else {
        let owner = crate::emit::names::public(name);
        (
            quote!(#owner::__jvp),
            quote! {
                #(#cfgs)*
                impl #owner {
                    #[doc(hidden)] #[inline] #allow
                    #vis fn __jvp #uniform_sig #uniform_body
                }
            },
        )
    };
    let public = public_companion(item, sig, &uniform_path);
    Ok(quote!(#public #uniform_item))
}

/// The body's statements with their tangents, and its value paired with its tangent (`None`
/// when the body ends in `return` or otherwise diverges).
fn forward_body(
    item: &FnItem,
    sig: &FnSignature,
) -> Result<(Vec<TokenStream>, Option<TokenStream>), Errors> {
    let body = item.body.as_ref().expect("forward mode needs a body");
    let mut fwd = Forward {
        scopes: Scopes::default(),
        errors: Errors::default(),
        uninit: Default::default(),
    };
    fwd.scopes.push();
    for p in &sig.params {
        if p.pattern.is_some() && p.wrt {
            fwd.error(
                p.span,
                "forward mode: a differentiated parameter must be a name, not a pattern"
                    .to_string(),
            );
        }
        fwd.scopes.declare(&p.name, p.wrt.then(|| hold(p)));
    }
    let (stmts, tail) = fwd.block(body);
    if !fwd.errors.is_empty() {
        return Err(fwd.errors);
    }
    let unit = matches!(&sig.ret, syn::Type::Tuple(t) if t.elems.is_empty());
    let tail = match tail {
        Some(fx) => Some(fx.pair()),
        None if unit => Some(quote!(((), ::core::option::Option::None))),
        None => None,
    };
    Ok((stmts, tail))
}

/// `f_jvp(params.., dx..) -> (R, R::Tangent)`.
fn public_companion(item: &FnItem, sig: &FnSignature, uniform: &TokenStream) -> TokenStream {
    let name = &item.sig.ident;
    let span = name.span();
    let jvp = format_ident!("{}_jvp", name, span = span);
    let generics = &item.sig.generics;
    let where_clause = &item.sig.generics.where_clause;
    let decls: Vec<&TokenStream> = sig.params.iter().map(|p| &p.decl).collect();
    let mut tangent_decls = Vec::new();
    let mut before = Vec::new();
    let mut after = Vec::new();
    let mut slots = Vec::new();
    for (k, p) in sig.params.iter().enumerate() {
        if !p.wrt {
            slots.push(quote!(::core::option::Option::None));
            continue;
        }
        let d = tangent_arg(p, sig);
        let t = p.tangent_type();
        let pass = &p.pass;
        if p.inout {
            let io = format_ident!("__io{}", k);
            tangent_decls.push(quote!(#d: &mut #t));
            before.push(quote!(let mut #io = ::core::option::Option::Some(::core::mem::replace(#d, ::adjoint::TangentVector::zero()));));
            after.push(quote!(*#d = match #io {
                ::core::option::Option::Some(__t) => __t,
                ::core::option::Option::None => ::adjoint::Differentiable::zero_tangent(&*#pass),
            };));
            slots.push(quote!(&mut #io));
        } else if p.by_ref {
            tangent_decls.push(quote!(#d: &#t));
            slots.push(quote!(::core::option::Option::Some(#d)));
        } else {
            tangent_decls.push(quote!(#d: #t));
            slots.push(quote!(::core::option::Option::Some(#d)));
        }
    }
    let pass = sig.params.iter().map(|p| {
        let pass = &p.pass;
        if p.inout {
            quote!(&mut *#pass)
        } else {
            quote!(#pass)
        }
    });
    let ret = &sig.ret;
    let ret_tangent = sig.ret_tangent();
    let turbofish = &sig.turbofish;
    let cfgs = cfgs(item);
    let inlines = inlines(item);
    let vis = &item.vis;
    let doc = format!(
        " The value of `{name}` and its directional derivative (forward mode): the tangent of the result for the given tangents of the differentiated parameters. Generated by `#[differentiable(forward)]`."
    );
    quote_spanned! {span=>
        #(#cfgs)*
        #[doc = #doc]
        #[allow(unused, clippy::all, clippy::pedantic)]
        #(#inlines)*
        #vis fn #jvp #generics (#(#decls,)* #(#tangent_decls),*) -> (#ret, #ret_tangent) #where_clause {
            #(#before)*
            let (__value, __t) = #uniform #turbofish (#(#pass,)* (#(#slots,)*));
            #(#after)*
            let __t = match __t {
                ::core::option::Option::Some(__t) => __t,
                ::core::option::Option::None => ::adjoint::Differentiable::zero_tangent(&__value),
            };
            (__value, __t)
        }
    }
}
