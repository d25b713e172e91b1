//! Token-level scans of constructs the lowering does not walk (macros, closures, control flow):
//! which variables they read and which they assign.

use proc_macro2::{Ident, Spacing, Span, TokenStream, TokenTree};

/// The first identifier in `tokens` for which `is_tracked` holds, skipping field and method
/// names (identifiers after a `.`).
pub fn first_mention(
    tokens: TokenStream,
    is_tracked: &mut dyn FnMut(&Ident) -> bool,
) -> Option<Span> {
    let mut after_dot = false;
    for tt in tokens {
        match tt {
            TokenTree::Ident(id) => {
                if !after_dot && is_tracked(&id) {
                    return Some(id.span());
                }
                after_dot = false;
            }
            TokenTree::Group(g) => {
                if let Some(span) = first_mention(g.stream(), is_tracked) {
                    return Some(span);
                }
                after_dot = false;
            }
            TokenTree::Punct(p) => after_dot = p.as_char() == '.',
            TokenTree::Literal(_) => after_dot = false,
        }
    }
    None
}

/// All identifiers in `tokens` except field and method names.
pub fn idents(tokens: TokenStream) -> Vec<Ident> {
    let mut out = Vec::new();
    first_mention(tokens, &mut |id| {
        out.push(id.clone());
        false
    });
    out
}

/// Whether a loop body leaves its loop other than by normalization's final break check, which
/// is split off before: a `break` or `continue` of its own (outside nested loops and
/// closures), or anywhere a labelled one or `break value` (normalization rewrites those it
/// can into flags). A nested loop's own `break` is that loop's business.
pub fn has_loop_exit(body: &syn::Block) -> bool {
    use syn::visit::Visit;
    struct Exit {
        depth: usize,
        found: bool,
    }
    impl<'a> Visit<'a> for Exit {
        fn visit_expr_break(&mut self, b: &'a syn::ExprBreak) {
            self.found |= self.depth == 0 || b.label.is_some() || b.expr.is_some();
            syn::visit::visit_expr_break(self, b);
        }
        fn visit_expr_continue(&mut self, c: &'a syn::ExprContinue) {
            self.found |= self.depth == 0 || c.label.is_some();
        }
        fn visit_expr(&mut self, e: &'a syn::Expr) {
            let labelled = crate::patterns::loops::Loop::of(e).and_then(|lp| lp.label());
            self.found |= labelled.is_some();
            if !crate::patterns::loops::visit_nested_loop(self, e) {
                syn::visit::visit_expr(self, e);
            }
        }
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    impl crate::patterns::loops::LoopDepth<'_> for Exit {
        fn depth(&mut self) -> &mut usize {
            &mut self.depth
        }
    }
    let mut exit = Exit {
        depth: 0,
        found: false,
    };
    exit.visit_block(body);
    exit.found
}

/// Variables assigned in `tokens`: `x = ..`, `x += ..`, the locals of a destructuring
/// assignment `(a, b) = ..`, and `x` borrowed as `&mut x` (also `&mut x.f`, `&mut x[i]`,
/// `&mut *x`: whatever the borrow is used for may write `x`); not `let` bindings, fields and
/// comparisons.
pub fn assigned(tokens: TokenStream) -> Vec<Ident> {
    let mut out = Vec::new();
    collect_assigned(tokens, &mut out);
    out
}

fn collect_assigned(tokens: TokenStream, out: &mut Vec<Ident>) {
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tt) in tts.iter().enumerate() {
        match tt {
            TokenTree::Group(g) => {
                if destructured(&tts, i) {
                    out.extend(idents(g.stream()));
                }
                collect_assigned(g.stream(), out);
            }
            TokenTree::Ident(id) => {
                let prev = i.checked_sub(1).map(|j| &tts[j]);
                let binds = matches!(prev, Some(TokenTree::Ident(k)) if k == "let" || k == "mut" || k == "ref");
                let field = matches!(prev, Some(TokenTree::Punct(p)) if p.as_char() == '.');
                let writes = assigns_next(&tts[i + 1..])
                    || mutates_next(&tts[i + 1..])
                    || effect_statement(&tts, i);
                if borrowed_mut(&tts[..i]) || (!binds && !field && writes) {
                    out.push(id.clone());
                }
            }
            _ => {}
        }
    }
}

