//! The syntax of loops: the one place that matches `for`, `while` and `loop`.

use proc_macro2::{Ident, TokenStream};
use quote::ToTokens;
use syn::visit::Visit;
use syn::{Block, Expr, Pat, Stmt};

/// The name prefix of the flags that normalization gives loops left by `break`, `continue` or
/// `return` (`__adjoint_break0`, ...): each such body ends with `if flag { break; }`.
pub const BREAK_FLAG: &str = "__adjoint_break";

/// A loop expression of any of the three kinds.
#[derive(Clone, Copy)]
pub enum Loop<'a> {
    /// `for pat in iter { body }`.
    For(&'a syn::ExprForLoop),
    /// `while cond { body }` (also `while let`).
    While(&'a syn::ExprWhile),
    /// `loop { body }`.
    Plain(&'a syn::ExprLoop),
}

impl<'a> Loop<'a> {
    /// The loop `e` is, if it is one.
    pub fn of(e: &'a Expr) -> Option<Self> {
        match e {
            Expr::ForLoop(f) => Some(Loop::For(f)),
            Expr::While(w) => Some(Loop::While(w)),
            Expr::Loop(l) => Some(Loop::Plain(l)),
            _ => None,
        }
    }

    /// Its label (`'outer: for ..`).
    pub fn label(self) -> Option<&'a syn::Label> {
        match self {
            Loop::For(f) => f.label.as_ref(),
            Loop::While(w) => w.label.as_ref(),
            Loop::Plain(l) => l.label.as_ref(),
        }
    }

    /// Its body.
    pub fn body(self) -> &'a Block {
        match self {
            Loop::For(f) => &f.body,
            Loop::While(w) => &w.body,
            Loop::Plain(l) => &l.body,
        }
    }

    /// What is evaluated before the body: the iterator of a `for`, the condition of a
    /// `while`.
    pub fn head(self) -> Option<&'a Expr> {
        match self {
            Loop::For(f) => Some(&f.expr),
            Loop::While(w) => Some(&w.cond),
            Loop::Plain(_) => None,
        }
    }

    /// The same loop with another body.
    pub fn with_body(self, body: Block) -> Expr {
        match self {
            Loop::For(f) => Expr::ForLoop(syn::ExprForLoop { body, ..f.clone() }),
            Loop::While(w) => Expr::While(syn::ExprWhile { body, ..w.clone() }),
            Loop::Plain(l) => Expr::Loop(syn::ExprLoop { body, ..l.clone() }),
        }
    }

    /// What the lowering calls a loop it does not walk, in error messages.
    pub fn unsupported_name(self) -> &'static str {
        match self {
            Loop::Plain(_) => "a `loop` with an exit that normalization could not rewrite",
            Loop::While(w) if matches!(&*w.cond, Expr::Let(_)) => "a `while let` loop",
            Loop::For(_) | Loop::While(_) => {
                "a labelled loop with an exit that normalization could not rewrite"
            }
        }
    }
}

/// Whether `e` is a loop.
pub fn is_loop(e: &Expr) -> bool {
    Loop::of(e).is_some()
}

/// Whether a loop's iterator yields references: `xs.iter()` or `&xs`.
pub fn iterates_by_reference(iter: &Expr) -> bool {
    match iter {
        Expr::MethodCall(m) => m.method == "iter" && m.args.is_empty(),
        Expr::Reference(r) => r.mutability.is_none(),
        _ => false,
    }
}

/// The names `pat` binds to references when it iterates `iter` by reference: the name itself
/// over `xs.iter()` or `&xs`, the element of `enumerate`'s pair, the parts of `zip`'s.
pub fn references_bound(pat: &Pat, iter: &Expr) -> Vec<Ident> {
    match (pat, iter) {
        (Pat::Ident(p), iter) if p.subpat.is_none() && iterates_by_reference(iter) => {
            vec![p.ident.clone()]
        }
        (Pat::Paren(p), iter) => references_bound(&p.pat, iter),
        (Pat::Tuple(t), Expr::MethodCall(m)) if t.elems.len() == 2 => {
            match (m.method.to_string().as_str(), m.args.first()) {
                ("enumerate", None) => references_bound(&t.elems[1], &m.receiver),
                ("zip", Some(other)) => {
                    let mut names = references_bound(&t.elems[0], &m.receiver);
                    names.extend(references_bound(&t.elems[1], other));
                    names
                }
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

/// Whether a `loop` body ends with the break check of normalization (its only way out).
pub fn ends_with_break_check(body: &Block) -> bool {
    !split_break_check(body).1.is_empty()
}

/// Splits the `if flag { break; }` that normalization put at the end of a loop body off the
/// body: it runs after the iteration's pullback is recorded.
pub fn split_break_check(body: &Block) -> (Block, TokenStream) {
    let mut body = body.clone();
    if let Some(Stmt::Expr(Expr::If(check), _)) = body.stmts.last()
        && let Expr::Path(p) = &*check.cond
        && p.path
            .get_ident()
            .is_some_and(|i| i.to_string().starts_with(BREAK_FLAG))
    {
        let check = check.to_token_stream();
        body.stmts.pop();
        return (body, check);
    }
    (body, TokenStream::new())
}

/// A visitor that counts how deep inside nested loops it is (their own `break`s are theirs).
pub trait LoopDepth<'a>: Visit<'a> {
    /// The number of loops around the current node, inside the visited code.
    fn depth(&mut self) -> &mut usize;
}

/// If `e` is a loop: visits its head at the current depth and its body one deeper, and says
/// so; else visits nothing.
pub fn visit_nested_loop<'a, V: LoopDepth<'a>>(v: &mut V, e: &'a Expr) -> bool {
    let Some(lp) = Loop::of(e) else {
        return false;
    };
    if let Some(head) = lp.head() {
        v.visit_expr(head);
    }
    *v.depth() += 1;
    v.visit_block(lp.body());
    *v.depth() -= 1;
    true
}

/// `while let P = v.pop() { body }` as `loop { match v.pop() { P => body, _ => break } }`
/// (labels kept): a loop whose exit is a `break`, which both modes handle, around a `match`
/// on `v.pop()` (`patterns/reorders.rs`: a read of the last element and a `truncate`). Other
/// `while let` loops are left.
pub fn pops_as_loops(body: &Block) -> Block {
    struct Pops;
    impl syn::visit_mut::VisitMut for Pops {
        fn visit_expr_mut(&mut self, e: &mut Expr) {
            syn::visit_mut::visit_expr_mut(self, e);
            if let Some(rewritten) = pop_loop(e) {
                *e = rewritten;
            }
        }
        fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    }
    let mut body = body.clone();
    syn::visit_mut::VisitMut::visit_block_mut(&mut Pops, &mut body);
    body
}

/// `e` as a `loop` when it is `while let P = v.pop() { .. }` with `v` a name.
pub fn pop_loop(e: &Expr) -> Option<Expr> {
    let Expr::While(w) = e else { return None };
    let Expr::Let(l) = &*w.cond else { return None };
    let Expr::MethodCall(m) = &*l.expr else {
        return None;
    };
    let named = matches!(&*m.receiver, Expr::Path(p) if p.path.get_ident().is_some());
    if m.method != "pop" || !m.args.is_empty() || !named {
        return None;
    }
    let (label, pat, scrutinee, body) = (&w.label, &l.pat, &l.expr, &w.body);
    Some(syn::parse_quote!(#label loop { match #scrutinee { #pat => #body, _ => break, } }))
}
