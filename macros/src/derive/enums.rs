//! `#[derive(Differentiable)]` for enums. The tangent of an enum value is the tangent of its
//! variant's payload: for
//!
//! ```text
//! enum Shape { Circle(f64), Rect { w: f64, h: f64 }, Empty }
//! ```
//!
//! it writes `enum ShapeTangent { Zero, Circle(f64), Rect { w: f64, h: f64 } }` (a variant
//! without differentiated fields has only `Zero`), whose sum adds payloads of the same
//! variant and keeps the other operand where one is `Zero`; two different variants are never
//! added, since one value has one variant. `Shape::Circle(r)` in differentiable code calls the
//! hidden rule `Shape::__new_Circle_vjp_full(r, needs)`, whose pullback takes the payload
//! back out (`Zero` gives zeros); a `match` arm that binds `r` from an active `Shape`
//! reads it through `__variant_Circle_0_vjp_full`, whose pullback puts `r̄` into
//! `ShapeTangent::Circle(r̄)` (see `patterns/variant_match.rs`). Named fields are the
//! constructor's arguments in the order of their names, which the macro sorts the same way.

mod rules;

use super::{Field, operator_impls, read_fields};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{DataEnum, DeriveInput, Fields, Ident, parse_quote, parse_quote_spanned};

/// One variant of the enum.
struct Variant {
    name: Ident,
    named: bool,
    fields: Vec<Field>,
}

impl Variant {
    fn differentiated(&self) -> bool {
        self.fields.iter().any(|f| f.differentiable)
    }

