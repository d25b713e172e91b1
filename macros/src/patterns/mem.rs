//! Calls of `std::mem::{swap, replace, take}`, which both emitters differentiate natively.

use syn::{Expr, ExprCall};

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

#[cfg(test)]
mod tests {
    use super::*;

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
