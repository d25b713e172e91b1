//! Expressions in forward mode: each one becomes either plain data (emitted as written, or
//! with its operands' values) or a *pair*, code that evaluates to `(value, Option<tangent>)`.
//! An active operation calls its forward rule with the operands' values and one tangent slot
//! per operand (`None` for data): `MulJvp::mul_jvp(a, b, (ta, tb))`, `x.sin_jvp_full((tx,))`,
//! `<g_vjp>::__jvp(a, (ta,))` (FORWARD conventions in `core/src/rules/forward.rs`).

use super::Forward;
use super::place::place;
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, UnOp};

/// A forward-mode expression.
pub enum Fx {
    /// Carries no tangent: the code computes the value.
    Data(TokenStream),
    /// The code computes `(value, Option<tangent>)`.
    Pair(TokenStream),
}

impl Fx {
    /// The code as a pair (`(value, None)` for data).
    pub fn pair(self) -> TokenStream {
        match self {
            Fx::Data(v) => quote!((#v, ::core::option::Option::None)),
            Fx::Pair(p) => p,
        }
    }

    /// The code computing only the value.
    pub fn value(self) -> TokenStream {
        match self {
            Fx::Data(v) => v,
            Fx::Pair(p) => quote!((#p).0),
        }
    }

    pub fn is_pair(&self) -> bool {
        matches!(self, Fx::Pair(_))
    }
}

/// The operator traits of the forward rules.
fn operator_rule(op: &BinOp) -> Option<(&'static str, &'static str)> {
    Some(match op {
        BinOp::Add(_) | BinOp::AddAssign(_) => ("AddJvp", "add_jvp"),
        BinOp::Sub(_) | BinOp::SubAssign(_) => ("SubJvp", "sub_jvp"),
        BinOp::Mul(_) | BinOp::MulAssign(_) => ("MulJvp", "mul_jvp"),
        BinOp::Div(_) | BinOp::DivAssign(_) => ("DivJvp", "div_jvp"),
        BinOp::Rem(_) | BinOp::RemAssign(_) => ("RemJvp", "rem_jvp"),
        _ => return None,
    })
}

/// Whether `op` is a compound assignment (`+=` ...).
pub fn is_compound(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
    )
}

/// `Trait::method(lhs, rhs, (tl, tr))` for a binary operator, from two pairs.
pub fn binary_rule(op: &BinOp, lhs: TokenStream, rhs: TokenStream) -> Option<TokenStream> {
    let (tr, method) = operator_rule(op)?;
    let tr = format_ident!("{}", tr);
    let method = format_ident!("{}", method);
    Some(quote_spanned! {op.span()=> {
        let (__a, __ta) = #lhs;
        let (__b, __tb) = #rhs;
        ::adjoint::__private::#tr::#method(__a, __b, (__ta, __tb))
    }})
}

impl Forward {
    /// The forward form of an expression.
    pub fn expr(&mut self, e: &Expr) -> Fx {
        match e {
            Expr::Lit(_) | Expr::Range(_) => Fx::Data(e.to_token_stream()),
            Expr::Paren(p) => match self.expr(&p.expr) {
                Fx::Data(v) => Fx::Data(quote!((#v))),
                pair => pair,
            },
            Expr::Path(_) | Expr::Field(_) | Expr::Index(_) => self.place_read(e),
            Expr::Reference(r) => self.reference(r),
            Expr::Binary(b) if is_compound(&b.op) => self.compound(b),
            Expr::Binary(b) => self.binary(b),
            Expr::Unary(u) => self.unary(u),
            Expr::Cast(c) => self.cast(c),
            Expr::MethodCall(m) => self.method_call(m),
            Expr::Call(c) => self.call(c),
            Expr::Tuple(t) => self.tuple(t),
            Expr::Struct(st) if st.rest.is_none() && st.qself.is_none() => self.struct_literal(st),
            Expr::Array(a) => self.elements(a.elems.iter(), false, e),
            Expr::Macro(m) => self.macro_expr(m, e),
            Expr::Assign(a) => self.assign(a),
            Expr::Block(b) if b.label.is_none() => self.block_expr(&b.block),
            Expr::If(i) => self.if_expr(i),
            Expr::ForLoop(f) => self.for_loop(f),
            Expr::While(w) => self.while_loop(w),
            Expr::Loop(l) => self.plain_loop(l),
            Expr::Match(m) => self.match_expr(m),
            Expr::Return(r) => self.return_expr(r),
            _ => self.opaque(e),
        }
    }

    /// An expression forward mode does not look into: fine as long as it mentions no tracked
    /// variable.
    pub fn opaque(&mut self, e: &Expr) -> Fx {
        if let Expr::Index(i) = e
            && matches!(&*i.index, Expr::Range(_))
            && let Some(name) = self.mentions_tracked(i.expr.to_token_stream())
        {
            self.error(
                e.span(),
                format!(
                    "forward mode: a sub-slice of the active `{name}` is not supported yet (reverse mode differentiates it): pass the whole collection and the range, or read its elements by index"
                ),
            );
            return Fx::Data(e.to_token_stream());
        }
        if let Some(name) = self.mentions_tracked(e.to_token_stream()) {
            self.error(
                e.span(),
                format!(
                    "forward mode cannot differentiate this expression, which uses the active value `{name}`: write it with operators, method calls, function calls, `if`, `match` on data, or loops"
                ),
            );
        }
        Fx::Data(e.to_token_stream())
    }

    /// A read of a variable, a field or an element.
    fn place_read(&mut self, e: &Expr) -> Fx {
        let Some(p) = place(e) else {
            return self.opaque(e);
        };
        if self
            .mentions_tracked(p.mentions().parse().unwrap_or_default())
            .is_some()
        {
            return self.opaque(e);
        }
        let value = e.to_token_stream();
        let tangent = if p.is_variable() {
            self.scopes.tangent_value(&p.root)
        } else {
            self.scopes.tangent_ref(&p.root).map(|b| p.tangent_copy(b))
        };
        match tangent {
            Some(t) => Fx::Pair(quote!((#value, #t))),
            None => Fx::Data(value),
        }
    }

    /// `&place` (`&mut place` as an argument is handled by the call).
    fn reference(&mut self, r: &syn::ExprReference) -> Fx {
        let Some(p) = place(&r.expr) else {
            return self.opaque(&Expr::Reference(r.clone()));
        };
        if r.mutability.is_some() {
            return self.mut_reference(r, &p);
        }
        match self.scopes.tangent_ref(&p.root) {
            Some(base) => {
                let t = p.tangent_ref(base);
                Fx::Pair(quote!((#r, #t)))
            }
            None => Fx::Data(r.to_token_stream()),
        }
    }

    /// `&mut v` passed on: the callee receives the tangent as `&mut Option<T::Tangent>`, so
    /// that it can make an inactive variable active.
    fn mut_reference(&mut self, r: &syn::ExprReference, p: &super::place::Place) -> Fx {
        if !p.is_variable() {
            return self.opaque(&Expr::Reference(r.clone()));
        }
        if self.scopes.hold(&p.root).is_none() {
            self.promote(&p.root);
        }
        match self.scopes.tangent_place(&p.root) {
            Some(t) => Fx::Pair(quote!((#r, &mut #t))),
            None => self.opaque(&Expr::Reference(r.clone())),
        }
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> Fx {
        let lhs = self.expr(&b.left);
        let rhs = self.expr(&b.right);
        let op = &b.op;
        if !(lhs.is_pair() || rhs.is_pair()) || operator_rule(op).is_none() {
            let (l, r) = (lhs.value(), rhs.value());
            return Fx::Data(quote!(#l #op #r));
        }
        Fx::Pair(binary_rule(op, lhs.pair(), rhs.pair()).expect("an arithmetic operator"))
    }

    fn unary(&mut self, u: &syn::ExprUnary) -> Fx {
        match &u.op {
            UnOp::Neg(_) => match self.expr(&u.expr) {
                Fx::Data(v) => Fx::Data(quote!(-#v)),
                Fx::Pair(p) => Fx::Pair(quote_spanned! {u.span()=> {
                    let (__a, __ta) = #p;
                    ::adjoint::__private::NegJvp::neg_jvp(__a, (__ta,))
                }}),
            },
            UnOp::Deref(_) => {
                if let Some(p) = place(&u.expr).filter(|p| p.is_variable()) {
                    let value = u.to_token_stream();
                    return match (self.scopes.hold(&p.root), self.scopes.tangent_ref(&p.root)) {
                        (Some(super::scope::Hold::Inout), _) => {
                            let t = super::scope::tangent_ident(&p.root);
                            Fx::Pair(quote!((#value, ::core::clone::Clone::clone(&*#t))))
                        }
                        (Some(_), Some(t)) => Fx::Pair(quote!((#value, #t.map(|__t| *__t)))),
                        _ => Fx::Data(value),
                    };
                }
                self.opaque(&Expr::Unary(u.clone()))
            }
            _ => {
                let v = self.expr(&u.expr).value();
                let op = &u.op;
                Fx::Data(quote!(#op #v))
            }
        }
    }

    fn cast(&mut self, c: &syn::ExprCast) -> Fx {
        let inner = self.expr(&c.expr);
        let ty = &c.ty;
        let is_float = matches!(ty.to_token_stream().to_string().as_str(), "f32" | "f64");
        match inner {
            Fx::Pair(p) if is_float => Fx::Pair(quote_spanned! {c.span()=> {
                let (__a, __ta) = #p;
                <_ as ::adjoint::__private::CastJvp<#ty>>::cast_jvp(__a, (__ta,))
            }}),
            Fx::Pair(_) => {
                // As in reverse mode: an integer (or other) copy of an active value would drop
                // its tangent without a word.
                let (source, target) = (c.expr.to_token_stream(), ty.to_token_stream());
                let message = match crate::parse::signature::obviously_non_differentiable(ty) {
                    true => format!(
                        "`{source} as {target}` truncates an active value to an integer, which has no derivative; write `without_derivative({source}) as {target}` if a zero derivative is intended"
                    ),
                    false => format!("casting an active value to `{target}` is not differentiable"),
                };
                self.error(c.span(), message);
                Fx::Data(quote!(#c))
            }
            inner => {
                let v = inner.value();
                Fx::Data(quote!(#v as #ty))
            }
        }
    }
}
