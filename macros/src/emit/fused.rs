//! The fallback of a fused site: the rules an affine expression would have had unfused.

use crate::patterns::affine::{Affine, Product};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

/// The closure of the unfused rules over the leaves `__l0, __l1, …` and their needs `__n`:
/// the products, the sums left to right, the activation, and a pullback from the result's
/// tangent to one tangent per leaf, as the unfused lowering would have emitted them. Only the
/// method names carry the user's spans (errors point at the `matmul`, `+` or `tanh` written);
/// the local names are call-site.
pub fn plain_rules(affine: &Affine<'_>) -> TokenStream {
    let (products, biases, pluses) = (&affine.products, affine.biases.len(), &affine.pluses);
    let act = affine.act.map(|(m, _)| m);
    let leaves = 2 * products.len() + biases;
    let l: Vec<Ident> = (0..leaves).map(|i| format_ident!("__l{}", i)).collect();
    let mut forward = Vec::new();
    let mut backward = Vec::new();
    // Each term's value and the leaves it covers.
    let mut terms: Vec<(TokenStream, std::ops::Range<usize>)> = Vec::new();
    for (k, product) in products.iter().enumerate() {
        let (a, b) = (&l[2 * k], &l[2 * k + 1]);
        let (p, q) = (format_ident!("__p{}", k), format_ident!("__q{}", k));
        let method = Ident::new("matmul_vjp_full", product.span);
        let n = [needs(2 * k..2 * k + 1), needs(2 * k + 1..2 * k + 2)];
        if product.transposed {
            // `a.matmul(&b.t())`: the rule of `t`, then the product with the transpose.
            let (bt, u) = (format_ident!("__bt{}", k), format_ident!("__u{}", k));
            let nb = &n[1];
            forward.push(quote!(let (#bt, #u) = #b.t_vjp_full([#nb]);));
            forward.push(quote!(let (#p, #q) = #a.#method(&#bt, [#(#n),*]);));
        } else {
            forward.push(quote!(let (#p, #q) = #a.#method(#b, [#(#n),*]);));
        }
        terms.push((quote!(#p), 2 * k..2 * k + 2));
    }
    for j in 0..biases {
        let i = 2 * products.len() + j;
        let leaf = &l[i];
        terms.push((quote!(#leaf), i..i + 1));
    }
    // The sums, left to right; their pullbacks run right to left.
    let t: Vec<Ident> = (0..terms.len())
        .map(|i| format_ident!("__t{}", i))
        .collect();
    let first = &terms[0].0;
    forward.push(quote!(let __s = #first;));
    for (i, (value, range)) in terms.iter().enumerate().skip(1) {
        let r = format_ident!("__r{}", i);
        let (left, right) = (needs(0..range.start), needs(range.clone()));
        let add = Ident::new("add_vjp", pluses[i - 1]);
        forward.push(quote!(
            let (__s, #r) = ::adjoint::__private::AddRule::#add(__s, #value, [#left, #right]);
        ));
    }
    let all = needs(0..leaves);
    let result = match act {
        Some(method) => {
            let rule = crate::emit::names::full_method(method);
            forward.push(quote!(let (__y, __ra) = __s.#rule([#all]);));
            let d = flow(&quote!(__d));
            backward.push(quote!(let (__d,) = __ra(__d); let __d = #d;));
            quote!(__y)
        }
        None => quote!(__s),
    };
    for i in (1..terms.len()).rev() {
        let (r, ti) = (format_ident!("__r{}", i), &t[i]);
        let d = flow(&quote!(__d));
        backward.push(quote!(let (__d, #ti) = #r(__d); let __d = #d;));
    }
    let t0 = &t[0];
    backward.push(quote!(let #t0 = __d;));
    let out = leaf_tangents(products, &t, &mut backward);
    let count = crate::emit::index(leaves);
    quote!(|(#(#l,)*), __n: [bool; #count]| {
        #(#forward)*
        (#result, move |__d| {
            // The seed as the fused site received it (a product not yet computed, say).
            let __d = ::adjoint::__private::settled(__d);
            #(#backward)*
            (#(#out,)*)
        })
    })
}

/// The tangents of the leaves from the terms' tangents `t`: a product's pullback gives its
/// two factors' (through the rule of `t` for a transposed one), another term's is its own.
/// Appends the pullback calls to `backward`.
fn leaf_tangents(
    products: &[Product<'_>],
    t: &[Ident],
    backward: &mut Vec<TokenStream>,
) -> Vec<TokenStream> {
    let mut out: Vec<TokenStream> = Vec::new();
    for (k, ti) in t.iter().enumerate() {
        if k < products.len() {
            let q = format_ident!("__q{}", k);
            let (ga, gb) = (
                format_ident!("__g{}", 2 * k),
                format_ident!("__g{}", 2 * k + 1),
            );
            let d = flow(ti);
            backward.push(quote!(let (#ga, #gb) = #q(#d);));
            if products[k].transposed {
                let (u, d) = (format_ident!("__u{}", k), flow(&gb));
                backward.push(quote!(let (#gb,) = #u(#d);));
            }
            out.extend([quote!(#ga), quote!(#gb)]);
        } else {
            out.push(quote!(#ti));
        }
    }
    out
}

/// A callee's tangent slot as the next rule's input, as `reverse.rs` passes it.
fn flow(t: &dyn quote::ToTokens) -> TokenStream {
    quote!(::adjoint::__private::settled(::adjoint::__private::arg_tangent(#t)))
}

/// Whether any leaf in `range` needs its tangent: `(false || __n[i] || ..)`.
fn needs(range: std::ops::Range<usize>) -> TokenStream {
    let flags = range
        .map(|i| {
            let i = crate::emit::index(i);
            quote!(__n[#i])
        })
        .collect();
    crate::emit::any(flags)
}
