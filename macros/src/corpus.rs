//! The whole repository as a test corpus of the macros: every item marked
//! `#[differentiable]`, `#[derivative_of(..)]` or `#[derive(Differentiable)]` in the workspace's
//! sources, tests (the `trybuild` cases included), examples and benches is expanded here.
//!
//! The test fails when an expansion panics or when the corpus shrinks below what it holds
//! today. A refactoring of the macros that must not change what they emit is checked by
//! writing every expansion to a file before and after and comparing the two:
//!
//! ```text
//! ADJOINT_CORPUS_OUT=/tmp/before.txt cargo test -p adjoint-macros corpus
//! # ... change the macros ...
//! ADJOINT_CORPUS_OUT=/tmp/after.txt cargo test -p adjoint-macros corpus
//! cmp /tmp/before.txt /tmp/after.txt
//! ```

use proc_macro2::TokenStream;
use quote::ToTokens;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The folders of the workspace that hold Rust code with marked items.
const FOLDERS: &[&str] = &["src", "core/src", "tests", "examples", "benches"];

/// Which macro an attribute invokes.
enum Macro {
    Differentiable,
    DerivativeOf,
    Derive,
}

fn macro_of(attr: &syn::Attribute) -> Option<Macro> {
    let last = attr.path().segments.last()?.ident.to_string();
    match last.as_str() {
        "differentiable" => Some(Macro::Differentiable),
        "derivative_of" => Some(Macro::DerivativeOf),
        "derive" => {
            let text = attr.meta.to_token_stream().to_string();
            text.contains("Differentiable").then_some(Macro::Derive)
        }
        _ => None,
    }
}

/// The attributes of the items the macros apply to.
fn attrs_mut(item: &mut syn::Item) -> Option<&mut Vec<syn::Attribute>> {
    match item {
        syn::Item::Fn(f) => Some(&mut f.attrs),
        syn::Item::Impl(i) => Some(&mut i.attrs),
        syn::Item::Trait(t) => Some(&mut t.attrs),
        syn::Item::Struct(s) => Some(&mut s.attrs),
        syn::Item::Enum(e) => Some(&mut e.attrs),
        _ => None,
    }
}

/// Expands the first macro attribute of `item` as rustc would: an attribute macro receives
/// its arguments and the item without that attribute; a derive receives the item.
fn expand(item: &syn::Item) -> Option<TokenStream> {
    let mut item = item.clone();
    let attrs = attrs_mut(&mut item)?;
    let at = attrs.iter().position(|a| macro_of(a).is_some())?;
    let attr = attrs.remove(at);
    let args = match &attr.meta {
        syn::Meta::List(list) => list.tokens.clone(),
        _ => TokenStream::new(),
    };
    Some(match macro_of(&attr)? {
        Macro::Differentiable => crate::expand::differentiable(args, item.to_token_stream()),
        Macro::DerivativeOf => crate::derivative_of::expand(args, item.to_token_stream()),
        Macro::Derive => {
            attrs_mut(&mut item)?.insert(at, attr);
            crate::derive::expand(item.to_token_stream())
        }
    })
}

/// Collects the expansions of every marked item, at any depth, of one file.
struct Expansions<'o> {
    file: String,
    out: &'o mut String,
    count: usize,
}

impl<'a> Visit<'a> for Expansions<'_> {
    fn visit_item(&mut self, item: &'a syn::Item) {
        if let Some(tokens) = expand(item) {
            self.count += 1;
            let _ = writeln!(self.out, "// {} #{}\n{tokens}\n", self.file, self.count);
        }
        syn::visit::visit_item(self, item);
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_marked_item_of_the_workspace_expands() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for folder in FOLDERS {
        rust_files(&root.join(folder), &mut files);
    }
    files.sort();
    let mut out = String::new();
    let mut count = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read a source file");
        // A `trybuild` case may be invalid Rust on purpose: it is then no item to expand.
        let Ok(file) = syn::parse_file(&text) else {
            continue;
        };
        let name = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .display()
            .to_string();
        let mut visitor = Expansions {
            file: name,
            out: &mut out,
            count: 0,
        };
        visitor.visit_file(&file);
        count += visitor.count;
    }
    assert!(
        count >= 300,
        "the corpus holds {count} marked items; it held more than 300 when this test was written"
    );
    if let Some(path) = std::env::var_os("ADJOINT_CORPUS_OUT") {
        std::fs::write(&path, &out).expect("write the corpus expansions");
    }
}

/// The forward rewrite of every free `#[differentiable]` function of the workspace: how many
/// it accepts, and the first reason of each one it rejects (printed with `--nocapture`). The
/// rewrite must never panic, whatever the body.
#[test]
fn forward_mode_over_the_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for folder in FOLDERS {
        rust_files(&root.join(folder), &mut files);
    }
    files.sort();
    let (mut accepted, mut rejected) = (0, Vec::new());
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read a source file");
        let Ok(file) = syn::parse_file(&text) else {
            continue;
        };
        let mut fns = ForwardFns(Vec::new());
        fns.visit_file(&file);
        for f in fns.0 {
            match forward_of(&f) {
                Some(Ok(())) => accepted += 1,
                Some(Err(e)) => rejected.push(format!("{}: {}: {e}", path.display(), f.sig.ident)),
                None => {}
            }
        }
    }
    println!(
        "forward mode accepts {accepted} of {} functions",
        accepted + rejected.len()
    );
    for r in &rejected {
        println!("  {r}");
    }
    assert!(accepted > 0, "the corpus holds differentiable functions");
}

/// Free functions marked `#[differentiable]`.
struct ForwardFns(Vec<syn::ItemFn>);

impl<'a> Visit<'a> for ForwardFns {
    fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
        if f.attrs
            .iter()
            .any(|a| matches!(macro_of(a), Some(Macro::Differentiable)))
        {
            self.0.push(f.clone());
        }
        syn::visit::visit_item_fn(self, f);
    }
}

/// The forward rewrite of one function: `None` when its signature is rejected anyway.
fn forward_of(f: &syn::ItemFn) -> Option<Result<(), String>> {
    let mut f = f.clone();
    f.attrs.retain(|a| macro_of(a).is_none());
    let mut item: crate::parse::item::FnItem = syn::parse2(f.to_token_stream()).ok()?;
    let args = crate::parse::attr::DiffArgs::default();
    let excluded = crate::parse::signature::strip_no_derivative(&mut item.sig);
    let mut errors = crate::diag::Errors::default();
    let sig = crate::parse::signature::analyse(&item.sig, &excluded, &args, &mut errors)?;
    if !errors.is_empty() {
        return None;
    }
    Some(
        crate::forward::companions(&item, &sig, &args)
            .map(|_| ())
            .map_err(|e| {
                e.into_compile_errors()
                    .to_string()
                    .chars()
                    .take(200)
                    .collect()
            }),
    )
}
