//! Fuzzing of what parses outside data: IDX files (plain and gzipped, through
//! `idx::read_u8_from` and `mnist::Split::load`) and safetensors checkpoints
//! (`checkpoint::load_from_bytes`).
//!
//! Inputs are valid files mutated with knowledge of their structure (header fields set to
//! edge values, truncation, insertion, byte flips, gzip streams re-compressed or damaged).
//! Every input must give `Ok` or a typed error whose message names the file, never a panic,
//! and no single allocation may exceed what the input's bytes can justify (twice the data
//! that actually arrived, plus 64 KiB), whatever sizes the header declares.
//!
//! The normal run tries a few thousand inputs per format (about 3 s); `cargo test --test fuzz
//! -- --ignored` runs a million per format (measured: safetensors 152 s, IDX 237 s, debug
//! build, 2 cores), and `ADJOINT_FUZZ_ITERS` sets the count of the normal run.

#[path = "fuzz/alloc.rs"]
mod alloc;
#[path = "fuzz/checkpoint.rs"]
mod checkpoint;
#[path = "fuzz/idx.rs"]
mod idx;
#[path = "support/rng.rs"]
mod rng;

use rng::Rng;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Inputs per format: `ADJOINT_FUZZ_ITERS`, else `default`.
pub fn iterations(default: usize) -> usize {
    std::env::var("ADJOINT_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Values a mutated `u32` field takes: the edges, and random ones.
pub fn edge_u32(r: &mut Rng, near: u32) -> u32 {
    match r.below(8) {
        0 => 0,
        1 => 1,
        2 => u32::MAX,
        3 => 1 << r.below(32),
        4 => near.wrapping_add(1),
        5 => near.wrapping_sub(1),
        6 => r.next_u64() as u32 & 0xffff,
        _ => r.next_u64() as u32,
    }
}

/// One unstructured mutation of `bytes`: truncate, insert, delete, flip, or append.
pub fn mutate_bytes(r: &mut Rng, bytes: &mut Vec<u8>) {
    let at = r.below(bytes.len() + 1);
    match r.below(5) {
        0 => bytes.truncate(at),
        1 => bytes.insert(at, r.next_u64() as u8),
        2 if at < bytes.len() => {
            bytes.remove(at);
        }
        3 if at < bytes.len() => bytes[at] ^= 1 << r.below(8),
        _ => bytes.extend((0..r.between(1, 16)).map(|_| r.next_u64() as u8)),
    }
}

/// Runs `parse` on `input`: no panic, an error naming `file`, and no allocation above `bound`.
pub fn check<E: std::fmt::Display>(
    what: &str,
    input: &[u8],
    file: &str,
    bound: usize,
    parse: impl FnOnce() -> Result<(), E>,
) -> Result<bool, String> {
    alloc::reset();
    let result = catch_unwind(AssertUnwindSafe(parse));
    let largest = alloc::largest();
    let ok = match result {
        Err(_) => {
            return Err(format!(
                "{what}: panicked on {} bytes {:02x?}",
                input.len(),
                input
            ));
        }
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            let text = e.to_string();
            if !text.contains(file) {
                return Err(format!("{what}: the error does not name the file: {text}"));
            }
            false
        }
    };
    if largest > bound {
        return Err(format!(
            "{what}: allocated {largest} bytes at once for {} input bytes (bound {bound}): {:02x?}",
            input.len(),
            &input[..input.len().min(64)]
        ));
    }
    Ok(ok)
}

/// Runs `one` `n` times on a seeded generator; panics with the first failures.
pub fn run(
    format: &str,
    n: usize,
    seed: u64,
    mut one: impl FnMut(&mut Rng) -> Result<bool, String>,
) {
    let mut r = Rng::new(seed);
    let start = std::time::Instant::now();
    let (mut accepted, mut failures) = (0usize, Vec::new());
    for _ in 0..n {
        match one(&mut r) {
            Ok(true) => accepted += 1,
            Ok(false) => {}
            Err(e) if failures.len() < 10 => failures.push(e),
            Err(_) => {}
        }
    }
    println!(
        "fuzz {format}: {n} mutated inputs ({accepted} accepted, {} rejected with a typed error) in {:.1?}",
        n - accepted - failures.len(),
        start.elapsed()
    );
    assert!(failures.is_empty(), "{format}:\n{}", failures.join("\n"));
}
