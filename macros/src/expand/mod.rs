//! The one driver: `#[differentiable]` on a function, a method, or an `impl`/`trait` block.
//!
//! A function goes **parse → normalize → lower → activity → lower → reverse → emit**: its
//! signature is analysed (`parse`), early exits are restructured (`normalize`), the body goes
//! through the [pipeline](crate::pipeline) and the companions are written around the result
//! (`emit::companions`). The original function is always emitted unchanged.

mod blocks;

use crate::diag::Errors;
use crate::emit::companions::{bound, companions, full_body, lone_method};
use crate::lower;
use crate::parse::attr::DiffArgs;
use crate::parse::item::FnItem;
use crate::parse::signature::{self, FnSignature};
use crate::patterns::scan::calls_itself;
use crate::pipeline::compile_body;
use proc_macro2::TokenStream;
use quote::{ToTokens, quote};

/// Expands `#[differentiable(args)] input`: a function or method, or an `impl`/`trait` block
/// whose `#[differentiable]` methods then get pullbacks that borrow nothing.
pub fn differentiable(args: TokenStream, input: TokenStream) -> TokenStream {
    if let Ok(block) = syn::parse2::<syn::ItemImpl>(input.clone()) {
        return blocks::impl_block(args, block, function);
    }
    if let Ok(block) = syn::parse2::<syn::ItemTrait>(input.clone()) {
        return blocks::trait_block(args, block, function);
    }
    let mut errors = Errors::default();
    let args = syn::parse2::<DiffArgs>(args).unwrap_or_else(|e| {
        errors.add(e);
        DiffArgs::default()
    });
    function(args, input, errors)
}

/// Expands `#[differentiable]` on a function or method.
pub fn function(args: DiffArgs, input: TokenStream, mut errors: Errors) -> TokenStream {
    let mut item: FnItem = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            errors.push(
                proc_macro2::Span::call_site(),
                "#[differentiable] applies to functions and methods",
            );
            let errors = errors.into_compile_errors();
            return quote!(#input #errors);
        }
    };
    let excluded = signature::strip_no_derivative(&mut item.sig);
    let sig = signature::analyse(&item.sig, &excluded, &args, &mut errors);
    let body = match (&sig, &item.body, errors.is_empty()) {
        (Some(sig), Some(body), true) => {
            // A pullback that captures every lifetime in scope may keep reference arguments;
            // a lone method's boxed pullback outlives them.
            let refs_capturable =
                bound(&item, sig, &args).is_empty() && !lone_method(&item, sig, &args);
            let lone = lone_method(&item, sig, &args);
            Some(lower_body(
                sig,
                (&item.sig.output, &item.sig.ident),
                body,
                (refs_capturable, lone),
                &mut errors,
            ))
        }
        _ => None,
    };
    match sig {
        Some(sig) if errors.is_empty() => {
            let mut companions = companions(&item, &sig, &args, body.flatten());
            if item.body.is_some() && args.forward {
                match crate::forward::companions(&item, &sig, &args) {
                    Ok(forward) => companions.extend(forward),
                    Err(e) => companions.extend(e.into_compile_errors()),
                }
            }
            debug_print(&item.sig.ident, &companions);
            quote!(#item #companions)
        }
        // On error the original function is still emitted, so the user sees one error.
        _ => {
            let errors = errors.into_compile_errors();
            quote!(#item #errors)
        }
    }
}

/// Normalizes the body, runs it through the pipeline and writes the uniform companion's body
/// (its pullback boxed for a recursive function or a lone method, `lone`).
fn lower_body(
    sig: &FnSignature,
    (sig_output, name): (&syn::ReturnType, &syn::Ident),
    body: &syn::Block,
    (refs_capturable, lone): (bool, bool),
    errors: &mut Errors,
) -> Option<TokenStream> {
    let boxed = lone || calls_itself(name, body.to_token_stream());
    let body = &crate::normalize::normalize(body, sig_output);
    let first = lower::lower(sig, body, None, refs_capturable);
    let mut roots = vec![first.result.clone()];
    roots.extend(first.finals.iter().cloned());
    let compiled = compile_body(&first, &roots, |useful| {
        lower::lower(sig, body, Some(useful), refs_capturable)
    });
    if !compiled.pass.errors.is_empty() {
        *errors = compiled.pass.errors;
        return None;
    }
    Some(full_body(sig, &compiled, boxed))
}

/// Prints the companions of the functions named in `ADJOINT_EXPAND` (comma-separated, or `*`)
/// to stderr at compile time: a debugging aid for the macro itself.
fn debug_print(name: &syn::Ident, companions: &TokenStream) {
    let Ok(names) = std::env::var("ADJOINT_EXPAND") else {
        return;
    };
    if names == "*" || names.split(',').any(|n| name == n.trim()) {
        // prettyplease does not print every item syn parses (a bodiless method of a trait
        // impl is `Item::Verbatim`, which it refuses by panicking): those print as raw tokens,
        // so that setting `ADJOINT_EXPAND` never breaks a build.
        let text = syn::parse2::<syn::File>(companions.clone())
            .ok()
            .and_then(|file| std::panic::catch_unwind(|| prettyplease::unparse(&file)).ok())
            .unwrap_or_else(|| companions.to_string());
        eprintln!("// ---- companions of `{name}` ----\n{text}");
    }
}
