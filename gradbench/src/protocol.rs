//! The GradBench protocol: one message in, one response out, with the same `id`.
//!
//! `start` is answered with the tool's name, `define` with whether the module exists,
//! `evaluate` with the output and one `evaluate` timing per run, and anything else
//! (`analysis`, kinds added later) with its `id` alone. A line that is not a JSON object, a
//! message without `kind`, an unknown module or function, or an input of the wrong shape is
//! answered `success: false` with an error saying which; nothing a message says can crash the
//! tool.

use crate::evals::{self, EvalError};
use serde_json::{Map, Value, json};

/// The name this tool reports in its `start` response.
pub const TOOL: &str = "adjoint";

/// The response line (without the newline) to one message line.
pub fn respond(line: &str) -> String {
    let message: Value = match serde_json::from_str(line) {
        Ok(message) => message,
        Err(e) => return failure(Value::Null, format!("the message is not JSON: {e}")),
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let Some(kind) = message.get("kind").and_then(Value::as_str) else {
        return failure(id, "the message has no string field `kind`".into());
    };
    match kind {
        "start" => json!({ "id": id, "tool": TOOL }).to_string(),
        "define" => match field(&message, "module") {
            Ok(module) if evals::module(module).is_some() => {
                json!({ "id": id, "success": true }).to_string()
            }
            Ok(module) => failure(id, EvalError::UnknownModule(module.to_owned()).to_string()),
            Err(e) => failure(id, e),
        },
        "evaluate" => evaluate(id, &message),
        _ => json!({ "id": id }).to_string(),
    }
}

fn evaluate(id: Value, message: &Value) -> String {
    let names = field(message, "module").and_then(|m| Ok((m, field(message, "function")?)));
    let (module, function) = match names {
        Ok(names) => names,
        Err(e) => return failure(id, e),
    };
    let input = message.get("input").cloned().unwrap_or(Value::Null);
    match evals::evaluate(module, function, input) {
        Ok(done) => {
            let timings: Vec<Value> = done
                .timings
                .iter()
                .map(|t| json!({ "name": "evaluate", "nanoseconds": t.as_nanos() as u64 }))
                .collect();
            let mut response = Map::new();
            response.insert("id".into(), id);
            response.insert("success".into(), true.into());
            response.insert("output".into(), done.output);
            response.insert("timings".into(), timings.into());
            Value::Object(response).to_string()
        }
        Err(e) => failure(id, e.to_string()),
    }
}

fn field<'a>(message: &'a Value, name: &str) -> Result<&'a str, String> {
    message
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("the message has no string field `{name}`"))
}

fn failure(id: Value, error: String) -> String {
    eprintln!("adjoint-gradbench: message {id}: {error}");
    json!({ "id": id, "success": false, "error": error }).to_string()
}

#[cfg(test)]
mod tests {
    use super::respond;
    use serde_json::Value;

    fn answer(line: &str) -> Value {
        serde_json::from_str(&respond(line)).expect("every response is JSON")
    }

    #[test]
    fn start_and_analysis_are_acknowledged_by_id() {
        assert_eq!(
            answer(r#"{"id":0,"kind":"start","eval":"hello"}"#)["tool"],
            "adjoint"
        );
        let analysis = answer(r#"{"id":3,"kind":"analysis","of":2,"valid":true}"#);
        assert_eq!(analysis, serde_json::json!({ "id": 3 }));
    }

    #[test]
    fn define_says_whether_the_module_exists() {
        assert_eq!(
            answer(r#"{"id":1,"kind":"define","module":"hello"}"#)["success"],
            true
        );
        let unknown = answer(r#"{"id":1,"kind":"define","module":"nope"}"#);
        assert_eq!(unknown["success"], false);
        assert!(unknown["error"].as_str().unwrap().contains("nope"));
    }

    #[test]
    fn evaluate_answers_the_output_and_one_timing_per_run() {
        let line = r#"{"id":2,"kind":"evaluate","module":"hello","function":"double","input":1.5}"#;
        let done = answer(line);
        assert_eq!(
            (done["id"].as_i64(), done["success"].as_bool()),
            (Some(2), Some(true))
        );
        assert_eq!(done["output"], 3.0);
        assert_eq!(done["timings"].as_array().unwrap().len(), 1);
        assert_eq!(done["timings"][0]["name"], "evaluate");
    }

    #[test]
    fn bad_messages_fail_with_a_reason_and_keep_the_id() {
        for (line, says) in [
            ("not json", "not JSON"),
            (r#"{"id":4}"#, "`kind`"),
            (
                r#"{"id":4,"kind":"evaluate","function":"square","input":1}"#,
                "`module`",
            ),
            (
                r#"{"id":4,"kind":"evaluate","module":"hello","function":"cube","input":1}"#,
                "cube",
            ),
            (
                r#"{"id":4,"kind":"evaluate","module":"hello","function":"square","input":"x"}"#,
                "hello",
            ),
            (
                r#"{"id":4,"kind":"evaluate","module":"lse","function":"gradient","input":{"x":[]}}"#,
                "empty",
            ),
        ] {
            let failed = answer(line);
            assert_eq!(failed["success"], false, "{line}");
            let error = failed["error"].as_str().unwrap();
            assert!(error.contains(says), "{line}: {error}");
            if line.starts_with('{') {
                assert_eq!(failed["id"], 4, "{line}");
            }
        }
    }
}
