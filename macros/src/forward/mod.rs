//! Forward mode: `#[differentiable(forward)]` also writes `f_jvp`, the value and the
//! directional derivative in one pass, with no closure and nothing stored.
//!
//! The body is rewritten once, in program order: every active value `x` gets a tangent
//! variable `__t_x: Option<Tangent>` next to it (`None` is the zero tangent), every active
//! operation calls its forward rule, and branches and loops keep their shape
//! (`docs/design.md` §5 has a worked expansion). The companions:
//!
//! * `f_jvp(params.., d<wrt params>..) -> (R, R::Tangent)`, public: one tangent per `wrt`
//!   parameter, in order (`&T::Tangent` for a `&T` parameter, `&mut T::Tangent` for an inout
//!   one, which it leaves holding the tangent of the final value);
//! * the uniform companion that generated code calls, `f_vjp::__jvp` (a free function) or
//!   `m_jvp_full` (a method): the parameters, then one tuple with a tangent slot per
//!   parameter (`Option<T::Tangent>`, `Option<&T::Tangent>`, `&mut Option<T::Tangent>` for an
//!   inout parameter, `Option<NoTangent>` for one that is not differentiated); it returns
//!   `(R, Option<R::Tangent>)`.

mod calls;
mod companions;
mod expr;
mod literals;
mod loops;
mod place;
mod scope;
mod stmt;

pub use companions::{companions, slot_type};

use crate::diag::Errors;
use proc_macro2::{Span, TokenStream, TokenTree};
use scope::Scopes;

/// The state of the rewrite of one body.
pub struct Forward {
    scopes: Scopes,
    errors: Errors,
    /// Variables declared without a value (`let x;`), whose tangent starts as `None`.
    uninit: std::collections::HashSet<String>,
}

impl Forward {
    fn error(&mut self, span: Span, message: String) {
        self.errors.push(span, message);
    }

    /// Marks `name` active from here on (its tangent variable is declared before the
    /// statement, see [`stmt`]).
    fn promote(&mut self, name: &str) {
        self.scopes.track(name);
    }

    /// The first tracked variable the tokens mention, if any; a variable asked only a query
    /// (`v.len()`, whose result is data) is not counted.
    fn mentions_tracked(&self, tokens: TokenStream) -> Option<String> {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        for (k, t) in tts.iter().enumerate() {
            match t {
                TokenTree::Ident(i) => {
                    let name = i.to_string();
                    if self.scopes.hold(&name).is_some() && !queried(&tts[k + 1..]) {
                        return Some(name);
                    }
                }
                TokenTree::Group(g) => {
                    if let Some(n) = self.mentions_tracked(g.stream()) {
                        return Some(n);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

/// Whether `after` (the tokens after a variable) starts with a query call `.len()`.
fn queried(after: &[TokenTree]) -> bool {
    matches!(after, [TokenTree::Punct(dot), TokenTree::Ident(m), TokenTree::Group(g), ..]
        if dot.as_char() == '.'
            && g.delimiter() == proc_macro2::Delimiter::Parenthesis
            && crate::patterns::queries::is_query(&m.to_string()))
}
