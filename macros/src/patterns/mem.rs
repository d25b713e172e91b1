//! Calls of `std::mem::{swap, replace, take}`, which both emitters differentiate natively on
//! locals; on parts of values (a field `p.x`, an element `v[i]`) they are rewritten as the
//! reads and writes they make, which both emitters follow:
//!
//! ```text
//! mem::swap(&mut p.x, &mut p.y)   ⇒ { let a = p.x.clone(); let b = p.y.clone(); p.x = b; p.y = a; }
//! mem::replace(&mut p.x, e)       ⇒ { let new = e; let old = p.x.clone(); p.x = new; old }
//! mem::take(&mut v[i])            ⇒ { let old = v[i].clone(); v[i] = Default::default(); old }
//! ```

use syn::{Expr, ExprCall, parse_quote};

/// The function a call names when it is `std::mem::f`, `core::mem::f` or `mem::f` (a bare `f`
/// may be the user's own function, so it is not one), for `f` among `swap`, `replace`, `take`.
pub fn mem_function(c: &ExprCall) -> Option<String> {
    let Expr::Path(p) = &*c.func else {
        return None;
    };
    if p.qself.is_some() {
        return None;
    }
    let segments: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    match segments.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["std" | "core", "mem", f] | ["mem", f] if matches!(f, "swap" | "replace" | "take") => {
            Some(f.to_string())
        }
        _ => None,
    }
}

/// A `mem` call on parts of values as reads and writes; `None` when an argument is a plain
/// local (handled natively) or not a field or element place.
pub fn on_parts(c: &ExprCall) -> Option<Expr> {
    let function = mem_function(c)?;
    let args: Vec<&Expr> = c.args.iter().collect();
    // A local beside a part is written as a local; all locals are the native form.
    let parts = args
        .iter()
        .any(|a| matches!(a, Expr::Reference(r) if is_part(&r.expr)));
    let part = |e: &Expr| match e {
        Expr::Reference(r)
            if parts && r.mutability.is_some() && (is_part(&r.expr) || is_local(&r.expr)) =>
        {
            Some((*r.expr).clone())
        }
        _ => None,
    };
    Some(match (function.as_str(), args.as_slice()) {
        ("swap", [a, b]) => {
            let (a, b) = (part(a)?, part(b)?);
            parse_quote!({
                let __adjoint_a = #a.clone();
                let __adjoint_b = #b.clone();
                #a = __adjoint_b;
                #b = __adjoint_a;
            })
        }
        ("replace", [a, value]) => {
            let a = part(a)?;
            parse_quote!({
                let __adjoint_new = #value;
                let __adjoint_old = #a.clone();
                #a = __adjoint_new;
                __adjoint_old
            })
        }
        ("take", [a]) => {
            let a = part(a)?;
            parse_quote!({
                let __adjoint_old = #a.clone();
                #a = ::core::default::Default::default();
                __adjoint_old
            })
        }
        _ => return None,
    })
}

/// Whether `e` names a local.
fn is_local(e: &Expr) -> bool {
    matches!(e, Expr::Path(p) if p.path.get_ident().is_some())
}

/// Whether `e` is a field or element of a local (`p.x`, `v[i]`, `p.v[i].x`).
fn is_part(e: &Expr) -> bool {
    fn rooted(e: &Expr) -> bool {
        match e {
            Expr::Path(p) => p.path.get_ident().is_some(),
            Expr::Field(f) => rooted(&f.base),
            Expr::Index(i) => rooted(&i.expr),
            Expr::Paren(p) => rooted(&p.expr),
            _ => false,
        }
    }
    matches!(e, Expr::Field(_) | Expr::Index(_)) && rooted(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    #[test]
    fn mem_calls_on_parts_are_reads_and_writes() {
        let rewritten = |s: &str| {
            on_parts(&syn::parse_str(s).unwrap()).map(|e| e.to_token_stream().to_string())
        };
        let out = rewritten("std::mem::swap(&mut p.x, &mut p.y)").unwrap();
        assert!(
            out.contains("p . x = __adjoint_b ; p . y = __adjoint_a ;"),
            "{out}"
        );
        let out = rewritten("mem::take(&mut v[i])").unwrap();
        assert!(
            out.contains("v [i] = :: core :: default :: Default :: default ()"),
            "{out}"
        );
        assert!(rewritten("mem::replace(&mut p.x, 2.0)").is_some());
        assert_eq!(rewritten("mem::swap(&mut a, &mut b)"), None);
        assert!(
            rewritten("mem::swap(&mut p.x, &mut b)")
                .unwrap()
                .contains("b = __adjoint_a")
        );
    }

    #[test]
    fn only_the_mem_paths_count() {
        let name = |s: &str| mem_function(&syn::parse_str(s).unwrap());
        assert_eq!(
            name("std::mem::swap(&mut a, &mut b)").as_deref(),
            Some("swap")
        );
        assert_eq!(name("mem::take(&mut a)").as_deref(), Some("take"));
        assert_eq!(
            name("core::mem::replace(&mut a, b)").as_deref(),
            Some("replace")
        );
        assert_eq!(name("swap(&mut a, &mut b)"), None);
        assert_eq!(name("std::mem::drop(a)"), None);
    }
}
