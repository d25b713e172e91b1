//! Control-flow normalization: rewrites early `return`, `?`, `break` and `continue` into
//! structured code the lowering handles, before lowering (the original function is not
//! touched).
//!
//! The statements after a statement that may exit become its *continuation* and move into
//! each branch of that statement, where the exit simply ends the branch:
//!
//! ```text
//! s1; if c { return a; } s2; t        ⇒   s1; if c { a } else { s2; t }
//! for .. { s1; if c { continue; } s2 } ⇒   for .. { s1; if c { } else { s2 } }
//! for .. { s1; if c { break; } s2 }    ⇒   let mut brk = false;
//!                                          for .. { s1; if c { brk = true; } else { s2 } if brk { break; } }
//! let y = g(x)?; t                     ⇒   let q = g(x); match q { Ok(v) => { let y = v; t } Err(e) => Err(From::from(e)) }
//! for .. { if c { return a; } }; t    ⇒   let mut ret = None; let mut returned = false;
//!                                          for .. { if c { ret = Some(a); returned = true; brk = true; } .. }
//!                                          match ret { Some(r) => r, None => t }
//! ```
//!
//! The final `if brk { break; }` is recognised by the loop lowering, which emits it after the
//! iteration's pullback is recorded. `loop { .. }` is a loop whose only exit is such a flag.
//! `Some(x)`, `Ok(x)` and the patterns `Some(v)`, `Ok(v)` pass tangents through unchanged,
//! so these rewrites stay differentiable. `?` is rewritten for functions returning `Result`
//! or `Option`; its operand is evaluated before the rest of its statement. Labelled
//! `break 'l` / `continue 'l` set flags of their own ([`labels`]); a labelled block is first
//! made a one-pass labelled loop ([`blocks`]), and a `break value` keeps its value in a
//! variable ([`values`]). Not handled (reported by the lowering): a labelled block whose tail
//! expression holds its `break 'b value`, and exits inside `let` initialisers other than `?`.

mod blocks;
mod closures;
mod labels;
mod values;

use crate::patterns::loops::{BREAK_FLAG, Loop, is_loop};
use labels::{
    LoopCtx, guard, label_flag, label_flags, loop_labels, normalized, scan_idents, unlabelled,
};
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote};
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{Block, Expr, ExprIf, Ident, ReturnType, Stmt, Type, parse_quote};

/// What `?` means in the function: its return type's family.
#[derive(Clone, Copy, PartialEq)]
enum Family {
    Result,
    Option,
    Other,
}

/// Normalizes a function body; `output` is the function's return type.
pub fn normalize(body: &Block, output: &ReturnType) -> Block {
    let body = &blocks::blocks_as_loops(&crate::patterns::loops::pops_as_loops(
        &closures::inline_closures(body),
    ));
    let family = match output {
        ReturnType::Type(_, ty) => match &**ty {
            Type::Path(p) => match p
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .as_deref()
            {
                Some("Result") => Family::Result,
                Some("Option") => Family::Option,
                _ => Family::Other,
            },
            _ => Family::Other,
        },
        ReturnType::Default => Family::Other,
    };
    let mut n = Normalizer {
        fresh: 0,
        family,
        returns_in_loops: false,
        loop_labels: loop_labels(body),
    };
    let mut stmts = n.stmts(&body.stmts, None, true);
    if n.returns_in_loops {
        let mut prologue: Vec<Stmt> = vec![
            parse_quote!(let mut __adjoint_ret = None;),
            parse_quote!(let mut __adjoint_returned = false;),
        ];
        prologue.append(&mut stmts);
        stmts = prologue;
    }
    Block {
        brace_token: body.brace_token,
        stmts,
    }
}

struct Normalizer {
    fresh: usize,
    family: Family,
    returns_in_loops: bool,
    /// The labels of the body's loops (labelled blocks are loops by now, except those left
    /// with a value, which stay unsupported).
    loop_labels: Vec<String>,
}

impl Normalizer {
    /// Rewrites `stmts`; `top` is the function body's tail position (where `return e` becomes
    /// the value), `lp` the innermost loop.
    fn stmts(&mut self, stmts: &[Stmt], lp: Option<&LoopCtx>, top: bool) -> Vec<Stmt> {
        let mut out = Vec::new();
        for (i, stmt) in stmts.iter().enumerate() {
            let rest = &stmts[i + 1..];
            if self.family != Family::Other
                && let Some(split) = self.split_try(stmt, rest)
            {
                out.extend(self.stmts(&split, lp, top));
                return out;
            }
            if !exits(stmt.to_token_stream(), lp.is_some()) {
                let stmt = self.nested(stmt);
                let set = lp
                    .map(|lp| (lp, label_flags(&stmt)))
                    .filter(|(_, set)| !set.is_empty());
                out.push(stmt);
                if let Some((lp, set)) = set {
                    // A loop inside left this one's iteration (`continue 'l`) or a loop
                    // around it (`break 'outer`): the rest runs only if it did not.
                    let rest = self.stmts(rest, Some(lp), top);
                    out.extend(guard(lp, &set, rest));
                    return out;
                }
                continue;
            }
            if self.exit(stmt, rest, lp, top, &mut out) {
                return out;
            }
        }
        out
    }

