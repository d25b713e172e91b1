//! Constructs the lowering does not walk: fine on data, an error where an active value goes
//! through them into the result; and early exits the normalization could not remove.

use crate::ir::graph::Act;
use crate::ir::graph::is_inactive;
use crate::lower::Lowering;
use crate::patterns::exits::early_exit;
use crate::patterns::loops::Loop;
use crate::patterns::scan;
use quote::ToTokens;
use syn::Expr;

impl Lowering<'_> {
    /// A construct the lowering does not walk yet: fine on data, an error where an active value
    /// goes through it into the result.
    pub(crate) fn opaque(&mut self, e: &Expr) -> (Expr, Act) {
        let tokens = e.to_token_stream();
        let mut tracked = |id: &proc_macro2::Ident| {
            self.lookup(&id.to_string())
                .is_some_and(|a| !is_inactive(a))
        };
        let mention = scan::first_mention(tokens.clone(), &mut tracked);
        let what = construct_name(e);
        let written = match e {
            Expr::Macro(m) => self.macro_written(&m.mac),
            _ => crate::lower::hidden_writes::written_in(tokens.clone()),
        };
        self.poison_written(written, mention.is_some(), &what);
        let exit = match e {
            Expr::Return(r) => Some(r.return_token.span),
            Expr::Closure(_) => None,
            _ => early_exit(tokens),
        };
        if let Some(exit) = exit {
            self.report(
                exit,
                "early exit (`return` or `?`) is not supported yet by #[differentiable]: make the value the function's last expression",
            );
            // Everything after an early exit would be reported against a function whose
            // control flow is already unsupported: one error is enough.
            self.fatal = true;
            return (e.clone(), Act::Inactive);
        }
        if let (Expr::Unsafe(_), Some(span)) = (e, mention) {
            self.report(span, "active value used inside an `unsafe` block: its derivative cannot be tracked; wrap the unsafe code in a function with a #[derivative_of] rule");
            return (e.clone(), Act::Inactive);
        }
        match mention {
            Some(span) => {
                let message = format!(
                    "{what} over active values is not supported yet by #[differentiable]; compute it on data (`without_derivative(..)`), or move it into a function with a #[derivative_of] rule"
                );
                (e.clone(), Act::Poison(span, message))
            }
            None => (e.clone(), Act::Inactive),
        }
    }
}

impl Lowering<'_> {
    /// Poisons the variables a construct the lowering does not walk may write (`written`, each
    /// with how), those that are active and, when the construct reads an active value
    /// (`mention`), all: their value may now depend on it by a path with no derivative.
    pub(crate) fn poison_written(
        &mut self,
        written: Vec<(proc_macro2::Ident, String)>,
        mention: bool,
        what: &str,
    ) {
        let mut seen: Vec<String> = Vec::new();
        for (name, how) in written {
            // The first write of a name is the one reported.
            if seen.contains(&name.to_string()) {
                continue;
            }
            seen.push(name.to_string());
            let current = self.lookup(&name.to_string()).cloned();
            if current.is_some_and(|a| !is_inactive(&a)) || mention {
                let message = format!(
                    "`{name}` {how} inside {what}, which #[differentiable] does not support over active values yet"
                );
                self.assign(&name.to_string(), Act::Poison(name.span(), message));
            }
        }
    }
}

pub(crate) fn construct_name(e: &Expr) -> String {
    if let Some(lp) = Loop::of(e) {
        return lp.unsupported_name().into();
    }
    match e {
        Expr::If(_) => "`if`".into(),
        Expr::Match(_) => "`match`".into(),
        Expr::Closure(_) => "a closure".into(),
        Expr::Macro(m) => format!("macro `{}!`", m.mac.path.to_token_stream()),
        Expr::Index(_) => "indexing".into(),
        Expr::Array(_) | Expr::Repeat(_) => "an array".into(),
        Expr::Struct(_) => "a struct literal".into(),
        Expr::Unsafe(_) => "an `unsafe` block".into(),
        Expr::Async(_) | Expr::Await(_) => "async code".into(),
        Expr::Try(_) => "`?`".into(),
        Expr::Block(b) if b.label.is_some() => {
            "a labelled block left with `break 'label value`".into()
        }
        Expr::Range(_) => "a range".into(),
        _ => "this expression".into(),
    }
}
