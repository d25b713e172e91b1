//! Emission: the original function, unchanged, plus its companions.
//!
//! * `f_vjp(args) -> (R, impl FnOnce(R::Tangent) -> tangents)`: the public companion, whose
//!   pullback returns the tangent of each `wrt` parameter (the tangent itself for one);
//! * the uniform companion (`f_vjp::__full` or `f_vjp_full`, see [`crate::names`]) that
//!   generated code calls: one extra argument `needs: [bool; N]` says which parameters' tangents
//!   the caller needs, and its pullback returns one slot per parameter.

use crate::activity;
use crate::attr::DiffArgs;
use crate::diag::Errors;
use crate::item::FnItem;
use crate::lower::{self, Lowered};
use crate::names;
use crate::reverse::{self, Reverse, Sink};
use crate::signature::{self, FnSignature};
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{parse_quote, parse_quote_spanned};

/// Expands `#[differentiable(args)] input`.
pub fn differentiable(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = syn::parse2::<DiffArgs>(args).unwrap_or_else(|e| {
        errors.add(e);
        DiffArgs::default()
    });
    let mut item: FnItem = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            errors.push(
                proc_macro2::Span::call_site(),
                "#[differentiable] applies to functions and methods",
            );
            let errors = errors.into_compile_errors();
            return quote!(#input #errors);
        }
    };
    let excluded = signature::strip_no_derivative(&mut item.sig);
    let sig = signature::analyse(&item.sig, &excluded, &args, &mut errors);
    let body = match (&sig, &item.body, errors.is_empty()) {
        (Some(sig), Some(body), true) => Some(lower_body(sig, &item.sig.ident, body, &mut errors)),
        _ => None,
    };
    match sig {
        Some(sig) if errors.is_empty() => {
            let companions = companions(&item, &sig, &args, body.flatten());
            debug_print(&item.sig.ident, &companions);
            quote!(#item #companions)
        }
        // On error the original function is still emitted, so the user sees one error.
        _ => {
            let errors = errors.into_compile_errors();
            quote!(#item #errors)
        }
    }
}

/// Runs both lowering passes and writes the uniform companion's body.
fn lower_body(
    sig: &FnSignature,
    name: &syn::Ident,
    body: &syn::Block,
    errors: &mut Errors,
) -> Option<TokenStream> {
    let recursive = calls_itself(name, body.to_token_stream());
    let body = &crate::normalize::normalize(body);
    let first = lower::lower(sig, body, None);
    let useful = activity::useful(&first.graph, &first.result);
    let Lowered {
        graph,
        body,
        result,
        hoisted,
        errors: found,
    } = lower::lower(sig, body, Some(&useful));
    if !found.is_empty() {
        *errors = found;
        return None;
    }
    Some(full_body(
        sig, &graph, &useful, &result, &body, &hoisted, recursive,
    ))
}

/// The body of the uniform companion: the rewritten forward pass, then the pullback closure.
fn full_body(
    sig: &FnSignature,
    graph: &crate::graph::Graph,
    useful: &[bool],
    result: &crate::graph::Act,
    forward: &syn::Block,
    hoisted: &[proc_macro2::Ident],
    recursive: bool,
) -> TokenStream {
    let ret_tangent = sig.ret_tangent();
    let slots = sig.slot_tuple();
    let sinks: Vec<Sink> = (0..sig.params.len()).map(Sink::Return).collect();
    let seeds = [(result.clone(), quote!(__seed))];
    let Reverse { code, returns } =
        reverse::reverse(graph, useful, &seeds, &sinks, sig.params.len());
    let outputs = sig.params.iter().zip(returns).map(|(p, r)| {
        if p.wrt {
            r
        } else {
            quote!(::adjoint::__private::NoTangent)
        }
    });
    let forward_stmts = &forward.stmts;
    let pullback = quote! {
        move |__seed: #ret_tangent| -> #slots {
            #code
            (#(#outputs,)*)
        }
    };
    let pullback = if recursive {
        quote!(::std::boxed::Box::new(#pullback))
    } else {
        pullback
    };
    quote! {{
        #[allow(unused_imports)]
        use ::adjoint::__private::FloatMethods as _;
        #(let #hoisted;)*
        let __value = { #(#forward_stmts)* };
        (__value, #pullback)
    }}
}

/// Whether the body calls the function itself (`f(..)`, `Self::f(..)`, `self.f(..)`): its
/// pullback then contains itself, so the uniform companion returns it boxed.
fn calls_itself(name: &syn::Ident, tokens: TokenStream) -> bool {
    let tts: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
    tts.iter().enumerate().any(|(i, tt)| match tt {
        proc_macro2::TokenTree::Ident(id) if id == name => matches!(
            tts.get(i + 1),
            Some(proc_macro2::TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis
        ) || matches!(tts.get(i + 1), Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == ':'),
        proc_macro2::TokenTree::Group(g) => calls_itself(name, g.stream()),
        _ => false,
    })
}

fn companions(
    item: &FnItem,
    sig: &FnSignature,
    args: &DiffArgs,
    body: Option<TokenStream>,
) -> TokenStream {
    let method_form = sig.has_receiver
        || args.associated
        || item.body.is_none()
        || mentions_self(item.sig.to_token_stream());
    let name = &item.sig.ident;
    let vjp = names::public(name);
    let generics = &item.sig.generics;
    let where_clause = where_with_self(item, sig);
    let decls: Vec<&TokenStream> = sig.params.iter().map(|p| &p.decl).collect();
    let ret = &sig.ret;
    let ret_tangent = sig.ret_tangent();
    let slots = sig.slot_tuple();
    let nice = sig.nice_tangents();
    let cfgs: Vec<_> = item
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .collect();
    let vis = &item.vis;
    let n = sig.params.len();
    // The pullback captures every lifetime in scope (Rust 2024's rule): a precise `use<..>`
    // would have to name the generic parameters of the enclosing impl, which the macro cannot
    // see. So a method's pullback borrows its receiver; see the crate docs.
    // Both companions' signatures are spanned at the function's name, so that an error about a
    // type in them (a parameter type that is not `Differentiable`) is reported once, not per
    // companion.
    let span = name.span();
    let pullback_type = if item
        .body
        .as_ref()
        .is_some_and(|b| calls_itself(name, b.to_token_stream()))
    {
        quote_spanned!(span=> ::std::boxed::Box<dyn FnOnce(#ret_tangent) -> #slots>)
    } else {
        quote_spanned!(span=> impl FnOnce(#ret_tangent) -> #slots)
    };
    let full_sig = quote_spanned! {span=>
        #generics (#(#decls,)* __needs: [bool; #n]) -> (#ret, #pullback_type) #where_clause
    };
    let (full_path, full_item) = if method_form {
        let full = names::full_method(name);
        let body = body.unwrap_or_else(|| quote!(;));
        let item = quote! {
            #(#cfgs)*
            #[doc(hidden)]
            #[allow(unused, clippy::all, clippy::pedantic)]
            #vis fn #full #full_sig #body
        };
        (quote!(Self::#full), item)
    } else {
        let inner = names::full_in_module();
        let body = body.expect("free functions have a body");
        let item = quote! {
            #(#cfgs)*
            #[doc(hidden)]
            #[allow(non_camel_case_types, dead_code)]
            #vis struct #vjp {}

            #(#cfgs)*
            impl #vjp {
                #[allow(unused, clippy::all, clippy::pedantic)]
                #vis fn #inner #full_sig #body
            }
        };
        (quote!(#vjp::#inner), item)
    };
    let turbofish = &sig.turbofish;
    let original = if method_form {
        quote!(Self::#name)
    } else {
        quote!(#name)
    };
    let pass = sig.params.iter().map(|p| &p.pass);
    let flags = sig.params.iter().map(|p| p.wrt);
    let slot_names: Vec<TokenStream> = sig
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if p.wrt {
                format_ident!("__g{}", i).into_token_stream()
            } else {
                quote!(_)
            }
        })
        .collect();
    let wrt_names: Vec<&TokenStream> = slot_names.iter().filter(|t| t.to_string() != "_").collect();
    let nice_value = match wrt_names.as_slice() {
        [single] => quote!(#single),
        many => quote!((#(#many),*)),
    };
    let doc = format!(
        " The value of [`{name}`] and its pullback: the closure maps the tangent of the result to the tangents of the differentiated parameters. Generated by `#[differentiable]`."
    );
    quote_spanned! {span=>
        #(#cfgs)*
        #[doc = #doc]
        #[allow(unused, clippy::all, clippy::pedantic)]
        #vis fn #vjp #generics (#(#decls),*) -> (#ret, impl FnOnce(#ret_tangent) -> #nice) #where_clause {
            let _ = #original #turbofish; // the original is used through its companion
            let (__value, __pullback) = #full_path #turbofish (#(#pass,)* [#(#flags),*]);
            (__value, move |__seed: #ret_tangent| {
                let (#(#slot_names,)*) = __pullback(__seed);
                #nice_value
            })
        }
        #full_item
    }
}

/// The where clause, plus `T: Differentiable` for the result and each differentiated
/// parameter type, spanned at the type. When a type is not `Differentiable`, rustc reports
/// the false bound once, at the type, and checks the rest of the signature assuming it.
fn where_with_self(item: &FnItem, sig: &FnSignature) -> TokenStream {
    let mut clause = item
        .sig
        .generics
        .where_clause
        .clone()
        .unwrap_or_else(|| parse_quote!(where));
    let ret = &sig.ret;
    clause
        .predicates
        .push(parse_quote_spanned!(ret.span()=> #ret: ::adjoint::Differentiable));
    for p in sig.params.iter().filter(|p| p.wrt) {
        let ty = &p.value_ty;
        let span = if p.name == "self" { p.span } else { ty.span() };
        clause
            .predicates
            .push(parse_quote_spanned!(span=> #ty: ::adjoint::Differentiable));
    }
    clause.into_token_stream()
}

fn mentions_self(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|tt| match tt {
        proc_macro2::TokenTree::Ident(id) => id == "Self",
        proc_macro2::TokenTree::Group(g) => mentions_self(g.stream()),
        _ => false,
    })
}

/// Prints the companions of the functions named in `ADJOINT_EXPAND` (comma-separated, or `*`)
/// to stderr at compile time: a debugging aid for the macro itself.
fn debug_print(name: &syn::Ident, companions: &TokenStream) {
    let Ok(names) = std::env::var("ADJOINT_EXPAND") else {
        return;
    };
    if names == "*" || names.split(',').any(|n| name == n.trim()) {
        let text = match syn::parse2::<syn::File>(companions.clone()) {
            Ok(file) => prettyplease::unparse(&file),
            Err(_) => companions.to_string(),
        };
        eprintln!("// ---- companions of `{name}` ----\n{text}");
    }
}