    /// `stmt`, which may exit, followed by `rest`: appended to `out`, with `rest` moved into
    /// it or dropped after an exit; whether that ended the list.
    fn exit(
        &mut self,
        stmt: &Stmt,
        rest: &[Stmt],
        lp: Option<&LoopCtx>,
        top: bool,
        out: &mut Vec<Stmt>,
    ) -> bool {
        if self.loop_exit(stmt, lp, out) {
            return true;
        }
        match stmt {
            Stmt::Expr(Expr::Return(r), _) => {
                let value = r
                    .expr
                    .as_ref()
                    .map_or_else(|| quote!(()), |e| e.to_token_stream());
                match lp {
                    None if top => out.push(Stmt::Expr(parse_quote!(#value), None)),
                    None => out.push(stmt.clone()),
                    Some(lp) => {
                        self.returns_in_loops = true;
                        let flag = &lp.flag;
                        out.push(parse_quote!(__adjoint_ret = Some(#value);));
                        out.push(parse_quote!(__adjoint_returned = true;));
                        out.push(parse_quote!(#flag = true;));
                    }
                }
                true
            }
            Stmt::Expr(Expr::If(e), _) => {
                let rewritten = self.if_with_rest(e, rest, lp, top);
                out.push(Stmt::Expr(Expr::If(rewritten), end_semi(lp, top)));
                true
            }
            Stmt::Expr(Expr::Match(m), _) => {
                let mut m = m.clone();
                for arm in &mut m.arms {
                    let stmts = match &*arm.body {
                        Expr::Block(b) if b.label.is_none() => append(b.block.stmts.clone(), rest),
                        body => append(vec![Stmt::Expr(body.clone(), None)], rest),
                    };
                    let new = self.stmts(&stmts, lp, top);
                    *arm.body = parse_quote!({ #(#new)* });
                }
                out.push(Stmt::Expr(Expr::Match(m), end_semi(lp, top)));
                true
            }
            Stmt::Expr(e, _) if returns_inside_loop(e) => {
                // A loop that may return: run it, then the rest only if it did not.
                out.push(self.nested(stmt));
                // A `loop` that is the body's last statement and has no `break` of its
                // own is left only by `return`: nothing runs when it did not return.
                let only_returns = rest.is_empty()
                    && matches!(Loop::of(e), Some(Loop::Plain(l)) if !breaks(&l.body));
                let rest = self.stmts(rest, lp, top);
                let otherwise = if only_returns {
                    quote!(::core::unreachable!("a `loop` left only by `return`"))
                } else {
                    quote!({ #(#rest)* })
                };
                match lp {
                        None => out.push(Stmt::Expr(
                            parse_quote!(match __adjoint_ret { Some(__adjoint_r) => __adjoint_r, None => #otherwise }),
                            end_semi(lp, top),
                        )),
                        Some(lp) => {
                            let flag = &lp.flag;
                            out.push(parse_quote!(if __adjoint_returned { #flag = true; } else { #(#rest)* }));
                        }
                    }
                true
            }
            other => {
                out.push(self.nested(other));
                false
            }
        }
    }

    /// A `continue` or `break` (labelled or not) of the loop being rewritten or of one around
    /// it, as the flags it sets, appended to `out`; whether `stmt` was one.
    fn loop_exit(&self, stmt: &Stmt, lp: Option<&LoopCtx>, out: &mut Vec<Stmt>) -> bool {
        match stmt {
            Stmt::Expr(Expr::Continue(c), _)
                if lp.is_some_and(|lp| c.label.as_ref().is_none_or(|l| lp.is(l))) =>
            {
                true
            }
            Stmt::Expr(Expr::Break(b), _)
                if b.expr.is_none()
                    && lp.is_some_and(|lp| b.label.as_ref().is_none_or(|l| lp.is(l))) =>
            {
                let flag = &lp.expect("checked").flag;
                out.push(parse_quote!(#flag = true;));
                true
            }
            Stmt::Expr(
                Expr::Break(syn::ExprBreak {
                    label: Some(l),
                    expr: None,
                    ..
                }),
                _,
            )
            | Stmt::Expr(Expr::Continue(syn::ExprContinue { label: Some(l), .. }), _)
                if lp.is_some() && self.loop_labels.contains(&l.ident.to_string()) =>
            {
                // Leaving this loop for an outer one: its flag, and this loop's.
                let exit = if matches!(stmt, Stmt::Expr(Expr::Break(_), _)) {
                    "break"
                } else {
                    "continue"
                };
                let outer = label_flag(exit, l);
                let flag = &lp.expect("checked").flag;
                out.push(parse_quote!(#outer = true;));
                out.push(parse_quote!(#flag = true;));
                true
            }
            _ => false,
        }
    }

    /// `s` containing `e?`, followed by `rest`, as `let q = e; match q { Ok(v) => { s[e? := v];
    /// rest } Err(e) => return Err(From::from(e)) }` (the innermost `?` first).
    fn split_try(&mut self, stmt: &Stmt, rest: &[Stmt]) -> Option<Vec<Stmt>> {
        let mut stmt = stmt.clone();
        let value = format_ident!("__adjoint_q{}", self.fresh);
        let mut finder = TryFinder {
            value: value.clone(),
            operand: None,
        };
        finder.visit_stmt_mut(&mut stmt);
        let operand = finder.operand?;
        self.fresh += 1;
        let source = format_ident!("__adjoint_q{}_source", self.fresh - 1);
        let (ok, bail) = match self.family {
            Family::Result => (
                quote!(Ok(#value)),
                quote!(Err(__adjoint_e) => return Err(::core::convert::From::from(__adjoint_e))),
            ),
            _ => (quote!(Some(#value)), quote!(None => return None)),
        };
        let body = append(vec![stmt], rest);
        Some(vec![
            parse_quote!(let #source = #operand;),
            Stmt::Expr(
                parse_quote!(match #source { #ok => { #(#body)* } #bail, }),
                None,
            ),
        ])
    }

    /// `if` whose branches may exit: each branch gets the continuation `rest`.
    fn if_with_rest(
        &mut self,
        e: &ExprIf,
        rest: &[Stmt],
        lp: Option<&LoopCtx>,
        top: bool,
    ) -> ExprIf {
        let mut out = e.clone();
        let then = append(e.then_branch.stmts.clone(), rest);
        out.then_branch.stmts = self.stmts(&then, lp, top);
        let else_block: Block = match e.else_branch.as_ref().map(|(_, b)| &**b) {
            Some(Expr::If(inner)) => {
                let inner = self.if_with_rest(inner, rest, lp, top);
                parse_quote!({ #inner })
            }
            Some(Expr::Block(b)) => {
                let stmts = append(b.block.stmts.clone(), rest);
                Block {
                    brace_token: b.block.brace_token,
                    stmts: self.stmts(&stmts, lp, top),
                }
            }
            Some(other) => parse_quote!({ #other }),
            None => {
                let stmts = self.stmts(rest, lp, top);
                parse_quote!({ #(#stmts)* })
            }
        };
        out.else_branch = Some((Default::default(), Box::new(parse_quote!(#else_block))));
        out
    }

    /// A statement without exits of its own: rewrites the loops inside it that use `break`,
    /// `continue` or `return`, innermost first.
    fn nested(&mut self, stmt: &Stmt) -> Stmt {
        let mut stmt = stmt.clone();
        LoopRewriter(self).visit_stmt_mut(&mut stmt);
        stmt
    }

    /// A loop whose body uses `break`/`continue`/`return`: its body without them, and the flag.
    fn rewrite_loop(&mut self, e: &Expr) -> Option<(Vec<Ident>, Expr)> {
        let the_loop = Loop::of(e)?;
        let body = the_loop.body();
        let label = the_loop.label().map(|l| &l.name);
        let sets_labels = label.is_some() || !label_flags(&parse_quote!(#body;)).is_empty();
        let exits_here = exits(body.to_token_stream(), true);
        if normalized(body) || !(exits_here || sets_labels) || breaks_with_value(body) {
            return None;
        }
        let flag = match label {
            Some(l) => label_flag("break", l),
            None => {
                self.fresh += 1;
                format_ident!("{}{}", BREAK_FLAG, self.fresh - 1)
            }
        };
        let lp = LoopCtx {
            flag: flag.clone(),
            label: label.map(|l| l.ident.to_string()),
        };
        let mut stmts = self.stmts(&body.stmts, Some(&lp), false);
        if let Some(Stmt::Expr(_, semi @ None)) = stmts.last_mut() {
            *semi = Some(Default::default());
        }
        stmts.push(parse_quote!(if #flag { break; }));
        let mut flags = vec![flag];
        if let Some(l) = label {
            let next = label_flag("continue", l);
            if scan_idents(&stmts).contains(&next.to_string()) {
                stmts.insert(0, parse_quote!(#next = false;));
                flags.push(next);
            }
        }
        let body = Block {
            brace_token: body.brace_token,
            stmts,
        };
        Some((flags, unlabelled(the_loop.with_body(body))))
    }
}

/// Replaces the innermost, first `e?` by a fresh name and keeps `e`.
struct TryFinder {
    value: Ident,
    operand: Option<Expr>,
}

impl VisitMut for TryFinder {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if self.operand.is_some() || matches!(e, Expr::Closure(_) | Expr::Async(_)) {
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
        if self.operand.is_none()
            && let Expr::Try(t) = e
        {
            self.operand = Some((*t.expr).clone());
            let value = &self.value;
            *e = parse_quote!(#value);
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// Whether a loop body has `break value` (left to the lowering, which rejects it).
fn breaks_with_value(body: &Block) -> bool {
    struct Finder(bool);
    impl<'a> Visit<'a> for Finder {
        fn visit_expr_break(&mut self, b: &'a syn::ExprBreak) {
            self.0 |= b.expr.is_some();
        }
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut f = Finder(false);
    f.visit_block(body);
    f.0
}

/// Whether `body` has a `break` of its own loop (not of a nested loop or closure).
fn breaks(body: &Block) -> bool {
    struct Finder(bool);
    impl<'a> Visit<'a> for Finder {
        fn visit_expr_break(&mut self, _: &'a syn::ExprBreak) {
            self.0 = true;
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            match Loop::of(e) {
                Some(lp) => {
                    if let Some(head) = lp.head() {
                        self.visit_expr(head);
                    }
                }
                None => syn::visit::visit_expr(self, e),
            }
        }
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut f = Finder(false);
    f.visit_block(body);
    f.0
}

/// Whether `e` is a loop with a `return` inside.
fn returns_inside_loop(e: &Expr) -> bool {
    is_loop(e) && exits(e.to_token_stream(), false)
}

/// Rewrites loops wherever they appear in a statement (not inside closures or items).
struct LoopRewriter<'n>(&'n mut Normalizer);

impl VisitMut for LoopRewriter<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if matches!(e, Expr::Closure(_)) {
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
        if let Some((flags, new)) = self.0.rewrite_loop(e) {
            *e = parse_quote!({ #(let mut #flags = false;)* #new });
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// `stmts` followed by `rest`; a value at the end of `stmts` becomes a statement.
fn append(mut stmts: Vec<Stmt>, rest: &[Stmt]) -> Vec<Stmt> {
    if !rest.is_empty()
        && let Some(Stmt::Expr(_, semi @ None)) = stmts.last_mut()
    {
        *semi = Some(Default::default());
    }
    stmts.extend(rest.iter().cloned());
    stmts
}

/// A rewritten branch statement ends the block: it is the function's value at the top level,
/// a statement inside a loop body.
fn end_semi(lp: Option<&LoopCtx>, top: bool) -> Option<syn::Token![;]> {
    (lp.is_some() || !top).then(Default::default)
}

/// Whether `tokens` contain a `return` of the function, or (if `in_loop`) a `break`/`continue`
/// of the current loop (outside nested loops), ignoring closures and nested items.
pub(super) fn exits(tokens: TokenStream, in_loop: bool) -> bool {
    let Ok(e) = syn::parse2::<Block>(quote!({ #tokens })) else {
        return false;
    };
    struct Exits {
        in_loop: bool,
        depth: usize,
        found: Option<Span>,
    }
    impl<'a> Visit<'a> for Exits {
        fn visit_expr_return(&mut self, r: &'a syn::ExprReturn) {
            self.found.get_or_insert(r.return_token.span);
        }
        fn visit_expr_break(&mut self, b: &'a syn::ExprBreak) {
            if self.in_loop && self.depth == 0 {
                self.found.get_or_insert(b.break_token.span);
            }
        }
        fn visit_expr_continue(&mut self, c: &'a syn::ExprContinue) {
            if self.in_loop && self.depth == 0 {
                self.found.get_or_insert(c.continue_token.span);
            }
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            if !crate::patterns::loops::visit_nested_loop(self, e) {
                syn::visit::visit_expr(self, e);
            }
        }
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    impl crate::patterns::loops::LoopDepth<'_> for Exits {
        fn depth(&mut self) -> &mut usize {
            &mut self.depth
        }
    }
    let mut v = Exits {
        in_loop,
        depth: 0,
        found: None,
    };
    v.visit_block(&e);
    v.found.is_some()
}

#[cfg(test)]
mod tests;
