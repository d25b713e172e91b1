//! Fuzzing of the protocol: messages built from the fixtures (every module and function),
//! mutated with knowledge of their structure (a field removed, a value replaced by one of
//! another type or an edge value, a list cut short, lengthened or emptied) or as text (cut,
//! a byte changed). Every line must be answered by one JSON object, never a panic: with the
//! message's `id` when it has one, and for `define`/`evaluate` either `success: true` with an
//! output or `success: false` with a non-empty error.
//!
//! The normal run tries 20,000 messages (about a second); `cargo test -p
//! adjoint-gradbench --test fuzz -- --ignored` tries a million, and `ADJOINT_FUZZ_ITERS` sets the
//! count of the normal run. Mutations keep `min_seconds` at 0 and `min_runs` small (the
//! protocol lets an eval ask for any running time) and numbers at most 1000 in magnitude where
//! they could be sizes (an eval may ask for a workload of any size, which takes its time).

#[path = "fixtures/files.rs"]
mod files;
#[path = "../../tests/support/rng.rs"]
mod rng;

use adjoint_gradbench::respond;
use rng::Rng;
use serde_json::{Map, Value, json};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// One `evaluate` message per fixture case, and the other kinds.
fn seeds() -> Vec<Value> {
    let mut paths = files::fixture_files();
    let mut messages = vec![
        json!({ "id": 0, "kind": "start", "eval": "gmm", "config": {} }),
        json!({ "id": 1, "kind": "define", "module": "llsq" }),
        json!({ "id": 3, "kind": "analysis", "of": 2, "valid": false, "error": "off" }),
    ];
    // particle's and saddle's solvers run, as the reference's do, until the trajectory meets
    // the axis and the descent converges: from an arbitrary mutated start that may be never.
    paths.retain(|p| {
        !p.file_stem()
            .is_some_and(|s| s == "particle" || s == "saddle")
    });
    for path in paths {
        for (i, line) in std::fs::read_to_string(path).unwrap().lines().enumerate() {
            let case: Value = serde_json::from_str(line).unwrap();
            let mut input = case["input"].clone();
            if let Value::Object(fields) = &mut input {
                fields.insert("min_runs".into(), 1.into());
                fields.insert("min_seconds".into(), 0.into());
            }
            messages.push(json!({
                "id": 2 + i,
                "kind": "evaluate",
                "module": case["module"],
                "function": case["function"],
                "input": input,
                "description": "fuzz",
            }));
        }
    }
    messages
}

/// A replacement for a value: another type, or an edge value.
fn replacement(r: &mut Rng, old: &Value) -> Value {
    match r.below(16) {
        0 => Value::Null,
        1 => Value::Bool(r.chance(0.5)),
        2 => "x".into(),
        3 => json!([]),
        4 => json!({}),
        5 => 0.into(),
        6 => (-1).into(),
        7 => 1.into(),
        8 => 2.into(),
        9 => json!(0.5),
        10 => json!(-2.5),
        11 => json!(1e308),
        12 => json!(-1e-308),
        13 => 1000.into(),
        14 => json!([old.clone()]),
        _ => json!(r.uniform(-1000.0, 1000.0)),
    }
}

/// Changes one node of `value`, picked by a random walk from the root.
fn mutate(r: &mut Rng, value: &mut Value) {
    let descend = r.chance(0.8);
    match value {
        Value::Object(fields) if descend && !fields.is_empty() => {
            let key = fields.keys().nth(r.below(fields.len())).unwrap().clone();
            if r.chance(0.15) {
                fields.remove(&key);
            } else {
                mutate(r, fields.get_mut(&key).unwrap());
            }
        }
        Value::Array(items) if descend && !items.is_empty() => match r.below(6) {
            0 => items.truncate(r.below(items.len())),
            1 => items.push(items[r.below(items.len())].clone()),
            2 => items.clear(),
            _ => {
                let i = r.below(items.len());
                mutate(r, &mut items[i]);
            }
        },
        _ => *value = replacement(r, value),
    }
}

