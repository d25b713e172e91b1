//! A `match` over an enum value whose arms bind variant payloads (`Shape::Circle(r)`,
//! `Shape::Rect { w, .. }`): the variant is data that picks the arm, and each payload is read
//! by the enum's hidden rule (`#[derive(Differentiable)]` on the enum, derive/enums/rules.rs), so the
//! payload's adjoint goes back into the variant's tangent. Both modes use it when the
//! scrutinee is active:
//!
//! ```text
//! match e { Shape::Circle(r) => a, Shape::Rect { w, h: t } if w > t => b, _ => c }
//!   ⇒ { let s = e;
//!       match ::adjoint::__private::variant_of_owned(&s) {
//!           Shape::Circle(_) => { let r = s.__variant_Circle_0(); a }
//!           Shape::Rect { w, h: t } if w > t => { let w = s.__variant_Rect_w(); let t = s.__variant_Rect_h(); b }
//!           _ => c,
//!       } }
//! ```
//!
//! The scrutinee is borrowed (`variant_of`) unless a guard reads a payload, which then binds a
//! copy without derivative (`variant_of_owned`), as any guard is data.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Member, Pat};

/// The scrutinee's binding in the rewritten code.
const SCRUTINEE: &str = "__adjoint_variant";

/// The functions that hand the rewritten `match` its data scrutinee: calls to them are data in
/// both modes.
pub const DATA_CALLS: [&str; 2] = ["variant_of", "variant_of_owned"];

/// A call whose result is data whatever its arguments: `without_derivative(..)` and the
/// data scrutinee of a rewritten `match` (`::adjoint::__private::variant_of(..)`).
pub fn is_data_call(path: &syn::Path) -> bool {
    let names: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    match names.as_slice() {
        [.., last] if last == "without_derivative" => true,
        [a, p, f] => a == "adjoint" && p == "__private" && DATA_CALLS.contains(&f.as_str()),
        _ => false,
    }
}

/// A payload bound by an arm: its name (`mut` or not) and how it is read from the scrutinee
/// `s` (`s.#read`: a variant's reader `__variant_V_f()`, a struct's field `f`, or `clone()`).
struct Binding {
    name: Ident,
    mutable: bool,
    read: TokenStream,
}

