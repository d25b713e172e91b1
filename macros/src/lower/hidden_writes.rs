//! Writes the lowering cannot see into: macros (a macro may assign what is passed to it, and
//! a `macro_rules!` defined in the body may assign the locals in scope), closures that assign
//! or borrow `&mut` the locals they capture, and `ref mut` bindings into active values. The
//! variables such a write may change are poisoned (an error where they reach the result), or
//! the construct is rejected at its span.

use crate::ir::graph::{Act, is_inactive};
use crate::lower::Lowering;
use crate::patterns::bindings::pattern_names;
use crate::patterns::scan;
use proc_macro2::{Ident, Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Expr, Pat};

/// Standard macros whose arguments are expressions evaluated as written: a write inside one
/// is visible in its tokens (`{ y = x; y }`, `&mut y`). Any other macro may assign a variable
/// passed to it.
const EXPRESSION_MACROS: &[&str] = &[
    "assert",
    "assert_eq",
    "assert_ne",
    "dbg",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "eprint",
    "eprintln",
    "format",
    "format_args",
    "matches",
    "panic",
    "print",
    "println",
    "todo",
    "unimplemented",
    "unreachable",
    "vec",
    "write",
    "writeln",
];

impl Lowering<'_> {
    /// The variables a macro invocation may assign: those its tokens assign or borrow `&mut`,
    /// and for a macro that is not a standard expression macro, every variable passed to it
    /// that can be written (declared `mut`, an inout parameter, a followed reference).
    pub(crate) fn macro_written(&self, mac: &syn::Macro) -> Vec<(Ident, String)> {
        let mut written = written_in(mac.tokens.clone());
        let name = mac.path.segments.last().map(|s| s.ident.to_string());
        if !name.is_some_and(|n| EXPRESSION_MACROS.contains(&n.as_str())) {
            let passed = scan::idents(mac.tokens.clone());
            written.extend(
                passed
                    .into_iter()
                    .filter(|i| self.writable(&i.to_string()))
                    .map(|i| (i, "may be assigned".to_owned())),
            );
        }
        written
    }

    /// Whether an `if` or `while` condition, which the lowering keeps as written, may change
    /// a variable that is active or take its new value from an active one: the construct is
    /// then opaque (its writes are poisoned, [`Lowering::opaque`]).
    pub(crate) fn condition_writes(&self, cond: &Expr) -> bool {
        let tokens = cond.to_token_stream();
        let written = written_in(tokens.clone());
        let active = |id: &Ident| !is_inactive(&self.act_of(&id.to_string()));
        !written.is_empty()
            && (written.iter().any(|(name, _)| active(name))
                || scan::first_mention(tokens, &mut |id| active(id)).is_some())
    }

    /// Whether the variable `name` can be assigned: declared `mut`, an inout parameter or a
    /// reference the lowering follows.
    fn writable(&self, name: &str) -> bool {
        self.mutable.iter().any(|m| m == name) || self.followed(name).is_some()
    }

    /// A macro statement (`println!(..);`, `my_macro!(..);`): the lowering keeps it as written
    /// and poisons what it may assign. A `macro_rules!` definition is checked as an item.
    pub(crate) fn macro_statement(&mut self, m: &syn::StmtMacro) {
        if m.mac.path.is_ident("macro_rules") {
            return self.macro_definition(&m.mac);
        }
        let mut tracked = |id: &Ident| !is_inactive(&self.act_of(&id.to_string()));
        let mention = scan::first_mention(m.mac.tokens.clone(), &mut tracked).is_some();
        let what = format!("macro `{}!`", m.mac.path.to_token_stream());
        let written = self.macro_written(&m.mac);
        self.poison_written(written, mention, &what);
    }

    /// An item in the body: a `macro_rules!` definition is checked (see
    /// [`Self::macro_definition`]); other items cannot capture locals.
    pub(crate) fn item_statement(&mut self, item: &syn::Item) {
        if let syn::Item::Macro(m) = item
            && m.mac.path.is_ident("macro_rules")
        {
            self.macro_definition(&m.mac);
        }
    }

    /// A `macro_rules!` defined in the body that assigns a local in scope writes it wherever
    /// the macro is used, where the lowering cannot see it: an error at the assignment.
    fn macro_definition(&mut self, mac: &syn::Macro) {
        for name in scan::assigned(mac.tokens.clone()) {
            if self.lookup(&name.to_string()).is_some() {
                self.report(
                    name.span(),
                    format!(
                        "this macro assigns `{name}`, a local variable of the #[differentiable] function, so its uses would write `{name}` where the lowering cannot see it: pass the variable to the macro, or write the assignment out"
                    ),
                );
            }
        }
    }

    /// The locals of the enclosing scopes that the closure `e` assigns or borrows `&mut`
    /// (not its own parameters), with those of the named closures it calls.
    pub(crate) fn closure_writes_in(&self, e: &Expr) -> Vec<String> {
        let Expr::Closure(c) = e else {
            return self.named_closure_writes(e);
        };
        let params: Vec<String> = c
            .inputs
            .iter()
            .flat_map(pattern_names)
            .map(|i| i.to_string())
            .collect();
        let mut written: Vec<String> = written_in(c.body.to_token_stream())
            .iter()
            .map(|(name, _)| name.to_string())
            .filter(|n| !params.contains(n) && self.lookup(n).is_some())
            .collect();
        written.extend(self.named_closure_writes(&c.body));
        written.dedup();
        written
    }

    /// What the named closures `e` mentions write.
    fn named_closure_writes(&self, e: &Expr) -> Vec<String> {
        if self.closure_writes.is_empty() {
            return Vec::new();
        }
        let mentioned = scan::idents(e.to_token_stream());
        self.closure_writes
            .iter()
            .filter(|(c, _)| mentioned.iter().any(|m| m == c))
            .flat_map(|(_, w)| w.clone())
            .collect()
    }

    /// `let f = |..| ..;`: remembers the locals the closure writes.
    pub(crate) fn record_closure(&mut self, name: &Ident, init: &Expr) {
        if let Expr::Closure(_) = init {
            let written = self.closure_writes_in(init);
            if !written.is_empty() {
                self.closure_writes.push((name.to_string(), written));
            }
        }
    }

    /// A call whose operands have activities `acts`, passing `args` (the callee itself among
    /// them when it is a local closure): when an operand is active, the locals that closures
    /// passed or called write are poisoned, since those writes have no derivative.
    pub(crate) fn closures_called<'e>(
        &mut self,
        args: impl IntoIterator<Item = &'e Expr>,
        acts: &[Act],
        span: Span,
    ) {
        if acts.iter().all(is_inactive) {
            return;
        }
        let written: Vec<String> = args
            .into_iter()
            .flat_map(|a| self.closure_writes_in(a))
            .collect();
        for name in written {
            if matches!(self.act_of(&name), Act::Poison(..)) {
                continue;
            }
            let message = format!(
                "`{name}` is assigned by a closure called here with active values: #[differentiable] cannot differentiate a closure's writes to the variables it captures; return the new value from the closure instead"
            );
            self.assign(&name, Act::Poison(span, message));
        }
    }

    /// A `ref mut` binding into an active value is a reference the lowering does not follow:
    /// an error at the binding. Returns whether there was one (the names are then bound as
    /// data, so that writes through them are not reported again).
    pub(crate) fn reject_ref_mut(&mut self, pat: &Pat) -> bool {
        struct RefMut(Vec<Span>);
        impl<'a> Visit<'a> for RefMut {
            fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
                if p.by_ref.is_some() && p.mutability.is_some() {
                    self.0.push(p.span());
                }
                syn::visit::visit_pat_ident(self, p);
            }
        }
        let mut found = RefMut(Vec::new());
        found.visit_pat(pat);
        let rejected = !found.0.is_empty();
        for span in found.0 {
            self.report(
                span,
                "`ref mut` binds a reference into an active value, which #[differentiable] does not follow: bind the value, compute the new one and assign it",
            );
        }
        rejected
    }
}

/// The variables `tokens` may change, each with how: assigned (or borrowed `&mut`), or the
/// receiver of a method that may take `&mut self`.
pub(crate) fn written_in(tokens: TokenStream) -> Vec<(Ident, String)> {
    let changed: Vec<(Ident, String)> = scan::receivers_changed(tokens.clone())
        .into_iter()
        .map(|(name, method)| (name, format!("may be changed by `.{method}(..)`")))
        .collect();
    // A receiver is named by its method (`v.swap(..)` also counts as assigning `v`).
    let mut written: Vec<(Ident, String)> = scan::assigned(tokens)
        .into_iter()
        .filter(|name| !changed.iter().any(|(c, _)| c == name))
        .map(|name| (name, "is assigned".to_owned()))
        .collect();
    written.extend(changed);
    written
}