/// Keeps the running time of a mutated message small: `min_seconds` 0, `min_runs` ≤ 3.
fn bounded(mut message: Value) -> Value {
    if let Some(Value::Object(input)) = message.get_mut("input") {
        if input.contains_key("min_seconds") {
            input.insert("min_seconds".into(), 0.into());
        }
        if input
            .get("min_runs")
            .and_then(Value::as_f64)
            .is_some_and(|runs| runs > 3.0)
        {
            input.insert("min_runs".into(), 3.into());
        }
    }
    message
}

/// A mutated message line.
fn mutant(r: &mut Rng, seeds: &[Value]) -> String {
    let mut message = seeds[r.below(seeds.len())].clone();
    for _ in 0..r.between(1, 3) {
        mutate(r, &mut message);
    }
    let mut line = bounded(message).to_string();
    match r.below(10) {
        0 => line.truncate(r.below(line.len() + 1)),
        1 if !line.is_empty() => {
            let mut bytes = line.into_bytes();
            let at = r.below(bytes.len());
            let noise = b"{}[]\",:0-e.x\\ ";
            bytes[at] = noise[r.below(noise.len())];
            line = String::from_utf8_lossy(&bytes).into_owned();
        }
        _ => {}
    }
    while !line.is_char_boundary(line.len()) {
        line.pop();
    }
    line
}

/// What is wrong with `response` as the answer to `line`, if anything.
fn fault(line: &str, response: &str) -> Option<String> {
    let answer: Map<String, Value> = match serde_json::from_str(response) {
        Ok(Value::Object(answer)) => answer,
        _ => return Some(format!("the response is not a JSON object: {response}")),
    };
    let message: Option<Value> = serde_json::from_str(line).ok();
    let id = message
        .as_ref()
        .and_then(|m| m.get("id"))
        .cloned()
        .unwrap_or(Value::Null);
    if answer.get("id") != Some(&id) {
        return Some(format!(
            "the response's id is not the message's {id}: {response}"
        ));
    }
    let kind = message
        .as_ref()
        .and_then(|m| m.get("kind"))
        .and_then(Value::as_str);
    let substantive = matches!(kind, Some("define" | "evaluate")) || kind.is_none();
    match answer.get("success") {
        Some(Value::Bool(true)) if kind == Some("evaluate") && !answer.contains_key("output") => {
            Some(format!("success without an output: {response}"))
        }
        Some(Value::Bool(false)) => match answer.get("error") {
            Some(Value::String(e)) if !e.is_empty() => None,
            _ => Some(format!("a failure without an error: {response}")),
        },
        None if substantive => Some(format!("no `success`: {response}")),
        _ => None,
    }
}

fn fuzz(iterations: usize, seed: u64) {
    let seeds = seeds();
    let mut r = Rng::new(seed);
    let mut faults = Vec::new();
    // A caught panic is reported below with its message line; the default hook would print
    // a backtrace for each.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for _ in 0..iterations {
        let line = mutant(&mut r, &seeds);
        match catch_unwind(AssertUnwindSafe(|| respond(&line))) {
            Ok(response) => {
                faults.extend(fault(&line, &response).map(|f| format!("{line}\n  {f}")))
            }
            Err(_) => faults.push(format!("{line}\n  panicked")),
        }
        if faults.len() >= 10 {
            break;
        }
    }
    std::panic::set_hook(hook);
    assert!(
        faults.is_empty(),
        "{} bad answers:\n{}",
        faults.len(),
        faults.join("\n")
    );
}

#[test]
fn mutated_messages_are_answered_not_crashed_on() {
    let iterations = std::env::var("ADJOINT_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    fuzz(iterations, 0x6772_6164);
}

#[test]
#[ignore = "a million messages: run with --ignored"]
fn a_million_mutated_messages() {
    fuzz(1_000_000, 0x6265_6e63);
}
