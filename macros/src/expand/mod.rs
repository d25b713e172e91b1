//! Emission: the original function, unchanged, plus its companions.
//!
//! * `f_vjp(args) -> (R, impl FnOnce(R::Tangent) -> tangents)`: the public companion, whose
//!   pullback returns the tangent of each `wrt` parameter (the tangent itself for one);
//! * the uniform companion (`f_vjp::__full` or `f_vjp_full`, see [`crate::emit::names`]) that
//!   generated code calls: one extra argument `needs: [bool; N]` says which parameters' tangents
//!   the caller needs, and its pullback returns one slot per parameter.

mod blocks;

use crate::diag::Errors;
use crate::emit::names;
use crate::emit::reverse::{self, Reverse, Sink};
use crate::ir::activity;
use crate::lower::{self, Lowered};
use crate::parse::attr::DiffArgs;
use crate::parse::item::FnItem;
use crate::parse::signature::{self, FnSignature};
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{parse_quote, parse_quote_spanned};

/// Expands `#[differentiable(args)] input`: a function or method, or an `impl`/`trait` block
/// whose `#[differentiable]` methods then get pullbacks that borrow nothing.
pub fn differentiable(args: TokenStream, input: TokenStream) -> TokenStream {
    if let Ok(block) = syn::parse2::<syn::ItemImpl>(input.clone()) {
        return crate::expand::blocks::impl_block(args, block);
    }
    if let Ok(block) = syn::parse2::<syn::ItemTrait>(input.clone()) {
        return crate::expand::blocks::trait_block(args, block);
    }
    let mut errors = Errors::default();
    let args = syn::parse2::<DiffArgs>(args).unwrap_or_else(|e| {
        errors.add(e);
        DiffArgs::default()
    });
    function(args, input, errors)
}

/// Expands `#[differentiable]` on a function or method.
pub fn function(args: DiffArgs, input: TokenStream, mut errors: Errors) -> TokenStream {
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
        (Some(sig), Some(body), true) => {
            let refs_capturable = bound(&item, sig, &args).is_empty();
            Some(lower_body(
                sig,
                &item.sig.output,
                &item.sig.ident,
                body,
                refs_capturable,
                &mut errors,
            ))
        }
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
    sig_output: &syn::ReturnType,
    name: &syn::Ident,
    body: &syn::Block,
    refs_capturable: bool,
    errors: &mut Errors,
) -> Option<TokenStream> {
    let recursive = calls_itself(name, body.to_token_stream());
    let body = &crate::normalize::normalize(body, sig_output);
    let first = lower::lower(sig, body, None, refs_capturable);
    let mut roots = vec![first.result.clone()];
    roots.extend(first.finals.iter().cloned());
    let useful = activity::useful_from(&first.graph, &roots);
    let lowered = lower::lower(sig, body, Some(&useful), refs_capturable);
    if !lowered.errors.is_empty() {
        *errors = lowered.errors;
        return None;
    }
    Some(full_body(sig, &lowered, &useful, recursive))
}

