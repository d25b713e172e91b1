//! The GradBench tool binary: reads the eval's messages from stdin, one JSON object per line,
//! and answers each on stdout, flushed. Logs go to stderr only; it exits at the end of input.
//!
//! `adjoint-gradbench --modules` prints the names of the evals it implements, one per line.

use std::io::{self, BufRead, Write};

fn main() -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    match std::env::args().nth(1).as_deref() {
        None => {}
        Some("--modules") => {
            for module in adjoint_gradbench::evals::MODULES {
                writeln!(stdout, "{}", module.name)?;
            }
            return Ok(());
        }
        Some(other) => {
            eprintln!(
                "adjoint-gradbench: unknown argument `{other}` (it takes none, or --modules)"
            );
            std::process::exit(2);
        }
    }
    for line in io::stdin().lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let response = adjoint_gradbench::respond(&line);
        writeln!(stdout, "{response}")?;
        stdout.flush()?;
    }
    Ok(())
}
