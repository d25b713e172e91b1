//! Safetensors inputs: a checkpoint of a small model, its header length, the numbers, dtypes
//! and names of its JSON header and its bytes mutated, loaded strictly.

use super::rng::Rng;
use super::{check, iterations, mutate_bytes, run};
use adjoint::checkpoint::{self, UnknownTensors};
use adjoint::prelude::*;

#[derive(Clone, Differentiable)]
struct Small {
    weight: Tensor,
    bias: Tensor,
}

fn model() -> Small {
    Small {
        weight: Tensor::rand_normal(&[3, 4], 0.0, 1.0, 1),
        bias: Tensor::from_vec(vec![0.5_f64, -1.0, 2.0, 0.0], &[4]),
    }
}

/// The bytes of a checkpoint of [`model`].
fn valid() -> Vec<u8> {
    let file =
        std::env::temp_dir().join(format!("adjoint-fuzz-{}.safetensors", std::process::id()));
    checkpoint::save(&model(), &file).unwrap();
    let bytes = std::fs::read(&file).unwrap();
    let _ = std::fs::remove_file(&file);
    bytes
}

/// One change to the JSON header: a number, a dtype, a name, or a structural character.
fn mutate_json(r: &mut Rng, json: &mut String) {
    let numbers: Vec<(usize, usize)> = json
        .char_indices()
        .filter(|&(i, c)| c.is_ascii_digit() && !json[..i].ends_with(|p: char| p.is_ascii_digit()))
        .map(|(i, _)| {
            (
                i,
                i + json[i..]
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(json.len() - i),
            )
        })
        .collect();
    match r.below(4) {
        0 if !numbers.is_empty() => {
            let (a, b) = numbers[r.below(numbers.len())];
            let values = [
                "0",
                "1",
                "4294967296",
                "18446744073709551615",
                "99999999999999999999",
                "7",
            ];
            json.replace_range(a..b, values[r.below(values.len())]);
        }
        1 => {
            let dtypes = [
                "\"F16\"", "\"BF16\"", "\"F64\"", "\"I64\"", "\"U8\"", "\"BOOL\"", "\"XX\"",
            ];
            for from in ["\"F32\"", "\"F64\""] {
                if let Some(at) = json.find(from) {
                    json.replace_range(at..at + from.len(), dtypes[r.below(dtypes.len())]);
                    break;
                }
            }
        }
        2 => {
            if let Some(at) = json.find("weight") {
                json.replace_range(at..at + 6, ["bias", "weigh", "weight.x", ""][r.below(4)]);
            }
        }
        _ => {
            let at = r.below(json.len() + 1);
            let at = (0..=at)
                .rev()
                .find(|&i| json.is_char_boundary(i))
                .unwrap_or(0);
            json.insert(at, ['{', '}', '[', ']', ',', '"', ':', '-'][r.below(8)]);
        }
    }
}

/// A mutated checkpoint: the header re-assembled with its new length (or a length set to an
/// edge value), then maybe unstructured mutations.
fn mutated(r: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let n = u64::from_le_bytes(seed[..8].try_into().unwrap()) as usize;
    let mut json = String::from_utf8(seed[8..8 + n].to_vec()).unwrap();
    for _ in 0..r.between(1, 2) {
        mutate_json(r, &mut json);
    }
    let mut len = json.len() as u64;
    if r.chance(0.15) {
        len = [0, 1, 7, u64::MAX, u64::MAX / 2, len + 8, 1 << 40][r.below(7)];
    }
    let mut bytes = len.to_le_bytes().to_vec();
    bytes.extend(json.as_bytes());
    bytes.extend(&seed[8 + n..]);
    if r.chance(0.3) {
        mutate_bytes(r, &mut bytes);
    }
    bytes
}

fn fuzz(label: &str, n: usize, seed: u64) {
    let valid = valid();
    let fresh = model();
    run(label, n, seed, |r| {
        let input = mutated(r, &valid);
        let mut m = fresh.clone();
        let bound = 2 * input.len() + (64 << 10);
        check("safetensors", &input, "fuzz.safetensors", bound, || {
            checkpoint::load_from_bytes(&mut m, &input, "fuzz.safetensors", UnknownTensors::Error)
        })
    });
}

#[test]
fn mutated_checkpoints_give_typed_errors() {
    fuzz("safetensors", iterations(4_000), 4);
}

#[test]
#[ignore = "the long run: a million inputs, 2.5 to 4 minutes in a debug build"]
fn mutated_checkpoints_long_run() {
    fuzz("safetensors (long)", 1_000_000, 5);
}
