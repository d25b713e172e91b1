//! The affine expressions worth fusing: `f(a.matmul(b) + c.matmul(&d.t()) + e)`.
//!
//! An RNN cell `(h.matmul(w) + x.matmul(u) + b).tanh()` or a layer `x.matmul(w) + b` is up to
//! six ops, each with its own buffer, checks and pullback record; on small tensors that fixed
//! cost is most of the time. An expression of this form (see [`affine`]) is lowered as one
//! rule node over its operands (the *leaves*: the factors of each product, then the other
//! terms). Its call is a site (`core/src/ops/affine/site.rs`) where method lookup picks the
//! fused tensor op, or, for operands of other types, a closure with the rules the expression
//! would have had unfused (`emit::fused::plain_rules`); `lower::fusion` lowers it.
//!
//! The products must come first (`b + x.matmul(w)` is left alone), so that the fused op, which
//! adds the products and then the other terms, adds in the order the expression does.

use proc_macro2::Span;
use quote::format_ident;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Ident};

/// The activations fused after the sum, by method name (and their `Epilogue` variant).
const ACTIVATIONS: &[(&str, &str)] = &[("tanh", "Tanh"), ("sigmoid", "Sigmoid"), ("relu", "Relu")];

/// At most this many products and other terms (the site has rules for up to 8 operands).
const MAX_PRODUCTS: usize = 3;
const MAX_BIASES: usize = 2;

/// An expression `act(Σ receiver.matmul(arg) + Σ bias)`.
pub struct Affine<'a> {
    /// Each product, in order.
    pub products: Vec<Product<'a>>,
    /// The other terms, after the products.
    pub biases: Vec<&'a Expr>,
    /// The span of each `+`, left to right.
    pub pluses: Vec<Span>,
    /// The activation method and its `Epilogue` variant.
    pub act: Option<(&'a Ident, &'static str)>,
}

/// Where a leaf of an [`Affine`] expression sits, which decides how the site takes it.
#[derive(Clone, Copy)]
pub enum Position {
    /// The receiver of a product, borrowed.
    Receiver,
    /// The argument of a product: as written, or borrowed when the product reads it transposed.
    Argument { transposed: bool },
    /// One of the other terms: a value (a reference becomes one through `operand`).
    Term,
}

impl<'a> Affine<'a> {
    /// The leaves in the site's order (each product's factors, then the other terms), with
    /// their positions.
    pub fn leaves(&self) -> Vec<(Position, &'a Expr)> {
        let products = self.products.iter().flat_map(|p| {
            [
                (Position::Receiver, p.receiver),
                (
                    Position::Argument {
                        transposed: p.transposed,
                    },
                    p.rhs,
                ),
            ]
        });
        let terms = self.biases.iter().map(|&b| (Position::Term, b));
        products.chain(terms).collect()
    }

    /// The `transposed` mask of the site's `rule` call: bit `k` for product `k`.
    pub fn transposed_mask(&self) -> u32 {
        (self.products.iter().enumerate())
            .fold(0_u32, |mask, (k, p)| mask | u32::from(p.transposed) << k)
    }

    /// The `Epilogue` variant of the activation.
    pub fn epilogue(&self) -> Ident {
        format_ident!("{}", self.act.map_or("Identity", |(_, variant)| variant))
    }

    /// The span errors about the whole expression point at: the activation, else the first
    /// `matmul`.
    pub fn span(&self) -> Span {
        self.act
            .map_or(self.products[0].span, |(method, _)| method.span())
    }
}

/// `e` without parentheses and invisible groups around it.
pub fn bare(mut e: &Expr) -> &Expr {
    loop {
        match e {
            Expr::Paren(p) => e = &p.expr,
            Expr::Group(g) => e = &g.expr,
            _ => return e,
        }
    }
}

/// The terms of a sum `t₀ + t₁ + …` and its `+` spans, in order.
fn terms<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>, pluses: &mut Vec<Span>) {
    match bare(e) {
        Expr::Binary(b) if matches!(b.op, BinOp::Add(_)) => {
            terms(&b.left, out, pluses);
            pluses.push(b.op.span());
            terms(&b.right, out, pluses);
        }
        other => out.push(other),
    }
}

/// A product `receiver.matmul(arg)`, or `receiver.matmul(&rhs.t())` (`transposed`, with
/// `rhs` as its right operand: the fused op reads it transposed, without the copy `t()` makes).
#[derive(Clone, Copy)]
pub struct Product<'a> {
    pub receiver: &'a Expr,
    pub rhs: &'a Expr,
    pub transposed: bool,
    /// The span of `matmul`.
    pub span: Span,
}

/// The product a term is, if it is one.
fn product(e: &Expr) -> Option<Product<'_>> {
    let Expr::MethodCall(m) = e else { return None };
    if m.method != "matmul" || m.args.len() != 1 || m.turbofish.is_some() {
        return None;
    }
    let (receiver, span) = (&*m.receiver, m.method.span());
    let plain = |rhs| {
        Some(Product {
            receiver,
            rhs,
            transposed: false,
            span,
        })
    };
    match &m.args[0] {
        Expr::Reference(r) if r.mutability.is_some() => None,
        Expr::Reference(r) => match bare(&r.expr) {
            Expr::MethodCall(t)
                if t.method == "t" && t.args.is_empty() && t.turbofish.is_none() =>
            {
                Some(Product {
                    receiver,
                    rhs: &t.receiver,
                    transposed: true,
                    span,
                })
            }
            _ => plain(&m.args[0]),
        },
        arg => plain(arg),
    }
}

/// The affine expression `e` is, if it is one worth fusing: at least one product, the
/// products before the other terms, and at least two ops in all.
pub fn affine(e: &Expr) -> Option<Affine<'_>> {
    let (sum, act) = match e {
        Expr::MethodCall(m) if m.args.is_empty() && m.turbofish.is_none() => {
            let (_, variant) = ACTIVATIONS.iter().find(|(name, _)| m.method == name)?;
            (&*m.receiver, Some((&m.method, *variant)))
        }
        _ => (e, None),
    };
    let (mut all, mut pluses) = (Vec::new(), Vec::new());
    terms(sum, &mut all, &mut pluses);
    let products: Vec<_> = all.iter().map_while(|t| product(t)).collect();
    let biases = all[products.len()..].to_vec();
    let ops = products.len() + pluses.len() + usize::from(act.is_some());
    let fits = !products.is_empty()
        && products.len() <= MAX_PRODUCTS
        && biases.len() <= MAX_BIASES
        && biases.iter().all(|t| product(t).is_none())
        && ops >= 2;
    fits.then_some(Affine {
        products,
        biases,
        pluses,
        act,
    })
}
