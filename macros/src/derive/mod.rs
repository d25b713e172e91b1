//! `#[derive(Differentiable)]` for structs: a tangent struct with the same fields (`MlpTangent`
//! for `Mlp`), its vector-space operations, `move_by`, and the accessors differentiable code
//! uses to read fields of an active value.
//!
//! For `struct Mlp<B> { w: Tensor<B>, #[no_derivative] name: String }` it writes:
//!
//! * `pub struct MlpTangent<B> { pub w: <Tensor<B> as Differentiable>::Tangent }` (a tuple
//!   struct keeps its positions: a `#[no_derivative]` field's tangent is `()`), with `Clone`,
//!   `Debug`, [`TangentVector`](adjoint::TangentVector), `+`, `+=`, `-`, `*` by `f64`;
//! * `impl Differentiable for Mlp<B>` with `move_by` field by field;
//! * for each differentiated named field, a hidden method `__field_w_vjp_full(&self, needs)`:
//!   the rule of reading `mlp.w` (its pullback puts the field's tangent into an otherwise
//!   zero `MlpTangent`); for a tuple struct, `Component<I>` on the tangent, the rule of `t.0`.

mod enums;

use crate::emit::names;
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, Index, Type, parse_quote, parse_quote_spanned};

/// One field of the struct.
struct Field {
    /// `w` for a named field, `0` for a tuple field.
    member: TokenStream,
    /// The name for generated items: `w`, or `0` for tuple fields.
    label: String,
    ty: Type,
    vis: syn::Visibility,
    differentiable: bool,
}