/// The body of the uniform companion: the rewritten forward pass, then the pullback closure.
/// With inout parameters the closure also takes `&mut` tangents: on entry those of their final
/// values (seeds), on exit those of their initial values.
fn full_body(
    sig: &FnSignature,
    lowered: &Lowered,
    useful: &[bool],
    recursive: bool,
) -> TokenStream {
    let Lowered {
        graph,
        body: forward,
        result,
        hoisted,
        finals,
        ..
    } = lowered;
    let ret_tangent = sig.ret_tangent();
    let slots = sig.slot_tuple();
    let sinks: Vec<Sink> = (0..sig.params.len()).map(Sink::Return).collect();
    let io: Vec<syn::Ident> = (0..finals.len())
        .map(|k| quote::format_ident!("__io{}", k))
        .collect();
    let mut seeds = vec![(result.clone(), quote!(__seed))];
    seeds.extend(
        finals
            .iter()
            .zip(&io)
            .map(|(f, io)| (f.clone(), quote!(::adjoint::__private::take(#io)))),
    );
    let Reverse { code, returns } =
        reverse::reverse(graph, useful, &seeds, &sinks, sig.params.len());
    let mut write_back = Vec::new();
    let mut ios = io.iter();
    let outputs: Vec<TokenStream> = sig
        .params
        .iter()
        .zip(returns)
        .map(|(p, r)| match (p.wrt, p.inout) {
            (true, false) => r,
            (true, true) => {
                let io = ios.next().expect("one accumulator per inout parameter");
                write_back.push(quote!(*#io = #r;));
                quote!(::adjoint::__private::NoTangent)
            }
            _ => quote!(::adjoint::__private::NoTangent),
        })
        .collect();
    let forward_stmts = &forward.stmts;
    let inputs = if io.is_empty() {
        quote!(__seed: #ret_tangent)
    } else {
        let types = sig.params.iter().filter(|p| p.inout).map(|p| {
            let t = p.tangent_type();
            quote!(&mut #t)
        });
        quote!(__seed: #ret_tangent, (#(#io,)*): (#(#types,)*))
    };
    let pullback = quote! {
        move |#inputs| -> #slots {
            #code
            #(#write_back)*
            (#(#outputs,)*)
        }
    };
    let pullback = if recursive {
        quote!(::std::boxed::Box::new(#pullback))
    } else {
        pullback
    };
    let owned = sig.inout_owned();
    let value = if owned.is_empty() {
        quote!(__value)
    } else {
        quote!((__value, (#(#owned,)*)))
    };
    quote! {{
        #[allow(unused_imports)]
        use ::adjoint::__private::FloatMethods as _;
        #(let #hoisted;)*
        let __value = { #(#forward_stmts)* };
        (#value, #pullback)
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
        ) || matches!(
            (tts.get(i + 1), tts.get(i + 2)),
            // `f::<T>(..)`; a single `:` (a field initialiser, a type ascription) is not a call
            (Some(proc_macro2::TokenTree::Punct(a)), Some(proc_macro2::TokenTree::Punct(b)))
                if a.as_char() == ':' && a.spacing() == proc_macro2::Spacing::Joint && b.as_char() == ':'
        ),
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
    let (full_path, full_item) = full_companion(item, sig, args, body);
    let public = public_companion(item, sig, args, &full_path);
    quote!(#public #full_item)
}

/// The `#[cfg]` attributes of the function, repeated on each companion.
fn cfgs(item: &FnItem) -> Vec<&syn::Attribute> {
    item.attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .collect()
}

/// The uniform companion `__full(params.., needs) -> (value, pullback)` that calls go through:
/// an associated function `__name_vjp_full` of a method, or `name_vjp::__full` on a unit
/// struct named after the public companion for a free function. Returns its path and item.
fn full_companion(
    item: &FnItem,
    sig: &FnSignature,
    args: &DiffArgs,
    body: Option<TokenStream>,
) -> (TokenStream, TokenStream) {
    let name = &item.sig.ident;
    let vjp = names::public(name);
    let generics = &item.sig.generics;
    let where_clause = where_with_self(item, sig, args);
    let full_decls: Vec<&TokenStream> = sig.params.iter().map(|p| &p.full_decl).collect();
    let full_value = sig.full_value_type();
    let pullback_inputs = sig.pullback_inputs();
    let slots = sig.slot_tuple();
    let cfgs = cfgs(item);
    let vis = &item.vis;
    let n = sig.params.len();
    // Both companions' signatures are spanned at the function's name, so that an error about a
    // type in them (a parameter type that is not `Differentiable`) is reported once, not per
    // companion.
    let span = name.span();
    // A pullback captures every lifetime in scope (Rust 2024), so it keeps reference arguments
    // borrowed. A precise `use<..>` would free free functions of that, but not methods (it
    // would have to name the enclosing impl's generic parameters, which the macro cannot see),
    // and a free function calling a method must capture what the method captures.
    let bound = bound(item, sig, args);
    let pullback_type = if item
        .body
        .as_ref()
        .is_some_and(|b| calls_itself(name, b.to_token_stream()))
    {
        quote_spanned!(span=> ::std::boxed::Box<dyn FnOnce(#pullback_inputs) -> #slots>)
    } else {
        quote_spanned!(span=> impl #bound FnOnce(#pullback_inputs) -> #slots)
    };
    let full_sig = quote_spanned! {span=>
        #generics (#(#full_decls,)* __needs: [bool; #n]) -> (#full_value, #pullback_type) #where_clause
    };
    if is_method_form(item, sig, args) {
        let full = names::full_method(name);
        let body = body.unwrap_or_else(|| quote!(;));
        let item = quote! {
            #(#cfgs)*
            #[doc(hidden)]
            #[allow(unused, refining_impl_trait, clippy::all, clippy::pedantic)]
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
                #[allow(unused, refining_impl_trait, clippy::all, clippy::pedantic)]
                #vis fn #inner #full_sig #body
            }
        };
        (quote!(#vjp::#inner), item)
    }
}

/// The public companion `name_vjp(params..) -> (value, pullback)`: calls the uniform one with
/// the `wrt` flags, writes inout parameters back, and returns a pullback whose result holds
/// only the differentiated parameters' tangents (one tangent unwrapped, several as a tuple).
fn public_companion(
    item: &FnItem,
    sig: &FnSignature,
    args: &DiffArgs,
    full_path: &TokenStream,
) -> TokenStream {
    let name = &item.sig.ident;
    let vjp = names::public(name);
    let generics = &item.sig.generics;
    let where_clause = where_with_self(item, sig, args);
    let decls: Vec<&TokenStream> = sig.params.iter().map(|p| &p.decl).collect();
    let ret = &sig.ret;
    let pullback_inputs = sig.pullback_inputs();
    let nice = sig.nice_tangents();
    let cfgs = cfgs(item);
    let vis = &item.vis;
    let span = name.span();
    let bound = bound(item, sig, args);
    let turbofish = &sig.turbofish;
    let original = if is_method_form(item, sig, args) {
        quote!(Self::#name)
    } else {
        quote!(#name)
    };
    let pass = sig.params.iter().map(|p| &p.full_pass);
    let inout_pass: Vec<&TokenStream> = sig
        .params
        .iter()
        .filter(|p| p.inout)
        .map(|p| &p.pass)
        .collect();
    let new_values: Vec<syn::Ident> = (0..inout_pass.len())
        .map(|k| format_ident!("__new{}", k))
        .collect();
    let receive = if inout_pass.is_empty() {
        quote!(__value)
    } else {
        quote!((__value, (#(#new_values,)*)))
    };
    let flags = sig.params.iter().map(|p| p.wrt);
    let forward = forward_pullback(sig, span);
    let doc = format!(
        " The value of `{name}` and its pullback: the closure maps the tangent of the result to the tangents of the differentiated parameters. Generated by `#[differentiable]`."
    );
    quote_spanned! {span=>
        #(#cfgs)*
        #[doc = #doc]
        #[allow(unused, refining_impl_trait, clippy::all, clippy::pedantic)]
        #vis fn #vjp #generics (#(#decls),*) -> (#ret, impl #bound FnOnce(#pullback_inputs) -> #nice) #where_clause {
            let _ = #original #turbofish; // the original is used through its companion
            let (#receive, __pullback) = #full_path #turbofish (#(#pass,)* [#(#flags),*]);
            #(*#inout_pass = #new_values;)*
            (__value, #forward)
        }
    }
}

/// The public pullback: calls the uniform one and keeps the differentiated parameters' slots.
fn forward_pullback(sig: &FnSignature, span: proc_macro2::Span) -> TokenStream {
    let ret_tangent = sig.ret_tangent();
    let slot_names: Vec<TokenStream> = sig
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if p.wrt && !p.inout {
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
    let (closure_inputs, closure_args) = if sig.has_inout() {
        let types = sig.params.iter().filter(|p| p.inout).map(|p| {
            let t = p.tangent_type();
            quote!(&mut #t)
        });
        (
            quote_spanned!(span=> __seed: #ret_tangent, __io: (#(#types,)*)),
            quote_spanned!(span=> __seed, __io),
        )
    } else {
        (
            quote_spanned!(span=> __seed: #ret_tangent),
            quote_spanned!(span=> __seed),
        )
    };
    quote_spanned!(span=> move |#closure_inputs| {
        let (#(#slot_names,)*) = __pullback(#closure_args);
        #nice_value
    })
}

/// Whether the companions are associated functions (an impl or trait), not free functions.
fn is_method_form(item: &FnItem, sig: &FnSignature, args: &DiffArgs) -> bool {
    sig.has_receiver
        || args.associated
        || args.enclosing.is_some()
        || item.body.is_none()
        || mentions_self(item.sig.to_token_stream())
}

/// The precise capture of the pullback types, `use<..> +`, or nothing (every lifetime in
/// scope captured).
fn bound(item: &FnItem, sig: &FnSignature, args: &DiffArgs) -> TokenStream {
    match &args.enclosing {
        Some(outer) => {
            let own = sig.generic_names.iter();
            quote!(use<#(#outer,)* #(#own),*> +)
        }
        None if sig.lifetime_free && !is_method_form(item, sig, args) => {
            let captures = &sig.captures;
            quote!(#captures +)
        }
        None => quote!(),
    }
}

/// The where clause, plus `T: Differentiable` for the result and each differentiated
/// parameter type, spanned at the type. When a type is not `Differentiable`, rustc reports
/// the false bound once, at the type, and checks the rest of the signature assuming it.
fn where_with_self(item: &FnItem, sig: &FnSignature, args: &DiffArgs) -> TokenStream {
    let mut clause = item
        .sig
        .generics
        .where_clause
        .clone()
        .unwrap_or_else(|| parse_quote!(where));
    let ret = &sig.ret;
    // The function's type parameters, and those of an annotated enclosing block.
    let enclosing = args.enclosing.iter().flatten().map(|t| t.to_string());
    let generic_names: Vec<String> = item
        .sig
        .generics
        .type_params()
        .map(|t| t.ident.to_string())
        .chain(enclosing)
        .collect();
    // A bound on a type that involves a generic parameter would shadow the impls rustc uses to
    // normalise its tangent (`<[T; 2] as Differentiable>::Tangent`); the user's bounds cover it.
    let mentions_generic = |ty: &syn::Type| {
        crate::patterns::scan::idents(ty.to_token_stream())
            .iter()
            .any(|i| generic_names.contains(&i.to_string()) || i == "Self")
    };
    // In an `impl` (known when the block is annotated) `Self` is a concrete type: a bound on it
    // would only shadow its impl. In a trait, `Self: Differentiable` is what makes the
    // companions' types exist.
    let in_impl = args
        .enclosing
        .as_ref()
        .is_some_and(|e| e.first().is_none_or(|s| s.to_string() != "Self"));
    let receiver = |p: &&crate::parse::signature::Param| p.name == "self" && !in_impl;
    for p in sig
        .params
        .iter()
        .filter(|p| p.wrt && (receiver(p) || !mentions_generic(&p.value_ty)))
    {
        let ty = &p.value_ty;
        let span = if p.name == "self" { p.span } else { ty.span() };
        clause
            .predicates
            .push(parse_quote_spanned!(span=> #ty: ::adjoint::Differentiable));
    }
    if !mentions_generic(ret) {
        clause
            .predicates
            .push(parse_quote_spanned!(ret.span()=> #ret: ::adjoint::Differentiable));
    }
    let mut seen = Vec::new();
    clause.predicates = clause
        .predicates
        .into_iter()
        .filter(|p| {
            let text = p.to_token_stream().to_string();
            let new = !seen.contains(&text);
            seen.push(text);
            new
        })
        .collect();
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
