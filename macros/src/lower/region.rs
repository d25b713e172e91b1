//! Regions: the arms of `if`/`match` and the bodies of loops.
//!
//! A region is lowered as a child function whose inputs are the active variables it reads and
//! whose outputs are its value and the outer variables it assigns. Its reverse pass becomes a
//! closure `|seed, acc|` taking the outputs' adjoints and `&mut` accumulators for the inputs.
//!
//! * A branch stores the closure of the arm taken, as a nested [`Branch`] enum; the parent
//!   graph sees one `Region` node whose outputs are components.
//! * A loop pushes one closure per iteration onto a `Vec` (one growing buffer, no recursion);
//!   variables assigned in the loop are *carried*: each iteration's closure maps their adjoints
//!   at the end of the iteration to their adjoints at its start, and the loop's pullback runs
//!   the closures in reverse. A loop of N iterations holds N closures, each holding the
//!   residuals of one iteration.
//! * A `for` loop over a range whose body gives the same values when run again (see
//!   [`scan::replayable`]) stores less: an accumulation loop is run again forwards in the
//!   pullback ([`LoopCode::replayed`]), a straight-line recurrence stores only its carried
//!   variables per iteration and is run again backwards ([`LoopCode::checkpointed`]).
//!
//! [`Branch`]: https://docs.rs/adjoint

use crate::diag::Errors;
use crate::emit::reverse::{self, Reverse, Sink};
use crate::ir::activity;
use crate::ir::graph::{Act, Graph, NodeKind};
use crate::lower::{Lowering, is_active};
use crate::patterns::scan;
use proc_macro2::{Delimiter, Ident, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote};
use syn::{Block, Expr, Stmt, parse_quote};

/// One arm: its body and the names its pattern binds (data).
pub struct Arm {
    pub block: Block,
    pub bound: Vec<Ident>,
    /// The name an arm's `Some(v)`/`Ok(v)` pattern binds to the payload of an active
    /// scrutinee, and the scrutinee's node: the payload's tangent is the scrutinee's.
    pub payload: Option<(String, usize)>,
    /// What the names in `bound` are: data, or poisoned when the scrutinee is.
    pub bound_as: Act,
    /// Whether the block is a loop body (rather than a branch arm).
    pub looping: bool,
}

/// A child lowering of one region body.
struct Child {
    graph: Graph,
    block: Block,
    tail: Act,
    finals: Vec<Act>,
    hoisted: Vec<Ident>,
    errors: Errors,
}

/// An input of a region: a name read inside, its node outside and what it depends on.
#[derive(Clone)]
struct Input {
    name: String,
    outer: Option<usize>,
    deps: u128,
}