/// Whether `before` ends with `&mut` (or `&raw mut`), then any `*`: the next identifier is
/// borrowed mutably.
fn borrowed_mut(before: &[TokenTree]) -> bool {
    let mut rest = before;
    while let [head @ .., TokenTree::Punct(p)] = rest
        && p.as_char() == '*'
    {
        rest = head;
    }
    match rest {
        [.., TokenTree::Punct(amp), TokenTree::Ident(m)] => amp.as_char() == '&' && m == "mut",
        [
            ..,
            TokenTree::Punct(amp),
            TokenTree::Ident(raw),
            TokenTree::Ident(m),
        ] => amp.as_char() == '&' && raw == "raw" && m == "mut",
        _ => false,
    }
}

/// Whether the group `tts[i]` is the left side of a destructuring assignment: `(a, b) = ..`,
/// `[a, b] = ..`, `Pair(a, b) = ..`, `S { x, y } = ..` (a plain `=` after it, and not the
/// pattern of a `let`, a type after `:`, or an index `v[i] = ..`).
fn destructured(tts: &[TokenTree], i: usize) -> bool {
    let TokenTree::Group(g) = &tts[i] else {
        return false;
    };
    let plain_eq = matches!(tts.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '=' && p.spacing() == Spacing::Alone);
    if !plain_eq || g.delimiter() == proc_macro2::Delimiter::None {
        return false;
    }
    let prev = i.checked_sub(1).map(|j| &tts[j]);
    if g.delimiter() == proc_macro2::Delimiter::Bracket
        && matches!(
            prev,
            Some(TokenTree::Ident(_) | TokenTree::Group(_) | TokenTree::Literal(_))
        )
    {
        return false;
    }
    // Walk back over a path (`Pair`, `m::S`) or a type after `:` to what precedes it.
    let mut j = i;
    while let Some(k) = j.checked_sub(1) {
        match &tts[k] {
            TokenTree::Ident(id) if id != "let" => j = k,
            TokenTree::Punct(p) if p.as_char() == ':' => j = k,
            _ => break,
        }
    }
    let typed = tts[j..i].iter().any(
        |t| matches!(t, TokenTree::Punct(p) if p.as_char() == ':' && p.spacing() == Spacing::Alone),
    );
    let after_let =
        matches!(j.checked_sub(1).map(|k| &tts[k]), Some(TokenTree::Ident(k)) if k == "let");
    !typed && !after_let
}