/// Expands `#[derive(Differentiable)]`.
pub fn expand(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let data = match &input.data {
        Data::Struct(data) => data,
        Data::Enum(data) => return enums::expand(&input, data),
        Data::Union(_) => {
            return syn::Error::new(
                input.ident.span(),
                "#[derive(Differentiable)] applies to structs and enums, not unions",
            )
            .to_compile_error();
        }
    };
    let named = matches!(data.fields, Fields::Named(_));
    let fields = read_fields(&data.fields);
    let name = &input.ident;
    let tangent = format_ident!("{}Tangent", name, span = name.span());
    let mut where_clause = input
        .generics
        .where_clause
        .clone()
        .unwrap_or_else(|| parse_quote!(where));
    for f in fields.iter().filter(|f| f.differentiable) {
        let ty = &f.ty;
        where_clause
            .predicates
            .push(parse_quote_spanned!(ty.span()=> #ty: ::adjoint::Differentiable));
    }
    let diff: Vec<&Field> = fields.iter().filter(|f| f.differentiable).collect();
    let shape = Shape {
        name,
        tangent: &tangent,
        vis: &input.vis,
        generics: &input.generics,
        where_clause: &where_clause,
        fields: &fields,
        named,
    };
    let tangent_def = tangent_struct(&shape);
    let tangent_impls = shape.tangent_impls();
    let differentiable = shape.differentiable_impl();
    let accessors = accessors(&shape);
    let parameters = parameters_impl(name, &input.generics, &where_clause, &diff);
    quote! {
        #tangent_def
        #tangent_impls
        #differentiable
        #accessors
        #parameters
    }
}

/// The fields in declaration order; `#[no_derivative]` ones are kept (the tangent struct keeps
/// their positions) but not differentiated.
fn read_fields(fields: &Fields) -> Vec<Field> {
    fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let (member, label) = match &f.ident {
                Some(id) => (quote!(#id), id.to_string()),
                None => {
                    let index = Index::from(i);
                    (quote!(#index), i.to_string())
                }
            };
            let differentiable = !f.attrs.iter().any(|a| a.path().is_ident("no_derivative"));
            Field {
                member,
                label,
                ty: f.ty.clone(),
                vis: f.vis.clone(),
                differentiable,
            }
        })
        .collect()
}

/// What the impls of a derive are written from: the struct, its tangent struct's name, the
/// where clause with a `Differentiable` bound per differentiated field, and the fields.
#[derive(Clone, Copy)]
struct Shape<'a> {
    name: &'a Ident,
    tangent: &'a Ident,
    vis: &'a syn::Visibility,
    generics: &'a syn::Generics,
    where_clause: &'a syn::WhereClause,
    fields: &'a [Field],
    named: bool,
}

impl Shape<'_> {
    /// The members of the differentiated fields.
    fn members(&self) -> Vec<&TokenStream> {
        self.fields
            .iter()
            .filter(|f| f.differentiable)
            .map(|f| &f.member)
            .collect()
    }

    /// `Self { f: make(f), .. }` (or `Self(..)`) over the tangent's fields.
    fn each(&self, make: impl Fn(&TokenStream) -> TokenStream) -> TokenStream {
        tangent_fields(self.fields, self.named, make)
    }

    /// The tangent struct's `Clone`, `Debug`, `TangentVector` (field by field: zero, plus,
    /// plus_assign, scaled) and the operators `+`, `+=`, `-` and `* f64` built on them.
    fn tangent_impls(&self) -> TokenStream {
        let Shape {
            tangent,
            where_clause,
            ..
        } = self;
        let (impl_generics, ty_generics, _) = self.generics.split_for_impl();
        let members = self.members();
        let labels = self
            .fields
            .iter()
            .filter(|f| f.differentiable)
            .map(|f| &f.label);
        let tangent_name = tangent.to_string();
        let zero_fields = self.each(|_| quote!(::adjoint::TangentVector::zero()));
        let plus_fields = self.each(|m| quote!(::adjoint::TangentVector::plus(self.#m, other.#m)));
        let scaled_fields =
            self.each(|m| quote!(::adjoint::TangentVector::scaled(self.#m, factor)));
        let settled_fields = self.each(|m| quote!(::adjoint::TangentVector::settled(self.#m)));
        let clone_fields = self.each(|m| quote!(::core::clone::Clone::clone(&self.#m)));
        let operators = operator_impls(tangent, self.generics, where_clause);
        let mut debug_where = (*where_clause).clone();
        for f in self.fields.iter().filter(|f| f.differentiable) {
            let ty = &f.ty;
            debug_where.predicates.push(
                parse_quote!(<#ty as ::adjoint::Differentiable>::Tangent: ::core::fmt::Debug),
            );
        }
        quote! {
            impl #impl_generics ::core::clone::Clone for #tangent #ty_generics #where_clause {
                fn clone(&self) -> Self {
                    Self #clone_fields
                }
            }

            impl #impl_generics ::core::fmt::Debug for #tangent #ty_generics #debug_where {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    let mut s = f.debug_struct(#tangent_name);
                    #(s.field(#labels, &self.#members);)*
                    s.finish()
                }
            }

            impl #impl_generics ::adjoint::TangentVector for #tangent #ty_generics #where_clause {
                fn zero() -> Self {
                    Self #zero_fields
                }
                fn plus(self, other: Self) -> Self {
                    Self #plus_fields
                }
                fn plus_assign(&mut self, other: Self) {
                    #(::adjoint::TangentVector::plus_assign(&mut self.#members, other.#members);)*
                }
                fn scaled(self, factor: f64) -> Self {
                    Self #scaled_fields
                }
                fn settled(self) -> Self {
                    Self #settled_fields
                }
            }

            #operators
        }
    }

    /// `impl Differentiable for Name`: `move_by` and `zero_tangent` field by field.
    fn differentiable_impl(&self) -> TokenStream {
        let Shape {
            name,
            tangent,
            where_clause,
            ..
        } = self;
        let (impl_generics, ty_generics, _) = self.generics.split_for_impl();
        let members = self.members();
        let zero_tangent_fields =
            self.each(|m| quote!(::adjoint::Differentiable::zero_tangent(&self.#m)));
        quote! {
            impl #impl_generics ::adjoint::Differentiable for #name #ty_generics #where_clause {
                type Tangent = #tangent #ty_generics;
                fn move_by(&mut self, tangent: &Self::Tangent) {
                    #(::adjoint::Differentiable::move_by(&mut self.#members, &tangent.#members);)*
                }
                fn zero_tangent(&self) -> Self::Tangent {
                    #tangent #zero_tangent_fields
                }
            }
        }
    }
}

/// The names of the generic parameters, for the `use<..>` of an accessor's pullback.
fn captured(generics: &syn::Generics) -> Vec<TokenStream> {
    generics
        .params
        .iter()
        .map(|p| match p {
            syn::GenericParam::Type(t) => t.ident.to_token_stream(),
            syn::GenericParam::Const(c) => c.ident.to_token_stream(),
            syn::GenericParam::Lifetime(l) => l.lifetime.to_token_stream(),
        })
        .collect()
}

/// The operators of a tangent type: `+`, `+=`, `-` and `* f64`, through `TangentVector`.
fn operator_impls(
    tangent: &Ident,
    generics: &syn::Generics,
    where_clause: &syn::WhereClause,
) -> TokenStream {
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    quote! {
        impl #impl_generics ::core::ops::Add for #tangent #ty_generics #where_clause {
            type Output = Self;
            fn add(self, other: Self) -> Self {
                ::adjoint::TangentVector::plus(self, other)
            }
        }

        impl #impl_generics ::core::ops::AddAssign for #tangent #ty_generics #where_clause {
            fn add_assign(&mut self, other: Self) {
                ::adjoint::TangentVector::plus_assign(self, other);
            }
        }

        impl #impl_generics ::core::ops::Sub for #tangent #ty_generics #where_clause {
            type Output = Self;
            fn sub(self, other: Self) -> Self {
                ::adjoint::TangentVector::plus(self, ::adjoint::TangentVector::scaled(other, -1.0))
            }
        }

        impl #impl_generics ::core::ops::Mul<f64> for #tangent #ty_generics #where_clause {
            type Output = Self;
            fn mul(self, factor: f64) -> Self {
                ::adjoint::TangentVector::scaled(self, factor)
            }
        }
    }
}

/// `impl Parameters<B>` visiting the differentiated fields in declaration order, each under
/// its name (or position).
fn parameters_impl(
    name: &Ident,
    generics: &syn::Generics,
    where_clause: &syn::WhereClause,
    fields: &[&Field],
) -> TokenStream {
    let (_, ty_generics, _) = generics.split_for_impl();
    let mut extended = generics.clone();
    extended
        .params
        .insert(0, parse_quote!(__B: ::adjoint::Backend));
    let (impl_generics, _, _) = extended.split_for_impl();
    let mut where_clause = where_clause.clone();
    for f in fields {
        let ty = &f.ty;
        where_clause
            .predicates
            .push(parse_quote!(#ty: ::adjoint::Parameters<__B>));
    }
    let members: Vec<&TokenStream> = fields.iter().map(|f| &f.member).collect();
    let labels: Vec<&String> = fields.iter().map(|f| &f.label).collect();
    // `visit_mut` and `visit_grad_mut` walk the fields last first (see `Parameters::visit_mut`).
    let members_rev: Vec<&TokenStream> = members.iter().rev().copied().collect();
    let labels_rev: Vec<&String> = labels.iter().rev().copied().collect();
    quote! {
        impl #impl_generics ::adjoint::Parameters<__B> for #name #ty_generics #where_clause {
            fn visit(
                &self,
                path: &mut ::adjoint::ParamPath,
                f: &mut dyn FnMut(&str, &::adjoint::Tensor<__B>),
            ) {
                #(path.with(#labels, |p| ::adjoint::Parameters::<__B>::visit(&self.#members, p, f));)*
            }
            fn visit_mut(
                &mut self,
                grad: &Self::Tangent,
                path: &mut ::adjoint::ParamPath,
                f: &mut ::adjoint::GradVisitor<'_, __B>,
            ) {
                #(path.with(#labels_rev, |p| ::adjoint::Parameters::<__B>::visit_mut(&mut self.#members_rev, &grad.#members_rev, p, f));)*
            }
            fn visit_each_mut(
                &mut self,
                path: &mut ::adjoint::ParamPath,
                f: &mut dyn FnMut(&str, &mut ::adjoint::Tensor<__B>),
            ) {
                #(path.with(#labels, |p| ::adjoint::Parameters::<__B>::visit_each_mut(&mut self.#members, p, f));)*
            }
            fn visit_grad_mut(
                &self,
                grad: &mut Self::Tangent,
                path: &mut ::adjoint::ParamPath,
                f: &mut ::adjoint::GradMutVisitor<'_, __B>,
            ) {
                #(path.with(#labels_rev, |p| ::adjoint::Parameters::<__B>::visit_grad_mut(&self.#members_rev, &mut grad.#members_rev, p, f));)*
            }
        }
    }
}

/// The tangent struct's definition.
fn tangent_struct(shape: &Shape) -> TokenStream {
    let Shape {
        tangent,
        vis,
        generics,
        where_clause,
        fields,
        named,
        ..
    } = *shape;
    let params = &generics.params;
    let doc = format!(
        " The tangent of [`{}`]: one tangent per differentiated field.",
        tangent.to_string().trim_end_matches("Tangent")
    );
    let decls = fields.iter().filter_map(|f| {
        let (ty, fvis) = (&f.ty, &f.vis);
        match (named, f.differentiable) {
            (true, true) => {
                let member = &f.member;
                Some(quote!(#fvis #member: <#ty as ::adjoint::Differentiable>::Tangent))
            }
            (true, false) => None,
            (false, true) => Some(quote!(#fvis <#ty as ::adjoint::Differentiable>::Tangent)),
            (false, false) => Some(quote!(#fvis ())),
        }
    });
    if named {
        quote! {
            #[doc = #doc]
            #vis struct #tangent <#params> #where_clause { #(#decls,)* }
        }
    } else {
        quote! {
            #[doc = #doc]
            #vis struct #tangent <#params> (#(#decls,)*) #where_clause;
        }
    }
}

/// `{ a: expr(a), .. }` or `(expr(0), .., ())` over the tangent's fields.
fn tangent_fields(
    fields: &[Field],
    named: bool,
    expr: impl Fn(&TokenStream) -> TokenStream,
) -> TokenStream {
    if named {
        let parts = fields.iter().filter(|f| f.differentiable).map(|f| {
            let m = &f.member;
            let e = expr(m);
            quote!(#m: #e)
        });
        quote!({ #(#parts,)* })
    } else {
        let parts = fields.iter().map(|f| {
            if f.differentiable {
                expr(&f.member)
            } else {
                quote!(())
            }
        });
        quote!((#(#parts,)*))
    }
}

/// Field reads of an active value: accessor rules for named fields, `Component<I>` for tuple
/// fields.
fn accessors(shape: &Shape) -> TokenStream {
    if shape.named {
        field_accessors(shape)
    } else {
        components(shape)
    }
}

/// `Component<I>` on the tangent of a tuple struct for each differentiated field: the rule of
/// reading `t.I` is the generic component rule.
fn components(shape: &Shape) -> TokenStream {
    let (tangent, where_clause) = (shape.tangent, shape.where_clause);
    let (impl_generics, ty_generics, _) = shape.generics.split_for_impl();
    let differentiated = shape
        .fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.differentiable);
    let parts = differentiated.map(|(i, f)| {
        let (ty, member) = (&f.ty, &f.member);
        quote! {
            impl #impl_generics ::adjoint::__private::Component<#i> for #tangent #ty_generics #where_clause {
                type Part = <#ty as ::adjoint::Differentiable>::Tangent;
                fn from_component(part: Self::Part) -> Self {
                    let mut t = <Self as ::adjoint::TangentVector>::zero();
                    t.#member = part;
                    t
                }
                fn take_component(&mut self) -> Self::Part {
                    ::core::mem::replace(&mut self.#member, ::adjoint::TangentVector::zero())
                }
            }
        }
    });
    quote!(#(#parts)*)
}

/// For each named field `w`, the hidden accessor rule `__field_w_vjp_full(&self, needs)`.
fn field_accessors(shape: &Shape) -> TokenStream {
    let Shape {
        name,
        tangent,
        generics,
        where_clause,
        fields,
        ..
    } = *shape;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    let captured = captured(generics);
    // Differentiated fields first, then the `#[no_derivative]` ones: read from an active
    // struct, such a field is data, and its accessor's pullback takes `Dropped`, which absorbs
    // whatever its consumers hand back.
    let ordered = (fields.iter().filter(|f| f.differentiable))
        .chain(fields.iter().filter(|f| !f.differentiable));
    let methods = ordered.map(|f| {
        let (ty, member) = (&f.ty, &f.member);
        let method = names::full_method(&format_ident!(
            "__field_{}",
            f.label,
            span = Span::call_site()
        ));
        let comma = f.differentiable.then(|| quote!(,));
        let (needs, seed, pullback) = if f.differentiable {
            (
                quote!(needs),
                quote!(<#ty as ::adjoint::Differentiable>::Tangent),
                quote!(move |d| {
                    let mut t = <#tangent #ty_generics as ::adjoint::TangentVector>::zero();
                    if needs[0] {
                        t.#member = d;
                    }
                    (t,)
                }),
            )
        } else {
            (
                quote!(_needs),
                quote!(::adjoint::__private::Dropped),
                quote!(move |_| {
                    (<#tangent #ty_generics as ::adjoint::TangentVector>::zero(),)
                }),
            )
        };
        // The `Clone` bound is higher-ranked, so that a field type without `Clone` is an
        // error only where differentiable code reads the field, not at the derive.
        quote! {
            #[doc(hidden)]
            #[allow(clippy::type_complexity)]
            pub fn #method(
                &self,
                #needs: [bool; 1],
            ) -> (
                #ty,
                impl use<#(#captured),*> + FnOnce(#seed) -> (#tangent #ty_generics,) #comma
            )
            where
                for<'__adjoint> #ty: ::core::clone::Clone,
            {
                (::core::clone::Clone::clone(&self.#member), #pullback)
            }
        }
    });
    // Forward mode reads a field's tangent through the tangent struct: `Some(&t.w)` for a
    // differentiated field, `None` (no tangent: data) for a `#[no_derivative]` one, which the
    // tangent struct does not have.
    let tangent_reads = fields.iter().map(|f| {
        let (ty, member) = (&f.ty, &f.member);
        let method = format_ident!("__tangent_{}", f.label, span = Span::call_site());
        if f.differentiable {
            quote! {
                #[doc(hidden)]
                #[inline(always)]
                pub fn #method(&self) -> ::core::option::Option<&<#ty as ::adjoint::Differentiable>::Tangent> {
                    ::core::option::Option::Some(&self.#member)
                }
            }
        } else {
            quote! {
                #[doc(hidden)]
                #[inline(always)]
                pub fn #method(&self) -> ::core::option::Option<&#ty> {
                    ::core::option::Option::None
                }
            }
        }
    });
    quote! {
        impl #impl_generics #name #ty_generics #where_clause {
            #(#methods)*
        }

        impl #impl_generics #tangent #ty_generics #where_clause {
            #(#tangent_reads)*
        }
    }
}
