//! The reverse pass: walks the useful nodes of the adjoint graph from last to first, calls
//! each stored pullback once with the sum of the partials its uses contributed, and hands the
//! results to the operands. Each use of a value gets its own partial and the partials are
//! summed once, at the definition: no zero tangent is materialised for a value with one use.

use crate::graph::{Act, Graph, NodeKind};
use crate::signature::FnSignature;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{Block, Ident};

/// The body of the uniform companion: the rewritten forward pass, then the pullback closure.
pub fn full_body(
    sig: &FnSignature,
    graph: &Graph,
    useful: &[bool],
    result: &Act,
    forward: &Block,
    pullbacks: &[Ident],
) -> TokenStream {
    let ret_tangent = sig.ret_tangent();
    let slots = sig.slot_tuple();
    let reverse = reverse_pass(sig, graph, useful, result);
    let forward_stmts = &forward.stmts;
    quote! {{
        #[allow(unused_imports)]
        use ::adjoint::__private::FloatMethods as _;
        #(let #pullbacks;)*
        let __value = { #(#forward_stmts)* };
        (__value, move |__seed: #ret_tangent| -> #slots {
            #reverse
        })
    }}
}

fn reverse_pass(sig: &FnSignature, graph: &Graph, useful: &[bool], result: &Act) -> TokenStream {
    let mut partials: Vec<Vec<TokenStream>> = vec![Vec::new(); graph.nodes.len()];
    let mut out = TokenStream::new();
    match result {
        Act::Active(root) => partials[*root].push(quote!(__seed)),
        _ => out.extend(quote!(let _ = __seed;)),
    }
    for id in (0..graph.nodes.len()).rev().filter(|&id| useful[id]) {
        let adjoint = format_ident!("__d{}", id);
        match &graph.nodes[id].kind {
            NodeKind::Param(_) => continue,
            NodeKind::Rule {
                pullback,
                slots,
                span,
            } => {
                let sum = sum(std::mem::take(&mut partials[id]));
                let names: Vec<TokenStream> = slots
                    .iter()
                    .enumerate()
                    .map(|(j, s)| match s {
                        Some(_) => format_ident!("__s{}_{}", id, j).into_iter_tokens(),
                        None => quote!(_),
                    })
                    .collect();
                out.extend(quote! {
                    let #adjoint = #sum;
                    let (#(#names,)*) = #pullback(#adjoint);
                });
                for (j, slot) in slots.iter().enumerate() {
                    if let Some(operand) = slot {
                        let name = format_ident!("__s{}_{}", id, j);
                        partials[*operand]
                            .push(quote_spanned!(*span=> ::adjoint::__private::arg_tangent(#name)));
                    }
                }
            }
            NodeKind::Component { parent, index } => {
                let sum = sum(std::mem::take(&mut partials[id]));
                out.extend(quote!(let #adjoint = #sum;));
                partials[*parent]
                    .push(quote!(::adjoint::__private::from_component::<#index, _>(#adjoint)));
            }
            NodeKind::Tuple(parts) => {
                let sum = sum(std::mem::take(&mut partials[id]));
                let names: Vec<TokenStream> = parts
                    .iter()
                    .enumerate()
                    .map(|(j, p)| match p {
                        Some(_) => format_ident!("__c{}_{}", id, j).into_iter_tokens(),
                        None => quote!(_),
                    })
                    .collect();
                out.extend(quote! {
                    let #adjoint = #sum;
                    let (#(#names,)*) = #adjoint;
                });
                for (j, part) in parts.iter().enumerate() {
                    if let Some(operand) = part {
                        let name = format_ident!("__c{}_{}", id, j);
                        partials[*operand].push(quote!(#name));
                    }
                }
            }
        }
    }
    let outputs = sig.params.iter().enumerate().map(|(i, p)| {
        if !p.wrt {
            return quote!(::adjoint::__private::NoTangent);
        }
        let node = graph
            .nodes
            .iter()
            .position(|n| matches!(n.kind, NodeKind::Param(j) if j == i))
            .expect("every differentiated parameter has a node");
        let parts = std::mem::take(&mut partials[node]);
        if parts.is_empty() {
            let tangent = p.tangent_type();
            quote!(<#tangent as ::adjoint::TangentVector>::zero())
        } else {
            sum(parts)
        }
    });
    out.extend(quote!((#(#outputs,)*)));
    out
}

/// `a`, `plus(a, b)`, `plus(plus(a, b), c)`, ...; `zero()` for no partials.
fn sum(parts: Vec<TokenStream>) -> TokenStream {
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        return quote!(::adjoint::__private::zero());
    };
    parts.fold(first, |acc, p| quote!(::adjoint::__private::plus(#acc, #p)))
}

trait IntoIterTokens {
    fn into_iter_tokens(self) -> TokenStream;
}

impl IntoIterTokens for Ident {
    fn into_iter_tokens(self) -> TokenStream {
        quote!(#self)
    }
}