/// Variables whose elements `tokens` write (`v[i] = ..`, `v[i] += ..`) or that they push to.
pub fn element_written(tokens: TokenStream) -> Vec<Ident> {
    fn collect(tokens: TokenStream, out: &mut Vec<Ident>) {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, tt) in tts.iter().enumerate() {
            match tt {
                TokenTree::Group(g) => collect(g.stream(), out),
                TokenTree::Ident(id)
                    if mutates_next(&tts[i + 1..]) || effect_statement(&tts, i) =>
                {
                    out.push(id.clone())
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    collect(tokens, &mut out);
    out
}

/// Whether the method `m` writes elements of its receiver the lowering follows: `push`,
/// `pop`, `truncate` ([`super::reorders::RESIZES`]), the reorders that are rewritten as element
/// writes ([`super::reorders::REORDERS`]), and the methods that lend it by `&mut`
/// (`iter_mut`, whose loop writes elements).
fn writes_elements(m: &Ident) -> bool {
    let name = m.to_string();
    super::reorders::RESIZES.contains(&name.as_str())
        || super::reorders::REORDERS.contains(&name.as_str())
        || super::queries::lends_mut(&name)
}

/// Whether the ident at `tts[i]` starts a statement `recv.m(..);` that may change `recv`: a
/// method called for its effect, taken as a `&mut self` method (`lower/calls.rs`,
/// `mutating_call`). `let y = recv.m(..);` is no such statement.
fn effect_statement(tts: &[TokenTree], i: usize) -> bool {
    let starts = match i.checked_sub(1).map(|j| &tts[j]) {
        None => true,
        Some(TokenTree::Punct(p)) => p.as_char() == ';',
        Some(TokenTree::Group(g)) => g.delimiter() == proc_macro2::Delimiter::Brace,
        _ => false,
    };
    starts
        && matches!(
            (tts.get(i + 1), tts.get(i + 2), tts.get(i + 3), tts.get(i + 4)),
            (Some(TokenTree::Punct(dot)), Some(TokenTree::Ident(m)), Some(TokenTree::Group(g)), Some(TokenTree::Punct(semi)))
                if dot.as_char() == '.'
                    && g.delimiter() == proc_macro2::Delimiter::Parenthesis
                    && semi.as_char() == ';'
                    && super::queries::called_for_effect(m)
        )
}

/// `[..] = `, `[..] op= `, `.push(` or a reorder (`.swap(`, `.sort_by(`, ..): an element write
/// mutates the variable.
fn mutates_next(rest: &[TokenTree]) -> bool {
    if let (Some(TokenTree::Punct(p)), Some(TokenTree::Ident(_) | TokenTree::Literal(_))) =
        (rest.first(), rest.get(1))
        && p.as_char() == '.'
    {
        // `p.x = ..`, `t.0 += ..`, `b.at.x = ..`, `p.v[i] = ..`, `p.v.push(..)`: a write to
        // part of `p`.
        let push = matches!((rest.get(1), rest.get(2)), (Some(TokenTree::Ident(m)), Some(TokenTree::Group(_))) if writes_elements(m));
        return push || mutates_next(&rest[2..]) || assigns_next(&rest[2..]);
    }
    match (rest.first(), rest.get(1), rest.get(2)) {
        (Some(TokenTree::Group(g)), _, _) if g.delimiter() == proc_macro2::Delimiter::Bracket => {
            // `v[i] = ..`, and `m[i][j] = ..`, `v[i].x += ..`: a write to part of an element.
            assigns_next(&rest[1..]) || mutates_next(&rest[1..])
        }
        (Some(TokenTree::Punct(p)), Some(TokenTree::Ident(m)), Some(TokenTree::Group(_))) => {
            p.as_char() == '.' && writes_elements(m)
        }
        _ => false,
    }
}

fn assigns_next(rest: &[TokenTree]) -> bool {
    let punct = |i: usize| match rest.get(i) {
        Some(TokenTree::Punct(p)) => Some((p.as_char(), p.spacing())),
        _ => None,
    };
    match (punct(0), punct(1), punct(2)) {
        (Some(('=', Spacing::Alone)), _, _) => true,
        (Some((op, Spacing::Joint)), Some(('=', Spacing::Alone)), _) => "+-*/%&|^".contains(op),
        (Some(('<', Spacing::Joint)), Some(('<', Spacing::Joint)), Some(('=', _)))
        | (Some(('>', Spacing::Joint)), Some(('>', Spacing::Joint)), Some(('=', _))) => true,
        _ => false,
    }
}

/// The variables a method call in `tokens` may change through `&mut self`: the root `v` of
/// `v.m(..)`, `v.f.m(..)`, `v[i].m(..)` for a method `m` not known to only read (see
/// [`super::queries::READ_ONLY_METHODS`] and the pure float methods), with the method.
pub fn receivers_changed(tokens: TokenStream) -> Vec<(Ident, Ident)> {
    let mut out = Vec::new();
    collect_receivers(tokens, &mut out);
    out
}

fn collect_receivers(tokens: TokenStream, out: &mut Vec<(Ident, Ident)>) {
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    let is_dot =
        |t: Option<&TokenTree>| matches!(t, Some(TokenTree::Punct(p)) if p.as_char() == '.');
    for (i, tt) in tts.iter().enumerate() {
        match tt {
            TokenTree::Group(g) => collect_receivers(g.stream(), out),
            TokenTree::Ident(root) if !is_dot(i.checked_sub(1).map(|j| &tts[j])) => {
                // Follow `.field`, `.0` and `[i]` to the first method call.
                let mut j = i + 1;
                loop {
                    match (tts.get(j), tts.get(j + 1), tts.get(j + 2)) {
                        (Some(TokenTree::Group(g)), ..)
                            if g.delimiter() == proc_macro2::Delimiter::Bracket =>
                        {
                            j += 1
                        }
                        (Some(dot), Some(TokenTree::Ident(m)), next) if is_dot(Some(dot)) => {
                            let call = matches!(next, Some(TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis)
                                || matches!(next, Some(TokenTree::Punct(p)) if p.as_char() == ':');
                            if !call {
                                j += 2;
                                continue;
                            }
                            let name = m.to_string();
                            if !super::queries::READ_ONLY_METHODS.contains(&name.as_str())
                                && !super::queries::PURE_METHODS.contains(&name.as_str())
                            {
                                out.push((root.clone(), m.clone()));
                            }
                            break;
                        }
                        (Some(dot), Some(TokenTree::Literal(_)), _) if is_dot(Some(dot)) => j += 2,
                        _ => break,
                    }
                }
            }
            _ => {}
        }
    }
}

/// Whether running `body` a second time from the same variables gives the same values: it
/// calls no function or macro (which may read or change state: a random number generator, a
/// counter, I/O), only the pure float methods, and takes no `&mut` borrow. A pullback may then
/// run the loop again instead of storing each iteration's residuals.
pub fn replayable(body: &syn::Block) -> bool {
    use syn::Expr;
    !contains(body, true, |e| match e {
        Expr::Call(_)
        | Expr::Macro(_)
        | Expr::Closure(_)
        | Expr::Unsafe(_)
        | Expr::Async(_)
        | Expr::Await(_)
        | Expr::Yield(_) => true,
        Expr::MethodCall(m) => {
            !super::queries::PURE_METHODS.contains(&m.method.to_string().as_str())
        }
        Expr::Reference(r) => r.mutability.is_some(),
        _ => false,
    })
}

/// Whether `body` borrows (`&h * &w`): how tensor code reads, where running the body again
/// would run its kernels again.
pub fn borrows(body: &syn::Block) -> bool {
    use syn::Expr;
    // `&xs[i]` (how `for &x in xs.iter()` reads its element) borrows one element, not a tensor.
    contains(
        body,
        false,
        |e| matches!(e, Expr::Reference(r) if !matches!(&*r.expr, Expr::Index(_))),
    )
}

/// Whether `body` contains a loop (`for`, `while`, `loop`).
pub fn has_loop(body: &syn::Block) -> bool {
    contains(body, false, crate::patterns::loops::is_loop)
}

/// Whether some expression of `body` satisfies `hit` (or, with `statements`, whether the body
/// holds a macro statement or an item).
fn contains(body: &syn::Block, statements: bool, hit: impl Fn(&syn::Expr) -> bool) -> bool {
    struct Find<F> {
        hit: F,
        statements: bool,
        found: bool,
    }
    impl<'ast, F: Fn(&syn::Expr) -> bool> syn::visit::Visit<'ast> for Find<F> {
        fn visit_expr(&mut self, e: &'ast syn::Expr) {
            if (self.hit)(e) {
                self.found = true;
            } else if !self.found {
                syn::visit::visit_expr(self, e);
            }
        }
        fn visit_stmt_macro(&mut self, m: &'ast syn::StmtMacro) {
            self.found |= self.statements;
            syn::visit::visit_stmt_macro(self, m);
        }
        fn visit_item(&mut self, i: &'ast syn::Item) {
            self.found |= self.statements;
            syn::visit::visit_item(self, i);
        }
    }
    let mut find = Find {
        hit,
        statements,
        found: false,
    };
    syn::visit::Visit::visit_block(&mut find, body);
    find.found
}

/// Whether the body calls the function itself (`f(..)`, `Self::f(..)`, `self.f(..)`): its
/// pullback then contains itself, so the uniform companion returns it boxed.
pub fn calls_itself(name: &syn::Ident, tokens: TokenStream) -> bool {
    let tts: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
    tts.iter().enumerate().any(|(i, tt)| match tt {
        proc_macro2::TokenTree::Ident(id) if id == name => matches!(
            tts.get(i + 1),
            Some(proc_macro2::TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis
        ) || matches!(
            (tts.get(i + 1), tts.get(i + 2)),
            // `f::<T>(..)`; a single `:` (a field initialiser, a type ascription) is not a call
            (Some(proc_macro2::TokenTree::Punct(a)), Some(proc_macro2::TokenTree::Punct(b)))
                if a.as_char() == ':' && a.spacing() == proc_macro2::Spacing::Joint && b.as_char() == ':'
        ),
        proc_macro2::TokenTree::Group(g) => calls_itself(name, g.stream()),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn finds_assignments_but_not_bindings_or_comparisons() {
        let t = quote!({
            let a = 1;
            y = 2.0;
            z += x;
            if p == q {
                w = 3
            }
            s.f = 1;
            t.0 += 1;
            v.len() == 2;
            u.x.sin();
            m <= n;
            e[i].x += 1.0;
            g[i][j] = 2.0;
            h[i] == k[j].x;
            q.swap(0, 1);
            r.sort_by(cmp);
            u.iter();
            for a in b.iter_mut() {}
        });
        let names: Vec<String> = assigned(t).iter().map(|i| i.to_string()).collect();
        assert_eq!(names, ["y", "z", "w", "s", "t", "e", "g", "q", "r", "b"]);
    }

    #[test]
    fn mutable_borrows_and_destructuring_assign() {
        let t = quote!({
            g(&mut a);
            let r = &mut *b;
            h(&mut c.f, &mut d[0], &e);
            (f, _) = (1, 2);
            [k, m] = [3, 4];
            Pair(n, o) = p;
            let (q, s) = (5, 6);
            let t: (u, v) = w;
            if let Some(x) = y {}
            z[0] = 7;
            aa == (bb, cc);
        });
        let names: Vec<String> = assigned(t).iter().map(|i| i.to_string()).collect();
        assert_eq!(
            names,
            ["a", "b", "c", "d", "f", "_", "k", "m", "n", "o", "z"]
        );
    }

    #[test]
    fn receivers_of_methods_that_may_write() {
        let t = quote!({
            v.push(x);
            w.len();
            s.inner.clear();
            m[0].sort_by(|a, b| a.total_cmp(b));
            x.sin().max(y);
            p.0.reverse();
            q.iter().map(|e| e.take()).count();
        });
        let found: Vec<String> = receivers_changed(t)
            .iter()
            .map(|(r, m)| format!("{r}.{m}"))
            .collect();
        assert_eq!(
            found,
            ["v.push", "s.clear", "m.sort_by", "p.reverse", "e.take"]
        );
    }

    #[test]
    fn mentions_skip_fields_and_methods() {
        let t = quote!(v.x + p.x());
        assert!(first_mention(t, &mut |i| i == "x").is_none());
        let t = quote!(println!("{}", x));
        assert!(first_mention(t, &mut |i| i == "x").is_some());
    }

    #[test]
    fn replayable_bodies_call_only_pure_float_methods() {
        let pure: syn::Block = syn::parse_quote!({
            s += (w[i] * x).tanh().max(0.0);
        });
        assert!(replayable(&pure) && !borrows(&pure) && !has_loop(&pure));
        let tensor_code: syn::Block = syn::parse_quote!({
            h = (&h * &w + &b).tanh();
        });
        assert!(replayable(&tensor_code) && borrows(&tensor_code));
        let nested: syn::Block = syn::parse_quote!({
            for j in 0..3 {
                s += w[j];
            }
        });
        assert!(has_loop(&nested));
        for impure in [
            quote!({
                s += x * next();
            }),
            quote!({
                s += x * rng.sample();
            }),
            quote!({
                println!("{}", s);
                s += x;
            }),
            quote!({
                s += x;
                bump(&mut n);
            }),
            quote!({
                s += (|| x)();
            }),
        ] {
            let block: syn::Block = syn::parse2(impure.clone()).unwrap();
            assert!(!replayable(&block), "{impure}");
        }
    }
}
