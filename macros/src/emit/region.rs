//! The reverse closures of regions (branch arms and loop bodies) and the nested `Branch`
//! values that hold the closure of the arm taken.

use crate::emit::reverse::{self, Reverse, Sink};
use crate::ir::graph::Act;
use crate::ir::{Compiled, Pass};
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

/// The reverse closure of a region body: `|seed, acc| -> carried`, where `seed` holds the
/// adjoints of the outputs (`roots`) and `acc` the accumulators of the free inputs.
pub fn closure<P: Pass>(
    compiled: &Compiled<P>,
    roots: &[Act],
    sinks: &[Sink],
    free: usize,
    carried: usize,
) -> TokenStream {
    let outs: Vec<Ident> = (0..roots.len())
        .map(|j| format_ident!("__o{}", j))
        .collect();
    let ins: Vec<Ident> = (0..free).map(|i| format_ident!("__in{}", i)).collect();
    let seeds: Vec<(Act, TokenStream)> = roots
        .iter()
        .zip(&outs)
        .map(|(r, o)| (r.clone(), quote!(#o)))
        .collect();
    let Reverse { code, returns } = reverse::pullback(compiled, &seeds, sinks, carried);
    let acc_ty = acc_type(free);
    quote!(move |__seed, __acc: #acc_ty| {
        let (#(#outs,)*) = __seed;
        let (#(#ins,)*) = __acc;
        #code
        (#(#returns,)*)
    })
}

/// `(&mut _, ...)`: annotating the accumulators makes the closures generic over the borrow's
/// lifetime, so that each call borrows the accumulators only for its duration.
pub fn acc_type(count: usize) -> TokenStream {
    let each = (0..count).map(|_| quote!(&mut _));
    quote!((#(#each,)*))
}

/// Arm `i` of `count` as a nested `Branch` value.
pub fn wrap(i: usize, count: usize, closure: TokenStream) -> TokenStream {
    let branch = quote!(::adjoint::__private::Branch);
    let mut out = if count == 1 {
        closure
    } else if i == count - 1 {
        quote!(#branch::Second(#closure))
    } else {
        quote!(#branch::First(#closure))
    };
    for _ in 0..i.min(count.saturating_sub(2)) {
        out = quote!(#branch::Second(#out));
    }
    out
}

/// Calls the closure stored in the nested `Branch` value `__p`.
pub fn dispatch(count: usize) -> TokenStream {
    let branch = quote!(::adjoint::__private::Branch);
    match count {
        0 | 1 => quote!(__p(__seed, __acc)),
        2 => {
            quote!(match __p { #branch::First(__p) => __p(__seed, __acc), #branch::Second(__p) => __p(__seed, __acc) })
        }
        _ => {
            let rest = dispatch(count - 1);
            quote!(match __p { #branch::First(__p) => __p(__seed, __acc), #branch::Second(__p) => #rest })
        }
    }
}
