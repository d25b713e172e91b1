//! Fusing affine expressions: `f(a.matmul(b) + c.matmul(&d.t()) + e)` becomes one rule.
//!
//! An RNN cell `(h.matmul(w) + x.matmul(u) + b).tanh()` or a layer `x.matmul(w) + b` is up to
//! six ops, each with its own buffer, checks and pullback record; on small tensors that fixed
//! cost is most of the time. An expression of this form (see [`affine`]) is lowered as one
//! rule node over its operands (the *leaves*: the factors of each product, then the other
//! terms). Its call is a site (`core/src/__private/fused.rs`) where method lookup picks the
//! fused tensor op, or, for operands of other types, a closure with the rules the expression
//! would have had unfused, written out here ([`Lowering::affine`]).
//!
//! The products must come first (`b + x.matmul(w)` is left alone), so that the fused op, which
//! adds the products and then the other terms, adds in the order the expression does.

use crate::lower::{Lowering, is_inactive};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Ident, parse_quote};

/// The activations fused after the sum, by method name (and their `Epilogue` variant).
const ACTIVATIONS: &[(&str, &str)] = &[("tanh", "Tanh"), ("sigmoid", "Sigmoid"), ("relu", "Relu")];

/// At most this many products and other terms (the site has rules for up to 8 operands).
const MAX_PRODUCTS: usize = 3;
const MAX_BIASES: usize = 2;

/// An expression `act(Σ receiver.matmul(arg) + Σ bias)`.
pub(crate) struct Affine<'a> {
    /// Each product, in order.
    pub(crate) products: Vec<Product<'a>>,
    /// The other terms, after the products.
    pub(crate) biases: Vec<&'a Expr>,
    /// The span of each `+`, left to right.
    pub(crate) pluses: Vec<Span>,
    /// The activation method and its `Epilogue` variant.
    pub(crate) act: Option<(&'a Ident, &'static str)>,
}

