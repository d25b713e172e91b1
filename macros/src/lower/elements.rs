//! Element reads of active collections: `x[i]`, `m[i][j]`, and `for x in xs.iter()` over them.

use crate::ir::graph::is_active;
use crate::ir::graph::{Act, NodeId, NodeKind};
use crate::lower::Lowering;
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, parse_quote};

impl Lowering<'_> {
    /// `base[i]` with an active `base`: the element's adjoint is added in place.
    pub(crate) fn index(&mut self, ix: &syn::ExprIndex) -> (Expr, Act) {
        if let Expr::Index(inner) = &*ix.expr {
            return self.index2(inner, ix);
        }
        let (base, act) = self.expr(&ix.expr);
        let (index, index_act) = self.expr(&ix.index);
        let mut out = ix.clone();
        out.expr = Box::new(base.clone());
        out.index = Box::new(index.clone());
        let rebuilt = Expr::Index(out);
        let Act::Active(parent) = act else {
            return (rebuilt, act);
        };
        if is_active(&index_act) {
            let message = "an index must be data, not an active value";
            return (rebuilt, Act::Poison(ix.index.span(), message.into()));
        }
        let base = self.read_place(&ix.expr, base);
        let read = quote!(::adjoint::__private::index_read(&#base, #index));
        self.element(parent, false, ix.span(), rebuilt, read)
    }

    /// `m[i][j]`, read as one element of `m` (not a copy of the row `m[i]`): its adjoint is
    /// added in place at `[i][j]`.
    pub(crate) fn index2(&mut self, inner: &syn::ExprIndex, ix: &syn::ExprIndex) -> (Expr, Act) {
        let (collection, act) = self.expr(&inner.expr);
        let (i, i_act) = self.expr(&inner.index);
        let (j, j_act) = self.expr(&ix.index);
        let rebuilt: Expr = parse_quote!(#collection[#i][#j]);
        let Act::Active(parent) = act else {
            return (rebuilt, act);
        };
        if is_active(&i_act) || is_active(&j_act) {
            let message = "an index must be data, not an active value";
            return (rebuilt, Act::Poison(ix.index.span(), message.into()));
        }
        let collection = self.read_place(&inner.expr, collection);
        let read = quote!(::adjoint::__private::index_read2(&#collection, #i, #j));
        self.element(parent, true, ix.span(), rebuilt, read)
    }

    /// The collection an element read borrows: `*r` for a followed reference `r`, else the
    /// rewritten expression.
    fn read_place(&self, original: &Expr, rewritten: Expr) -> TokenStream {
        match original {
            Expr::Path(p)
                if p.qself.is_none()
                    && p.path
                        .get_ident()
                        .is_some_and(|i| self.followed(&i.to_string()).is_some()) =>
            {
                self.place_of(p.path.get_ident().expect("checked"))
            }
            _ => rewritten.to_token_stream(),
        }
    }

    /// An element read of the active collection `parent`: `read` returns the element and its
    /// index record, kept in a hoisted `__ixN` for the reverse pass.
    pub(crate) fn element(
        &mut self,
        parent: NodeId,
        nested: bool,
        span: Span,
        rebuilt: Expr,
        read: TokenStream,
    ) -> (Expr, Act) {
        let record = format_ident!("__ix{}", self.graph.nodes.len());
        let id = self.graph.add(NodeKind::Index {
            base: parent,
            record: record.clone(),
            nested,
        });
        if !self.is_useful(id) {
            return (rebuilt, Act::Active(id));
        }
        self.hoisted.push(record.clone());
        let expr = Expr::Verbatim(quote_spanned!(span=> ({
            let (__value, __record) = #read;
            #record = __record;
            __value
        })));
        (expr, Act::Active(id))
    }
}
