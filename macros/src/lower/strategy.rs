//! How a loop's pullback gets each iteration's residuals: a pure decision over what the
//! lowering found out about the loop ([`LoopFacts`]), made in one place.

/// What decides a loop's strategy, as the lowering found it.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoopFacts {
    /// A `for` loop over a range, which the pullback can walk again.
    pub over_range: bool,
    /// The body ends with the `if flag { break; }` of normalization (an early exit).
    pub exits_early: bool,
    /// Every variable the body assigns is carried (active). Otherwise the body also assigns
    /// inactive ones (a counter, `mul *= t`): a pullback running the loop again restores
    /// them to their values at the loop's start, which reproduces them only when it walks the
    /// iterations first to last.
    pub all_carried: bool,
    /// The body gives the same values when run again ([`crate::patterns::scan::replayable`]).
    pub replayable_body: bool,
    /// The pullback could not take its own copy of a value the body reads (`self`, or a
    /// reference parameter where pullbacks may not keep references).
    pub captures_uncopyable: bool,
    /// The body changes the carried variables only by `v += e`, `v -= e` and element writes
    /// whose right sides read none of them: no iteration reads what another one wrote.
    pub only_accumulates: bool,
    /// The body writes elements of a carried collection (`y[i] = ..`).
    pub writes_carried_elements: bool,
    /// The body holds a nested loop.
    pub nested_loop: bool,
    /// The body borrows (`&x`): tensor code, whose kernels a rerun would pay again.
    pub borrows: bool,
}

/// A loop's pullback strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Each iteration pushes its pullback closure, holding its residuals; the pullback runs
    /// them in reverse.
    Taped,
    /// The pullback runs the loop again, differentiating each iteration as it goes: nothing is
    /// stored per iteration. `backwards` when the body writes elements (a later write to an
    /// element hides an earlier one).
    Replayed {
        /// Walk the iterations last to first.
        backwards: bool,
    },
    /// The forward pass stores only the carried variables at the start of each iteration; the
    /// pullback walks the iterations backwards, restores them and reruns the body from there.
    Checkpointed,
}

impl LoopFacts {
    /// Whether the pullback can run the loop again at all.
    pub fn rerunnable(&self) -> bool {
        self.over_range && !self.exits_early && self.replayable_body && !self.captures_uncopyable
    }
}

/// The strategy of a loop with active carried variables.
///
/// A loop that can be run again and only accumulates is replayed (first to last when it also
/// assigns inactive variables, which the replay restores at the start); one that can be run
/// again with a straight-line recurrence, assigning only carried variables, is checkpointed,
/// unless running the body again would cost more than taping it (a nested loop's whole work,
/// tensor kernels, or a collection written element by element copied whole per iteration);
/// everything else is taped.
pub fn loop_strategy(facts: &LoopFacts) -> Strategy {
    if !facts.rerunnable() {
        return Strategy::Taped;
    }
    let backwards = facts.writes_carried_elements;
    if facts.only_accumulates && (facts.all_carried || !backwards) {
        return Strategy::Replayed { backwards };
    }
    if !facts.all_carried || facts.nested_loop || facts.borrows || facts.writes_carried_elements {
        Strategy::Taped
    } else {
        Strategy::Checkpointed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `for` loop over a range whose body can be run again.
    fn rerunnable() -> LoopFacts {
        LoopFacts {
            over_range: true,
            all_carried: true,
            replayable_body: true,
            ..LoopFacts::default()
        }
    }

    #[test]
    fn a_loop_the_pullback_cannot_run_again_is_taped() {
        let cases = [
            LoopFacts::default(),
            LoopFacts {
                over_range: false,
                ..rerunnable()
            },
            LoopFacts {
                exits_early: true,
                ..rerunnable()
            },
            LoopFacts {
                all_carried: false,
                ..rerunnable()
            },
            LoopFacts {
                replayable_body: false,
                ..rerunnable()
            },
            LoopFacts {
                captures_uncopyable: true,
                only_accumulates: true,
                ..rerunnable()
            },
        ];
        for facts in cases {
            assert_eq!(loop_strategy(&facts), Strategy::Taped, "{facts:?}");
        }
    }

    #[test]
    fn accumulation_is_replayed_backwards_only_with_element_writes() {
        let sum = LoopFacts {
            only_accumulates: true,
            nested_loop: true,
            borrows: true,
            ..rerunnable()
        };
        assert_eq!(loop_strategy(&sum), Strategy::Replayed { backwards: false });
        let writes = LoopFacts {
            writes_carried_elements: true,
            ..sum
        };
        assert_eq!(
            loop_strategy(&writes),
            Strategy::Replayed { backwards: true }
        );
    }

    #[test]
    fn accumulation_that_assigns_data_is_replayed_only_first_to_last() {
        let sum = LoopFacts {
            only_accumulates: true,
            all_carried: false,
            ..rerunnable()
        };
        assert_eq!(loop_strategy(&sum), Strategy::Replayed { backwards: false });
        let writes = LoopFacts {
            writes_carried_elements: true,
            ..sum
        };
        assert_eq!(loop_strategy(&writes), Strategy::Taped);
    }

    #[test]
    fn a_recurrence_is_checkpointed_unless_a_rerun_costs_more_than_a_tape() {
        assert_eq!(loop_strategy(&rerunnable()), Strategy::Checkpointed);
        for costly in [
            LoopFacts {
                nested_loop: true,
                ..rerunnable()
            },
            LoopFacts {
                borrows: true,
                ..rerunnable()
            },
            LoopFacts {
                writes_carried_elements: true,
                ..rerunnable()
            },
        ] {
            assert_eq!(loop_strategy(&costly), Strategy::Taped, "{costly:?}");
        }
    }
}
