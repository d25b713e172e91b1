//! Operators: which rule of the runtime an arithmetic operator calls.

use syn::spanned::Spanned;
use syn::{BinOp, Ident};

/// The rule trait and method of an arithmetic operator (`a + b` is
/// `AddRule::add_vjp(a, b, needs)`), spanned at the operator.
pub fn arithmetic_rule(op: &BinOp) -> Option<(Ident, Ident)> {
    let (tr, method) = match op {
        BinOp::Add(_) => ("AddRule", "add_vjp"),
        BinOp::Sub(_) => ("SubRule", "sub_vjp"),
        BinOp::Mul(_) => ("MulRule", "mul_vjp"),
        BinOp::Div(_) => ("DivRule", "div_vjp"),
        BinOp::Rem(_) => ("RemRule", "rem_vjp"),
        _ => return None,
    };
    Some((Ident::new(tr, op.span()), Ident::new(method, op.span())))
}

/// Whether an operator compares or combines booleans: its result is data.
pub fn is_comparison(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::Eq(_)
            | BinOp::Ne(_)
            | BinOp::Lt(_)
            | BinOp::Le(_)
            | BinOp::Gt(_)
            | BinOp::Ge(_)
            | BinOp::And(_)
            | BinOp::Or(_)
    )
}

pub fn compound_rule(op: &BinOp) -> Option<(Ident, Ident)> {
    let (tr, method) = match op {
        BinOp::AddAssign(_) => ("AddRule", "add_vjp"),
        BinOp::SubAssign(_) => ("SubRule", "sub_vjp"),
        BinOp::MulAssign(_) => ("MulRule", "mul_vjp"),
        BinOp::DivAssign(_) => ("DivRule", "div_vjp"),
        BinOp::RemAssign(_) => ("RemRule", "rem_vjp"),
        _ => return None,
    };
    Some((Ident::new(tr, op.span()), Ident::new(method, op.span())))
}
