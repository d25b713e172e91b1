//! The GradBench tool binary: reads the eval's messages from stdin, one JSON object per line,
//! and answers each on stdout. Logs go to stderr only.

use std::io::{self, BufRead, Write};

fn main() -> io::Result<()> {
    let stdin = io::stdin().lock();
    let mut stdout = io::stdout().lock();
    for line in stdin.lines() {
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
