//! Writes that `#[differentiable]` cannot follow are rejected, each with one error, and the
//! same constructs on data are accepted. Each function here compiled, before these checks,
//! to a silently wrong derivative (the error names what the derivative would have missed).
//! The rendering of a few of these errors at the user's span is pinned by the trybuild cases
//! in `tests/ui/writes/`.

use proc_macro2::{TokenStream, TokenTree};
use quote::quote;

/// The messages of the `compile_error!`s in the expansion of `#[differentiable] item`.
fn errors(item: TokenStream) -> Vec<String> {
    fn collect(tokens: TokenStream, out: &mut Vec<String>) {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, tt) in tts.iter().enumerate() {
            match tt {
                TokenTree::Ident(id) if id == "compile_error" => {
                    if let Some(TokenTree::Group(g)) = tts.get(i + 2)
                        && let Some(TokenTree::Literal(lit)) = g.stream().into_iter().next()
                    {
                        out.push(lit.to_string());
                    }
                }
                TokenTree::Group(g) => collect(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    collect(
        crate::expand::differentiable(TokenStream::new(), item),
        &mut out,
    );
    out
}

/// Asserts that `item` is rejected with exactly one error containing `fragment`.
fn rejects(item: TokenStream, fragment: &str) {
    let found = errors(item.clone());
    // Tokens print with spaces outside a compiler (`* out`): compare without them.
    let squeeze = |s: &str| s.replace(' ', "");
    assert!(
        found.len() == 1 && squeeze(&found[0]).contains(&squeeze(fragment)),
        "expected one error containing {fragment:?} for\n{item}\ngot {found:#?}"
    );
}

/// Asserts that `item` expands without errors.
fn accepts(item: TokenStream) {
    let found = errors(item.clone());
    assert!(
        found.is_empty(),
        "expected no error for\n{item}\ngot {found:#?}"
    );
}

#[test]
fn borrows_the_lowering_does_not_follow() {
    // `a` is changed through `pair.0`: its derivative would stay 1.
    rejects(
        quote!(
            fn f(x: f64) -> f64 {
                let mut a = x;
                let pair = (&mut a, 1.0);
                *pair.0 = 2.0;
                a
            }
        ),
        "this `&mut` borrow of an active value is not followed",
    );
    // A closure borrowing a capture `&mut` writes it where the lowering cannot see.
    rejects(
        quote!(
            fn f(x: f64) -> f64 {
                let mut y = x;
                let mut g = || {
                    let r = &mut y;
                    *r = 2.0;
                };
                g();
                y
            }
        ),
        "`y` is assigned inside a closure",
    );
    // `ref mut` into an active tuple: `t.0` is overwritten.
    rejects(
        quote!(
            fn f(x: f64) -> f64 {
                let t = (x, 1.0);
                let (ref mut a, _) = t;
                *a = 2.0;
                t.0 * 3.0
            }
        ),
        "`ref mut` binds a reference into an active value",
    );
    rejects(
        quote!(
            fn f(x: f64) -> f64 {
                let mut o = Some(x);
                if let Some(ref mut v) = o {
                    *v = 2.0;
                }
                match o {
                    Some(v) => v,
                    None => 0.0,
                }
            }
        ),
        "`ref mut` binds a reference into an active value",
    );
}

#[test]
fn writes_through_references_the_lowering_does_not_follow() {
    // `out` is not differentiated: the derivative of what is written to it would be lost.
    rejects(
        quote!(
            fn f(x: f64, #[no_derivative] out: &mut f64) -> f64 {
                *out = x * 2.0;
                x
            }
        ),
        "`*out`",
    );
    rejects(
        quote!(
            fn f(x: f64, #[no_derivative] out: &mut f64) -> f64 {
                *out += x;
                x
            }
        ),
        "`*out`",
    );
}

#[test]
fn data_written_into_active_values() {
    // Each write makes part of an active value data: its derivative must become zero. (A
    // field of a local, `p.0 = 2.0`, is followed: tests/writes.rs `data_into_active_field`.)
    rejects(
        quote!(
            fn f(x: f64) -> f64 {
                let mut m = [[x, x], [x, x]];
                m[0][1] = 0.0;
                m[0][1] + m[1][0]
            }
        ),
        "`m[0][1]`",
    );
    rejects(
        quote!(
            fn f(x: f64) -> f64 {
                let mut v = vec![x, x];
                *v.last_mut().unwrap() = 1.0;
                v[0] + v[1]
            }
        ),
        "`.last_mut(..)` lends part of an active value by `&mut`",
    );
}

#[test]
fn closures_that_write_their_captures() {
    rejects(
        quote!(
            fn f(x: f64) -> f64 {
                let mut y = 0.0;
                let mut add = |v: f64| y += v;
                let _ = add(x);
                y * 2.0
            }
        ),
        "`y` is assigned by a closure called here with active values",
    );
    // On data they are fine.
    accepts(quote!(
        fn f(x: f64) -> f64 {
            let mut n = 0;
            let mut inc = || n += 1;
            inc();
            x * 2.0
        }
    ));
}

#[test]
fn writes_hidden_in_macros() {
    // A macro may assign what it is passed.
    rejects(
        quote!(
            fn f(x: f64) -> f64 {
                let mut y = 0.0;
                set!(y, x * 3.0);
                y
            }
        ),
        "`y` may be assigned inside macro `set!`",
    );
    // A write in the arguments of a standard macro.
    rejects(
        quote!(
            fn f(x: f64) -> f64 {
                let mut y = 0.0;
                println!("{}", {
                    y = x;
                    y
                });
                y
            }
        ),
        "`y` is assigned inside macro `println!`",
    );
    // A macro defined in the body may assign the locals in scope wherever it is used.
    rejects(
        quote!(
            fn f(x: f64) -> f64 {
                let mut y = 0.0;
                macro_rules! set_y {
                    ($e:expr) => {
                        y = $e;
                    };
                }
                set_y!(x * 3.0);
                y
            }
        ),
        "this macro assigns `y`",
    );
    // Reading, or passing what cannot be assigned, is fine.
    accepts(quote!(
        fn f(x: f64) -> f64 {
            println!("{}", x);
            log!(x);
            assert!(x > 0.0);
            x * 2.0
        }
    ));
}

#[test]
fn writes_in_conditions_and_opaque_constructs() {
    // The conditions of `if` and `while` are kept as written: an inout call there is not seen.
    rejects(
        quote!(
            fn f(x: f64) -> f64 {
                let mut v = x;
                if g(&mut v) > 0.0 {
                    v = v * 2.0;
                }
                v
            }
        ),
        "`v` is assigned inside `if`",
    );
    rejects(
        quote!(
            fn f(x: f64) -> f64 {
                let mut v = x;
                while g(&mut v) < 9.0 {
                    v = v * 2.0;
                }
                v
            }
        ),
        "`v` is assigned inside",
    );
    // A method taking `&mut self` inside a closure reorders `v`.
    rejects(
        quote!(
            fn f(x: f64) -> f64 {
                let mut v = vec![x, 2.0 * x];
                let mut rot = || v.reverse();
                rot();
                v[0]
            }
        ),
        "`v` may be changed by `.reverse(..)` inside a closure",
    );
    // Conditions that only read are fine.
    accepts(quote!(
        fn f(x: f64) -> f64 {
            let mut v = x;
            if v.abs() > 1.0 {
                v = v * 2.0;
            }
            v
        }
    ));
}

#[test]
fn errors_in_regions_that_do_not_reach_the_result() {
    // `a` is written by the arm but never read: the borrow is still an error.
    rejects(
        quote!(
            fn f(x: f64, c: bool) -> f64 {
                let mut a = x;
                if c {
                    let pair = (&mut a, 1.0);
                    *pair.0 = 2.0;
                }
                x
            }
        ),
        "this `&mut` borrow of an active value is not followed",
    );
    rejects(
        quote!(
            fn f(x: f64, n: usize) -> f64 {
                let mut a = x;
                for _ in 0..n {
                    a = a * x;
                    let pair = (&mut a, 1.0);
                    *pair.0 = 2.0;
                }
                x
            }
        ),
        "this `&mut` borrow of an active value is not followed",
    );
}