/// Where a leaf of an [`Affine`] expression sits, which decides how the site takes it.
#[derive(Clone, Copy)]
pub(crate) enum Position {
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
    pub(crate) fn leaves(&self) -> Vec<(Position, &'a Expr)> {
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
    pub(crate) fn transposed_mask(&self) -> u32 {
        (self.products.iter().enumerate())
            .fold(0_u32, |mask, (k, p)| mask | u32::from(p.transposed) << k)
    }

    /// The `Epilogue` variant of the activation.
    pub(crate) fn epilogue(&self) -> Ident {
        format_ident!("{}", self.act.map_or("Identity", |(_, variant)| variant))
    }

    /// The span errors about the whole expression point at: the activation, else the first
    /// `matmul`.
    pub(crate) fn span(&self) -> Span {
        self.act
            .map_or(self.products[0].span, |(method, _)| method.span())
    }

    /// The closure of the unfused rules over the leaves (see [`plain_rules`]).
    pub(crate) fn plain_rules(&self) -> TokenStream {
        plain_rules(
            &self.products,
            self.biases.len(),
            &self.pluses,
            self.act.map(|(m, _)| m),
        )
    }
}

/// `e` without parentheses and invisible groups around it.
pub(crate) fn bare(mut e: &Expr) -> &Expr {
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
pub(crate) struct Product<'a> {
    pub(crate) receiver: &'a Expr,
    pub(crate) rhs: &'a Expr,
    pub(crate) transposed: bool,
    /// The span of `matmul`.
    pub(crate) span: Span,
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
pub(crate) fn affine(e: &Expr) -> Option<Affine<'_>> {
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

impl Lowering<'_> {
    /// A leaf as the site takes it, from its expression as written and as lowered.
    pub(crate) fn leaf(&self, position: Position, original: &Expr, lowered: &Expr) -> TokenStream {
        match position {
            Position::Receiver | Position::Argument { transposed: true } => quote!(&(#lowered)),
            Position::Argument { transposed: false } => quote!(#lowered),
            Position::Term => self.operand(original, lowered),
        }
    }

    /// Lowers an [`affine`] expression: one rule over its leaves, whose call is the fused
    /// site with the unfused rules as its fallback.
    pub(crate) fn affine(&mut self, pattern: Affine<'_>) -> (Expr, crate::ir::graph::Act) {
        let (mut leaves, mut acts, mut spans) = (Vec::new(), Vec::new(), Vec::new());
        let mut lowered = Vec::new();
        for (position, e) in pattern.leaves() {
            let (l, act) = self.expr(e);
            leaves.push(self.leaf(position, e, &l));
            lowered.push(l);
            acts.push(act);
            spans.push(e.span());
        }
        // The expression rebuilt from the lowered leaves: the value where no tangent is needed.
        let mut rebuilt_terms: Vec<TokenStream> = Vec::new();
        for (k, p) in pattern.products.iter().enumerate() {
            let (r, a) = (&lowered[2 * k], &lowered[2 * k + 1]);
            let method = Ident::new("matmul", p.span);
            rebuilt_terms.push(if p.transposed {
                quote!((#r).#method(&(#a).t()))
            } else {
                quote!((#r).#method(#a))
            });
        }
        for c in &lowered[2 * pattern.products.len()..] {
            rebuilt_terms.push(quote!((#c)));
        }
        let sum = rebuilt_terms
            .iter()
            .skip(1)
            .fold(rebuilt_terms[0].clone(), |s, t| quote!((#s + #t)));
        let rebuilt: Expr = match pattern.act {
            Some((method, _)) => parse_quote!((#sum).#method()),
            None => parse_quote!(#sum),
        };
        if acts.iter().all(is_inactive) {
            return (rebuilt, crate::ir::graph::Act::Inactive);
        }
        let span = pattern.span();
        let count = pattern.products.len();
        let transposed = pattern.transposed_mask();
        let epilogue = pattern.epilogue();
        let plain = pattern.plain_rules();
        let first = self.graph.nodes.len();
        let (expr, act) = self.rule(acts, spans, span, rebuilt, |n| {
            quote_spanned!(span=> {
                #[allow(unused_imports)]
                use ::adjoint::__private::FusedPlain as _;
                ::adjoint::__private::fused((#(#leaves,)*), [#(#n),*], #plain)
                    .operands()
                    .rule(#count, #transposed, ::adjoint::__private::Epilogue::#epilogue)
            })
        });
        // Both pullbacks of the fused site settle their seed themselves (`plain_rules`).
        if let crate::ir::graph::Act::Active(id) = act
            && id == first
        {
            self.graph.nodes[id].takes_products = true;
        }
        (expr, act)
    }
}

/// The closure of the unfused rules over the leaves `__l0, __l1, …` and their needs `__n`:
/// the products, the sums left to right, the activation, and a pullback from the result's
/// tangent to one tangent per leaf, as the unfused lowering would have emitted them. Only the
/// method names carry the user's spans (errors point at the `matmul`, `+` or `tanh` written);
/// the local names are call-site.
fn plain_rules(
    products: &[Product<'_>],
    biases: usize,
    pluses: &[Span],
    act: Option<&Ident>,
) -> TokenStream {
    let leaves = 2 * products.len() + biases;
    let l: Vec<Ident> = (0..leaves).map(|i| format_ident!("__l{}", i)).collect();
    // A callee's tangent slot as the next rule's input, as `reverse.rs` passes it.
    let flow = |t: &dyn quote::ToTokens| quote!(::adjoint::__private::settled(::adjoint::__private::arg_tangent(#t)));
    let needs = |range: std::ops::Range<usize>| {
        let flags = range.map(|i| quote!(__n[#i]));
        quote!((false #(|| #flags)*))
    };
    let mut forward = Vec::new();
    let mut backward = Vec::new();
    // Each term's value and the leaves it covers.
    let mut terms: Vec<(TokenStream, std::ops::Range<usize>)> = Vec::new();
    for (k, product) in products.iter().enumerate() {
        let (a, b) = (&l[2 * k], &l[2 * k + 1]);
        let (p, q) = (format_ident!("__p{}", k), format_ident!("__q{}", k));
        let method = Ident::new("matmul_vjp_full", product.span);
        let n = [needs(2 * k..2 * k + 1), needs(2 * k + 1..2 * k + 2)];
        if product.transposed {
            // `a.matmul(&b.t())`: the rule of `t`, then the product with the transpose.
            let (bt, u) = (format_ident!("__bt{}", k), format_ident!("__u{}", k));
            let nb = &n[1];
            forward.push(quote!(let (#bt, #u) = #b.t_vjp_full([#nb]);));
            forward.push(quote!(let (#p, #q) = #a.#method(&#bt, [#(#n),*]);));
        } else {
            forward.push(quote!(let (#p, #q) = #a.#method(#b, [#(#n),*]);));
        }
        terms.push((quote!(#p), 2 * k..2 * k + 2));
    }
    for j in 0..biases {
        let i = 2 * products.len() + j;
        let leaf = &l[i];
        terms.push((quote!(#leaf), i..i + 1));
    }
    // The sums, left to right; their pullbacks run right to left.
    let t: Vec<Ident> = (0..terms.len())
        .map(|i| format_ident!("__t{}", i))
        .collect();
    let first = &terms[0].0;
    forward.push(quote!(let __s = #first;));
    for (i, (value, range)) in terms.iter().enumerate().skip(1) {
        let r = format_ident!("__r{}", i);
        let (left, right) = (needs(0..range.start), needs(range.clone()));
        let add = Ident::new("add_vjp", pluses[i - 1]);
        forward.push(quote!(
            let (__s, #r) = ::adjoint::__private::AddRule::#add(__s, #value, [#left, #right]);
        ));
    }
    let all = needs(0..leaves);
    let result = match act {
        Some(method) => {
            let rule = crate::emit::names::full_method(method);
            forward.push(quote!(let (__y, __ra) = __s.#rule([#all]);));
            let d = flow(&quote!(__d));
            backward.push(quote!(let (__d,) = __ra(__d); let __d = #d;));
            quote!(__y)
        }
        None => quote!(__s),
    };
    for i in (1..terms.len()).rev() {
        let (r, ti) = (format_ident!("__r{}", i), &t[i]);
        let d = flow(&quote!(__d));
        backward.push(quote!(let (__d, #ti) = #r(__d); let __d = #d;));
    }
    let t0 = &t[0];
    backward.push(quote!(let #t0 = __d;));
    let mut out: Vec<TokenStream> = Vec::new();
    for (k, (ti, _)) in t.iter().zip(&terms).enumerate() {
        if k < products.len() {
            let q = format_ident!("__q{}", k);
            let (ga, gb) = (
                format_ident!("__g{}", 2 * k),
                format_ident!("__g{}", 2 * k + 1),
            );
            let d = flow(ti);
            backward.push(quote!(let (#ga, #gb) = #q(#d);));
            if products[k].transposed {
                let (u, d) = (format_ident!("__u{}", k), flow(&gb));
                backward.push(quote!(let (#gb,) = #u(#d);));
            }
            out.extend([quote!(#ga), quote!(#gb)]);
        } else {
            out.push(quote!(#ti));
        }
    }
    quote!(|(#(#l,)*), __n: [bool; #leaves]| {
        #(#forward)*
        (#result, move |__d| {
            // The seed as the fused site received it (a product not yet computed, say).
            let __d = ::adjoint::__private::settled(__d);
            #(#backward)*
            (#(#out,)*)
        })
    })
}
