//! The code of a loop with active carried variables, in each [`Strategy`] the lowering picked:
//! taped, replayed or checkpointed.
//!
//! [`Strategy`]: crate::lower::strategy::Strategy

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use syn::{Block, Expr, Stmt};

/// A `for` loop over a range, which the pullback can run again.
pub struct Replay {
    /// The loop's attributes and pattern, as written after `for`.
    pub pattern: TokenStream,
    /// The pattern alone.
    pub pat: TokenStream,
    pub range: Expr,
    /// Whether `range` is a constant expression ([`Lowering::is_constant`]) that no iteration
    /// changes: the pullback then evaluates it again instead of keeping its value, so the
    /// record is smaller and the compiler sees the bounds (and unrolls a short loop).
    pub constant: bool,
}

impl Replay {
    /// The range in the pullback: evaluated again when it is constant, else the captured one.
    fn in_pullback(&self) -> TokenStream {
        if self.constant {
            let range = &self.range;
            quote!(let __adjoint_range = #range;)
        } else {
            TokenStream::new()
        }
    }
}

/// A lowered loop body, ready to be emitted: its statements, its reverse step `step`
/// (`|carry, acc| -> carry`) and the pullback variable the loop's pullback is stored in.
pub struct LoopCode {
    pub pullback: Ident,
    pub step: TokenStream,
    pub ins: Vec<Ident>,
    pub hoisted: Vec<Ident>,
    pub stmts: Vec<Stmt>,
    pub acc_ty: TokenStream,
}

impl LoopCode {
    /// The loop's pullback, stored in its variable: it takes the seed and the accumulators of
    /// the loop's inputs, runs `prologue`, then `walk` over the iterations, which turns
    /// `__carry` (the seed at first) into the adjoint of the loop's carried state.
    fn pullback(&self, prologue: TokenStream, walk: TokenStream) -> TokenStream {
        let LoopCode {
            pullback,
            ins,
            acc_ty,
            ..
        } = self;
        quote! {
            #pullback = move |__seed, __acc: #acc_ty| {
                let (#(#ins,)*) = __acc;
                #prologue
                let mut __carry = __seed;
                #walk
                __carry
            };
        }
    }

