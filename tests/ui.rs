//! Compile-fail tests: each file under `tests/ui/<category>/` makes one mistake, and its
//! `.stderr` is the diagnostic the user sees. Regenerate with
//! `TRYBUILD=overwrite cargo test --test ui` and read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
}
