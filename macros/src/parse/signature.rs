//! Which parameters are differentiated, and the types of their tangents.

use crate::diag::Errors;
use crate::parse::attr::DiffArgs;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, GenericParam, Ident, Pat, ReturnType, Signature, Type};

/// One parameter of the function.
pub struct Param {
    /// `x` or `self`: how the parameter is named in `wrt(...)` and in diagnostics.
    pub name: String,
    /// How the companions receive it (`x: f64`, `&self`, or `__arg2: (f64, f64)` for a
    /// pattern parameter).
    pub decl: TokenStream,
    /// The expression that passes it on (`x`, `self`, `__arg2`).
    pub pass: TokenStream,
    /// How the uniform companion receives it (an inout `x: &mut T` as `__inout_x: T`).
    pub full_decl: TokenStream,
    /// What the public companion passes to the uniform one (a clone of an inout's value).
    pub full_pass: TokenStream,
    /// The pattern to destructure it with at the start of the body, for pattern parameters.
    pub pattern: Option<Pat>,
    /// The type without references: the type whose `Tangent` the pullback returns.
    pub value_ty: Type,
    /// Whether the pullback returns a tangent for it.
    pub wrt: bool,
    /// A differentiated `&mut` parameter (Swift's `inout`): the pullback takes the tangent of
    /// its final value by `&mut` and leaves there the tangent of its initial value.
    pub inout: bool,
    /// A `&T` parameter (not inout): the pullbacks keep it borrowed.
    pub by_ref: bool,
    pub span: Span,
}

impl Param {
    /// The tangent slot type in the uniform (`_vjp_full`) convention.
    pub fn slot_type(&self) -> TokenStream {
        if self.wrt && !self.inout {
            self.tangent_type()
        } else {
            quote!(::adjoint::__private::NoTangent)
        }
    }

