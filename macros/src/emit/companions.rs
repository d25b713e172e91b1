//! The companions of a function: the public `f_vjp(args) -> (R, impl FnOnce(R::Tangent) ->
//! tangents)`, whose pullback returns the tangent of each `wrt` parameter (the tangent itself
//! for one), and the uniform companion (`f_vjp::__full` or `f_vjp_full`, see
//! [`crate::emit::names`]) that generated code calls: one extra argument `needs: [bool; N]` says
//! which parameters' tangents the caller needs, and its pullback returns one slot per parameter.

use crate::emit::names;
use crate::emit::reverse::{self, Reverse, Sink};
use crate::ir::{Compiled, Lowered};
use crate::parse::attr::DiffArgs;
use crate::parse::item::FnItem;
use crate::parse::signature::FnSignature;
use crate::patterns::scan::calls_itself;
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{parse_quote, parse_quote_spanned};

/// The body of the uniform companion: the rewritten forward pass, then the pullback closure
/// (`boxed`: in a `Box`). With inout parameters the closure also takes `&mut` tangents: on
/// entry those of their final values (seeds), on exit those of their initial values.
pub fn full_body(sig: &FnSignature, compiled: &Compiled<Lowered>, boxed: bool) -> TokenStream {
    let Lowered {
        body: forward,
        result,
        hoisted,
        finals,
        ..
    } = &compiled.pass;
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
    let Reverse { code, returns } = reverse::pullback(compiled, &seeds, &sinks, sig.params.len());
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
    let pullback = if boxed {
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
    // The statements are printed once, for the scan of the fallbacks and for the body.
    let forward_stmts = quote!(#(#forward_stmts)*);
    let fallbacks = reverse_fallbacks(&forward_stmts);
    quote! {{
        #[allow(unused_imports)]
        use ::adjoint::__private::FloatMethods as _;
        #fallbacks
        #(let #hoisted;)*
        let __value = { #forward_stmts };
        (#value, #pullback)
    }}
}

pub fn companions(
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
pub fn cfgs(item: &FnItem) -> Vec<&syn::Attribute> {
    item.attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .collect()
}

/// The `#[inline]` attributes of the function (`#[inline]`, `#[inline(always)]`,
/// `#[inline(never)]`), repeated on the companions that have none of their own: a small
/// function marked for inlining then inlines with its pullback, whose `needs` flags become
/// constants at the call and whose residuals can stay in registers.
pub fn inlines(item: &FnItem) -> Vec<&syn::Attribute> {
    item.attrs
        .iter()
        .filter(|a| a.path().is_ident("inline"))
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
    let generics = &companion_generics(item, sig);
    let where_clause = where_with_self(item, sig, args);
    let full_decls: Vec<&TokenStream> = sig.params.iter().map(|p| &p.full_decl).collect();
    let full_value = sig.full_value_type();
    let pullback_inputs = sig.pullback_inputs();
    let slots = sig.slot_tuple();
    let cfgs = cfgs(item);
    let inlines = inlines(item);
    let vis = &item.vis;
    let count = crate::emit::index(sig.params.len());
    // Both companions' signatures are spanned at the function's name, so that an error about a
    // type in them (a parameter type that is not `Differentiable`) is reported once, not per
    // companion.
    let span = name.span();
    // A pullback captures every lifetime in scope (Rust 2024), so it keeps reference arguments
    // borrowed. A precise `use<..>` would free free functions of that, but not methods (it
    // would have to name the enclosing impl's generic parameters, which the macro cannot see),
    // and a free function calling a method must capture what the method captures.
    let bound = bound(item, sig, args);
    let lone = lone_method(item, sig, args);
    let pullback_type = if lone {
        let lifetime = lone_lifetime();
        // A method marked alone: its impl's parameters are unknown, so no precise capture can
        // be written; a box bounded by a lifetime of its own does not borrow `self`.
        quote_spanned!(span=> ::std::boxed::Box<dyn FnOnce(#pullback_inputs) -> #slots + #lifetime>)
    } else if item
        .body
        .as_ref()
        .is_some_and(|b| calls_itself(name, b.to_token_stream()))
    {
        quote_spanned!(span=> ::std::boxed::Box<dyn FnOnce(#pullback_inputs) -> #slots>)
    } else {
        quote_spanned!(span=> impl #bound FnOnce(#pullback_inputs) -> #slots)
    };
    let (generics, where_clause) = if lone {
        lone_generics(item, &where_clause)
    } else {
        (generics.to_token_stream(), where_clause.to_token_stream())
    };
    let full_sig = quote_spanned! {span=>
        #generics (#(#full_decls,)* __needs: [bool; #count]) -> (#full_value, #pullback_type) #where_clause
    };
    if is_method_form(item, sig, args) {
        let full = method_companion(name, sig);
        let body = body.unwrap_or_else(|| quote!(;));
        let item = quote! {
            #(#cfgs)*
            #[doc(hidden)]
            #[allow(unused, refining_impl_trait, clippy::all, clippy::pedantic)]
            #(#inlines)*
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
                #(#inlines)*
                #vis fn #inner #full_sig #body
            }
        };
        (quote!(#vjp::#inner), item)
    }
}

/// The fallbacks of the method companions a reverse body calls (`missing.rs`).
fn reverse_fallbacks(body: &TokenStream) -> TokenStream {
    crate::missing::fallbacks(
        body,
        &[
            ("_vjp_full", crate::missing::Mode::Reverse),
            ("_vjp_mut", crate::missing::Mode::Mutating),
        ],
    )
}

/// The uniform companion of a method: `m_vjp_mut` for a `&mut self` method, else
/// `m_vjp_full`.
fn method_companion(name: &syn::Ident, sig: &FnSignature) -> syn::Ident {
    match sig.params.iter().any(|p| p.inout && p.name == "self") {
        true => names::mut_method(name),
        false => names::full_method(name),
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
    let generics = &companion_generics(item, sig);
    let where_clause = where_with_self(item, sig, args);
    let decls: Vec<&TokenStream> = sig.params.iter().map(|p| &p.decl).collect();
    let ret = &sig.ret;
    let pullback_inputs = sig.pullback_inputs();
    let nice = sig.nice_tangents();
    let cfgs = cfgs(item);
    let inlines = inlines(item);
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
        #(#inlines)*
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
pub fn is_method_form(item: &FnItem, sig: &FnSignature, args: &DiffArgs) -> bool {
    sig.has_receiver
        || args.associated
        || args.enclosing.is_some()
        || item.body.is_none()
        || mentions_self(item.sig.to_token_stream())
}

/// `'__adjoint_pullback`, the lifetime that bounds the boxed pullback of a method marked alone.
fn lone_lifetime() -> syn::Lifetime {
    syn::Lifetime::new("'__adjoint_pullback", proc_macro2::Span::call_site())
}

/// Whether the function is a method marked `#[differentiable]` alone, not through its `impl`
/// or `trait`: its uniform companion's pullback is boxed (`Box<dyn FnOnce(..) + 'p>`, with
/// `Self` and the method's type parameters outliving `'p`), since a precise capture would have
/// to name the impl's parameters, which the macro cannot see, and without one the pullback
/// would borrow the receiver (Rust 2024 captures every lifetime in scope), so that a call on
/// a local or a field of one could not return it.
/// A bodiless declaration in a trait is one too, so that the impls' companions match it.
pub fn lone_method(item: &FnItem, sig: &FnSignature, args: &DiffArgs) -> bool {
    args.enclosing.is_none() && is_method_form(item, sig, args)
}

/// The generics of a lone method's uniform companion, with the pullback's lifetime, and its
/// where clause with `Self` and each type parameter outliving it.
fn lone_generics(item: &FnItem, where_clause: &TokenStream) -> (TokenStream, TokenStream) {
    let lifetime = lone_lifetime();
    let mut generics = item.sig.generics.clone();
    generics.params.insert(
        0,
        syn::GenericParam::Lifetime(syn::LifetimeParam::new(lifetime.clone())),
    );
    let mut clause: syn::WhereClause =
        syn::parse2(where_clause.clone()).unwrap_or_else(|_| parse_quote!(where));
    clause.predicates.push(parse_quote!(Self: #lifetime));
    for t in item.sig.generics.type_params() {
        let t = &t.ident;
        clause.predicates.push(parse_quote!(#t: #lifetime));
    }
    (generics.to_token_stream(), clause.to_token_stream())
}

/// The precise capture of the pullback types, `use<..> +`, or nothing (every lifetime in
/// scope captured).
pub fn bound(item: &FnItem, sig: &FnSignature, args: &DiffArgs) -> TokenStream {
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

/// The function's generic parameters, after the capture lifetime `'__p` where the companions
/// take one ([`FnSignature::capture_lifetime`]).
fn companion_generics(item: &FnItem, sig: &FnSignature) -> syn::Generics {
    let mut generics = item.sig.generics.clone();
    if sig.capture_lifetime {
        generics.params.insert(0, parse_quote!('__p));
    }
    generics
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
    // The function's type and const parameters, and those of an annotated enclosing block.
    let enclosing = args.enclosing.iter().flatten().map(|t| t.to_string());
    let generics = &item.sig.generics;
    let generic_names: Vec<String> = generics
        .type_params()
        .map(|t| t.ident.to_string())
        .chain(generics.const_params().map(|c| c.ident.to_string()))
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
    // A method with a body marked alone may be a trait's default method, which needs the bound,
    // or in an `impl`, where on a generic `Self` the bound would shadow the impl of
    // `Differentiable`. It is taken to be in an `impl` when it is `pub` (trait items have no
    // visibility) or names a type parameter it does not declare (`x: T` in `impl<T> S<T>`).
    let in_impl = in_impl
        || (item.body.is_some()
            && lone_method(item, sig, args)
            && (!matches!(item.vis, syn::Visibility::Inherited)
                || names_outer_parameter(&item.sig)));
    if sig.capture_lifetime {
        for t in generics.type_params() {
            let t = &t.ident;
            clause.predicates.push(parse_quote!(#t: '__p));
        }
    }
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

/// Whether the signature names a type parameter (by convention an uppercase letter, then
/// digits: `T`, `B`, `T2`) that it does not declare: one of the enclosing block's.
fn names_outer_parameter(sig: &syn::Signature) -> bool {
    let declared: Vec<String> = sig
        .generics
        .type_params()
        .map(|t| t.ident.to_string())
        .collect();
    let parameter_like = |name: &str| {
        let mut chars = name.chars();
        chars.next().is_some_and(|c| c.is_ascii_uppercase()) && chars.all(|c| c.is_ascii_digit())
    };
    let mut inputs = sig.inputs.to_token_stream();
    inputs.extend(sig.output.to_token_stream());
    crate::patterns::scan::idents(inputs)
        .iter()
        .map(ToString::to_string)
        .any(|n| parameter_like(&n) && !declared.contains(&n))
}

fn mentions_self(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|tt| match tt {
        proc_macro2::TokenTree::Ident(id) => id == "Self",
        proc_macro2::TokenTree::Group(g) => mentions_self(g.stream()),
        _ => false,
    })
}
