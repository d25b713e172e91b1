//! `#[derivative_of(path::f)]`: registers a hand-written VJP of `f`.
//!
//! A rule in an `impl` (`#[derivative_of(T::m)]` on a method, an associated function, or the
//! rule of a trait method written in the type's inherent `impl`) gets its companions as
//! associated functions beside it: `m_vjp_full(&self, args.., needs)` is what generated code
//! calls for `t.m(args)`, and its pullback returns the tangent of `self` first.
//!
//! The rule keeps its name; the macro adds what generated code calls for `f`: the public name
//! `f_vjp` (a forwarding function when the rule is named differently) and the uniform companion
//! `f_vjp::__full` wrapping the rule (see [`crate::emit::names`]). A second rule for the same `f` in the same module defines
//! `f_vjp` twice, which rustc rejects. A check function coerces `f` to a function pointer with
//! the rule's parameter types and value type, so a mismatched signature fails to compile.

use crate::diag::Errors;
use crate::emit::names;
use crate::parse::attr::DiffArgs;
use crate::parse::item::FnItem;
use crate::parse::signature::{self, FnSignature};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, Ident, Path, ReturnType, Type};

/// Expands `#[derivative_of(path)] fn rule(..) -> (R, impl FnOnce(..) -> ..) { .. }`.
pub fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let (target, jvp) = match syn::parse2::<RuleArgs>(args) {
        Ok(a) => (Some(a.target), a.jvp),
        Err(e) => {
            errors.add(e);
            (None, None)
        }
    };
    let mut item: FnItem = match syn::parse2::<FnItem>(input.clone()) {
        Ok(item) if item.body.is_some() => item,
        _ => {
            let e = syn::Error::new(
                proc_macro2::Span::call_site(),
                "#[derivative_of] applies to a function or method with a body",
            );
            let e = e.to_compile_error();
            return quote!(#input #e);
        }
    };
    let excluded = signature::strip_no_derivative(&mut item.sig);
    let sig = signature::analyse(&item.sig, &excluded, &DiffArgs::default(), &mut errors);
    let value_ty = sig
        .as_ref()
        .and_then(|_| value_type(&item.sig.output, &mut errors));
    if let (Some(sig), Some(_)) = (&sig, &value_ty) {
        check_pullback(&item, sig, &mut errors);
    }
    let (Some(target), Some(sig), Some(value_ty), true) =
        (target, sig, value_ty, errors.is_empty())
    else {
        let errors = errors.into_compile_errors();
        return quote!(#item #errors);
    };
    let f = &target.segments.last().expect("a path has a segment").ident;
    // A rule in an `impl` (a method, or the rule of an associated function `T::f`): its
    // companions are associated functions beside it, as `#[differentiable]` writes them for
    // methods.
    let method = sig.has_receiver || names::is_associated_path(&target);
    let alias = alias(&item, &sig, f, method);
    let uniform = uniform(&item, &sig, f, &value_ty, method);
    let check = signature_check(&item, &target, f, &value_ty, method);
    let forward = jvp.map(|jvp| forward(&item, &sig, f, &value_ty, &jvp, method));
    quote! {
        #item
        #alias
        #uniform
        #check
        #forward
    }
}

/// The rule's pullback: it must borrow none of the rule's reference parameters (`&self`
/// included), and a method's returns the tangent of `self` first.
fn check_pullback(item: &FnItem, sig: &FnSignature, errors: &mut Errors) {
    let output = &item.sig.output;
    if sig.params.iter().any(|p| p.by_ref) && pullback_capture(output).is_none() {
        let message = if sig.has_receiver {
            "the pullback of a #[derivative_of] rule for a method taking `&self` must say that it does not borrow `self` (or any reference parameter), since differentiable callers keep it after the receiver is gone: write `impl use<> + FnOnce(..)` (with the type parameters of the method and of its `impl` in `use<..>`, if there are any) and capture copies"
        } else {
            "the pullback of a #[derivative_of] rule with reference parameters must say that it borrows none of them, since differentiable callers keep it after the arguments are gone: write `impl use<> + FnOnce(..)` (with the rule's type parameters in `use<..>`, if it has any) and capture copies"
        };
        errors.push(output.span(), message);
    }
    let wrt = sig.params.iter().filter(|p| p.wrt).count();
    let returned = pullback_output(output).map(|t| match t {
        Type::Tuple(t) => t.elems.len(),
        _ => 1,
    });
    if sig.has_receiver && wrt > 1 && returned.is_some_and(|n| n != wrt) {
        let span = pullback_output_span(output).unwrap_or(output.span());
        errors.push(
            span,
            format!("the pullback of a rule for a method returns the tangent of `self` first, then one per differentiated parameter: {wrt} tangents, `(<Self as Differentiable>::Tangent, ..)`"),
        );
    }
}

/// `#[derivative_of(f)]` or `#[derivative_of(f, jvp = rule)]`.
struct RuleArgs {
    target: Path,
    /// The forward rule: a function with `f_jvp`'s signature (the parameters, then one tangent
    /// per differentiated parameter), returning `(value, tangent)`.
    jvp: Option<Path>,
}

impl syn::parse::Parse for RuleArgs {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let target = input.parse()?;
        let mut jvp = None;
        if input.parse::<Option<syn::Token![,]>>()?.is_some() && !input.is_empty() {
            let key: Ident = input.parse()?;
            if key != "jvp" {
                return Err(syn::Error::new(
                    key.span(),
                    "expected `jvp = rule` (the forward rule)",
                ));
            }
            input.parse::<syn::Token![=]>()?;
            jvp = Some(input.parse()?);
            let _ = input.parse::<Option<syn::Token![,]>>()?;
        }
        Ok(RuleArgs { target, jvp })
    }
}

