//! The reverse pass: walks the useful nodes of an adjoint graph from last to first, calls each
//! stored pullback once with the adjoint of its output, and hands the results to the operands.
//!
//! Adjoints are collected in two ways. A contribution known by name (an operand slot of a
//! pullback) is kept as a *partial* and the partials are summed once, at the definition, so a
//! value with one use never meets a zero. A contribution that must be added in place (an
//! element read `x[i]`, a branch or loop that accumulates into the adjoints of the values it
//! captured) goes into a `let mut` accumulator, created at the first such contribution.

use crate::ir::graph::{Act, Graph, NodeId, NodeKind};
use crate::ir::{Compiled, Pass};
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// Where the adjoint of an input (a `Param` node) goes once complete.
#[derive(Clone, Copy, Debug)]
pub enum Sink {
    /// Returned: slot `k` of the function's pullback, or carried value `k` of a loop
    /// iteration.
    Return(usize),
    /// Added into `*__in{k}`, an accumulator the enclosing code passed by `&mut`.
    Accumulate(usize),
}

/// The reverse code of a graph, and the expressions of the returned adjoints.
pub struct Reverse {
    pub code: TokenStream,
    pub returns: Vec<TokenStream>,
}

/// The reverse pass over a body compiled by the pipeline ([`crate::pipeline::compile_body`]):
/// [`reverse`] over its final pass's graph and useful nodes.
pub fn pullback<P: Pass>(
    compiled: &Compiled<P>,
    seeds: &[(Act, TokenStream)],
    sinks: &[Sink],
    carried: usize,
) -> Reverse {
    reverse(
        compiled.pass.graph(),
        &compiled.useful,
        seeds,
        sinks,
        carried,
    )
}

