//! Loops: `for`, `while` and `loop` bodies as regions whose carried variables flow from one
//! iteration to the next. The strategy of a loop's pullback is decided by
//! [`loop_strategy`](crate::lower::strategy::loop_strategy) and written by `emit::loops`.

use crate::emit::loops::{Capture, LoopCode, Replay, Rerun};
use crate::emit::region::{acc_type, closure};
use crate::emit::reverse::Sink;
use crate::ir::graph::{Act, NodeKind, is_active};
use crate::lower::Lowering;
use crate::lower::cache::cache_calls;
use crate::lower::region::{Arm, Child, Input, accumulators};
use crate::lower::strategy::{LoopFacts, Strategy, loop_strategy};
use crate::patterns::bindings::pattern_names;
use crate::patterns::loops::{Loop, ends_with_break_check, references_bound, split_break_check};
use crate::patterns::scan;
use crate::pipeline::compile_body;
use proc_macro2::{Delimiter, Ident, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote};
use syn::spanned::Spanned;
use syn::{Block, Expr, Stmt};

impl Lowering<'_> {
    /// A loop the lowering walks: an unlabelled `for`, a `while` that is not `while let`, or
    /// a `loop` whose only way out is normalization's break check; `None` for the others,
    /// which are opaque.
    pub(crate) fn loop_expr(&mut self, lp: Loop<'_>, e: &Expr) -> Option<(Expr, Act)> {
        if lp.label().is_some() {
            return None;
        }
        let tape = quote!(let mut __tape = ::adjoint::__private::tape(0););
        match lp {
            Loop::For(f) => Some(self.for_loop(f, e)),
            Loop::Plain(l) if ends_with_break_check(&l.body) => {
                Some(self.lower_loop(&l.body, Vec::new(), e.clone(), quote!(loop), tape, None))
            }
            Loop::While(w)
                if !matches!(&*w.cond, Expr::Let(_)) && !self.condition_writes(&w.cond) =>
            {
                let cond = &w.cond;
                Some(self.lower_loop(
                    &w.body,
                    Vec::new(),
                    e.clone(),
                    quote!(while #cond),
                    tape,
                    None,
                ))
            }
            _ => None,
        }
    }

    /// `for pat in iter { body }`: a loop over indices when `iter` is an active collection
    /// that can be indexed, else a taped loop (replayed when `iter` is a range; see
    /// [`Lowering::lower_loop`]).
    fn for_loop(&mut self, f: &syn::ExprForLoop, e: &Expr) -> (Expr, Act) {
        if crate::patterns::iterators::yields_places(&f.expr) && self.mentions_active(&f.expr) {
            // `for x in xs.iter_mut()` / `&mut xs`: element writes at each index.
            if let Some(indexed) = crate::patterns::iterators::indexed_for(f) {
                return self.expr(&indexed);
            }
            self.report(
                f.pat.span(),
                "#[differentiable] reads the element of this `&mut` loop as its place `xs[k]`, which needs the element bound to a plain name that the body does not bind again nor name inside a macro: name it `*x`, `x.field` or `x[i]` throughout the body, or loop over indices",
            );
            return (e.clone(), Act::Inactive);
        }
        if crate::patterns::iterators::is_filtered(&f.expr)
            && self.mentions_active(&f.expr)
            && let Some(indexed) = crate::patterns::iterators::indexed_for(f)
        {
            // `for x in xs.iter().filter(..)`: a loop over indices whose body runs where the
            // predicate holds.
            return self.expr(&indexed);
        }
        let (iter, act) = self.expr(&f.expr);
        if is_active(&act) {
            return match crate::patterns::iterators::indexed_for(f) {
                Some(indexed) => self.expr(&indexed),
                None => {
                    let message = "this `for` loop over an active collection is not supported: iterate `xs.iter()`, `&xs`, `xs`, an array literal, `xs.chunks(n)`, `xs.chunks_exact(n)`, `xs.windows(n)`, `xs.iter_mut()` or `&mut xs` (naming the element `*x`, `x.field`, `x[i]`, not rebinding it), through `enumerate`, `rev`, `zip`, `skip`, `take`, `step_by`, `copied` or `cloned`, or loop over indices and read `xs[i]`";
                    // What the body assigns, and what the iterator may change or lend by
                    // `&mut` (`xs.chunks_mut(2)`): writes through its items are not seen.
                    let lent = crate::lower::hidden_writes::written_in(f.expr.to_token_stream())
                        .into_iter()
                        .map(|(name, _)| name);
                    for name in scan::assigned(f.body.to_token_stream())
                        .into_iter()
                        .chain(lent)
                    {
                        self.assign(
                            &name.to_string(),
                            Act::Poison(f.expr.span(), message.into()),
                        );
                    }
                    (e.clone(), Act::Poison(f.expr.span(), message.into()))
                }
            };
        }
        // A loop that is one recurrence is one rule (`recurrence.rs`).
        if let Some(r) = crate::patterns::recurrence::recurrence(f).filter(|_| f.attrs.is_empty())
            && let Some(lowered) = self.recurrence(r, f, &iter)
        {
            return lowered;
        }
        let (attrs, pat) = (&f.attrs, &f.pat);
        // The tape is allocated once, with the iterator's length when it is known.
        let setup = quote! {
            let __adjoint_iter = ::core::iter::IntoIterator::into_iter(#iter);
            let mut __tape = ::adjoint::__private::tape(::core::iter::Iterator::size_hint(&__adjoint_iter).0);
        };
        let header = quote!(#(#attrs)* for #pat in __adjoint_iter);
        // `for w in ws.iter()` / `for w in &ws` over data binds references (so does `(i, w)`
        // over `ws.iter().enumerate()`, `(a, b)` over `a.iter().zip(&b)`).
        let saved = self.ref_names.clone();
        self.ref_names.extend(
            references_bound(&f.pat, &f.expr)
                .iter()
                .map(ToString::to_string),
        );
        let replay = matches!(&*f.expr, Expr::Range(_)).then(|| Replay {
            pattern: quote!(#(#attrs)* #pat),
            pat: quote!(#pat),
            range: iter.clone(),
            constant: self.is_constant(&f.expr)
                && !mentions_any(&f.expr, &scan::assigned(f.body.to_token_stream())),
        });
        let bound = pattern_names(&f.pat);
        let lowered = self.lower_loop(&f.body, bound, e.clone(), header, setup, replay);
        self.ref_names = saved;
        lowered
    }

    /// Whether `e` is built only from literals and paths that name no local variable (constants,
    /// const generics), by operators, casts, parentheses and ranges: an expression that gives
    /// the same value wherever in the function it is evaluated, so a pullback can evaluate it
    /// again instead of capturing its value (no calls: they could have effects).
    fn is_constant(&self, e: &Expr) -> bool {
        let constant = |e: &Option<Box<Expr>>| e.as_deref().is_none_or(|e| self.is_constant(e));
        match e {
            Expr::Lit(_) => true,
            Expr::Path(p) => {
                p.qself.is_none()
                    && p.path
                        .get_ident()
                        .is_none_or(|name| self.lookup(&name.to_string()).is_none())
            }
            Expr::Range(r) => constant(&r.start) && constant(&r.end),
            Expr::Binary(b) => self.is_constant(&b.left) && self.is_constant(&b.right),
            Expr::Unary(u) => !matches!(u.op, syn::UnOp::Deref(_)) && self.is_constant(&u.expr),
            Expr::Paren(p) => self.is_constant(&p.expr),
            Expr::Group(g) => self.is_constant(&g.expr),
            Expr::Cast(c) => self.is_constant(&c.expr),
            _ => false,
        }
    }

    /// Lowers `for pat in iter { body }` or `while cond { body }` (`header` is everything
    /// before the body, already rewritten).
    pub fn lower_loop(
        &mut self,
        body: &Block,
        bound: Vec<Ident>,
        original: Expr,
        header: TokenStream,
        setup: TokenStream,
        replay: Option<Replay>,
    ) -> (Expr, Act) {
        let (body, exit_check) = split_break_check(body);
        let body = &body;
        let tokens = body.to_token_stream();
        let (vars, initially) = self.loop_vars(tokens.clone());
        let arm = Arm {
            block: body.clone(),
            bound,
            payload: None,
            bound_as: Act::Inactive,
            looping: true,
        };
        let (carried, analysed) = self.settle_carried(&arm, &vars, initially);
        if carried.is_empty() {
            self.loop_on_data(&arm, &vars, &analysed);
            return (original, Act::Inactive);
        }
        if scan::has_loop_exit(body) {
            return (original, self.unrewritten_exit(body, &vars));
        }
        let carried_names: Vec<&String> = carried.iter().map(|&j| &vars.assigned[j]).collect();
        let data = self.data_read(body, &vars.assigned);
        let captured = captured(&vars, &carried, &data);
        let written = element_written(body, &carried_names);
        let shape = LoopShape {
            carried: &carried_names,
            captured: &captured,
            written: &written,
        };
        let facts = self.loop_facts(body, &exit_check, &replay, &vars, shape);
        let strategy = loop_strategy(&facts);
        // A recomputed loop only writes the collections it writes element by element: its
        // pullback keeps no copy of them and runs only the pullbacks of their writes.
        let recomputed = matches!(strategy, Strategy::Replayed { .. });
        let write_only = if recomputed { written } else { Vec::new() };
        let cache = recomputed.then(|| recorded_calls(body)).flatten();
        let (arm, analysed) = match &cache {
            Some((_, given, _)) => self.reading_recorded(arm, given, &vars, &carried),
            None => (arm, analysed),
        };
        let rerun = (recomputed, write_only.as_slice());
        let Some(code) = self.loop_region(&arm, &vars, &carried, &analysed, rerun) else {
            return (original, Act::Inactive);
        };
        let pullback = code.pullback.clone();
        let expr = match (strategy, replay) {
            (Strategy::Replayed { backwards }, Some(replay)) => {
                let how = self.capture_modes(body, &captured, &carried_names, &write_only);
                let recorded = cache.map(|(plain, _, sites)| (plain, sites));
                let rerun = Rerun {
                    captured: &captured,
                    how,
                    backwards,
                    recorded,
                };
                code.replayed(replay, body, rerun)
            }
            (Strategy::Checkpointed, Some(replay)) => {
                let free_names: Vec<&String> =
                    vars.free.iter().map(|i| &i.name).chain(&data).collect();
                let shared = self.capture_modes(body, &free_names, &carried_names, &[]);
                code.checkpointed(replay, body, &carried_names, &free_names, &shared)
            }
            _ => code.taped(setup, header, exit_check),
        };
        self.hoisted.push(pullback);
        (expr, Act::Inactive)
    }

    /// A loop left by an exit normalization could not rewrite: every variable it assigns is
    /// poisoned with the error.
    fn unrewritten_exit(&mut self, body: &Block, vars: &LoopVars) -> Act {
        let message = "this loop exits with a labelled `break`/`continue` or `break value`, which is not supported over active values yet: use a flag and plain `break`";
        let poison = Act::Poison(body.brace_token.span.join(), message.into());
        for name in &vars.assigned {
            self.assign(name, poison.clone());
        }
        poison
    }

    /// The loop's body `arm` with its expensive calls reading their recorded values
    /// (`given`), lowered again with the same carried variables.
    fn reading_recorded(
        &self,
        arm: Arm,
        given: &Block,
        vars: &LoopVars,
        carried: &[usize],
    ) -> (Arm, Child) {
        let arm = Arm {
            block: given.clone(),
            ..arm
        };
        let (_, analysed) = self.settle_carried(&arm, vars, carried.to_vec());
        (arm, analysed)
    }

    /// A loop with no active carried variable runs as written: what it assigns is data (or
    /// poisoned), and active values leaving it another way are reported.
    fn loop_on_data(&mut self, arm: &Arm, vars: &LoopVars, analysed: &Child) {
        for (j, name) in vars.assigned.iter().enumerate() {
            let act = analysed.finals[j].clone();
            self.assign(name, if is_active(&act) { Act::Inactive } else { act });
        }
        let inputs = vars.inputs(&[], self);
        self.check_escapes(arm, &inputs, &vars.assigned, analysed.graph.nodes.len());
    }

    /// The outer variables the loop body `tokens` assigns and the active ones it only reads,
    /// and which of the assigned ones are active before the loop.
    fn loop_vars(&self, tokens: TokenStream) -> (LoopVars, Vec<usize>) {
        let assigned = self.assigned_outer(tokens.clone());
        let free = self.inputs_of(tokens, &assigned);
        let initially: Vec<usize> = (0..assigned.len())
            .filter(|&j| self.lookup(&assigned[j]).is_some_and(is_active))
            .collect();
        let all_deps = free.iter().map(|i| i.deps).fold(0, |a, d| a | d)
            | initially
                .iter()
                .fold(0, |a, &j| a | self.deps_of(&assigned[j]));
        let vars = LoopVars {
            assigned,
            free,
            all_deps,
        };
        (vars, initially)
    }

    /// The inactive variables the body reads and does not assign: a loop run again in the
    /// pullback reads its own copies (the `move` closure would otherwise take the variables
    /// themselves, and code after the loop could no longer use them).
    fn data_read(&self, body: &Block, assigned: &[String]) -> Vec<String> {
        let mut data: Vec<String> = Vec::new();
        for name in scan::idents(body.to_token_stream()) {
            let name = name.to_string();
            let inactive = matches!(self.lookup(&name), Some(a) if !is_active(a));
            if inactive && !assigned.contains(&name) && !data.contains(&name) {
                data.push(name);
            }
        }
        data
    }

    /// What decides the loop's [`Strategy`] ([`loop_strategy`]).
    fn loop_facts(
        &self,
        body: &Block,
        exit_check: &TokenStream,
        replay: &Option<Replay>,
        vars: &LoopVars,
        LoopShape {
            carried,
            captured,
            written,
        }: LoopShape<'_>,
    ) -> LoopFacts {
        LoopFacts {
            over_range: replay.is_some(),
            exits_early: !exit_check.is_empty(),
            all_carried: carried.len() == vars.assigned.len(),
            // A pullback running the body again would copy a reference as if it were a value.
            replayable_body: scan::replayable(body) && !self.mentions_alias(body),
            captures_uncopyable: captured.iter().any(|n| *n == "self")
                || (!self.refs_capturable
                    && captured
                        .iter()
                        .any(|n| self.ref_names.contains(n) && self.owned_ref(n).is_none())),
            only_accumulates: changes_only_by(body, carried),
            writes_carried_elements: !written.is_empty(),
            nested_loop: scan::has_loop(body),
            borrows: scan::borrows(body),
        }
    }

    /// The loop as a region node with the carried variables as its outputs, and the lowered
    /// body with its reverse step, when the node is useful. `rerun` says whether the pullback
    /// runs the body again, and which collections it then only writes.
    fn loop_region(
        &mut self,
        arm: &Arm,
        vars: &LoopVars,
        carried: &[usize],
        analysed: &Child,
        rerun: (bool, &[String]),
    ) -> Option<LoopCode> {
        let inputs = vars.inputs(carried, self);
        let pullback = format_ident!("__pb{}", self.graph.nodes.len());
        let (accumulated, acc_slots) = accumulators(&vars.free);
        let acc_count = accumulated.len();
        let kind = NodeKind::Region {
            pullback: pullback.clone(),
            accumulated,
            carried: inputs[..carried.len()].iter().map(|i| i.outer).collect(),
        };
        let id = self.graph.add(kind);
        for (j, name) in vars.assigned.iter().enumerate() {
            let act = match carried.iter().position(|&c| c == j) {
                Some(k) => self.component(id, k),
                None => analysed.finals[j].clone(),
            };
            self.assign(name, act);
        }
        if !self.is_useful(id) {
            // Its errors are reported even though nothing of it reaches the result.
            self.check_escapes(arm, &inputs, &vars.assigned, analysed.graph.nodes.len());
            return None;
        }
        let roots: Vec<Act> = carried
            .iter()
            .map(|&j| analysed.finals[j].clone())
            .collect();
        let (recomputed, write_only) = rerun;
        let compiled = compile_body(analysed, &roots, |useful| {
            self.run_child_of(
                arm,
                &inputs,
                &vars.assigned,
                Some(useful),
                recomputed,
                write_only,
            )
        });
        self.absorb(&compiled.pass, &roots);
        let sinks: Vec<Sink> = (0..carried.len())
            .map(Sink::Return)
            .chain(acc_slots.iter().map(|&a| Sink::Accumulate(a)))
            .collect();
        let step = closure(&compiled, &roots, &sinks, acc_count, carried.len());
        let Child { hoisted, block, .. } = compiled.pass;
        Some(LoopCode {
            pullback,
            step,
            ins: (0..acc_count).map(|i| format_ident!("__in{}", i)).collect(),
            hoisted,
            stmts: block.stmts,
            acc_ty: acc_type(acc_count),
        })
    }

    /// How a recomputed loop's pullback gets each name it reads ([`Capture`]): only the type
    /// of a collection the loop only writes (`write_only`); a reference when the loop is nested
    /// in code that a pullback runs again and only indexes the value (never a carried variable,
    /// which the body changes); a handle on the function's shared copy of an unchanging
    /// parameter read only by indexing, which pays for its `Rc` only when the loop runs more
    /// than once per call, inside another loop; else a copy.
    fn capture_modes(
        &self,
        body: &Block,
        names: &[&String],
        carried: &[&String],
        write_only: &[String],
    ) -> Vec<Capture> {
        names
            .iter()
            .map(|n| {
                let indexed = only_indexed(body.to_token_stream(), n);
                if write_only.contains(n) {
                    Capture::Witness
                } else if self.rerun && indexed && !carried.contains(n) {
                    Capture::Borrow
                } else if self.in_loop && self.shared.contains(*n) && indexed {
                    Capture::Share
                } else if let (false, Some(ty)) = (self.refs_capturable, self.owned_ref(n)) {
                    if self.in_loop {
                        Capture::SharedRef(ty.to_token_stream())
                    } else {
                        Capture::OwnedRef(ty.to_token_stream())
                    }
                } else {
                    Capture::Clone
                }
            })
            .collect()
    }

    /// Grows the carried set from the variables active before the loop until a lowering of
    /// the body makes no further assigned variable active (a variable becomes active in one
    /// iteration and is read in the next); returns the set and that lowering.
    fn settle_carried(
        &self,
        arm: &Arm,
        vars: &LoopVars,
        mut carried: Vec<usize>,
    ) -> (Vec<usize>, Child) {
        loop {
            let inputs = vars.inputs(&carried, self);
            let child = self.run_child(arm, &inputs, &vars.assigned, None);
            let grown: Vec<usize> = (0..vars.assigned.len())
                .filter(|j| is_active(&child.finals[*j]) && !carried.contains(j))
                .collect();
            if grown.is_empty() {
                return (carried, child);
            }
            carried.extend(grown);
            carried.sort_unstable();
        }
    }

    fn deps_of(&self, name: &str) -> u128 {
        match self.lookup(name) {
            Some(Act::Active(id)) => self.graph.nodes[*id].deps,
            _ => 0,
        }
    }
}

/// The names a loop's strategy is decided over: its carried variables, everything its pullback
/// would capture, and the carried collections it writes element by element.
#[derive(Clone, Copy)]
struct LoopShape<'a> {
    carried: &'a [&'a String],
    captured: &'a [&'a String],
    written: &'a [String],
}

/// The carried collections the body writes element by element (`y[i] = ..`), in carried order.
fn element_written(body: &Block, carried: &[&String]) -> Vec<String> {
    let written = scan::element_written(body.to_token_stream());
    carried
        .iter()
        .filter(|c| written.iter().any(|w| w == c.as_str()))
        .map(|c| c.to_string())
        .collect()
}

/// The expensive calls a recomputed loop makes once per iteration are recorded rather than made
/// again: the pullback's run differentiates them from their recorded values. The body that
/// records them, the body that reads them, and how many there are; `None` without any.
fn recorded_calls(body: &Block) -> Option<(Block, Block, usize)> {
    let (plain, sites) = cache_calls(body, true);
    (sites > 0).then(|| (plain, cache_calls(body, false).0, sites))
}

/// What a pullback that runs the loop again must capture: the carried variables, the free
/// ones, the data the body reads, and the inactive variables it assigns (a counter,
/// `mul *= t`), which it restores with the carried ones before running from the start.
fn captured<'a>(vars: &'a LoopVars, carried: &[usize], data: &'a [String]) -> Vec<&'a String> {
    let data_assigned = vars
        .assigned
        .iter()
        .enumerate()
        .filter(|(j, _)| !carried.contains(j))
        .map(|(_, name)| name);
    carried
        .iter()
        .map(|&j| &vars.assigned[j])
        .chain(vars.free.iter().map(|i| &i.name))
        .chain(data)
        .chain(data_assigned)
        .collect()
}

/// The outer variables a loop body assigns and the active ones it only reads.
struct LoopVars {
    assigned: Vec<String>,
    free: Vec<Input>,
    /// What every carried variable may depend on: the union over all inputs, since an
    /// iteration can mix them into any carried variable.
    all_deps: u128,
}

impl LoopVars {
    /// The region's inputs: the `carried` assigned variables first, then the free ones.
    fn inputs(&self, carried: &[usize], lowering: &Lowering) -> Vec<Input> {
        let mut inputs: Vec<Input> = carried
            .iter()
            .map(|&j| Input {
                name: self.assigned[j].clone(),
                outer: match lowering.lookup(&self.assigned[j]) {
                    Some(Act::Active(id)) => Some(*id),
                    _ => None,
                },
                deps: self.all_deps,
            })
            .collect();
        inputs.extend(self.free.iter().cloned());
        inputs
    }
}

/// Whether `e` mentions any of `names`.
fn mentions_any(e: &Expr, names: &[Ident]) -> bool {
    scan::idents(e.to_token_stream())
        .iter()
        .any(|id| names.contains(id))
}

/// Whether the body changes the carried variables only by `v += e` / `v -= e` and element
/// writes `v[i] = e`, `v[i][j] = e`, with `e` and the indices not reading any of them, as
/// top-level statements, and mentions them nowhere else. The iterations then do not read what
/// another one wrote.
fn changes_only_by(body: &Block, carried: &[&String]) -> bool {
    let mentions = |tokens: TokenStream| {
        scan::idents(tokens)
            .iter()
            .any(|i| carried.iter().any(|c| i == c.as_str()))
    };
    let is_carried = |e: &Expr| matches!(e, Expr::Path(p) if p.path.get_ident().is_some_and(|i| carried.iter().any(|c| i == c.as_str())));
    // `v[i]`, `v[i][j]`, ... with `v` carried and indices that do not read carried variables.
    fn element_of(
        e: &Expr,
        is_carried: &dyn Fn(&Expr) -> bool,
        mentions: &dyn Fn(TokenStream) -> bool,
    ) -> bool {
        match e {
            Expr::Index(ix) => {
                !mentions(ix.index.to_token_stream())
                    && (is_carried(&ix.expr) || element_of(&ix.expr, is_carried, mentions))
            }
            _ => false,
        }
    }
    body.stmts.iter().all(|stmt| match stmt {
        Stmt::Expr(Expr::Binary(b), _)
            if matches!(b.op, syn::BinOp::AddAssign(_) | syn::BinOp::SubAssign(_)) =>
        {
            (is_carried(&b.left) || !mentions(b.left.to_token_stream()))
                && !mentions(b.right.to_token_stream())
        }
        Stmt::Expr(Expr::Assign(a), _) if element_of(&a.left, &is_carried, &mentions) => {
            !mentions(a.right.to_token_stream())
        }
        other => !mentions(other.to_token_stream()),
    })
}

/// Whether every mention of `name` in `tokens` is indexed (`name[..]`), so that the loop reads
/// it only through element reads, which work the same on a reference.
fn only_indexed(tokens: TokenStream, name: &str) -> bool {
    let mut trees = tokens.into_iter().peekable();
    while let Some(tree) = trees.next() {
        match tree {
            TokenTree::Ident(i) if i == name => {
                let indexed = matches!(
                    trees.peek(),
                    Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Bracket
                );
                if !indexed {
                    return false;
                }
            }
            TokenTree::Group(g) if !only_indexed(g.stream(), name) => return false,
            _ => {}
        }
    }
    true
}