impl Lowering<'_> {
    fn run_child(
        &self,
        arm: &Arm,
        inputs: &[Input],
        watch: &[String],
        useful: Option<&[bool]>,
    ) -> Child {
        self.run_child_of(arm, inputs, watch, useful, false, &[])
    }

    /// [`run_child`](Self::run_child) of a body that the pullback runs again when `rerun`.
    fn run_child_of(
        &self,
        arm: &Arm,
        inputs: &[Input],
        watch: &[String],
        useful: Option<&[bool]>,
        rerun: bool,
        write_only: &[String],
    ) -> Child {
        let mut child = Lowering::new(useful);
        child.rerun = self.rerun || rerun;
        child.write_only = write_only.to_vec();
        child.ref_names = self.ref_names.clone();
        child.refs_capturable = self.refs_capturable;
        child.shared = self.shared.clone();
        child.in_loop = self.in_loop || arm.looping;
        let mut scope: Vec<(String, Act)> = self
            .scopes
            .iter()
            .flatten()
            .map(|(n, a)| {
                (
                    n.clone(),
                    if is_active(a) {
                        Act::Inactive
                    } else {
                        a.clone()
                    },
                )
            })
            .collect();
        for (k, input) in inputs.iter().enumerate() {
            let id = child.graph.add_with_deps(NodeKind::Param(k), input.deps);
            scope.push((input.name.clone(), Act::Active(id)));
        }
        let bound = arm
            .bound
            .iter()
            .map(|b| (b.to_string(), arm.bound_as.clone()))
            .collect();
        child.scopes = vec![scope, bound];
        let (block, tail) = child.block(&arm.block, false);
        let finals = watch
            .iter()
            .map(|w| child.lookup(w).cloned().unwrap_or(Act::Inactive))
            .collect();
        Child {
            graph: child.graph,
            block,
            tail,
            finals,
            hoisted: child.hoisted,
            errors: child.errors,
        }
    }

    /// The active variables of the enclosing scope that `tokens` read, in order.
    fn inputs_of(&self, tokens: TokenStream, exclude: &[String]) -> Vec<Input> {
        let mut inputs: Vec<Input> = Vec::new();
        for name in scan::idents(tokens) {
            let name = name.to_string();
            if exclude.contains(&name) || inputs.iter().any(|i| i.name == name) {
                continue;
            }
            if let Some(Act::Active(id)) = self.lookup(&name) {
                inputs.push(Input {
                    name,
                    outer: Some(*id),
                    deps: self.graph.nodes[*id].deps,
                });
            }
        }
        inputs
    }

    /// Outer variables assigned in `tokens`.
    fn assigned_outer(&self, tokens: TokenStream) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for name in scan::assigned(tokens) {
            let name = name.to_string();
            if self.lookup(&name).is_some() && !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// Lowers the arms of an `if` or `match`; `rebuild` puts the new arm bodies back into the
    /// construct.
    pub fn branches(
        &mut self,
        arms: Vec<Arm>,
        original: Expr,
        rebuild: impl FnOnce(Vec<TokenStream>) -> Expr,
    ) -> (Expr, Act) {
        let tokens: TokenStream = arms.iter().map(|a| a.block.to_token_stream()).collect();
        let inputs = self.branch_inputs(&arms, tokens.clone());
        let assigned = self.assigned_outer(tokens);
        let first: Vec<Child> = arms
            .iter()
            .map(|a| self.run_child(a, &inputs, &assigned, None))
            .collect();
        let result_active = first.iter().any(|c| is_active(&c.tail));
        let out_vars: Vec<usize> = (0..assigned.len())
            .filter(|&j| first.iter().any(|c| is_active(&c.finals[j])))
            .collect();
        if !result_active && out_vars.is_empty() {
            for (j, name) in assigned.iter().enumerate() {
                let act = first_poison(first.iter().map(|c| &c.finals[j]));
                self.assign(name, act);
            }
            let tail = first_poison(first.iter().map(|c| &c.tail));
            for (arm, analysed) in arms.iter().zip(&first) {
                self.check_escapes(arm, &inputs, &assigned, analysed.graph.nodes.len());
            }
            return (original, tail);
        }
        let pullback = format_ident!("__pb{}", self.graph.nodes.len());
        let (accumulated, acc_slots) = accumulators(&inputs);
        let acc_count = accumulated.len();
        let id = self.graph.add(NodeKind::Region {
            pullback: pullback.clone(),
            accumulated,
            carried: Vec::new(),
        });
        let offset = usize::from(result_active);
        let result = if result_active {
            self.component(id, 0)
        } else {
            Act::Inactive
        };
        for (j, name) in assigned.iter().enumerate() {
            let act = match out_vars.iter().position(|&v| v == j) {
                Some(k) => self.component(id, offset + k),
                None => first_poison(first.iter().map(|c| &c.finals[j])),
            };
            self.assign(name, act);
        }
        if !self.is_useful(id) {
            return (original, result);
        }
        let count = arms.len();
        let bodies = arms
            .iter()
            .zip(&first)
            .enumerate()
            .map(|(i, (arm, analysed))| {
                let mut roots: Vec<Act> = Vec::new();
                if result_active {
                    roots.push(analysed.tail.clone());
                }
                roots.extend(out_vars.iter().map(|&j| analysed.finals[j].clone()));
                let useful = activity::useful_from(&analysed.graph, &roots);
                let child = self.run_child(arm, &inputs, &assigned, Some(&useful));
                self.absorb(&child, &roots);
                let sinks: Vec<Sink> = acc_slots.iter().map(|&a| Sink::Accumulate(a)).collect();
                let closure = closure(&child.graph, &useful, &roots, &sinks, acc_count, 0);
                let wrapped = wrap(i, count, closure);
                let (hoisted, stmts) = (&child.hoisted, &child.block.stmts);
                quote!({ #(let #hoisted;)* let __value = { #(#stmts)* }; (__value, #wrapped) })
            })
            .collect();
        let construct = rebuild(bodies);
        let dispatch = dispatch(count);
        let acc_ty = acc_type(acc_count);
        let expr = parse_quote!(({
            let (__value, __pullback) = #construct;
            #pullback = move |__seed, __acc: #acc_ty| { let __p = __pullback; #dispatch };
            __value
        }));
        self.hoisted.push(pullback);
        (expr, result)
    }

    /// The inputs of a branch: the active names its arms read, plus the payload an arm's
    /// `Some(v)`/`Ok(v)` pattern binds from an active scrutinee (its tangent is the
    /// scrutinee's).
    fn branch_inputs(&self, arms: &[Arm], tokens: TokenStream) -> Vec<Input> {
        let mut inputs = self.inputs_of(tokens, &[]);
        for (name, id) in arms.iter().filter_map(|a| a.payload.clone()) {
            if !inputs.iter().any(|i| i.name == name) {
                inputs.push(Input {
                    name,
                    outer: Some(id),
                    deps: self.graph.nodes[id].deps,
                });
            }
        }
        inputs
    }

    /// A region with no active output is emitted unchanged, but active values may still leave
    /// it through a non-differentiable path (a discarded call, a write to outside state):
    /// lowers it once more, with nothing useful, to report those.
    fn check_escapes(&mut self, arm: &Arm, inputs: &[Input], assigned: &[String], nodes: usize) {
        if self.final_pass() {
            let none = vec![false; nodes];
            let child = self.run_child(arm, inputs, assigned, Some(&none));
            self.absorb(&child, &[]);
        }
    }

    /// Reports a child's errors, and those of poisoned outputs, in the final pass.
    fn absorb(&mut self, child: &Child, roots: &[Act]) {
        if !self.final_pass() {
            return;
        }
        self.errors.add_all(&child.errors);
        for root in roots {
            if let Act::Poison(span, message) = root {
                self.errors.push(*span, message);
            }
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
        let assigned = self.assigned_outer(tokens.clone());
        let free = self.inputs_of(tokens.clone(), &assigned);
        let arm = Arm {
            block: body.clone(),
            bound,
            payload: None,
            bound_as: Act::Inactive,
            looping: true,
        };
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
        let (carried, analysed) = self.settle_carried(&arm, &vars, initially);
        let LoopVars { assigned, free, .. } = &vars;
        if carried.is_empty() {
            for (j, name) in assigned.iter().enumerate() {
                let act = analysed.finals[j].clone();
                self.assign(name, if is_active(&act) { Act::Inactive } else { act });
            }
            let inputs = vars.inputs(&carried, self);
            self.check_escapes(&arm, &inputs, assigned, analysed.graph.nodes.len());
            return (original, Act::Inactive);
        }
        if scan::has_loop_exit(tokens) {
            let message = "this loop exits with a labelled `break`/`continue` or `break value`, which is not supported over active values yet: use a flag and plain `break`";
            let poison = Act::Poison(body.brace_token.span.join(), message.into());
            for name in assigned {
                self.assign(name, poison.clone());
            }
            return (original, poison);
        }
        let carried_names: Vec<&String> = carried.iter().map(|&j| &assigned[j]).collect();
        // The inactive variables the body reads: a loop run again in the pullback reads its own
        // copies (the `move` closure would otherwise take the variables themselves, and code
        // after the loop could no longer use them).
        let mut data: Vec<String> = Vec::new();
        for name in scan::idents(body.to_token_stream()) {
            let name = name.to_string();
            let inactive = matches!(self.lookup(&name), Some(a) if !is_active(a));
            if inactive && !assigned.contains(&name) && !data.contains(&name) {
                data.push(name);
            }
        }
        let captured: Vec<&String> = carried_names
            .iter()
            .copied()
            .chain(free.iter().map(|i| &i.name))
            .chain(&data)
            .collect();
        // Running the loop again needs every variable it assigns restored (so all of them
        // carried: an inactive counter would start from its final value) and a body that gives
        // the same values the second time.
        let rerunnable = replay.is_some()
            && exit_check.is_empty()
            && carried.len() == assigned.len()
            && scan::replayable(body)
            && !captured.iter().any(|n| *n == "self")
            && (self.refs_capturable || !captured.iter().any(|n| self.ref_names.contains(n)));
        // Recomputed in the pullback when no iteration reads what another wrote: in any order
        // when the carried variables only accumulate, backwards when some are written element
        // by element (`y[i] = f(x[i])`: a later write to an element hides an earlier one). Such
        // a loop only writes those collections: its pullback keeps no copy of them and runs
        // only the pullbacks of their writes.
        let recomputed = rerunnable && changes_only_by(body, &carried_names);
        let write_only: Vec<String> = if recomputed {
            let written = scan::element_written(body.to_token_stream());
            carried_names
                .iter()
                .filter(|c| written.iter().any(|w| w == c.as_str()))
                .map(|c| c.to_string())
                .collect()
        } else {
            Vec::new()
        };
        let recomputed = recomputed.then_some(!write_only.is_empty());
        // The expensive calls such a loop makes once per iteration are recorded rather than
        // made again: the pullback's run differentiates them from their recorded values.
        let cache = recomputed.and_then(|_| {
            let (plain, sites) = crate::lower::cache::cache_calls(body, true);
            (sites > 0).then(|| {
                (
                    plain,
                    crate::lower::cache::cache_calls(body, false).0,
                    sites,
                )
            })
        });
        let (arm, analysed) = match &cache {
            Some((_, given, _)) => {
                let arm = Arm {
                    block: given.clone(),
                    ..arm
                };
                let (_, analysed) = self.settle_carried(&arm, &vars, carried.clone());
                (arm, analysed)
            }
            None => (arm, analysed),
        };
        let inputs = vars.inputs(&carried, self);
        let pullback = format_ident!("__pb{}", self.graph.nodes.len());
        let (accumulated, acc_slots) = accumulators(free);
        let acc_count = accumulated.len();
        let kind = NodeKind::Region {
            pullback: pullback.clone(),
            accumulated,
            carried: inputs[..carried.len()].iter().map(|i| i.outer).collect(),
        };
        let id = self.graph.add(kind);
        for (j, name) in assigned.iter().enumerate() {
            let act = match carried.iter().position(|&c| c == j) {
                Some(k) => self.component(id, k),
                None => analysed.finals[j].clone(),
            };
            self.assign(name, act);
        }
        if !self.is_useful(id) {
            return (original, Act::Inactive);
        }
        let roots: Vec<Act> = carried
            .iter()
            .map(|&j| analysed.finals[j].clone())
            .collect();
        let useful = activity::useful_from(&analysed.graph, &roots);
        let child = self.run_child_of(
            &arm,
            &inputs,
            assigned,
            Some(&useful),
            recomputed.is_some(),
            &write_only,
        );
        self.absorb(&child, &roots);
        let sinks: Vec<Sink> = (0..carried.len())
            .map(Sink::Return)
            .chain(acc_slots.iter().map(|&a| Sink::Accumulate(a)))
            .collect();
        let step = closure(
            &child.graph,
            &useful,
            &roots,
            &sinks,
            acc_count,
            carried.len(),
        );
        let code = LoopCode {
            pullback: pullback.clone(),
            step,
            ins: (0..acc_count).map(|i| format_ident!("__in{}", i)).collect(),
            hoisted: child.hoisted,
            stmts: child.block.stmts,
            acc_ty: acc_type(acc_count),
        };
        let expr = match (replay, recomputed) {
            (Some(replay), Some(backwards)) => {
                let how = self.capture_modes(body, &captured, &carried_names, &write_only);
                let recorded = cache.map(|(plain, _, sites)| (plain, sites));
                code.replayed(
                    replay,
                    body,
                    Rerun {
                        captured: &captured,
                        how,
                        backwards,
                        recorded,
                    },
                )
            }
            (Some(replay), None) if rerunnable => {
                let written = scan::element_written(body.to_token_stream());
                if scan::has_loop(body)
                    || scan::borrows(body)
                    || written
                        .iter()
                        .any(|w| carried_names.iter().any(|c| w == c.as_str()))
                {
                    // Running a nested loop again costs its whole work a second time (the
                    // Elman RNN's 160 `tanh`s), as running tensor code again (which borrows its
                    // operands, `&h * &w`) costs its kernels, and a container written element
                    // by element would be copied whole for every iteration: the tape is
                    // cheaper.
                    code.taped(setup, header, exit_check)
                } else {
                    let free_names: Vec<&String> =
                        free.iter().map(|i| &i.name).chain(&data).collect();
                    let shared = self.capture_modes(body, &free_names, &carried_names, &[]);
                    code.checkpointed(replay, body, &carried_names, &free_names, &shared)
                }
            }
            _ => code.taped(setup, header, exit_check),
        };
        self.hoisted.push(pullback);
        (expr, Act::Inactive)
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

/// A lowered loop body, ready to be emitted: its statements, its reverse step `step`
/// (`|carry, acc| -> carry`) and the pullback variable the loop's pullback is stored in.
struct LoopCode {
    pullback: Ident,
    step: TokenStream,
    ins: Vec<Ident>,
    hoisted: Vec<Ident>,
    stmts: Vec<Stmt>,
    acc_ty: TokenStream,
}

impl LoopCode {
    /// Taping: each iteration pushes its step closure, holding that iteration's residuals;
    /// the pullback runs the closures in reverse.
    fn taped(self, setup: TokenStream, header: TokenStream, exit_check: TokenStream) -> Expr {
        let LoopCode {
            pullback,
            step,
            ins,
            hoisted,
            stmts,
            acc_ty,
        } = self;
        parse_quote!(({
            #setup
            #header {
                #(let #hoisted;)*
                { #(#stmts)* };
                __tape.push(#step);
                #exit_check
            }
            #pullback = move |__seed, __acc: #acc_ty| {
                let (#(#ins,)*) = __acc;
                let mut __carry = __seed;
                for __step in __tape.into_iter().rev() {
                    __carry = __step(__carry, (#(&mut *#ins,)*));
                }
                __carry
            };
        }))
    }

    /// Recomputation: the loop only adds into its carried variables, so their adjoints are the
    /// same in every iteration and the iterations can be differentiated in any order. The
    /// forward pass runs the loop on values; the pullback runs it again over copies of the
    /// `captured` variables, differentiating each iteration as it goes: nothing is stored per
    /// iteration.
    fn replayed(self, replay: Replay, body: &Block, rerun: Rerun) -> Expr {
        let LoopCode {
            pullback,
            step,
            ins,
            hoisted,
            stmts,
            acc_ty,
        } = self;
        let again = replay.in_pullback();
        let Replay { pattern, range, .. } = replay;
        let Rerun {
            captured,
            how,
            backwards,
            recorded,
        } = rerun;
        let (capture, restore) = captures(captured, &how);
        let iteration = differentiated_iteration(&hoisted, &stmts, &step, &ins);
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
        parse_quote!(({
            let __adjoint_range = #range;
            #(#capture)*
            #(let mut #caches = ::adjoint::__private::Cached::with_capacity(
                ::core::iter::Iterator::size_hint(&__adjoint_range).0,
            );)*
            for #pattern in ::core::clone::Clone::clone(&__adjoint_range) #body
            #pullback = move |__seed, __acc: #acc_ty| {
                let (#(#ins,)*) = __acc;
                #(#restore)*
                #(let mut #caches = #caches;)*
                #again
                let mut __carry = __seed;
                for #pattern in #order {
                    #(let #values = #caches.#read();)*
                    #iteration
                }
                __carry
            };
        }))
    }

    /// Checkpointing: a loop with a recurrence (`x = r * x * (1.0 - x)`) whose body can be run
    /// again. The forward pass runs the loop on values and stores only the `carried` variables
    /// at the start of each iteration; the pullback walks the iterations backwards, restores
    /// them, runs the differentiated body once more from there and applies its step. A loop of
    /// N iterations holds N copies of its carried state instead of N closures of residuals.
    fn checkpointed(
        self,
        replay: Replay,
        body: &Block,
        carried: &[&String],
        free: &[&String],
        shared: &[Capture],
    ) -> Expr {
        let LoopCode {
            pullback,
            step,
            ins,
            hoisted,
            stmts,
            acc_ty,
        } = self;
        let again = replay.in_pullback();
        let Replay {
            pattern,
            pat,
            range,
            ..
        } = replay;
        let (capture, restore) = captures(free, shared);
        let iteration = differentiated_iteration(&hoisted, &stmts, &step, &ins);
        let carried: Vec<Ident> = carried.iter().map(|n| format_ident!("{}", n)).collect();
        parse_quote!(({
            let __adjoint_range = #range;
            #(#capture)*
            let mut __tape = ::adjoint::__private::tape(
                ::core::iter::Iterator::size_hint(&__adjoint_range).0,
            );
            for #pattern in ::core::clone::Clone::clone(&__adjoint_range) {
                __tape.push((#(::core::clone::Clone::clone(&#carried),)*));
                #body
            }
            #pullback = move |__seed, __acc: #acc_ty| {
                let (#(#ins,)*) = __acc;
                #(#restore)*
                #again
                let mut __carry = __seed;
                let __states = ::core::iter::Iterator::zip(
                    ::core::iter::Iterator::rev(__adjoint_range),
                    ::core::iter::Iterator::rev(::core::iter::IntoIterator::into_iter(__tape)),
                );
                for (#pat, __state) in __states {
                    #[allow(unused_mut)]
                    let (#(mut #carried,)*) = __state;
                    #iteration
                }
                __carry
            };
        }))
    }
}

/// One iteration of a replayed loop's pullback: the differentiated body (which records the
/// iteration's pullbacks in `hoisted`), then its step, applied to `__carry` at once.
fn differentiated_iteration(
    hoisted: &[Ident],
    stmts: &[Stmt],
    step: &TokenStream,
    ins: &[Ident],
) -> TokenStream {
    quote! {
        #(let #hoisted;)*
        { #(#stmts)* };
        let __step = #step;
        __carry = __step(__carry, (#(&mut *#ins,)*));
    }
}

/// What a recomputed loop's pullback reads and how it walks the iterations.
struct Rerun<'a> {
    /// The variables it reads (its carried variables first), and how it gets each.
    captured: &'a [&'a String],
    how: Vec<Capture>,
    /// Whether it walks the iterations backwards (a loop with element writes).
    backwards: bool,
    /// The body whose expensive calls are recorded, and how many sites it has
    /// ([`crate::lower::cache`]).
    recorded: Option<(Block, usize)>,
}

/// How a recomputed loop's pullback gets a value it reads.
#[derive(Clone, Copy, PartialEq)]
enum Capture {
    /// Its own copy.
    Clone,
    /// A handle on the function's one copy of an unchanging parameter read only by indexing.
    Share,
    /// A reference, for a value read only by indexing in a loop nested in code that a pullback
    /// runs again: the nested pullback is called in the same iteration, while the value lives.
    Borrow,
    /// Only its type, for a collection the loop only writes (`index_rewrite`).
    Witness,
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

/// What a variable (or value) that is inactive in every arm is after the branch: poisoned if
/// any arm poisoned it, so its error is reported where it is used, else inactive.
fn first_poison<'a>(mut acts: impl Iterator<Item = &'a Act>) -> Act {
    acts.find(|a| matches!(a, Act::Poison(..)))
        .cloned()
        .unwrap_or(Act::Inactive)
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

/// Whether a `loop` body ends with the break check of normalization (its only way out).
pub fn ends_with_break_check(body: &Block) -> bool {
    !split_break_check(body).1.is_empty()
}

/// Splits the `if flag { break; }` that normalization put at the end of a loop body off the
/// body: it runs after the iteration's pullback is recorded.
fn split_break_check(body: &Block) -> (Block, TokenStream) {
    let mut body = body.clone();
    if let Some(Stmt::Expr(Expr::If(check), _)) = body.stmts.last()
        && let Expr::Path(p) = &*check.cond
        && p.path
            .get_ident()
            .is_some_and(|i| i.to_string().starts_with(crate::normalize::BREAK_FLAG))
    {
        let check = check.to_token_stream();
        body.stmts.pop();
        return (body, check);
    }
    (body, TokenStream::new())
}

/// The distinct outer nodes of `inputs` (two names may hold the same value: `let a = x;`), and
/// for each input the index of its accumulator among them.
fn accumulators(inputs: &[Input]) -> (Vec<usize>, Vec<usize>) {
    let mut unique: Vec<usize> = Vec::new();
    let slots = inputs
        .iter()
        .map(|i| {
            let id = i.outer.expect("a free input has an outer node");
            unique.iter().position(|&u| u == id).unwrap_or_else(|| {
                unique.push(id);
                unique.len() - 1
            })
        })
        .collect();
    (unique, slots)
}

/// The reverse closure of a region body: `|seed, acc| -> carried`, where `seed` holds the
/// adjoints of the outputs (`roots`) and `acc` the accumulators of the free inputs.
fn closure(
    graph: &Graph,
    useful: &[bool],
    roots: &[Act],
    sinks: &[Sink],
    free: usize,
    carried: usize,
) -> TokenStream {
    let outs: Vec<Ident> = (0..roots.len())
        .map(|j| format_ident!("__o{}", j))
        .collect();
    let ins: Vec<Ident> = (0..free).map(|i| format_ident!("__in{}", i)).collect();
    let seeds: Vec<(Act, TokenStream)> = roots
        .iter()
        .zip(&outs)
        .map(|(r, o)| (r.clone(), quote!(#o)))
        .collect();
    let Reverse { code, returns } = reverse::reverse(graph, useful, &seeds, sinks, carried);
    let acc_ty = acc_type(free);
    quote!(move |__seed, __acc: #acc_ty| {
        let (#(#outs,)*) = __seed;
        let (#(#ins,)*) = __acc;
        #code
        (#(#returns,)*)
    })
}

/// `(&mut _, ...)`: annotating the accumulators makes the closures generic over the borrow's
/// lifetime, so that each call borrows the accumulators only for its duration.
fn acc_type(count: usize) -> TokenStream {
    let each = (0..count).map(|_| quote!(&mut _));
    quote!((#(#each,)*))
}

/// Arm `i` of `count` as a nested `Branch` value.
fn wrap(i: usize, count: usize, closure: TokenStream) -> TokenStream {
    let branch = quote!(::adjoint::__private::Branch);
    let mut out = if count == 1 {
        closure
    } else if i == count - 1 {
        quote!(#branch::Second(#closure))
    } else {
        quote!(#branch::First(#closure))
    };
    for _ in 0..i.min(count.saturating_sub(2)) {
        out = quote!(#branch::Second(#out));
    }
    out
}

/// Calls the closure stored in the nested `Branch` value `__p`.
fn dispatch(count: usize) -> TokenStream {
    let branch = quote!(::adjoint::__private::Branch);
    match count {
        0 | 1 => quote!(__p(__seed, __acc)),
        2 => {
            quote!(match __p { #branch::First(__p) => __p(__seed, __acc), #branch::Second(__p) => __p(__seed, __acc) })
        }
        _ => {
            let rest = dispatch(count - 1);
            quote!(match __p { #branch::First(__p) => __p(__seed, __acc), #branch::Second(__p) => #rest })
        }
    }
}