/// Writes the reverse pass. `seeds` gives, for each root, the expression of its adjoint;
/// `sinks[k]` says where the adjoint of input `k` goes; `returns` is the number of
/// [`Sink::Return`] slots.
fn reverse(
    graph: &Graph,
    useful: &[bool],
    seeds: &[(Act, TokenStream)],
    sinks: &[Sink],
    returns: usize,
) -> Reverse {
    let mut r = Writer {
        graph,
        partials: vec![Vec::new(); graph.nodes.len()],
        accumulators: vec![false; graph.nodes.len()],
        sinks,
        code: TokenStream::new(),
        inout_declared: Vec::new(),
    };
    for (act, seed) in seeds {
        match act {
            Act::Active(root) => r.partials[*root].push(seed.clone()),
            _ => r.code.extend(quote!(let _ = #seed;)),
        }
    }
    let mut returned = vec![None; returns];
    for id in (0..graph.nodes.len()).rev().filter(|&id| useful[id]) {
        match &graph.nodes[id].kind {
            NodeKind::Param(k) => match sinks[*k] {
                Sink::Return(slot) => returned[slot] = Some(r.total(id)),
                Sink::Accumulate(slot) => {
                    let parts = std::mem::take(&mut r.partials[id]);
                    if !parts.is_empty() {
                        let input = format_ident!("__in{}", slot);
                        let sum = sum(parts);
                        r.code
                            .extend(quote!(::adjoint::__private::plus_assign(#input, #sum);));
                    }
                }
            },
            kind => r.node(id, kind),
        }
    }
    let returns = returned
        .into_iter()
        .map(|t| t.unwrap_or_else(|| quote!(::adjoint::__private::zero())))
        .collect();
    Reverse {
        code: r.code,
        returns,
    }
}

struct Writer<'g> {
    graph: &'g Graph,
    partials: Vec<Vec<TokenStream>>,
    /// Whether node `i` has a `let mut __a{i}` accumulator.
    accumulators: Vec<bool>,
    sinks: &'g [Sink],
    code: TokenStream,
    /// The `&mut` tangents of inout call arguments already declared, as (call, slot).
    inout_declared: Vec<(NodeId, usize)>,
}

impl Writer<'_> {
    /// The complete adjoint of a node: its accumulator plus its partials.
    fn total(&mut self, id: NodeId) -> TokenStream {
        let mut parts = std::mem::take(&mut self.partials[id]);
        if self.accumulators[id] {
            let acc = format_ident!("__a{}", id);
            parts.insert(0, quote!(#acc));
        }
        sum(parts)
    }

    /// A `&mut` place to accumulate node `id`'s adjoint in.
    fn accumulator(&mut self, id: NodeId) -> TokenStream {
        if let NodeKind::Param(k) = self.graph.nodes[id].kind
            && let Sink::Accumulate(slot) = self.sinks[k]
        {
            let input = format_ident!("__in{}", slot);
            return quote!(&mut *#input);
        }
        let acc = format_ident!("__a{}", id);
        if !self.accumulators[id] {
            self.accumulators[id] = true;
            self.code
                .extend(quote!(let mut #acc = ::adjoint::__private::zero();));
        }
        quote!(&mut #acc)
    }

    fn node(&mut self, id: NodeId, kind: &NodeKind) {
        let adjoint = format_ident!("__d{}", id);
        let total = self.total(id);
        self.code.extend(quote!(let #adjoint = #total;));
        match kind {
            NodeKind::Param(_) => unreachable!("parameters are handled by their sink"),
            NodeKind::Rule {
                pullback,
                slots,
                spans,
                inout,
            } => self.rule(id, &adjoint, pullback, slots, spans, inout),
            NodeKind::InoutOut { call, slot } => {
                // The adjoint of the variable after the call seeds the call's `&mut` tangent.
                let acc = format_ident!("__io{}_{}", call, slot);
                self.code.extend(quote!(let mut #acc = #adjoint;));
                self.inout_declared.push((*call, *slot));
            }
            NodeKind::Component { parent, index } => {
                let index = crate::emit::index(*index);
                self.partials[*parent]
                    .push(quote!(::adjoint::__private::from_component::<#index, _>(#adjoint)));
            }
            NodeKind::Tuple(parts) => {
                let names = slot_names("__c", id, parts);
                self.code.extend(quote!(let (#(#names,)*) = #adjoint;));
                self.hand_out(&names, parts);
            }
            NodeKind::Elements { parts, vec } => {
                let names = slot_names("__c", id, parts);
                let n = parts.len();
                let source = if *vec {
                    quote!(::adjoint::__private::vec_parts::<_, #n>(#adjoint))
                } else {
                    quote!(#adjoint)
                };
                self.code.extend(quote!(let [#(#names,)*] = #source;));
                self.hand_out(&names, parts);
            }
            NodeKind::TupleStruct { parts } => self.tuple_struct(id, &adjoint, parts),
            NodeKind::Struct {
                witness,
                fields,
                parts,
            } => {
                // Typed, so that the fields of the tangent struct can be read.
                self.code.extend(
                    quote!(let #adjoint = ::adjoint::__private::struct_tangent(&#witness, #adjoint);),
                );
                let names: Vec<TokenStream> = fields.iter().map(|f| quote!(#adjoint.#f)).collect();
                self.hand_out(&names, parts);
            }
            NodeKind::Index {
                base,
                record,
                nested,
            } => {
                let acc = self.accumulator(*base);
                let accumulate = if *nested {
                    quote!(accumulate_at2)
                } else {
                    quote!(accumulate_at)
                };
                self.code
                    .extend(quote!(::adjoint::__private::#accumulate(#acc, #record, #adjoint);));
            }
            NodeKind::Region {
                pullback,
                accumulated,
                carried,
            } => self.region(id, &adjoint, pullback, accumulated, carried),
        }
    }

    /// A tuple struct's adjoint, taken apart component by component.
    fn tuple_struct(&mut self, id: NodeId, adjoint: &Ident, parts: &[Option<NodeId>]) {
        self.code.extend(quote!(let mut #adjoint = #adjoint;));
        let names: Vec<TokenStream> = parts
            .iter()
            .enumerate()
            .map(|(i, part)| {
                let name = format_ident!("__c{}_{}", id, i);
                if part.is_some() {
                    self.code.extend(quote!(let #name = ::adjoint::__private::take_component::<#i, _>(&mut #adjoint);));
                }
                quote!(#name)
            })
            .collect();
        self.hand_out(&names, parts);
    }

    /// A region's pullback, called with its outputs' adjoint and its inputs' accumulators;
    /// it returns the adjoints of the carried variables' initial values.
    fn region(
        &mut self,
        id: NodeId,
        adjoint: &Ident,
        pullback: &Ident,
        accumulated: &[NodeId],
        carried: &[Option<NodeId>],
    ) {
        let accs: Vec<TokenStream> = accumulated.iter().map(|&a| self.accumulator(a)).collect();
        let names = slot_names("__r", id, carried);
        self.code
            .extend(quote!(let (#(#names,)*) = #pullback(#adjoint, (#(#accs,)*));));
        self.hand_out(&names, carried);
    }

    /// Gives each part its adjoint, named in `names`, as a partial.
    fn hand_out(&mut self, names: &[TokenStream], parts: &[Option<NodeId>]) {
        for (name, part) in names.iter().zip(parts) {
            if let Some(operand) = part {
                self.partials[*operand].push(name.clone());
            }
        }
    }

    /// A rule's pullback call, and its slots handed to the operands (inout slots through the
    /// call's `&mut` tangents).
    fn rule(
        &mut self,
        id: NodeId,
        adjoint: &proc_macro2::Ident,
        pullback: &proc_macro2::Ident,
        slots: &[Option<NodeId>],
        spans: &[proc_macro2::Span],
        inout: &[usize],
    ) {
        let mut names = slot_names("__s", id, slots);
        let mut io = Vec::new();
        for &j in inout {
            names[j] = quote!(_);
            let acc = format_ident!("__io{}_{}", id, j);
            if !self.inout_declared.contains(&(id, j)) {
                self.code
                    .extend(quote!(let mut #acc = ::adjoint::__private::zero();));
            }
            io.push(acc);
        }
        // The seed in its final representation: a rule may read it more than once (the
        // pullback of `a + b` hands it to both operands), and a sum of products would then be
        // computed each time. A field read's pullback only moves its seed into the struct's
        // tangent: that seed stays as it is, so a weight's tangent reaches the caller (an
        // optimizer) as the product's operands. A fused layer's pullback takes an input's
        // tangent `z̄·Wᵀ` as the product's operands too, and computes it with its activation's
        // derivative applied (`core/src/ops/affine.rs`).
        let node = &self.graph.nodes[id];
        let seed = if node.field_read || node.takes_products {
            quote!(#adjoint)
        } else {
            quote!(::adjoint::__private::settled(#adjoint))
        };
        let call = if io.is_empty() {
            quote!(#pullback(#seed))
        } else {
            quote!(#pullback(#seed, (#(&mut #io,)*)))
        };
        self.code.extend(quote!(let (#(#names,)*) = #call;));
        for (j, (slot, span)) in slots.iter().zip(spans).enumerate() {
            let Some(operand) = slot else { continue };
            if inout.contains(&j) {
                // The `&mut` tangent now holds the adjoint of the value before the call.
                let acc = format_ident!("__io{}_{}", id, j);
                self.partials[*operand].push(quote!(#acc));
                continue;
            }
            // The braces carry the argument's span (the name keeps the macro's hygiene): a
            // tangent that cannot flow back (a `#[no_derivative]` parameter) is reported at the
            // argument. A field read converts to what its accessor takes (`Dropped` absorbs
            // anything).
            let name = format_ident!("__s{}_{}", id, j);
            let arg = quote_spanned!(*span=> { #name });
            let convert = if self.graph.nodes[*operand].field_read {
                quote!(field_partial)
            } else {
                quote!(arg_tangent)
            };
            self.partials[*operand]
                .push(quote_spanned!(*span=> ::adjoint::__private::#convert(#arg)));
        }
    }
}

fn slot_names(prefix: &str, id: NodeId, slots: &[Option<NodeId>]) -> Vec<TokenStream> {
    slots
        .iter()
        .enumerate()
        .map(|(j, s)| match s {
            Some(_) => {
                let name = format_ident!("{}{}_{}", prefix, id, j);
                quote!(#name)
            }
            None => quote!(_),
        })
        .collect()
}

/// `a`, `plus(a, b)`, `plus(plus(a, b), c)`, ...; `zero()` for no parts.
fn sum(parts: Vec<TokenStream>) -> TokenStream {
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        return quote!(::adjoint::__private::zero());
    };
    parts.fold(first, |acc, p| quote!(::adjoint::__private::plus(#acc, #p)))
}