/// `m` as a `match` on the variant with payloads read by rules, when some arm's pattern is an
/// enum variant (a path of two segments or more, not `Some`/`Ok`/`Err`/`None`) and every
/// pattern binds only whole payloads, `_`, `..` or the whole value; `None` otherwise.
pub fn as_data_match(m: &syn::ExprMatch) -> Option<Expr> {
    let rewritten = matches!(&*m.expr, Expr::Call(c) if matches!(&*c.func, Expr::Path(p) if is_data_call(&p.path)));
    if rewritten || !m.arms.iter().any(|arm| destructures(&arm.pat)) {
        return None;
    }
    let variants = m.arms.iter().any(|arm| names_variant(&arm.pat));
    let s = Ident::new(SCRUTINEE, Span::call_site());
    let owned = m.arms.iter().any(|arm| arm.guard.is_some());
    let mut arms = Vec::new();
    for arm in &m.arms {
        let mut bindings = Vec::new();
        let used: Option<Vec<String>> = arm.guard.as_ref().map(|(_, g)| {
            let named = crate::patterns::scan::idents(g.to_token_stream());
            named.iter().map(ToString::to_string).collect()
        });
        let head = pattern(&arm.pat, &mut bindings, used.as_deref())?;
        let reads = bindings.iter().map(|b| {
            let (name, read) = (&b.name, &b.read);
            let mutable = b.mutable.then(|| quote!(mut));
            quote_spanned!(name.span()=> let #mutable #name = #s.#read;)
        });
        let guard = arm.guard.as_ref().map(|(i, g)| quote!(#i #g));
        let body = &arm.body;
        arms.push(quote!(#head #guard => { #(#reads)* #body }));
    }
    let expr = &m.expr;
    // Spanned at the scrutinee, where an enum without the derive is reported.
    let at = Ident::new(SCRUTINEE, expr.span());
    let data = match (variants, owned) {
        (true, true) => quote_spanned!(expr.span()=> ::adjoint::__private::variant_of_owned(&#at)),
        (true, false) => quote_spanned!(expr.span()=> ::adjoint::__private::variant_of(&#at)),
        (false, true) => quote!(::adjoint::without_derivative(#s.clone())),
        (false, false) => quote!(::adjoint::without_derivative(&#s)),
    };
    syn::parse2(quote!({ let #s = #expr; match #data { #(#arms,)* } })).ok()
}

/// `Enum::V(args)` as the call of the enum's hidden constructor `Enum::__new_V(args)`, when
/// the path names a variant through its type (`Shape::Circle`, `Self::Circle`).
pub fn constructor(c: &syn::ExprCall) -> Option<Expr> {
    let Expr::Path(p) = &*c.func else {
        return None;
    };
    let rule = new_rule(&p.path)?;
    let args = &c.args;
    Some(syn::parse_quote!(#rule(#args)))
}

/// `Enum::V { b: e1, a: e2 }` as `{ let f0 = e1; let f1 = e2; Enum::__new_V(f1, f0) }`: the
/// fields evaluated as written, passed in the order of their names (as the derive takes them).
pub fn struct_literal(lit: &syn::ExprStruct) -> Option<Expr> {
    if lit.qself.is_some() || lit.rest.is_some() {
        return None;
    }
    let rule = new_rule(&lit.path)?;
    let mut named: Vec<(String, Ident)> = Vec::new();
    let mut lets = Vec::new();
    for (k, f) in lit.fields.iter().enumerate() {
        let Member::Named(member) = &f.member else {
            return None;
        };
        let temp = format_ident!("__adjoint_field{}", k);
        let value = &f.expr;
        lets.push(quote!(let #temp = #value;));
        named.push((member.to_string(), temp));
    }
    named.sort_by(|a, b| a.0.cmp(&b.0));
    let temps = named.iter().map(|(_, t)| t);
    Some(syn::parse_quote!({ #(#lets)* #rule(#(#temps),*) }))
}

/// `Enum::__new_V` for the variant path `Enum::V`; `None` for other paths (a type, a function,
/// `Some`, a path of one segment).
fn new_rule(path: &syn::Path) -> Option<syn::Path> {
    // `Option::Some(x)` and `Result::Ok(x)` pass the tangent of `x` through: no variant rule.
    if !is_variant_path(path) {
        return None;
    }
    let mut rule = path.clone();
    let last = rule.segments.last_mut()?;
    last.ident = format_ident!("__new_{}", last.ident, span = last.ident.span());
    Some(rule)
}

/// `if let P = e { a } else { b }` with a variant pattern `P`, as `match e { P => a, _ => b }`.
pub fn if_let_as_match(e: &syn::ExprIf) -> Option<syn::ExprMatch> {
    let Expr::Let(l) = &*e.cond else {
        return None;
    };
    if !destructures(&l.pat) {
        return None;
    }
    let (pat, scrutinee, then) = (&l.pat, &l.expr, &e.then_branch);
    let otherwise = match &e.else_branch {
        Some((_, b)) => quote!(#b),
        None => quote!({}),
    };
    syn::parse2(quote!(match #scrutinee { #pat => #then, _ => #otherwise })).ok()
}

/// A pattern that destructures an enum variant or a struct (`Shape::Circle(r)`,
/// `Pt { x, .. }`), not `Some`/`Ok`/`Err`/`None`.
fn destructures(pat: &Pat) -> bool {
    match pat {
        Pat::TupleStruct(t) => owner_of(&t.path).is_some(),
        Pat::Struct(s) => owner_of(&s.path).is_some(),
        Pat::Path(p) => is_variant_path(&p.path),
        Pat::Or(o) => o.cases.iter().any(destructures),
        _ => false,
    }
}

/// A pattern naming an enum variant through its type (`Shape::Circle(..)`, `Self::Empty`).
fn names_variant(pat: &Pat) -> bool {
    match pat {
        Pat::TupleStruct(t) => is_variant_path(&t.path),
        Pat::Struct(s) => is_variant_path(&s.path),
        Pat::Path(p) => is_variant_path(&p.path),
        Pat::Or(o) => o.cases.iter().any(names_variant),
        _ => false,
    }
}

/// Whether `path` names an enum variant through its type (`Shape::Circle`, `Self::Empty`), not
/// `Some`/`Ok`/`Err`/`None`.
pub fn is_variant_path(path: &syn::Path) -> bool {
    matches!(owner_of(path), Some(Some(_)))
}

/// What a pattern's path names: `Some(Some(V))` a variant `V` through its type
/// (`Shape::Circle`), `Some(None)` a struct (`Pt`, `geo::Pt`, `Self`), `None` anything else
/// (`Some`, `Ok`, `Err`, `None`, a lowercase path).
fn owner_of(path: &syn::Path) -> Option<Option<&Ident>> {
    let last = &path.segments.last()?.ident;
    let upper = |i: &Ident| i.to_string().starts_with(|c: char| c.is_ascii_uppercase());
    if !upper(last) || matches!(last.to_string().as_str(), "Some" | "Ok" | "Err" | "None") {
        return None;
    }
    let n = path.segments.len();
    Some((n >= 2 && upper(&path.segments[n - 2].ident)).then_some(last))
}

/// The pattern matched on the data copy (payloads a guard does not read become `_`), pushing
/// the payloads the arm binds; `None` for a pattern this rewrite does not read.
fn pattern(
    pat: &Pat,
    bindings: &mut Vec<Binding>,
    guard: Option<&[String]>,
) -> Option<TokenStream> {
    let kept = |name: &Ident| guard.is_some_and(|used| used.contains(&name.to_string()));
    match pat {
        Pat::Wild(_) => Some(quote!(#pat)),
        Pat::Path(p) if p.qself.is_none() => Some(quote!(#pat)),
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
            // The whole value: the rewritten arm binds a clone of it.
            let (name, mutable) = (&p.ident, p.mutability.is_some());
            bindings.push(Binding {
                name: name.clone(),
                mutable,
                read: quote_spanned!(name.span()=> clone()),
            });
            Some(if kept(name) { quote!(#name) } else { quote!(_) })
        }
        Pat::Or(o) => {
            let before = bindings.len();
            let cases = o
                .cases
                .iter()
                .map(|c| pattern(c, bindings, guard))
                .collect::<Option<Vec<_>>>()?;
            (bindings.len() == before).then(|| quote!(#(#cases)|*))
        }
        Pat::TupleStruct(t) if t.qself.is_none() => {
            let variant = owner_of(&t.path)?;
            let mut parts = Vec::new();
            let mut position = 0;
            for elem in &t.elems {
                match elem {
                    Pat::Rest(_) => {
                        // Positions after `..` are unknown: only `..` last is read.
                        parts.push(quote!(..));
                        position = usize::MAX;
                    }
                    _ if position == usize::MAX => return None,
                    _ => {
                        parts.push(payload(
                            elem,
                            variant,
                            &position.to_string(),
                            bindings,
                            &kept,
                        )?);
                        position += 1;
                    }
                }
            }
            let path = &t.path;
            Some(quote!(#path(#(#parts),*)))
        }
        Pat::Struct(s) if s.qself.is_none() => {
            let variant = owner_of(&s.path)?;
            let mut fields = Vec::new();
            for f in &s.fields {
                let Member::Named(member) = &f.member else {
                    return None;
                };
                let part = payload(&f.pat, variant, &member.to_string(), bindings, &kept)?;
                fields.push(match *member == part.to_string() {
                    true => quote!(#member),
                    false => quote!(#member: #part),
                });
            }
            let (path, rest) = (&s.path, s.rest.as_ref().map(|_| quote!(..)));
            Some(quote!(#path { #(#fields,)* #rest }))
        }
        _ => None,
    }
}

/// A payload's subpattern: `_`, or a name bound to the reader of `variant`'s field `label`
/// (to the field itself for a struct).
fn payload(
    pat: &Pat,
    variant: Option<&Ident>,
    label: &str,
    bindings: &mut Vec<Binding>,
    kept: &dyn Fn(&Ident) -> bool,
) -> Option<TokenStream> {
    match pat {
        Pat::Wild(_) => Some(quote!(_)),
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
            let name = &p.ident;
            bindings.push(Binding {
                name: name.clone(),
                mutable: p.mutability.is_some(),
                read: match variant {
                    Some(v) => {
                        let reader = format_ident!("__variant_{}_{}", v, label, span = name.span());
                        quote!(#reader())
                    }
                    None => {
                        let member: Member = syn::parse_str(label).ok()?;
                        quote_spanned!(name.span()=> #member)
                    }
                },
            });
            Some(if kept(name) { quote!(#name) } else { quote!(_) })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(tokens: TokenStream) -> String {
        let m: syn::ExprMatch = syn::parse2(tokens).unwrap();
        as_data_match(&m)
            .map(|e| e.to_token_stream().to_string())
            .unwrap_or_default()
    }

    #[test]
    fn variant_payloads_are_read_by_rules_and_the_variant_is_data() {
        let out = rewritten(quote!(match s {
            Shape::Circle(r) => r * r,
            Shape::Rect { w, h: t, .. } if w > 1.0 => w * t,
            Shape::Empty | Shape::Dot(..) => 0.0,
            other => other.area(),
        }));
        assert!(
            out.contains("variant_of_owned (& __adjoint_variant)"),
            "{out}"
        );
        assert!(
            out.contains(
                "Shape :: Circle (_) => { let r = __adjoint_variant . __variant_Circle_0 () ;"
            ),
            "{out}"
        );
        assert!(
            out.contains("Shape :: Rect { w , h : _ , .. } if w > 1.0"),
            "{out}"
        );
        assert!(
            out.contains("let t = __adjoint_variant . __variant_Rect_h () ;"),
            "{out}"
        );
        assert!(
            out.contains("_ => { let other = __adjoint_variant . clone () ;"),
            "{out}"
        );
        let borrowed = rewritten(quote!(match s {
            Shape::Circle(r) => r,
            _ => 0.0,
        }));
        assert!(
            borrowed.contains("variant_of (& __adjoint_variant)"),
            "{borrowed}"
        );
    }

    #[test]
    fn other_patterns_are_left() {
        assert_eq!(
            rewritten(quote!(match o {
                Some(v) => v,
                None => 0.0,
            })),
            ""
        );
        assert_eq!(
            rewritten(quote!(match s {
                Shape::Circle(0.0) => 1.0,
                _ => 0.0,
            })),
            ""
        );
        assert_eq!(
            rewritten(quote!(match s {
                Shape::Pair(.., b) => b,
                _ => 0.0,
            })),
            ""
        );
        assert_eq!(
            rewritten(quote!(match s {
                Shape::Circle(r) | Shape::Square(r) => r,
                _ => 0.0,
            })),
            ""
        );
    }
}
