//! Compile-fail tests: each file under `tests/ui/<category>/` makes one mistake, and its
//! `.stderr` is the diagnostic the user sees. Regenerate with
//! `TRYBUILD=overwrite cargo test --test ui` and read the diff. Cases under `tests/ui-pending/`
//! wait for macro fixes (their diagnostics are not yet one clear message); move them here once
//! fixed.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
}