    /// `Owner::V(parts)` or `Owner::V { member: part, .. }` with `part(field, k)` for each
    /// field: every position of a tuple variant, the differentiated members of a named one
    /// when `all` is false.
    fn build(
        &self,
        owner: &TokenStream,
        all: bool,
        part: impl Fn(&Field, usize) -> TokenStream,
    ) -> TokenStream {
        let v = &self.name;
        if !self.named {
            if self.fields.is_empty() {
                return quote!(#owner::#v);
            }
            let parts = self.fields.iter().enumerate().map(|(k, f)| part(f, k));
            return quote!(#owner::#v(#(#parts),*));
        }
        let parts = self
            .fields
            .iter()
            .enumerate()
            .filter(|(_, f)| all || f.differentiable)
            .map(|(k, f)| {
                let (m, p) = (&f.member, part(f, k));
                quote!(#m: #p)
            });
        quote!(#owner::#v { #(#parts),* })
    }

    /// The tangent variant with `part` in each differentiated field (`()` or `_` in a tuple
    /// variant's other positions, `hole`).
    fn tangent(
        &self,
        tangent: &TokenStream,
        hole: &TokenStream,
        part: impl Fn(usize) -> TokenStream,
    ) -> TokenStream {
        self.build(tangent, false, |f, k| {
            if f.differentiable {
                part(k)
            } else {
                hole.clone()
            }
        })
    }
}

/// The enum, its tangent's name and the bounds the impls share.
struct Enum<'a> {
    name: &'a Ident,
    tangent: Ident,
    generics: &'a syn::Generics,
    where_clause: syn::WhereClause,
    variants: Vec<Variant>,
}

/// Expands `#[derive(Differentiable)]` on an enum.
pub(super) fn expand(input: &DeriveInput, data: &DataEnum) -> TokenStream {
    let variants: Vec<Variant> = data
        .variants
        .iter()
        .map(|v| Variant {
            name: v.ident.clone(),
            named: matches!(v.fields, Fields::Named(_)),
            fields: read_fields(&v.fields),
        })
        .collect();
    if let Some(v) = variants.iter().find(|v| v.name == "Zero") {
        return syn::Error::new(
            v.name.span(),
            "#[derive(Differentiable)] on an enum names the zero of its tangent `Zero`: rename this variant",
        )
        .to_compile_error();
    }
    let name = &input.ident;
    let mut where_clause = input
        .generics
        .where_clause
        .clone()
        .unwrap_or_else(|| parse_quote!(where));
    for f in variants
        .iter()
        .flat_map(|v| &v.fields)
        .filter(|f| f.differentiable)
    {
        let ty = &f.ty;
        where_clause
            .predicates
            .push(parse_quote_spanned!(ty.span()=> #ty: ::adjoint::Differentiable));
    }
    let e = Enum {
        name,
        tangent: format_ident!("{}Tangent", name, span = name.span()),
        generics: &input.generics,
        where_clause,
        variants,
    };
    let definition = e.definition(&input.vis);
    let tangent_impls = e.tangent_impls();
    let differentiable = e.differentiable_impl();
    let rules = e.rules();
    quote! {
        #definition
        #tangent_impls
        #differentiable
        #rules
    }
}

/// `__a0`, `__b0`, ..: the binding of field `k` in a generated pattern.
fn bind(prefix: &str, k: usize) -> TokenStream {
    let id = format_ident!("__{}{}", prefix, k);
    quote!(#id)
}

impl Enum<'_> {
    fn differentiated(&self) -> impl Iterator<Item = &Variant> {
        self.variants.iter().filter(|v| v.differentiated())
    }

    /// `ShapeTangent` as an owner path in patterns and expressions (`ShapeTangent::<T>`).
    fn tangent_path(&self) -> TokenStream {
        let (_, ty_generics, _) = self.generics.split_for_impl();
        let tangent = &self.tangent;
        let turbofish = ty_generics.as_turbofish();
        quote!(#tangent #turbofish)
    }

    /// The tangent enum's definition.
    fn definition(&self, vis: &syn::Visibility) -> TokenStream {
        let (tangent, where_clause) = (&self.tangent, &self.where_clause);
        let params = &self.generics.params;
        let doc = format!(
            " The tangent of [`{}`]: the tangent of the payload of the value's variant, or `Zero`.",
            self.name
        );
        let variants = self.differentiated().map(|v| {
            let name = &v.name;
            let types = v.fields.iter().filter(|f| !v.named || f.differentiable);
            let decls = types.map(|f| {
                let ty = &f.ty;
                let t = if f.differentiable {
                    quote!(<#ty as ::adjoint::Differentiable>::Tangent)
                } else {
                    quote!(())
                };
                match v.named {
                    true => {
                        let m = &f.member;
                        quote!(#m: #t)
                    }
                    false => t,
                }
            });
            match v.named {
                true => quote!(#name { #(#decls),* }),
                false => quote!(#name(#(#decls),*)),
            }
        });
        quote! {
            #[doc = #doc]
            #vis enum #tangent <#params> #where_clause {
                /// The zero tangent, of any variant.
                Zero,
                #(#variants,)*
            }
        }
    }

    /// `match self { Zero => Zero, V(a..) => V(make(a)..) }` over the tangent's variants.
    fn map_tangent(&self, make: impl Fn(&TokenStream) -> TokenStream) -> TokenStream {
        let owner = quote!(Self);
        let arms = self.differentiated().map(|v| {
            let pat = v.tangent(&owner, &quote!(_), |k| bind("a", k));
            let out = v.tangent(&owner, &quote!(()), |k| make(&bind("a", k)));
            quote!(#pat => #out,)
        });
        quote!(match self { Self::Zero => Self::Zero, #(#arms)* })
    }

    /// `Clone`, `Debug`, `TangentVector` and the operators of the tangent enum.
    fn tangent_impls(&self) -> TokenStream {
        let (tangent, where_clause) = (&self.tangent, &self.where_clause);
        let (impl_generics, ty_generics, _) = self.generics.split_for_impl();
        let clone = self.map_tangent(|a| quote!(::core::clone::Clone::clone(#a)));
        let scaled = self.map_tangent(|a| quote!(::adjoint::TangentVector::scaled(#a, factor)));
        let settled = self.map_tangent(|a| quote!(::adjoint::TangentVector::settled(#a)));
        let owner = quote!(Self);
        let sums = self.differentiated().map(|v| {
            let (a, b) = (
                v.tangent(&owner, &quote!(_), |k| bind("a", k)),
                v.tangent(&owner, &quote!(_), |k| bind("b", k)),
            );
            let sum = v.tangent(&owner, &quote!(()), |k| {
                let (a, b) = (bind("a", k), bind("b", k));
                quote!(::adjoint::TangentVector::plus(#a, #b))
            });
            quote!((#a, #b) => #sum,)
        });
        let message = format!(
            "{tangent}: the tangents of two different variants were added; a derivative rule returned the tangent of a variant the value does not have"
        );
        let debug = self.debug_impl();
        let operators = operator_impls(tangent, self.generics, where_clause);
        quote! {
            impl #impl_generics ::core::clone::Clone for #tangent #ty_generics #where_clause {
                fn clone(&self) -> Self {
                    #clone
                }
            }

            #debug

            impl #impl_generics ::adjoint::TangentVector for #tangent #ty_generics #where_clause {
                fn zero() -> Self {
                    Self::Zero
                }
                #[allow(unreachable_patterns)]
                fn plus(self, other: Self) -> Self {
                    match (self, other) {
                        (Self::Zero, other) => other,
                        (this, Self::Zero) => this,
                        #(#sums)*
                        _ => ::core::panic!(#message),
                    }
                }
                fn scaled(self, factor: f64) -> Self {
                    #scaled
                }
                fn settled(self) -> Self {
                    #settled
                }
            }

            #operators
        }
    }

    /// `Debug` for the tangent enum, as `#[derive(Debug)]` would print it.
    fn debug_impl(&self) -> TokenStream {
        let tangent = &self.tangent;
        let (impl_generics, ty_generics, _) = self.generics.split_for_impl();
        let mut where_clause = self.where_clause.clone();
        for f in self
            .variants
            .iter()
            .flat_map(|v| &v.fields)
            .filter(|f| f.differentiable)
        {
            let ty = &f.ty;
            where_clause.predicates.push(
                parse_quote!(<#ty as ::adjoint::Differentiable>::Tangent: ::core::fmt::Debug),
            );
        }
        let owner = quote!(Self);
        let arms = self.differentiated().map(|v| {
            let pat = v.tangent(&owner, &quote!(_), |k| bind("a", k));
            let label = v.name.to_string();
            let parts = v
                .fields
                .iter()
                .enumerate()
                .filter(|(_, f)| f.differentiable);
            let body = if v.named {
                let fields = parts.map(|(k, f)| {
                    let (name, a) = (&f.label, bind("a", k));
                    quote!(.field(#name, #a))
                });
                quote!(f.debug_struct(#label) #(#fields)* .finish())
            } else {
                let fields = parts.map(|(k, _)| {
                    let a = bind("a", k);
                    quote!(.field(#a))
                });
                quote!(f.debug_tuple(#label) #(#fields)* .finish())
            };
            quote!(#pat => #body,)
        });
        quote! {
            impl #impl_generics ::core::fmt::Debug for #tangent #ty_generics #where_clause {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    match self {
                        Self::Zero => f.write_str("Zero"),
                        #(#arms)*
                    }
                }
            }
        }
    }

    /// `impl Differentiable`: `move_by` payload by payload, `zero_tangent` of the variant.
    fn differentiable_impl(&self) -> TokenStream {
        let (name, where_clause) = (self.name, &self.where_clause);
        let (impl_generics, ty_generics, _) = self.generics.split_for_impl();
        let tangent = self.tangent_path();
        let value = quote!(Self);
        let holes = |f: &Field, k: usize| match f.differentiable {
            true => bind("x", k),
            false => quote!(_),
        };
        let moves = self.differentiated().map(|v| {
            let x = v.build(&value, false, holes);
            let t = v.tangent(&tangent, &quote!(_), |k| bind("t", k));
            let steps = v
                .fields
                .iter()
                .enumerate()
                .filter(|(_, f)| f.differentiable)
                .map(|(k, _)| {
                    let (x, t) = (bind("x", k), bind("t", k));
                    quote!(::adjoint::Differentiable::move_by(#x, #t);)
                });
            quote!((#x, #t) => { #(#steps)* })
        });
        let zeros = self.differentiated().map(|v| {
            let x = v.build(&value, false, holes);
            let zero = v.tangent(&tangent, &quote!(()), |k| {
                let x = bind("x", k);
                quote!(::adjoint::Differentiable::zero_tangent(#x))
            });
            quote!(#x => #zero,)
        });
        let message = format!("{name}::move_by: a tangent of another variant than the value's");
        quote! {
            impl #impl_generics ::adjoint::Differentiable for #name #ty_generics #where_clause {
                type Tangent = #tangent;
                #[allow(unreachable_patterns)]
                fn move_by(&mut self, tangent: &Self::Tangent) {
                    match (self, tangent) {
                        (_, #tangent::Zero) => {}
                        #(#moves)*
                        _ => ::core::panic!(#message),
                    }
                }
                #[allow(unreachable_patterns)]
                fn zero_tangent(&self) -> Self::Tangent {
                    match self {
                        #(#zeros)*
                        _ => #tangent::Zero,
                    }
                }
            }

            impl #impl_generics ::adjoint::__private::DifferentiableEnum for #name #ty_generics #where_clause {}
        }
    }
}
