//! Methods that reorder or overwrite a collection in place (`swap`, `reverse`, `fill`,
//! `sort_by`, `sort_unstable_by`, `sort_by_key`, `sort_unstable_by_key`), rewritten as the
//! element writes they amount to, which the lowering differentiates. A sort's permutation is
//! computed on a copy without derivative (it is piecewise constant), then applied:
//!
//! ```text
//! v.swap(i, j)       ⇒ { let (a, b) = (i, j); let x = v[a].clone(); let y = v[b].clone(); v[a] = y; v[b] = x; }
//! v.reverse()        ⇒ { let src = v.clone(); for k in 0..n { v[k] = src[n − 1 − k].clone(); } }
//! v.fill(x)          ⇒ { let x = x; for k in 0..v.len() { v[k] = x.clone(); } }
//! v.sort_by(cmp)     ⇒ { let keys = without_derivative(v.clone()); let mut f = comparator_for(&keys, cmp);
//!                        let mut order = (0..n).collect(); order.sort_by(|i, j| f(&keys[*i], &keys[*j]));
//!                        let src = v.clone(); for k in 0..n { v[k] = src[order[k]].clone(); } }
//! v.pop()            ⇒ if v.is_empty() { None } else { let n = v.len() − 1; let last = v[n].clone();
//!                        v.truncate(n); Some(last) }
//! ```
//!
//! (`truncate` and `push` on an active local are rules of their own: `vec_truncate`,
//! `vec_push`.)

use quote::quote;

/// The methods rewritten here: each writes elements of its receiver (so a loop calling one
/// changes the collection, `scan::assigned`).
pub const REORDERS: &[&str] = &[
    "swap",
    "reverse",
    "fill",
    "sort_by",
    "sort_unstable_by",
    "sort_by_key",
    "sort_unstable_by_key",
];

/// The methods that change a collection's length, each a rule or rewritten into one: `push`,
/// `pop` (a read and a `truncate`), `truncate`.
pub const RESIZES: &[&str] = &["push", "pop", "truncate"];

use syn::{Expr, parse_quote};

/// `receiver.method(args)` on the local `receiver` as element writes, if `method` is one of
/// this module's; `None` for any other call.
pub fn reordered(m: &syn::ExprMethodCall) -> Option<Expr> {
    let v = &m.receiver;
    let args: Vec<&Expr> = m.args.iter().collect();
    let permuted = |order: proc_macro2::TokenStream| -> Expr {
        parse_quote!({
            #order
            let __adjoint_source = #v.clone();
            for __adjoint_k in 0..__adjoint_order.len() {
                #v[__adjoint_k] = __adjoint_source[__adjoint_order[__adjoint_k]].clone();
            }
        })
    };
    // The user's closure is given its parameter types by `comparator_for` / `key_for` (from
    // the keys), then called on the keys at the two indices being compared.
    let keyed = |sort: proc_macro2::TokenStream,
                 typed: proc_macro2::TokenStream,
                 compare: proc_macro2::TokenStream| {
        permuted(quote! {
            let __adjoint_keys = ::adjoint::without_derivative(#v.clone());
            let mut __adjoint_f = #typed;
            let mut __adjoint_order: ::std::vec::Vec<usize> = (0..__adjoint_keys.len()).collect();
            __adjoint_order.#sort(|__adjoint_i, __adjoint_j| {
                let (__adjoint_a, __adjoint_b) = (&__adjoint_keys[*__adjoint_i], &__adjoint_keys[*__adjoint_j]);
                #compare
            });
        })
    };
    Some(match (m.method.to_string().as_str(), args.as_slice()) {
        ("swap", [i, j]) => parse_quote!({
            let (__adjoint_i, __adjoint_j) = (#i, #j);
            let __adjoint_a = #v[__adjoint_i].clone();
            let __adjoint_b = #v[__adjoint_j].clone();
            #v[__adjoint_i] = __adjoint_b;
            #v[__adjoint_j] = __adjoint_a;
        }),
        ("reverse", []) => permuted(quote! {
            let __adjoint_order: ::std::vec::Vec<usize> = (0..#v.len()).rev().collect();
        }),
        ("pop", []) => parse_quote!({
            if #v.is_empty() {
                ::core::option::Option::None
            } else {
                let __adjoint_n = #v.len() - 1;
                let __adjoint_last = #v[__adjoint_n].clone();
                #v.truncate(__adjoint_n);
                ::core::option::Option::Some(__adjoint_last)
            }
        }),
        ("fill", [x]) => parse_quote!({
            let __adjoint_value = #x;
            for __adjoint_k in 0..#v.len() {
                #v[__adjoint_k] = __adjoint_value.clone();
            }
        }),
        (sort @ ("sort_by" | "sort_unstable_by"), [cmp]) => {
            let sort = syn::Ident::new(sort, m.method.span());
            keyed(
                quote!(#sort),
                quote!(::adjoint::__private::comparator_for(&__adjoint_keys, #cmp)),
                quote!(__adjoint_f(__adjoint_a, __adjoint_b)),
            )
        }
        (sort @ ("sort_by_key" | "sort_unstable_by_key"), [key]) => {
            let sort = if sort == "sort_by_key" {
                quote!(sort_by)
            } else {
                quote!(sort_unstable_by)
            };
            keyed(
                sort,
                quote!(::adjoint::__private::key_for(&__adjoint_keys, #key)),
                quote!(::core::cmp::Ord::cmp(
                    &__adjoint_f(__adjoint_a),
                    &__adjoint_f(__adjoint_b)
                )),
            )
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    fn rewritten(tokens: proc_macro2::TokenStream) -> String {
        let m: syn::ExprMethodCall = syn::parse2(tokens).unwrap();
        reordered(&m)
            .map(|e| e.to_token_stream().to_string())
            .unwrap_or_default()
    }

    #[test]
    fn reorders_are_element_writes_and_others_are_left() {
        let out = rewritten(quote!(v.swap(0, k + 1)));
        assert!(out.contains("v [__adjoint_i] = __adjoint_b ;"), "{out}");
        let out = rewritten(quote!(v.sort_by(|a, b| a.partial_cmp(b).unwrap())));
        assert!(out.contains("without_derivative"), "{out}");
        assert!(out.contains("__adjoint_order . sort_by"), "{out}");
        assert!(
            out.contains(
                "v [__adjoint_k] = __adjoint_source [__adjoint_order [__adjoint_k]] . clone ()"
            ),
            "{out}"
        );
        assert!(rewritten(quote!(v.fill(x))).contains("for __adjoint_k in 0 .. v . len ()"));
        assert_eq!(rewritten(quote!(v.push(x))), "");
        assert_eq!(rewritten(quote!(v.swap(0))), "");
    }
}
