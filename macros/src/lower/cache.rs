//! The expensive calls of a loop that the pullback runs again: found once per iteration,
//! recorded by the forward pass, differentiated from their recorded values.
//!
//! A recomputed loop (`region.rs`) runs its body a second time in the pullback. Its float
//! arithmetic is cheap to redo, but a `tanh` or an `exp` costs tens of multiply-adds, and the
//! Elman RNN's hidden-unit loop would call `tanh` twice per unit. So each call of one of
//! [`CACHED`] that runs exactly once per iteration (a *site*: not under a branch, a closure, a
//! short-circuit operand or a nested loop) is rewritten two ways, numbered alike:
//!
//! * in the forward pass, `x.tanh()` becomes `__adjoint_cacheK.record(x.tanh())`, keeping
//!   the value in a [`Cached`](../../adjoint_core/rules/cached/struct.Cached.html) of the loop;
//! * in the body the lowering differentiates, it becomes `x.__adjoint_given_tanh(__adjoint_cachedK)`,
//!   which `calls.rs` lowers to a site whose rule method lookup picks
//!   (`core/src/rules/sites.rs`): for `f32`, `f64` and tensors their
//!   `GivenRule<recorded::tanh>`, the recorded value and the pullback built from it
//!   (`1 − y²`), without calling `tanh`; for any other type (a user type with its
//!   own `tanh`) the method's own rule `tanh_vjp_full`, which calls it again.
//!
//! The pullback reads `__adjoint_cachedK` from the cache at the start of each iteration, in
//! the order it runs them.

use crate::patterns::loops::is_loop;
use proc_macro2::Span;
use syn::visit_mut::VisitMut;
use syn::{Block, Expr, Ident, parse_quote};

/// The float methods worth recording: calls into the math library. (`sqrt`, `abs`, `recip`
/// and the like are one instruction or two: running them again is cheaper than a copy.) Each
/// has a marker type and float rule in `core/src/rules/methods.rs` (`recorded::tanh`), and
/// `every_recorded_method` in `tests/control_flow/recomputed.rs` calls them all.
pub const CACHED: &[&str] = &[
    "acos", "asin", "atan", "cbrt", "cos", "cosh", "exp", "exp2", "exp_m1", "ln", "ln_1p", "log10",
    "log2", "sin", "sinh", "tan", "tanh",
];

/// The prefix of the method name that marks a recorded call in the differentiated body.
const GIVEN: &str = "__adjoint_given_";

/// `body` with its sites rewritten for the forward pass (`plain`) or for the lowering, and
/// how many there are. The body of a recomputed loop has no early exit: normalization turns
/// `return`, `?`, `break` and `continue` into flags and branches, `lower_loop` rejects a loop
/// whose body still holds `break` or `continue`, and a loop with an exit check is not
/// recomputed; so a site outside branches runs in every iteration.
pub fn cache_calls(body: &Block, plain: bool) -> (Block, usize) {
    let mut body = body.clone();
    let mut sites = Sites { plain, count: 0 };
    sites.visit_block_mut(&mut body);
    (body, sites.count)
}

/// For a method call `x.__adjoint_given_tanh(v)` of a differentiated body: `tanh`.
pub fn given_method(method: &Ident) -> Option<String> {
    method.to_string().strip_prefix(GIVEN).map(str::to_string)
}

struct Sites {
    plain: bool,
    count: usize,
}

impl VisitMut for Sites {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            // Code that may run any number of times per iteration, or not at all.
            _ if is_loop(e) => {}
            Expr::If(_) | Expr::Match(_) | Expr::Closure(_) | Expr::Async(_) => {}
            Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_) | syn::BinOp::Or(_)) => {
                self.visit_expr_mut(&mut b.left);
            }
            Expr::MethodCall(m)
                if m.args.is_empty()
                    && m.turbofish.is_none()
                    && CACHED.contains(&m.method.to_string().as_str()) =>
            {
                // Inner sites first (`x.exp().tanh()`), so both rewrites number alike.
                self.visit_expr_mut(&mut m.receiver);
                let k = self.count;
                self.count += 1;
                if self.plain {
                    let cache = Ident::new(&format!("__adjoint_cache{k}"), Span::call_site());
                    let call = m.clone();
                    *e = parse_quote!(::adjoint::__private::Cached::record(&mut #cache, #call));
                } else {
                    let value = Ident::new(&format!("__adjoint_cached{k}"), Span::call_site());
                    m.method = Ident::new(&format!("{GIVEN}{}", m.method), m.method.span());
                    m.args.push(parse_quote!(#value));
                }
            }
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}
