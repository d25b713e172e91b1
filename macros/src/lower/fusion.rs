//! Lowering an affine expression ([`crate::patterns::affine`]) as one rule whose call is a
//! fused site (`core/src/ops/affine/site.rs`), with the unfused rules as its fallback.

use crate::ir::graph::is_inactive;
use crate::lower::Lowering;
use crate::patterns::affine::{Affine, Position};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Ident, parse_quote};

impl Lowering<'_> {
    /// A leaf as the site takes it, from its expression as written and as lowered.
    pub(crate) fn leaf(&self, position: Position, original: &Expr, lowered: &Expr) -> TokenStream {
        match position {
            Position::Receiver | Position::Argument { transposed: true } => quote!(&(#lowered)),
            Position::Argument { transposed: false } => quote!(#lowered),
            Position::Term => self.operand(original, lowered),
        }
    }

    /// Lowers an [`affine`] expression: one rule over its leaves, whose call is the fused
    /// site with the unfused rules as its fallback.
    pub(crate) fn affine(&mut self, pattern: Affine<'_>) -> (Expr, crate::ir::graph::Act) {
        let (mut leaves, mut acts, mut spans) = (Vec::new(), Vec::new(), Vec::new());
        let mut lowered = Vec::new();
        for (position, e) in pattern.leaves() {
            let (l, act) = self.expr(e);
            leaves.push(self.leaf(position, e, &l));
            lowered.push(l);
            acts.push(act);
            spans.push(e.span());
        }
        // The expression rebuilt from the lowered leaves: the value where no tangent is needed.
        let mut rebuilt_terms: Vec<TokenStream> = Vec::new();
        for (k, p) in pattern.products.iter().enumerate() {
            let (r, a) = (&lowered[2 * k], &lowered[2 * k + 1]);
            let method = Ident::new("matmul", p.span);
            rebuilt_terms.push(if p.transposed {
                quote!((#r).#method(&(#a).t()))
            } else {
                quote!((#r).#method(#a))
            });
        }
        for c in &lowered[2 * pattern.products.len()..] {
            rebuilt_terms.push(quote!((#c)));
        }
        let sum = rebuilt_terms
            .iter()
            .skip(1)
            .fold(rebuilt_terms[0].clone(), |s, t| quote!((#s + #t)));
        let rebuilt: Expr = match pattern.act {
            Some((method, _)) => parse_quote!((#sum).#method()),
            None => parse_quote!(#sum),
        };
        if acts.iter().all(is_inactive) {
            return (rebuilt, crate::ir::graph::Act::Inactive);
        }
        let span = pattern.span();
        let count = pattern.products.len();
        let transposed = pattern.transposed_mask();
        let epilogue = pattern.epilogue();
        let plain = crate::emit::fused::plain_rules(&pattern);
        let first = self.graph.nodes.len();
        let (expr, act) = self.rule(acts, spans, span, rebuilt, |n| {
            quote_spanned!(span=> {
                #[allow(unused_imports)]
                use ::adjoint::__private::FusedPlain as _;
                ::adjoint::__private::fused((#(#leaves,)*), [#(#n),*], #plain)
                    .operands()
                    .rule(#count, #transposed, ::adjoint::__private::Epilogue::#epilogue)
            })
        });
        // Both pullbacks of the fused site settle their seed themselves (`plain_rules`).
        if let crate::ir::graph::Act::Active(id) = act
            && id == first
        {
            self.graph.nodes[id].takes_products = true;
        }
        (expr, act)
    }
}