/// The forward companions of a rule with a `jvp`: the uniform `f_vjp::__jvp` (generated
/// callers pass `Option` tangents; a `None` becomes a zero of the argument's shape) and the
/// public `f_jvp`, when the forward rule has another name.
fn forward(
    item: &FnItem,
    sig: &FnSignature,
    f: &Ident,
    value_ty: &Type,
    jvp: &Path,
    method: bool,
) -> TokenStream {
    // In an `impl`, a forward rule named alone is the type's.
    let jvp: Path = match jvp.get_ident() {
        Some(name) if method => syn::parse_quote!(Self::#name),
        _ => jvp.clone(),
    };
    let jvp = &jvp;
    let vjp = names::public(f);
    let public = format_ident!("{}_jvp", f);
    let vis = &item.vis;
    let generics = &item.sig.generics;
    let where_clause = &item.sig.generics.where_clause;
    let decls: Vec<_> = sig.params.iter().map(|p| &p.decl).collect();
    let pass: Vec<_> = sig.params.iter().map(|p| &p.pass).collect();
    let turbofish = &sig.turbofish;
    let ret_tangent = ret_tangent(value_ty);
    let slots = sig.params.iter().map(crate::forward::slot_type);
    let (take, tangents, public_decls) = forward_takes(sig);
    let alias = (jvp.segments.last().map(|s| &s.ident) != Some(&public)).then(|| {
        let ds = sig.params.iter().filter(|p| p.wrt).map(|p| format_ident!("d{}", p.name));
        quote! {
            #[doc = concat!(" The registered forward rule of `", stringify!(#f), "`: see [`", stringify!(#jvp), "`].")]
            #[allow(clippy::all)]
            #vis fn #public #generics (#(#decls,)* #(#public_decls),*) -> (#value_ty, #ret_tangent) #where_clause {
                #jvp #turbofish (#(#pass,)* #(#ds),*)
            }
        }
    });
    let companion = |name: TokenStream| {
        quote! {
            #[doc(hidden)]
            #[inline]
            #[allow(unused, clippy::all, clippy::pedantic)]
            #vis fn #name #generics (#(#decls,)* __t: (#(#slots,)*)) -> (#value_ty, ::core::option::Option<#ret_tangent>) #where_clause {
                #(#take)*
                let (__value, __tangent) = #jvp #turbofish (#(#pass,)* #(#tangents),*);
                (__value, ::core::option::Option::Some(__tangent))
            }
        }
    };
    if method {
        let full = names::forward_method(f);
        let companion = companion(quote!(#full));
        return quote!(#alias #companion);
    }
    let companion = companion(quote!(__jvp));
    quote! {
        #alias
        impl #vjp {
            #companion
        }
    }
}

/// `f_vjp` forwarding to the rule, when the rule has another name.
fn alias(item: &FnItem, sig: &FnSignature, f: &Ident, method: bool) -> Option<TokenStream> {
    let vjp = names::public(f);
    let rule = &item.sig.ident;
    let vis = &item.vis;
    (rule != &vjp).then(|| {
        let mut public = item.sig.clone();
        public.ident = vjp.clone();
        let pass = sig.params.iter().map(|p| &p.pass);
        let turbofish = &sig.turbofish;
        let call = rule_path(rule, method);
        quote! {
            #[doc = concat!(" The registered derivative of `", stringify!(#f), "`: see [`", stringify!(#call), "`].")]
            #[allow(clippy::all)]
            #vis #public { #call #turbofish (#(#pass),*) }
        }
    })
}

/// How the companions call the rule: `rule`, or `Self::rule` in an `impl`.
fn rule_path(rule: &Ident, method: bool) -> TokenStream {
    if method {
        quote!(Self::#rule)
    } else {
        quote!(#rule)
    }
}

/// The uniform companion `f_vjp::__full(params.., needs)` that generated code calls: it runs
/// the rule, and its pullback returns the tangents in slots (`NoTangent` for parameters not
/// differentiated), skipping the rule's pullback when no tangent is needed.
fn uniform(
    item: &FnItem,
    sig: &FnSignature,
    f: &Ident,
    value_ty: &Type,
    method: bool,
) -> TokenStream {
    let vjp = names::public(f);
    let vis = &item.vis;
    let generics = &item.sig.generics;
    let where_clause = &item.sig.generics.where_clause;
    let decls = sig.params.iter().map(|p| &p.decl);
    let n = sig.params.len();
    let ret_tangent = ret_tangent(value_ty);
    let slots = sig.slot_tuple();
    let inner = names::full_in_module();
    // The rule's precise capture, repeated: its callers may then borrow nothing either.
    let capture = pullback_capture(&item.sig.output).map(|c| quote!(#c +));
    let body = uniform_body(item, sig, value_ty, method);
    let signature = quote!(#generics (#(#decls,)* __needs: [bool; #n]) -> (#value_ty, impl #capture FnOnce(#ret_tangent) -> #slots) #where_clause);
    if method {
        // Beside the rule in its `impl`: the method companion that calls of `f` go through.
        let full = names::full_method(f);
        return quote! {
            #[doc(hidden)]
            #[allow(unused, clippy::all, clippy::pedantic)]
            #vis fn #full #signature { #body }
        };
    }
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #vjp {}

        impl #vjp {
            #[allow(unused, clippy::all, clippy::pedantic)]
            #vis fn #inner #signature { #body }
        }
    }
}

/// `<R as Differentiable>::Tangent`, spanned at `R`.
fn ret_tangent(value_ty: &Type) -> TokenStream {
    quote_spanned!(value_ty.span()=> <#value_ty as ::adjoint::Differentiable>::Tangent)
}

/// The uniform companion's body: the rule's value, and a pullback that hands the rule's
/// tangents out in slots (zeros when none is needed, without running the rule's pullback).
fn uniform_body(item: &FnItem, sig: &FnSignature, value_ty: &Type, method: bool) -> TokenStream {
    let pass: Vec<_> = sig.params.iter().map(|p| &p.pass).collect();
    let (ret_tangent, slots) = (ret_tangent(value_ty), sig.slot_tuple());
    let wrt: Vec<_> = sig
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| p.wrt)
        .map(|(i, _)| format_ident!("__g{}", i))
        .collect();
    let received = match wrt.as_slice() {
        [single] => quote!(#single),
        many => quote!((#(#many),*)),
    };
    let slot = |p: &signature::Param, value: TokenStream| match p.wrt {
        true => value,
        false => quote!(::adjoint::__private::NoTangent),
    };
    let outputs = sig.params.iter().enumerate().map(|(i, p)| {
        let g = format_ident!("__g{}", i);
        slot(p, quote!(#g))
    });
    let zeros = (sig.params.iter()).map(|p| slot(p, quote!(::adjoint::__private::zero())));
    let turbofish = &sig.turbofish;
    // The tangents the rule's pullback must return, spanned at the pullback's declared output.
    let receive = {
        let nice = sig.nice_tangents();
        let span = pullback_output_span(&item.sig.output).unwrap_or(item.sig.span());
        quote_spanned!(span=> let __received: #nice = __pullback(__seed);)
    };
    let call = rule_path(&item.sig.ident, method);
    quote! {
        let (__value, __pullback) = #call #turbofish (#(#pass),*);
        (__value, move |__seed: #ret_tangent| -> #slots {
            // A hand-written pullback computes all its tangents: skip it when none is needed.
            if !__needs.iter().any(|n| *n) {
                return (#(#zeros,)*);
            }
            #receive
            let #received = __received;
            (#(#outputs,)*)
        })
    }
}

/// A function that coerces `f` to `fn(params..) -> R` with the rule's parameter and value
/// types, so that a rule whose signature does not match `f` fails to compile.
fn signature_check(
    item: &FnItem,
    target: &Path,
    f: &Ident,
    value_ty: &Type,
    method: bool,
) -> TokenStream {
    let generics = &item.sig.generics;
    let where_clause = &item.sig.generics.where_clause;
    let param_types = item.sig.inputs.iter().map(|a| match a {
        FnArg::Typed(t) => &*t.ty,
        FnArg::Receiver(r) => &*r.ty,
    });
    let check = format_ident!("__check_derivative_of_{}", f);
    let sig_span = item.sig.span();
    let coerce = quote_spanned!(sig_span=> let _: fn(#(#param_types),*) -> #value_ty = #target;);
    if method {
        // An associated function beside the rule, where `Self` names the type.
        return quote! {
            #[doc(hidden)]
            #[allow(dead_code, non_snake_case, clippy::all)]
            fn #check #generics () #where_clause {
                #coerce
            }
        };
    }
    quote! {
        const _: () = {
            #[allow(dead_code, non_snake_case, clippy::all)]
            fn #check #generics () #where_clause {
                #coerce
            }
        };
    }
}

/// `R` in `-> (R, impl FnOnce(..) -> ..)`.
fn value_type(output: &ReturnType, errors: &mut Errors) -> Option<Type> {
    if let ReturnType::Type(_, ty) = output
        && let Type::Tuple(t) = &**ty
        && t.elems.len() == 2
    {
        return Some(t.elems[0].clone());
    }
    errors.push(
        output.span(),
        "a #[derivative_of] rule returns `(value, pullback)`: `-> (R, impl FnOnce(R::Tangent) -> tangents)`",
    );
    None
}

/// The pullback's type `impl ..` in `-> (R, impl ..)`, if the rule returns one.
fn pullback_impl(output: &ReturnType) -> Option<&syn::TypeImplTrait> {
    let ReturnType::Type(_, ty) = output else {
        return None;
    };
    let Type::Tuple(t) = &**ty else { return None };
    match t.elems.iter().nth(1) {
        Some(Type::ImplTrait(imp)) => Some(imp),
        _ => None,
    }
}

/// The precise capture `use<..>` of the pullback in `-> (R, impl use<..> + FnOnce(..) -> T)`,
/// if it has one.
fn pullback_capture(output: &ReturnType) -> Option<TokenStream> {
    pullback_impl(output)?.bounds.iter().find_map(|b| match b {
        syn::TypeParamBound::PreciseCapture(c) => Some(quote::ToTokens::to_token_stream(c)),
        _ => None,
    })
}

/// `T` in `-> (R, impl FnOnce(..) -> T)`.
fn pullback_output(output: &ReturnType) -> Option<&Type> {
    let imp = pullback_impl(output)?;
    imp.bounds.iter().find_map(|b| match b {
        syn::TypeParamBound::Trait(tb) => match &tb.path.segments.last()?.arguments {
            syn::PathArguments::Parenthesized(p) => match &p.output {
                ReturnType::Type(_, out) => Some(&**out),
                ReturnType::Default => None,
            },
            _ => None,
        },
        _ => None,
    })
}

/// The span of `T` in `-> (R, impl FnOnce(..) -> T)`.
fn pullback_output_span(output: &ReturnType) -> Option<proc_macro2::Span> {
    pullback_output(output).map(Spanned::span)
}

/// The forward companion's tangents: one `let` per differentiated parameter taking its
/// tangent or a zero of its shape (`take`), their names, and the public `f_jvp`'s tangent
/// parameters.
fn forward_takes(sig: &FnSignature) -> (Vec<TokenStream>, Vec<Ident>, Vec<TokenStream>) {
    let mut take = Vec::new();
    let mut tangents = Vec::new();
    let mut public_decls = Vec::new();
    for (k, p) in sig.params.iter().enumerate().filter(|(_, p)| p.wrt) {
        let (t, z, d) = (
            format_ident!("__t{}", k),
            format_ident!("__z{}", k),
            format_ident!("d{}", p.name),
        );
        let (index, pass, ty) = (crate::emit::index(k), &p.pass, p.tangent_type());
        take.push(if p.by_ref {
            quote!(let #z; let #t = match __t.#index { ::core::option::Option::Some(__t) => __t, ::core::option::Option::None => { #z = { use ::adjoint::Differentiable as _; #pass.zero_tangent() }; &#z } };)
        } else {
            quote!(let #t = match __t.#index { ::core::option::Option::Some(__t) => __t, ::core::option::Option::None => { use ::adjoint::Differentiable as _; #pass.zero_tangent() } };)
        });
        tangents.push(t);
        public_decls.push(if p.by_ref {
            quote!(#d: &#ty)
        } else {
            quote!(#d: #ty)
        });
    }
    (take, tangents, public_decls)
}