    /// One iteration of a replayed loop's pullback: the differentiated body (which records the
    /// iteration's pullbacks in `hoisted`), then its step, applied to `__carry` at once.
    fn iteration(&self) -> TokenStream {
        let LoopCode {
            step,
            ins,
            hoisted,
            stmts,
            ..
        } = self;
        quote! {
            #(let #hoisted;)*
            { #(#stmts)* };
            let __step = #step;
            __carry = __step(__carry, (#(&mut *#ins,)*));
        }
    }

    /// Taping: each iteration pushes its step closure, holding that iteration's residuals;
    /// the pullback runs the closures in reverse.
    pub fn taped(self, setup: TokenStream, header: TokenStream, exit_check: TokenStream) -> Expr {
        let (hoisted, stmts, step, ins) = (&self.hoisted, &self.stmts, &self.step, &self.ins);
        let pullback = self.pullback(
            TokenStream::new(),
            quote! {
                for __step in __tape.into_iter().rev() {
                    __carry = __step(__carry, (#(&mut *#ins,)*));
                }
            },
        );
        Expr::Verbatim(quote!(({
            #setup
            #header {
                #(let #hoisted;)*
                { #(#stmts)* };
                __tape.push(#step);
                #exit_check
            }
            #pullback
        })))
    }

    /// Recomputation: the loop only adds into its carried variables, so their adjoints are the
    /// same in every iteration and the iterations can be differentiated in any order. The
    /// forward pass runs the loop on values; the pullback runs it again over copies of the
    /// `captured` variables, differentiating each iteration as it goes: nothing is stored per
    /// iteration.
    pub fn replayed(self, replay: Replay, body: &Block, rerun: Rerun) -> Expr {
        let again = replay.in_pullback();
        let Replay { pattern, range, .. } = replay;
        let Rerun {
            captured,
            how,
            backwards,
            recorded,
        } = rerun;
        let (capture, restore) = captures(captured, &how);
        let iteration = self.iteration();
        let order = if backwards {
            quote!(::core::iter::Iterator::rev(__adjoint_range))
        } else {
            quote!(__adjoint_range)
        };
        let (body, sites) = recorded.unwrap_or_else(|| (body.clone(), 0));
        let caches: Vec<Ident> = (0..sites)
            .map(|k| format_ident!("__adjoint_cache{}", k))
            .collect();
        let values: Vec<Ident> = (0..sites)
            .map(|k| format_ident!("__adjoint_cached{}", k))
            .collect();
        let read = if backwards {
            quote!(last_value)
        } else {
            quote!(next_value)
        };
        let pullback = self.pullback(
            quote! {
                #(#restore)*
                #(let mut #caches = #caches;)*
                #again
            },
            quote! {
                for #pattern in #order {
                    #(let #values = #caches.#read();)*
                    #iteration
                }
            },
        );
        Expr::Verbatim(quote!(({
            let __adjoint_range = #range;
            #(#capture)*
            #(let mut #caches = ::adjoint::__private::Cached::with_capacity(
                ::core::iter::Iterator::size_hint(&__adjoint_range).0,
            );)*
            for #pattern in ::core::clone::Clone::clone(&__adjoint_range) #body
            #pullback
        })))
    }

    /// Checkpointing: a loop with a recurrence (`x = r * x * (1.0 - x)`) whose body can be run
    /// again. The forward pass runs the loop on values and stores only the `carried` variables
    /// at the start of each iteration; the pullback walks the iterations backwards, restores
    /// them, runs the differentiated body once more from there and applies its step. A loop of
    /// N iterations holds N copies of its carried state instead of N closures of residuals.
    pub fn checkpointed(
        self,
        replay: Replay,
        body: &Block,
        carried: &[&String],
        free: &[&String],
        shared: &[Capture],
    ) -> Expr {
        let again = replay.in_pullback();
        let Replay {
            pattern,
            pat,
            range,
            ..
        } = replay;
        let (capture, restore) = captures(free, shared);
        let iteration = self.iteration();
        let carried: Vec<Ident> = carried.iter().map(|n| format_ident!("{}", n)).collect();
        let pullback = self.pullback(
            quote! {
                #(#restore)*
                #again
            },
            quote! {
                let __states = ::core::iter::Iterator::zip(
                    ::core::iter::Iterator::rev(__adjoint_range),
                    ::core::iter::Iterator::rev(::core::iter::IntoIterator::into_iter(__tape)),
                );
                for (#pat, __state) in __states {
                    #[allow(unused_mut)]
                    let (#(mut #carried,)*) = __state;
                    #iteration
                }
            },
        );
        Expr::Verbatim(quote!(({
            let __adjoint_range = #range;
            #(#capture)*
            let mut __tape = ::adjoint::__private::tape(
                ::core::iter::Iterator::size_hint(&__adjoint_range).0,
            );
            for #pattern in ::core::clone::Clone::clone(&__adjoint_range) {
                __tape.push((#(::core::clone::Clone::clone(&#carried),)*));
                #body
            }
            #pullback
        })))
    }
}

/// What a recomputed loop's pullback reads and how it walks the iterations.
pub struct Rerun<'a> {
    /// The variables it reads (its carried variables first), and how it gets each.
    pub captured: &'a [&'a String],
    pub how: Vec<Capture>,
    /// Whether it walks the iterations backwards (a loop with element writes).
    pub backwards: bool,
    /// The body whose expensive calls are recorded, and how many sites it has
    /// ([`crate::lower::cache`]).
    pub recorded: Option<(Block, usize)>,
}

/// How a recomputed loop's pullback gets a value it reads.
#[derive(Clone)]
pub enum Capture {
    /// Its own copy.
    Clone,
    /// A handle on the function's one copy of an unchanging parameter read only by indexing.
    Share,
    /// A reference, for a value read only by indexing in a loop nested in code that a pullback
    /// runs again: the nested pullback is called in the same iteration, while the value lives.
    Borrow,
    /// Only its type, for a collection the loop only writes (`index_rewrite`).
    Witness,
    /// An owned copy of the referent `T` (given) of a `&T` parameter, restored as a `&T`: for
    /// a pullback that may not keep references.
    OwnedRef(TokenStream),
    /// The same, as a handle on the function's one owned copy (a loop inside a loop, which
    /// would otherwise copy once per outer iteration).
    SharedRef(TokenStream),
}

/// The captures of a replayed loop's inputs (`let __capK = ..;` before the loop) and their
/// restoring in its pullback (`let name = ..;`), each as its [`Capture`] says.
fn captures(names: &[&String], how: &[Capture]) -> (Vec<TokenStream>, Vec<TokenStream>) {
    names
        .iter()
        .zip(how)
        .enumerate()
        .map(|(k, (name, how))| {
            let (name, cap) = (format_ident!("{}", name), format_ident!("__cap{}", k));
            match how {
                Capture::Share => {
                    let cell = format_ident!("__shared_{}", name);
                    (
                        quote!(let #cap = #cell.share(&#name);),
                        quote!(let #name = &*#cap;),
                    )
                }
                Capture::Borrow => (quote!(let #cap = &#name;), quote!(let #name = #cap;)),
                Capture::OwnedRef(ty) => (
                    quote!(let #cap = <#ty as ::std::borrow::ToOwned>::to_owned(#name);),
                    quote!(let #name: &#ty = ::core::borrow::Borrow::borrow(&#cap);),
                ),
                Capture::SharedRef(ty) => {
                    let cell = format_ident!("__shared_{}", name);
                    (
                        quote!(let #cap = #cell.share_owned(#name);),
                        quote!(let #name: &#ty = ::core::borrow::Borrow::borrow(&*#cap);),
                    )
                }
                Capture::Witness => (
                    quote!(let #cap = ::adjoint::__private::witness(&#name);),
                    quote!(let #name = #cap;),
                ),
                Capture::Clone => (
                    quote!(let #cap = ::core::clone::Clone::clone(&#name);),
                    quote!(#[allow(unused_mut)] let mut #name = #cap;),
                ),
            }
        })
        .unzip()
}
