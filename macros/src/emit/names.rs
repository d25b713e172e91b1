//! Companion naming. A differentiable function `f` gets the public `f_vjp` and the uniform
//! companion generated code calls:
//!
//! * a free function `f`: `f_vjp::__full`, an associated function of a hidden empty struct
//!   that shares the name `f_vjp` (types and functions live in different namespaces), so
//!   `use m::{f, f_vjp};` imports both. A struct rather than a module, because an `impl` inside
//!   a function body still sees the items of that body, and a module does not;
//! * a method or associated function: the sibling `f_vjp_full`.
//!
//! A call in differentiable code keeps its path and changes only the last segment.

use proc_macro2::Span;
use quote::format_ident;
use syn::{ExprPath, Ident, PathArguments, PathSegment, parse_quote_spanned};

/// The name of the public companion of `f`: `f_vjp`.
pub fn public(f: &Ident) -> Ident {
    format_ident!("{}_vjp", f, span = f.span())
}

/// The name of the uniform companion of a method or associated function `f`: `f_vjp_full`.
pub fn full_method(f: &Ident) -> Ident {
    format_ident!("{}_vjp_full", f, span = f.span())
}

/// The uniform companion of a `&mut self` method: `m_vjp_mut`, apart from `m_vjp_full` so
/// that a call of it for its value (not as a statement) is an error naming the method.
pub fn mut_method(f: &Ident) -> Ident {
    format_ident!("{}_vjp_mut", f, span = f.span())
}

/// The forward rule of a method or an associated function: `f_jvp_full`.
pub fn forward_method(f: &Ident) -> Ident {
    format_ident!("{}_jvp_full", f, span = f.span())
}

/// The uniform companion of a free function, an associated function of the struct `f_vjp`.
pub fn full_in_module() -> Ident {
    Ident::new("__full", Span::call_site())
}

/// Whether a call path names an associated function (`Self::g`, `Type::g`, `<T as Tr>::g`)
/// rather than a free function (`g`, `m::g`, `crate::m::g`).
/// Whether a rule's target `T::f` (or `Self::f`, `<T as Tr>::f`) is an associated function.
pub fn is_associated_path(path: &syn::Path) -> bool {
    let segs = &path.segments;
    segs.len() >= 2 && {
        let owner = segs[segs.len() - 2].ident.to_string();
        owner == "Self" || owner.starts_with(|c: char| c.is_ascii_uppercase())
    }
}

fn is_associated(path: &ExprPath) -> bool {
    let segs = &path.path.segments;
    let float_owner = segs.len() >= 2
        && matches!(
            segs[segs.len() - 2].ident.to_string().as_str(),
            "f32" | "f64"
        );
    path.qself.is_some() || float_owner || is_associated_path(&path.path)
}

/// The path of the uniform companion of the function `path` calls. A free function's is
/// written `<m::g_vjp>::__full`: if `g` has no derivative, rustc then reports "cannot find type
/// `g_vjp`" at the callee, with no misleading hint.
pub fn companion_call(path: &ExprPath) -> ExprPath {
    let mut out = path.clone();
    let last = out
        .path
        .segments
        .pop()
        .expect("a call path has a segment")
        .into_value();
    if is_associated(path) {
        out.path.segments.push(PathSegment {
            ident: full_method(&last.ident),
            arguments: last.arguments,
        });
        return out;
    }
    out.path.segments.push(PathSegment {
        ident: public(&last.ident),
        arguments: PathArguments::None,
    });
    let mut inner = full_in_module();
    inner.set_span(last.ident.span());
    let owner = &out.path;
    let args = &last.arguments;
    parse_quote_spanned!(last.ident.span()=> <#owner>::#inner #args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn rewrite(tokens: proc_macro2::TokenStream) -> String {
        let path: ExprPath = syn::parse2(tokens).unwrap();
        let out = companion_call(&path);
        quote!(#out).to_string()
    }

    #[test]
    fn free_functions_go_through_the_companion_module() {
        assert_eq!(rewrite(quote!(g)), "< g_vjp > :: __full");
        assert_eq!(
            rewrite(quote!(crate::m::g::<f32>)),
            "< crate :: m :: g_vjp > :: __full :: < f32 >"
        );
    }

    #[test]
    fn associated_functions_use_the_sibling_companion() {
        assert_eq!(rewrite(quote!(Self::g)), "Self :: g_vjp_full");
        assert_eq!(rewrite(quote!(Model::g)), "Model :: g_vjp_full");
        assert_eq!(
            rewrite(quote!(<T as Layer>::g)),
            "< T as Layer > :: g_vjp_full"
        );
    }
}
