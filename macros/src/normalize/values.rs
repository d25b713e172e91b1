//! Exits with a value: a `loop` left with `break v` (or `break 'l v`) and a labelled block
//! left with `break 'b v` keep the value in a variable and leave without one, so that the
//! rest of normalization sees plain exits:
//!
//! ```text
//! loop { s1; if c { break v; } s2 }  ⇒  { let mut __adjoint_value0 = None;
//!                                          loop { s1; if c { __adjoint_value0 = Some(v); break; } s2 }
//!                                          match __adjoint_value0 { Some(v) => v, None => unreachable!() } }
//! 'b: { s1; if c { break 'b v; } t }  ⇒  { let mut __adjoint_value_b = None;
//!                                          'b: { s1; if c { __adjoint_value_b = Some(v); break 'b; } __adjoint_value_b = Some(t); }
//!                                          match __adjoint_value_b { Some(v) => v, None => unreachable!() } }
//! ```
//!
//! `Some` passes the tangent through, as for `return` from a loop. A block whose tail
//! expression itself holds a `break 'b v` is left as it is (the lowering rejects it over
//! active values).

use proc_macro2::Span;
use quote::format_ident;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{Block, Expr, Ident, Lifetime, Stmt, parse_quote};

/// `e`, a `loop` or labelled block, rewritten to leave without a value if it is left with
/// one (`fresh` numbers the value variables of unlabelled loops); `None` when it is not, or
/// cannot be.
pub(super) fn without_value(e: &Expr, fresh: &mut usize) -> Option<Expr> {
    match e {
        Expr::Loop(lp) => {
            let label = lp.label.as_ref().map(|l| l.name.clone());
            let mut breaks = ValueBreaks::new(label.as_ref(), true, fresh);
            if !breaks.found(&lp.body) {
                return None;
            }
            let mut lp = lp.clone();
            breaks.visit_block_mut(&mut lp.body);
            Some(kept(&breaks.var, Expr::Loop(lp)))
        }
        Expr::Block(block) => {
            let label = block.label.as_ref()?.name.clone();
            let mut breaks = ValueBreaks::new(Some(&label), false, fresh);
            if !breaks.found(&block.block) {
                return None;
            }
            let mut block = block.clone();
            let tail = match block.block.stmts.last() {
                Some(Stmt::Expr(tail, None)) => Some(tail.clone()),
                _ => None,
            };
            if let Some(tail) = &tail {
                if breaks.found(&parse_quote!({ #tail })) {
                    return None;
                }
                block.block.stmts.pop();
            }
            breaks.visit_block_mut(&mut block.block);
            let var = &breaks.var;
            if let Some(tail) = tail {
                block.block.stmts.push(parse_quote!(#var = Some(#tail);));
            }
            Some(kept(var, Expr::Block(block)))
        }
        _ => None,
    }
}

/// Whether the labelled block `body` (label `label`) is left with `break 'label value`.
pub(super) fn left_with_value(body: &Block, label: &Lifetime) -> bool {
    ValueBreaks::new(Some(label), false, &mut 0).found(body)
}

/// `{ let mut var = None; construct; match var { Some(v) => v, None => unreachable!() } }`.
fn kept(var: &Ident, construct: Expr) -> Expr {
    parse_quote!({
        let mut #var = None;
        #construct;
        match #var {
            Some(__adjoint_v) => __adjoint_v,
            None => ::core::unreachable!("left only by `break` with a value"),
        }
    })
}

/// The `break` with a value of one loop or labelled block: unlabelled ones of its own level
/// (a loop's only), and those naming its label at any depth outside closures and items.
struct ValueBreaks<'l> {
    label: Option<&'l Lifetime>,
    is_loop: bool,
    /// Loops entered inside the construct: an unlabelled `break` there is theirs.
    depth: usize,
    var: Ident,
}

impl<'l> ValueBreaks<'l> {
    fn new(label: Option<&'l Lifetime>, is_loop: bool, fresh: &mut usize) -> Self {
        let var = match label {
            Some(l) => format_ident!("__adjoint_value_{}", l.ident),
            None => {
                *fresh += 1;
                Ident::new(&format!("__adjoint_value{}", *fresh - 1), Span::call_site())
            }
        };
        ValueBreaks {
            label,
            is_loop,
            depth: 0,
            var,
        }
    }

    fn targets(&self, b: &syn::ExprBreak) -> bool {
        self.targets_at(b, self.depth)
    }

    /// Whether `b`, inside `depth` loops of the construct, is one of these breaks.
    fn targets_at(&self, b: &syn::ExprBreak, depth: usize) -> bool {
        b.expr.is_some()
            && match &b.label {
                None => self.is_loop && depth == 0,
                Some(l) => Some(l) == self.label,
            }
    }

    /// Whether `body` has one of these breaks.
    fn found(&self, body: &Block) -> bool {
        struct Finder<'a, 'l>(&'a ValueBreaks<'l>, usize, bool);
        impl<'v> Visit<'v> for Finder<'_, '_> {
            fn visit_expr(&mut self, e: &'v Expr) {
                match e {
                    Expr::Break(b) => {
                        self.2 |= self.0.targets_at(b, self.1);
                        syn::visit::visit_expr(self, e);
                    }
                    Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) => {
                        self.1 += 1;
                        syn::visit::visit_expr(self, e);
                        self.1 -= 1;
                    }
                    Expr::Closure(_) => {}
                    _ => syn::visit::visit_expr(self, e),
                }
            }
            fn visit_item(&mut self, _: &'v syn::Item) {}
        }
        let mut finder = Finder(self, 0, false);
        finder.visit_block(body);
        finder.2
    }

    /// `var = Some(v); break 'label;` for `break 'label v`.
    fn assignment(&self, b: &syn::ExprBreak) -> (Stmt, Stmt) {
        let (var, value, label) = (&self.var, &b.expr, &b.label);
        (
            parse_quote!(#var = Some(#value);),
            parse_quote!(break #label;),
        )
    }
}

impl VisitMut for ValueBreaks<'_> {
    fn visit_block_mut(&mut self, block: &mut Block) {
        let mut stmts = Vec::with_capacity(block.stmts.len());
        for mut stmt in std::mem::take(&mut block.stmts) {
            match &stmt {
                Stmt::Expr(Expr::Break(b), _) if self.targets(b) => {
                    let (set, leave) = self.assignment(b);
                    stmts.extend([set, leave]);
                }
                _ => {
                    self.visit_stmt_mut(&mut stmt);
                    stmts.push(stmt);
                }
            }
        }
        block.stmts = stmts;
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            Expr::Break(b) if self.targets(b) => {
                let (set, leave) = self.assignment(b);
                *e = parse_quote!({ #set #leave });
            }
            Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) => {
                self.depth += 1;
                syn::visit_mut::visit_expr_mut(self, e);
                self.depth -= 1;
            }
            Expr::Closure(_) => {}
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}