    /// `<T as Differentiable>::Tangent`, spanned at the parameter so that a missing
    /// `Differentiable` impl is reported there.
    pub fn tangent_type(&self) -> TokenStream {
        let ty = &self.value_ty;
        quote_spanned!(ty.span()=> <#ty as ::adjoint::Differentiable>::Tangent)
    }
}

/// The analysed signature.
pub struct FnSignature {
    pub params: Vec<Param>,
    pub has_receiver: bool,
    /// The declared result type.
    pub ret: Type,
    /// Type and const generic parameters, in order, to forward with a turbofish.
    pub turbofish: TokenStream,
    /// `use<T, N>`: the function's type and const parameters, after the capture lifetime
    /// `'__p` where the function has one ([`FnSignature::capture_lifetime`]).
    pub captures: TokenStream,
    /// The function's type and const parameters.
    pub generic_names: Vec<Ident>,
    /// A free function whose pullbacks can be declared not to borrow its arguments: its
    /// reference arguments are read, never kept (inout ones the uniform companion takes by
    /// value).
    pub lifetime_free: bool,
    /// A free function with type parameters and reference parameters (or lifetime
    /// parameters): its companions take a lifetime `'__p` of their own, bounded by every type
    /// parameter (`T: '__p`), which the pullback captures instead of the arguments' lifetimes.
    /// Capturing none, a callee's boxed pullback (`Box<dyn FnOnce(..) + 'p>` of a method marked
    /// alone, which holds values of `T`) could only take `'p = 'static`; capturing every
    /// lifetime in scope, the pullback kept `&local` arguments borrowed (E0597 in the caller).
    pub capture_lifetime: bool,
}

impl FnSignature {
    /// The pullback's parameters: the result's tangent, then `&mut` tangents of the inout
    /// parameters (`|seed, (dx,)|`); just the seed when there are none.
    pub fn pullback_inputs(&self) -> TokenStream {
        let ret_tangent = self.ret_tangent();
        let inout: Vec<TokenStream> = self
            .params
            .iter()
            .filter(|p| p.inout)
            .map(|p| {
                let t = p.tangent_type();
                quote!(&mut #t)
            })
            .collect();
        if inout.is_empty() {
            ret_tangent
        } else {
            quote!(#ret_tangent, (#(#inout,)*))
        }
    }

    /// The owned variables holding the inout parameters in the uniform companion.
    pub fn inout_owned(&self) -> Vec<proc_macro2::Ident> {
        self.params
            .iter()
            .filter(|p| p.inout)
            .map(|p| match p.name.as_str() {
                "self" => format_ident!("self"),
                name => format_ident!("__inout_{}", name),
            })
            .collect()
    }

    /// The value the uniform companion returns: `R`, or `(R, (T1, ..))` with the final values of
    /// the inout parameters.
    pub fn full_value_type(&self) -> TokenStream {
        let ret = &self.ret;
        let inout: Vec<&Type> = self
            .params
            .iter()
            .filter(|p| p.inout)
            .map(|p| &p.value_ty)
            .collect();
        if inout.is_empty() {
            quote!(#ret)
        } else {
            quote!((#ret, (#(#inout,)*)))
        }
    }

    /// Whether some parameter is inout.
    pub fn has_inout(&self) -> bool {
        self.params.iter().any(|p| p.inout)
    }

    /// `<R as Differentiable>::Tangent`.
    pub fn ret_tangent(&self) -> TokenStream {
        let ret = &self.ret;
        quote_spanned!(ret.span()=> <#ret as ::adjoint::Differentiable>::Tangent)
    }

    /// The tuple of all slot types of the uniform convention.
    pub fn slot_tuple(&self) -> TokenStream {
        let slots = self.params.iter().map(Param::slot_type);
        quote!((#(#slots,)*))
    }

    /// The tangents the public pullback returns: the tangent itself for one `wrt` parameter,
    /// a tuple otherwise.
    pub fn nice_tangents(&self) -> TokenStream {
        let wrt: Vec<_> = self
            .params
            .iter()
            .filter(|p| p.wrt && !p.inout)
            .map(Param::tangent_type)
            .collect();
        match wrt.as_slice() {
            [single] => single.clone(),
            many => quote!((#(#many),*)),
        }
    }
}

const NON_DIFFERENTIABLE: &[&str] = &[
    "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "bool",
    "char", "str", "String",
];

/// Whether a type is obviously not differentiable (integers, `bool`, `char`, strings, and
/// references to them): such parameters are left out by default.
pub fn obviously_non_differentiable(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => obviously_non_differentiable(&r.elem),
        Type::Paren(p) => obviously_non_differentiable(&p.elem),
        Type::Path(p) if p.qself.is_none() => p
            .path
            .get_ident()
            .is_some_and(|id| NON_DIFFERENTIABLE.contains(&id.to_string().as_str())),
        _ => false,
    }
}

/// Strips `&`, `&mut` and parentheses.
fn value_type(ty: &Type) -> (Type, bool) {
    match ty {
        Type::Reference(r) => (value_type(&r.elem).0, r.mutability.is_some()),
        Type::Paren(p) => value_type(&p.elem),
        other => (other.clone(), false),
    }
}

/// Removes `#[no_derivative]` from the parameters (rustc does not know the attribute) and
/// reports whether each parameter carried it.
pub fn strip_no_derivative(sig: &mut Signature) -> Vec<bool> {
    sig.inputs
        .iter_mut()
        .map(|arg| {
            let attrs = match arg {
                FnArg::Receiver(r) => &mut r.attrs,
                FnArg::Typed(t) => &mut t.attrs,
            };
            let before = attrs.len();
            attrs.retain(|a| !a.path().is_ident("no_derivative"));
            attrs.len() != before
        })
        .collect()
}

/// Analyses `sig` (already stripped of `#[no_derivative]`, whose flags are in `excluded`).
pub fn analyse(
    sig: &Signature,
    excluded: &[bool],
    args: &DiffArgs,
    errors: &mut Errors,
) -> Option<FnSignature> {
    check_qualifiers(sig, errors);
    let mut params = Vec::new();
    let mut has_receiver = false;
    for (index, (arg, &no_derivative)) in sig.inputs.iter().zip(excluded).enumerate() {
        has_receiver |= matches!(arg, FnArg::Receiver(_));
        let declared = declared(arg, index, errors);
        let wrt = match &args.wrt {
            Some(list) => list.iter().any(|w| w == &declared.name),
            None => !no_derivative && !obviously_non_differentiable(&declared.ty),
        };
        if wrt {
            check_wrt(&declared, args.wrt.is_some(), no_derivative, errors);
        }
        params.push(param(declared, wrt));
    }
    check_wrt_names(sig, args, &params, errors);
    check_something_differentiated(sig, args, &params, errors);
    let ret = result_type(sig, &params, errors)?;
    let generics = sig.generics.params.iter().filter_map(|g| match g {
        GenericParam::Type(t) => Some(t.ident.clone()),
        GenericParam::Const(c) => Some(c.ident.clone()),
        GenericParam::Lifetime(_) => None,
    });
    let generics: Vec<Ident> = generics.collect();
    let turbofish = if generics.is_empty() {
        quote!()
    } else {
        quote!(::<#(#generics),*>)
    };
    let generic_params = generics;
    let borrows = params.iter().any(|p| p.by_ref)
        || sig
            .generics
            .params
            .iter()
            .any(|g| matches!(g, GenericParam::Lifetime(_)));
    let has_types = sig.generics.type_params().next().is_some();
    let lifetime_free = !has_receiver;
    let capture_lifetime = lifetime_free && borrows && has_types;
    let captures = if capture_lifetime {
        quote!(use<'__p, #(#generic_params),*>)
    } else {
        quote!(use<#(#generic_params),*>)
    };
    Some(FnSignature {
        params,
        has_receiver,
        ret,
        turbofish,
        captures,
        lifetime_free,
        capture_lifetime,
        generic_names: generic_params,
    })
}

/// The parameter `declared`, differentiated or not (`wrt`): an inout one is taken by value
/// by the uniform companion, which returns its final value, so that no pullback borrows the
/// caller's variable.
fn param(declared: Declared, wrt: bool) -> Param {
    let Declared {
        name,
        decl,
        pass,
        pattern,
        value_ty,
        is_mut,
        span,
        ty: ty_for_default,
    } = declared;
    let inout = wrt && is_mut;
    let (full_decl, full_pass) = if inout && name == "self" {
        // A `&mut self` method (Swift's `mutating func`): the uniform companion takes `self`
        // by value, the body changes it as a local, and the companion returns it.
        // Spanned at the receiver, where a `Self` without `Clone` is reported.
        (
            quote!(mut self),
            quote_spanned!(span=> ::core::clone::Clone::clone(&*self)),
        )
    } else if inout {
        let owned = format_ident!("__inout_{}", name);
        (
            quote!(mut #owned: #value_ty),
            quote!(::core::clone::Clone::clone(&*#pass)),
        )
    } else {
        (decl.clone(), pass.clone())
    };
    let by_ref = matches!(ty_for_default, Type::Reference(_)) && !inout;
    Param {
        name,
        decl,
        pass,
        full_decl,
        full_pass,
        pattern,
        value_ty,
        wrt,
        inout,
        by_ref,
        span,
    }
}

fn check_qualifiers(sig: &Signature, errors: &mut Errors) {
    if let Some(a) = &sig.asyncness {
        errors.push(a.span, "`async fn` cannot be #[differentiable]: differentiate the synchronous computation it awaits");
    }
    if let Some(u) = &sig.unsafety {
        errors.push(u.span, "`unsafe fn` cannot be #[differentiable]: wrap the unsafe part in a safe function with a #[derivative_of] rule");
    }
    if let Some(abi) = &sig.abi {
        errors.push(abi.span(), "`extern` functions cannot be #[differentiable]");
    }
    if let Some(v) = &sig.variadic {
        errors.push(v.span(), "variadic functions cannot be #[differentiable]");
    }
}

/// A parameter as declared: how the companions name, receive and pass it.
struct Declared {
    name: String,
    decl: TokenStream,
    pass: TokenStream,
    pattern: Option<Pat>,
    value_ty: Type,
    is_mut: bool,
    span: Span,
    ty: Type,
}

/// Reads parameter `index`: `self` receivers, `x: T` (keeping `mut x`: the body may assign
/// it), and patterns, which get a fresh name `__argN` and are destructured in the body.
fn declared(arg: &FnArg, index: usize, errors: &mut Errors) -> Declared {
    match arg {
        FnArg::Receiver(r) => {
            let (value_ty, is_mut) = value_type(&r.ty);
            Declared {
                name: String::from("self"),
                decl: quote!(#r),
                pass: quote!(self),
                pattern: None,
                value_ty,
                is_mut,
                span: r.span(),
                ty: (*r.ty).clone(),
            }
        }
        FnArg::Typed(t) => {
            if let Type::ImplTrait(_) = &*t.ty {
                errors.push(
                    t.ty.span(),
                    "`impl Trait` parameters are not supported by #[differentiable]: use a named generic parameter (`fn f<T: Float>(x: T)`)",
                );
            }
            let (value_ty, is_mut) = value_type(&t.ty);
            let ty = &t.ty;
            let (name, decl, pass, pattern) = match &*t.pat {
                Pat::Ident(p) if p.subpat.is_none() => {
                    let ident = &p.ident;
                    let mutability = &p.mutability;
                    (
                        ident.to_string(),
                        quote!(#mutability #ident: #ty),
                        quote!(#ident),
                        None,
                    )
                }
                pat => {
                    let arg = format_ident!("__arg{}", index);
                    (
                        quote!(#pat).to_string(),
                        quote!(#arg: #ty),
                        quote!(#arg),
                        Some(pat.clone()),
                    )
                }
            };
            Declared {
                name,
                decl,
                pass,
                pattern,
                value_ty,
                is_mut,
                span: t.span(),
                ty: (**ty).clone(),
            }
        }
    }
}

/// Errors for a differentiated parameter that cannot be: a type with no derivative named in
/// `wrt(...)`, one also marked `#[no_derivative]`, or a `&mut` receiver or pattern (inout).
fn check_wrt(param: &Declared, declared_wrt: bool, no_derivative: bool, errors: &mut Errors) {
    let Declared { name, ty, span, .. } = param;
    let span = *span;
    if declared_wrt && obviously_non_differentiable(ty) {
        errors.push(
            ty.span(),
            format!(
                "`{name}` has type `{}`, which is not differentiable (integers, `bool`, `char` and strings have no derivative): remove it from `wrt(...)`",
                quote!(#ty)
            ),
        );
    }
    if no_derivative {
        errors.push(
            span,
            format!("`{name}` is both in `wrt(...)` and `#[no_derivative]`"),
        );
    }
    if param.is_mut && param.pattern.is_some() {
        errors.push(
            span,
            format!(
                "`{name}` is a `&mut` pattern: differentiating through it (inout) is not supported yet; bind it to a name, or mark it `#[no_derivative]`"
            ),
        );
    }
}

/// The result type, with errors for results that are not differentiable; a function without
/// one is differentiable only through its `&mut` (inout) parameters, and its result is `()`.
fn result_type(sig: &Signature, params: &[Param], errors: &mut Errors) -> Option<Type> {
    let ret = match &sig.output {
        ReturnType::Type(_, ty) => {
            if let Type::ImplTrait(_) = &**ty {
                errors.push(
                    ty.span(),
                    "an `impl Trait` result is not differentiable: name the result type",
                );
            }
            if obviously_non_differentiable(ty) {
                errors.push(
                    ty.span(),
                    format!(
                        "`{}` returns `{}`, which is not differentiable: a differentiable function returns floats, tuples of them, or another `Differentiable` type",
                        sig.ident,
                        quote!(#ty)
                    ),
                );
            }
            (**ty).clone()
        }
        ReturnType::Default if params.iter().any(|p| p.inout) => syn::parse_quote!(()),
        ReturnType::Default => {
            errors.push(
                sig.ident.span(),
                format!("`{}` returns `()`: a differentiable function must return a differentiable value or update a `&mut` parameter", sig.ident),
            );
            return None;
        }
    };
    Some(ret)
}

/// Errors for names in `wrt(...)` that are not parameters.
fn check_wrt_names(sig: &Signature, args: &DiffArgs, params: &[Param], errors: &mut Errors) {
    let Some(list) = &args.wrt else { return };
    for w in list {
        if !params.iter().any(|p| w == &p.name) {
            errors.push(
                w.span(),
                format!(
                    "`wrt` names `{w}`, which is not a parameter of `{}`",
                    sig.ident
                ),
            );
        }
    }
    // The pullback returns the tangents in the order of the parameters: a `wrt` list in
    // another order would read as if it chose the order.
    let position = |w: &Ident| params.iter().position(|p| w == &p.name);
    let positions: Vec<usize> = list.iter().filter_map(position).collect();
    if let Some(pair) = positions.windows(2).position(|p| p[0] >= p[1]) {
        let order: Vec<&str> = params
            .iter()
            .filter(|p| list.iter().any(|w| w == &p.name))
            .map(|p| p.name.as_str())
            .collect();
        errors.push(
            list[pair + 1].span(),
            format!(
                "`wrt` lists the parameters out of their order (or twice): write `wrt({})`; the pullback returns their tangents in the order of the parameters",
                order.join(", ")
            ),
        );
    }
}

/// A function none of whose parameters is differentiated has no derivative to give.
fn check_something_differentiated(
    sig: &Signature,
    args: &DiffArgs,
    params: &[Param],
    errors: &mut Errors,
) {
    if params.iter().any(|p| p.wrt) || args.enclosing.is_some() {
        return;
    }
    let why = if params.is_empty() {
        "it has no parameters".to_string()
    } else {
        "every parameter is an integer, `bool`, `char`, string or `#[no_derivative]`".to_string()
    };
    errors.push(
        sig.ident.span(),
        format!(
            "`{}` has nothing to differentiate: {why}; a derivative needs a parameter of a differentiable type (`f32`, `f64`, a tensor, a `#[derive(Differentiable)]` struct), or remove the attribute if none is needed",
            sig.ident
        ),
    );
}
