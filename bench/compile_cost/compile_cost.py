#!/usr/bin/env python3
"""What `#[differentiable]` costs a user at compile time (issue 45; standard library only).

Generates user crates (one per style, variant and macro setting) that depend on this
repository's `adjoint` by path, builds their dependencies once, then times rebuilds of each
crate alone after touching its source: `cargo check`, `cargo build`, `cargo build --release`,
median of R rounds, plain against `#[differentiable]` (plus one `gradient(f_vjp(..))` call per
function), with cargo's default profiles and with an optimised macro (`build-override`
`opt-level = 3`). Also measures the expansion: the companions the macro prints with
`ADJOINT_EXPAND='*'` against the source of the function. Prints a markdown table and writes it
to `bench/compile_cost/results/<date>.md`. See docs/compile-time.md.

Usage: bench/compile_cost/compile_cost.py [--n 60] [--rounds 3] [--styles scalar,tensor,...]
       [--settings default,optmacro] [--quick] [--no-incremental] [--work DIR] [--no-save]
"""

import argparse
import datetime
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ beside the script

from crates import COMMANDS, Crate
from report import command_output, expansion_table, header, load_average, timing_table
from styles import STYLES, source_bytes

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SETTINGS = ("default", "optmacro")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, help="units (functions) per style (default 60)")
    p.add_argument("--rounds", type=int, help="timed runs per measurement (default 3)")
    p.add_argument("--styles", default=",".join(STYLES),
                   help=f"comma-separated subset of {','.join(STYLES)}")
    p.add_argument("--settings", default=",".join(SETTINGS),
                   help="comma-separated subset of default,optmacro")
    p.add_argument("--quick", action="store_true", help="n = 10, rounds = 1 unless given")
    p.add_argument("--no-incremental", action="store_true", help="CARGO_INCREMENTAL=0")
    p.add_argument("--work", default=os.path.join(REPO, "target", "compile_cost"),
                   help="folder of the generated crates and their target dir")
    p.add_argument("--no-save", action="store_true", help="print only; write no results file")
    args = p.parse_args(argv)
    args.n = args.n or (10 if args.quick else 60)
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.styles = _subset(p, args.styles, STYLES)
    args.settings = _subset(p, args.settings, SETTINGS)
    if args.n < 1 or args.rounds < 1:
        p.error("--n and --rounds must be at least 1")
    return args


def _subset(parser, text, known):
    names = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in names if s not in known]
    if unknown or not names:
        parser.error(f"unknown or empty selection {unknown or text!r}; choose from {list(known)}")
    return names


def log(message):
    print(f"[compile_cost {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def measure(args, work):
    """times[(setting, style, diff, command)] -> seconds of each round; expansion[style]."""
    times, expansion = {}, {}
    for setting in args.settings:
        crates = {(style, diff): Crate(work, REPO, STYLES[style], args.n, diff,
                                       setting == "optmacro")
                  for style in args.styles for diff in (False, True)}
        for crate in crates.values():
            log(f"{crate.name}: building dependencies and the crate once (not timed)")
            crate.warm_up()
        for r in range(args.rounds):
            for (style, diff), crate in crates.items():
                for command in COMMANDS:
                    seconds = crate.timed(command, log)
                    times.setdefault((setting, style, diff, command), []).append(seconds)
                    log(f"round {r + 1}/{args.rounds} {crate.name} {command}: {seconds:.2f} s")
        if not expansion:
            for style in args.styles:
                expansion[style] = crates[(style, True)].companion_bytes()
    return times, expansion


def main(argv):
    args = parse_args(argv)
    if args.no_incremental:
        os.environ["CARGO_INCREMENTAL"] = "0"
    work = os.path.abspath(args.work)
    start, load_start, revision = time.time(), load_average(), f"`{git_revision()}`"
    times, expansion = measure(args, work)
    if f"`{git_revision()}`" != revision:
        revision += f" at the start, `{git_revision()}` at the end"
    run = {
        "date": datetime.date.today().isoformat(), "n": args.n, "rounds": args.rounds,
        "no_incremental": args.no_incremental, "load_start": load_start,
        "load_end": load_average(), "minutes": (time.time() - start) / 60,
        "rustc": command_output(["rustc", "-V"], REPO),
        "revision": revision,
    }
    lines = header(run)
    for setting in args.settings:
        default = None
        if setting == "optmacro" and "default" in args.settings:
            default = {(style, c): times[("default", style, True, c)]
                       for style in args.styles for c in COMMANDS}
        lines += timing_table(times, setting, args.styles, args.n, default)
    sources = {style: source_bytes(STYLES[style], args.n) for style in args.styles}
    lines += expansion_table(expansion, sources, args.n)
    text = "\n".join(lines)
    print(text)
    if not args.no_save:
        save(text, run["date"])


def git_revision():
    return command_output(["git", "describe", "--always", "--dirty"], REPO)


def save(text, date):
    folder = os.path.join(HERE, "results")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{date}.md")
    if os.path.exists(path):
        path = os.path.join(folder, f"{date}-{time.strftime('%H%M%S')}.md")
    with open(path, "w") as f:
        f.write(text)
    log(f"table written to {os.path.relpath(path, REPO)}")


if __name__ == "__main__":
    main(sys.argv[1:])
