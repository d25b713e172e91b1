//! The hidden rules `#[derive(Differentiable)]` writes for an enum, which differentiable code
//! calls in both modes: a constructor per variant with fields (`__new_V_vjp_full`,
//! `__new_V_jvp_full`) and a reader per payload field (`__variant_V_f_vjp_full`, `_jvp_full`).

use super::{Enum, Variant, bind};
use crate::derive::{Field, captured};
use crate::emit::names;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

impl Enum<'_> {
    /// The hidden rules differentiable code calls: a constructor per variant with fields, a
    /// payload reader per field.
    pub(super) fn rules(&self) -> TokenStream {
        let (name, where_clause) = (self.name, &self.where_clause);
        let (impl_generics, ty_generics, _) = self.generics.split_for_impl();
        let constructors = self
            .variants
            .iter()
            .filter(|v| !v.fields.is_empty())
            .map(|v| self.constructor(v));
        let readers = self.variants.iter().flat_map(|v| {
            v.fields
                .iter()
                .enumerate()
                .map(move |(k, f)| self.reader(v, f, k))
        });
        quote! {
            impl #impl_generics #name #ty_generics #where_clause {
                #(#constructors)*
                #(#readers)*
            }
        }
    }

    /// `__new_V_vjp_full(fields.., needs)` and `__new_V_jvp_full(fields.., tangents)`: the
    /// value, and a pullback that takes the payload back out of the variant's tangent (zeros
    /// from `Zero`), or the variant's tangent from the fields' (`None` when none has one).
    /// Named fields in the order of their names.
    fn constructor(&self, v: &Variant) -> TokenStream {
        let mut order: Vec<usize> = (0..v.fields.len()).collect();
        if v.named {
            order.sort_by(|&a, &b| v.fields[a].label.cmp(&v.fields[b].label));
        }
        let reverse = self.constructor_vjp(v, &order);
        let forward = self.constructor_jvp(v, &order);
        quote!(#forward #reverse)
    }

    /// The parameters `__a0: T0, ..` in `order`, and each one's tangent slot (`NoTangent` for
    /// a `#[no_derivative]` field).
    fn constructor_params(v: &Variant, order: &[usize]) -> (Vec<TokenStream>, Vec<TokenStream>) {
        order
            .iter()
            .map(|&k| {
                let (a, ty) = (bind("a", k), &v.fields[k].ty);
                let slot = match v.fields[k].differentiable {
                    true => quote!(<#ty as ::adjoint::Differentiable>::Tangent),
                    false => quote!(::adjoint::NoTangent),
                };
                (quote!(#a: #ty), slot)
            })
            .unzip()
    }

    fn constructor_vjp(&self, v: &Variant, order: &[usize]) -> TokenStream {
        let tangent = self.tangent_path();
        let captured = captured(self.generics);
        let method =
            names::full_method(&format_ident!("__new_{}", v.name, span = Span::call_site()));
        let (params, slots) = Self::constructor_params(v, order);
        let n = v.fields.len();
        let value = v.build(&quote!(Self), true, |_, k| bind("a", k));
        let parts = |payload: bool| {
            let each = order
                .iter()
                .map(move |&k| match (v.fields[k].differentiable, payload) {
                    (false, _) => quote!(::adjoint::NoTangent),
                    (true, true) => bind("d", k),
                    (true, false) => quote!(::adjoint::TangentVector::zero()),
                });
            quote!((#(#each,)*))
        };
        let (taken, zeros) = (parts(true), parts(false));
        let body = if v.differentiated() {
            let pat = v.tangent(&tangent, &quote!(_), |k| bind("d", k));
            let message = format!(
                "the adjoint of `{}::{}(..)` is the tangent of another variant",
                self.name, v.name
            );
            quote! {
                match d {
                    #pat => #taken,
                    #tangent::Zero => #zeros,
                    _ => ::core::panic!(#message),
                }
            }
        } else {
            quote!({ let _ = d; #zeros })
        };
        quote! {
            #[doc(hidden)]
            #[allow(non_snake_case, unreachable_patterns, clippy::type_complexity, clippy::too_many_arguments)]
            pub fn #method(
                #(#params,)*
                _needs: [bool; #n],
            ) -> (Self, impl use<#(#captured),*> + FnOnce(#tangent) -> (#(#slots,)*)) {
                (#value, move |d: #tangent| #body)
            }
        }
    }

    fn constructor_jvp(&self, v: &Variant, order: &[usize]) -> TokenStream {
        let tangent = self.tangent_path();
        let forward =
            names::forward_method(&format_ident!("__new_{}", v.name, span = Span::call_site()));
        let (params, slots) = Self::constructor_params(v, order);
        let value = v.build(&quote!(Self), true, |_, k| bind("a", k));
        let tangents = order.iter().map(|&k| bind("t", k));
        let tangent_value = if v.differentiated() {
            let parts = v.tangent(&tangent, &quote!(()), |k| {
                let t = bind("t", k);
                quote!(#t.unwrap_or_else(::adjoint::TangentVector::zero))
            });
            let some = order
                .iter()
                .filter(|&&k| v.fields[k].differentiable)
                .map(|&k| {
                    let t = bind("t", k);
                    quote!(#t.is_some())
                });
            quote!((false #(|| #some)*).then(|| #parts))
        } else {
            quote!(::core::option::Option::None)
        };
        quote! {
            #[doc(hidden)]
            #[allow(non_snake_case, unused_variables, clippy::type_complexity, clippy::too_many_arguments)]
            pub fn #forward(
                #(#params,)*
                (#(#tangents,)*): (#(::core::option::Option<#slots>,)*),
            ) -> (Self, ::core::option::Option<#tangent>) {
                let tangent = #tangent_value;
                (#value, tangent)
            }
        }
    }

    /// `__variant_V_f_vjp_full(&self, needs)`: field `f` of variant `V` (a clone), whose
    /// pullback is `V` with the field's tangent and zeros (`Dropped` for a `#[no_derivative]`
    /// field, whose pullback gives `Zero`).
    fn reader(&self, v: &Variant, f: &Field, k: usize) -> TokenStream {
        let tangent = self.tangent_path();
        let captured = captured(self.generics);
        let rule = format_ident!("__variant_{}_{}", v.name, f.label, span = Span::call_site());
        let method = names::full_method(&rule);
        let ty = &f.ty;
        let (pattern, message) = self.reader_pattern(v, f, k);
        let (seed, adjoint) = if f.differentiable {
            let built = v.tangent(&tangent, &quote!(()), |j| match j == k {
                true => quote!(d),
                false => quote!(::adjoint::TangentVector::zero()),
            });
            (
                quote!(<#ty as ::adjoint::Differentiable>::Tangent),
                quote!(if needs[0] { #built } else { #tangent::Zero }),
            )
        } else {
            (
                quote!(::adjoint::__private::Dropped),
                quote!({ let _ = (d, needs); #tangent::Zero }),
            )
        };
        let forward = f.differentiable.then(|| self.reader_jvp(v, f, k, &rule));
        quote! {
            #forward

            #[doc(hidden)]
            #[allow(non_snake_case, irrefutable_let_patterns, clippy::type_complexity)]
            pub fn #method(
                &self,
                needs: [bool; 1],
            ) -> (#ty, impl use<#(#captured),*> + FnOnce(#seed) -> (#tangent,))
            where
                for<'__adjoint> #ty: ::core::clone::Clone,
            {
                let #pattern = self else { ::core::unreachable!(#message) };
                (::core::clone::Clone::clone(__x), move |d: #seed| (#adjoint,))
            }
        }
    }

    /// The pattern binding field `k` of `v` to `__x`, and the message where the value has
    /// another variant.
    fn reader_pattern(&self, v: &Variant, f: &Field, k: usize) -> (TokenStream, String) {
        let vname = &v.name;
        let pattern = match v.named {
            true => {
                let m = &f.member;
                quote!(Self::#vname { #m: __x, .. })
            }
            false => {
                let before = (0..k).map(|_| quote!(_));
                quote!(Self::#vname(#(#before,)* __x, ..))
            }
        };
        let message = format!(
            "`{}::{}` read from another variant: differentiable code reads a payload only in its arm",
            self.name, v.name
        );
        (pattern, message)
    }

    /// `__variant_V_f_jvp_full(&self, (tangent,))`: the field and its tangent, read from the
    /// variant's tangent (`None` from `Zero`).
    fn reader_jvp(&self, v: &Variant, f: &Field, k: usize, rule: &Ident) -> TokenStream {
        let tangent = self.tangent_path();
        let forward = names::forward_method(rule);
        let ty = &f.ty;
        let (pattern, message) = self.reader_pattern(v, f, k);
        let pat = v.tangent(&tangent, &quote!(_), |j| match j == k {
            true => quote!(__t),
            false => quote!(_),
        });
        quote! {
            #[doc(hidden)]
            #[allow(non_snake_case, irrefutable_let_patterns, unreachable_patterns, clippy::type_complexity)]
            pub fn #forward(
                &self,
                t: (::core::option::Option<&#tangent>,),
            ) -> (#ty, ::core::option::Option<<#ty as ::adjoint::Differentiable>::Tangent>)
            where
                for<'__adjoint> #ty: ::core::clone::Clone,
            {
                let #pattern = self else { ::core::unreachable!(#message) };
                let tangent = match t.0 {
                    ::core::option::Option::Some(#pat) => ::core::option::Option::Some(::core::clone::Clone::clone(__t)),
                    _ => ::core::option::Option::None,
                };
                (::core::clone::Clone::clone(__x), tangent)
            }
        }
    }
}
