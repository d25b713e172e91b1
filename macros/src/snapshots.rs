//! Snapshot tests of the emitted code, one per construct: the expansion of a small function,
//! pretty-printed, is compared with `macros/tests/snapshots/<name>.txt`.
//!
//! A test fails when the emitted code changes. After an intended change, regenerate the files
//! and read the diff before committing them:
//!
//! ```text
//! UPDATE_SNAPSHOTS=1 cargo test -p adjoint-macros snapshots
//! git diff macros/tests/snapshots
//! ```

use proc_macro2::TokenStream;
use quote::quote;
use std::path::PathBuf;

/// The expansion of `#[differentiable(args)] item`, pretty-printed.
fn expand(args: TokenStream, item: TokenStream) -> String {
    let out = crate::expand::differentiable(args, item);
    match syn::parse2::<syn::File>(out.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => panic!("the expansion does not parse as items ({e}):\n{out}"),
    }
}

/// Compares `actual` with the snapshot `name`, or rewrites the snapshot when the environment
/// variable `UPDATE_SNAPSHOTS` is set.
fn check(name: &str, actual: &str) {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "snapshots"]
        .iter()
        .collect::<PathBuf>()
        .join(format!("{name}.txt"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().expect("a snapshot has a folder"))
            .expect("create the snapshot folder");
        std::fs::write(&path, actual).expect("write the snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read snapshot {} ({e}): run `UPDATE_SNAPSHOTS=1 cargo test -p adjoint-macros snapshots`",
            path.display()
        )
    });
    if expected == actual {
        return;
    }
    let first = expected
        .lines()
        .zip(actual.lines())
        .position(|(e, a)| e != a)
        .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
    let show = |text: &str| {
        text.lines()
            .enumerate()
            .skip(first.saturating_sub(3))
            .take(7)
            .map(|(i, l)| format!("{:>4} | {l}\n", i + 1))
            .collect::<String>()
    };
    panic!(
        "the expansion differs from snapshot {} from line {}\n--- expected\n{}--- actual\n{}\nIf the change is intended, rerun with UPDATE_SNAPSHOTS=1 and review the diff.",
        path.display(),
        first + 1,
        show(&expected),
        show(actual),
    );
}

#[test]
fn straight_line() {
    let item = quote! {
        fn f(x: f64, y: f64) -> f64 {
            let z = x * y;
            z + x.sin()
        }
    };
    check("straight_line", &expand(quote!(), item));
}

#[test]
fn tuple_pattern() {
    let item = quote! {
        fn f(x: f64, y: f64) -> f64 {
            let (a, b) = (x * y, x.exp());
            a - b
        }
    };
    check("tuple_pattern", &expand(quote!(), item));
}

#[test]
fn if_else() {
    let item = quote! {
        fn f(x: f64) -> f64 {
            if x > 0.0 { x * x } else { 0.5 * x }
        }
    };
    check("if_else", &expand(quote!(), item));
}

#[test]
fn for_loop_with_element_read() {
    let item = quote! {
        fn f(x: [f64; 3]) -> f64 {
            let mut s = 0.0;
            for i in 0..3 {
                s += x[i] * x[i];
            }
            s
        }
    };
    check("for_loop", &expand(quote!(), item));
}

/// An accumulation loop nested in a loop: the parameter it indexes is shared, not copied into
/// every inner pullback.
#[test]
fn nested_loop_sharing_a_parameter() {
    let item = quote! {
        fn f(w: [f64; 3]) -> f64 {
            let mut h = 1.0;
            for _ in 0..2 {
                let mut s = 0.0;
                for i in 0..3 {
                    s += w[i] * h;
                }
                h = s.tanh();
            }
            h
        }
    };
    check("nested_loop", &expand(quote!(), item));
}

/// A loop writing elements (`y[i] = x[i].tanh()`): run again backwards in the pullback, its
/// `tanh` recorded by the forward pass and differentiated from the recorded value.
#[test]
fn element_writes_with_a_recorded_call() {
    let item = quote! {
        fn f(x: [f64; 3]) -> f64 {
            let mut y = [0.0; 3];
            for i in 0..3 {
                y[i] = x[i].tanh();
            }
            y[0] + y[1] + y[2]
        }
    };
    check("recorded_call", &expand(quote!(), item));
}

/// A recurrence over a range with a straight-line body: checkpointed (the tape holds `x` per
/// iteration, the pullback runs the body again backwards from each stored `x`).
#[test]
fn checkpointed_recurrence() {
    let item = quote! {
        fn f(r: f64, x0: f64) -> f64 {
            let mut x = x0;
            for _ in 0..3 {
                x = r * x * (1.0 - x);
            }
            x
        }
    };
    check("checkpointed_loop", &expand(quote!(), item));
}

#[test]
fn fused_affine() {
    let item = quote! {
        fn cell(h: &Tensor, w: &Tensor, b: &Tensor) -> Tensor {
            (h.matmul(w) + b).tanh()
        }
    };
    check("fused_affine", &expand(quote!(), item));
}

/// A loop whose body is one fused affine step of the carried value: one rule over the initial
/// value and the shared operands (`recurrence.rs`), its fallback the step's unfused rules.
#[test]
fn recurrence_loop() {
    let item = quote! {
        fn rnn(w: &Tensor, u: &Tensor, b: &Tensor, xs: &[Tensor]) -> Tensor {
            let mut h = Tensor::zeros(&[1, 4]);
            for x in xs {
                h = (h.matmul(w) + x.matmul(u) + b).tanh();
            }
            h
        }
    };
    check("recurrence_loop", &expand(quote!(wrt(w, u, b)), item));
}

/// `#[inline]` on the function is repeated on `f_vjp`, `f_vjp::__full` and `f_jvp`, so that a
/// small function inlines together with its pullback (its `needs` become constants at the
/// call). Functions without it expand as before (the corpus test compares them).
#[test]
fn inline_attribute_on_the_companions() {
    let item = quote! {
        #[inline]
        fn f(x: f64, y: f64) -> f64 {
            x * y
        }
    };
    let expanded = expand(quote!(forward), item);
    for companion in ["fn f_vjp(", "fn __full(", "fn f_jvp("] {
        let at = expanded
            .find(companion)
            .unwrap_or_else(|| panic!("no `{companion}` in\n{expanded}"));
        let before = &expanded[..at];
        let attrs = &before[before.rfind(['}', ';']).unwrap_or(0)..];
        assert!(
            attrs.contains("#[inline]"),
            "`{companion}` has no #[inline]: {attrs}"
        );
    }
    check("inline_companions", &expanded);
}
