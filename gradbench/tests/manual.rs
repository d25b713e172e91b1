//! Every eval against the `manual` tool's answers on small inputs, frozen as fixtures by
//! `tests/fixtures/make.sh`: each number within 1e-10 of the reference, relative to the largest
//! magnitude in that output (a norm-wise relative error, ADBench's way of comparing
//! gradients; GradBench's own eval accepts 1e-4). The structure (lengths, keys) must match too.

#[path = "fixtures/files.rs"]
mod files;

use adjoint_gradbench::evals;
use serde_json::Value;

const TOLERANCE: f64 = 1e-10;

fn largest(value: &Value) -> f64 {
    match value {
        Value::Number(n) => n.as_f64().unwrap_or(0.0).abs(),
        Value::Array(items) => items.iter().map(largest).fold(0.0, f64::max),
        Value::Object(fields) => fields.values().map(largest).fold(0.0, f64::max),
        _ => 0.0,
    }
}

/// The first place where `got` and `want` differ, as a path and a description.
fn difference(got: &Value, want: &Value, scale: f64, at: &str) -> Option<String> {
    match (got, want) {
        (Value::Number(g), Value::Number(w)) => {
            let (g, w) = (g.as_f64().unwrap(), w.as_f64().unwrap());
            let error = (g - w).abs() / scale;
            (error > TOLERANCE)
                .then(|| format!("{at}: {g} where manual has {w} (relative error {error:.2e})"))
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => g
            .iter()
            .zip(w)
            .enumerate()
            .find_map(|(i, (g, w))| difference(g, w, scale, &format!("{at}[{i}]"))),
        (Value::Object(g), Value::Object(w)) if g.len() == w.len() => {
            w.iter().find_map(|(key, w)| match g.get(key) {
                Some(g) => difference(g, w, scale, &format!("{at}.{key}")),
                None => Some(format!("{at}: no field `{key}`")),
            })
        }
        _ => Some(format!(
            "{at}: {} where manual has {}",
            brief(got),
            brief(want)
        )),
    }
}

fn brief(value: &Value) -> String {
    match value {
        Value::Array(items) => format!("a list of {}", items.len()),
        Value::Object(fields) => format!("an object with {} fields", fields.len()),
        other => other.to_string(),
    }
}

#[test]
fn every_eval_matches_the_manual_tool() {
    let files = files::fixture_files();
    let mut failures = Vec::new();
    let mut cases = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, case) in text.lines().enumerate() {
            let case: Value = serde_json::from_str(case).unwrap();
            let (module, function) = (
                case["module"].as_str().unwrap(),
                case["function"].as_str().unwrap(),
            );
            let place = format!(
                "{}:{} {module}::{function}",
                file.file_name().unwrap().to_string_lossy(),
                line + 1
            );
            cases += 1;
            match evals::evaluate(module, function, case["input"].clone()) {
                Ok(done) => {
                    let scale = largest(&case["output"]).max(f64::MIN_POSITIVE);
                    if let Some(why) = difference(&done.output, &case["output"], scale, "output") {
                        failures.push(format!("{place}: {why}"));
                    }
                }
                Err(e) => failures.push(format!("{place}: {e}")),
            }
        }
    }
    let modules: Vec<&str> = evals::MODULES.iter().map(|m| m.name).collect();
    for name in &modules {
        if !files
            .iter()
            .any(|f| f.file_stem().is_some_and(|s| s == *name))
        {
            failures.push(format!(
                "module `{name}` has no fixture file tests/fixtures/{name}.jsonl"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} cases differ from manual:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn unsupported_nestings_answer_with_the_reason() {
    for (module, function, _) in evals::UNSUPPORTED {
        let input = match *module {
            "particle" => serde_json::json!({ "w": 0.0 }),
            _ => serde_json::json!({ "start": [1.0, 1.0] }),
        };
        let error = evals::evaluate(module, function, input).err().unwrap();
        let text = error.to_string();
        assert!(
            text.starts_with(&format!("{module}::{function}: ")) && text.contains("not"),
            "{text}"
        );
    }
}
