//! Labelled blocks as one-pass loops: `'b: { s1; if c { break 'b; } s2 }` runs as
//! `'b: for _ in 0..1 { s1; if c { break 'b; } s2 }`, whose labelled exits the loop rewriting
//! then turns into flags (see [`super::labels`]), from any depth of the block.
//!
//! An unlabelled `break`/`continue` cannot leave a labelled block (rustc's E0695), so the loop
//! put in the block's place captures no exit of a loop around it; a `break 'outer` from inside
//! the block is a labelled exit like any other. A block or `loop` left with a value first
//! keeps it in a variable ([`super::values`]).

use syn::visit_mut::VisitMut;
use syn::{Block, Expr, parse_quote};

/// `body` with every labelled block that can be one rewritten as a one-pass labelled loop.
pub(super) fn blocks_as_loops(body: &Block) -> Block {
    let mut body = body.clone();
    BlocksAsLoops { fresh: 0 }.visit_block_mut(&mut body);
    body
}

struct BlocksAsLoops {
    /// Numbers the value variables of unlabelled loops left with `break value`.
    fresh: usize,
}

impl VisitMut for BlocksAsLoops {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        if let Some(plain) = super::values::without_value(e, &mut self.fresh) {
            // Its labelled block, if it is one, is left without a value now: once more.
            *e = plain;
            return self.visit_expr_mut(e);
        }
        let Expr::Block(block) = e else { return };
        let Some(label) = &block.label else { return };
        if super::values::left_with_value(&block.block, &label.name) {
            return;
        }
        let (label, body) = (label.clone(), block.block.clone());
        *e = parse_quote!(#label for _ in 0..1 #body);
    }
    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}
