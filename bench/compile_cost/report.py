"""The markdown report of the compile-cost benchmark (standard library only)."""

import os
import subprocess

from crates import COMMANDS, median

SETTING_TITLES = {
    "default": "Default profiles (cargo builds the macro at opt-level 0)",
    "optmacro": "With `[profile.dev.build-override]` and `[profile.release.build-override]` "
    "`opt-level = 3` (an optimised macro)",
}


def machine():
    """Processor model and core count (lscpu), and the compiler version."""
    model, cpus = "unknown", str(os.cpu_count())
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "Model name":
                model = value.strip()
            elif key.strip() == "CPU(s)":
                cpus = value.strip()
    except OSError:
        pass
    return model, cpus


def load_average():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def command_output(args, cwd):
    try:
        return subprocess.run(args, cwd=cwd, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "unknown"


def header(run):
    """The lines above the tables: what was run, where, and how busy the machine was."""
    model, cpus = machine()
    return [
        f"# Compile cost of `#[differentiable]`: {run['date']}",
        "",
        f"- {run['n']} units per style, median of {run['rounds']} round(s); each time is one "
        "rebuild of the generated crate alone after touching its source (dependencies built). "
        "Incremental compilation: "
        + ("off (`CARGO_INCREMENTAL=0`)." if run["no_incremental"] else "cargo's default "
           "(on for `check` and debug builds, off for release)."),
        f"- Machine: {model}, {cpus} CPU(s); load average {run['load_start']} at the start, "
        f"{run['load_end']} at the end; {run['minutes']:.1f} min in all.",
        f"- {run['rustc']}; adjoint at {run['revision']}.",
        "",
    ]


def timing_table(times, setting, styles, n, default_diff=None):
    """One table of the medians of `times[(setting, style, diff, command)]` (seconds)."""
    columns = ["style", "command", "plain (s)", "`#[differentiable]` (s) [min–max]", "ratio",
               "plain / fn (ms)", "diff / fn (ms)", "extra / fn (ms)"]
    if default_diff:
        columns.append("diff vs default")
    lines = [f"## {SETTING_TITLES[setting]}", "", _row(columns), _row(["---"] * len(columns))]
    for style in styles:
        for command in COMMANDS:
            plain = median(times[(setting, style, False, command)])
            diffs = times[(setting, style, True, command)]
            diff = median(diffs)
            row = [style, f"`cargo {' '.join(COMMANDS[command][1:])}`", f"{plain:.2f}",
                   f"{diff:.2f} [{min(diffs):.2f}–{max(diffs):.2f}]", f"{diff / plain:.1f}×",
                   f"{1e3 * plain / n:.1f}", f"{1e3 * diff / n:.1f}",
                   f"{1e3 * (diff - plain) / n:.1f}"]
            if default_diff:
                row.append(f"{diff / median(default_diff[(style, command)]):.2f}×")
            lines.append(_row(row))
    return lines + [""]


def expansion_table(expansion, sources, n):
    """Bytes per unit: source as written, companions the macro prints, and their ratio."""
    columns = ["style", "source bytes / fn", "companion bytes / fn", "expansion bytes / fn",
               "expansion / source"]
    lines = ["## Expansion (`ADJOINT_EXPAND='*'`, pretty-printed by the macro)", "",
             _row(columns), _row(["---"] * len(columns))]
    for style, (companions, printed) in expansion.items():
        source = sources[style]
        per_fn = companions / n
        note = "" if printed == n else f" ({printed} listings for {n} units)"
        lines.append(_row([style, f"{source:.0f}", f"{per_fn:.0f}{note}",
                           f"{source + per_fn:.0f}", f"{(source + per_fn) / source:.1f}×"]))
    return lines + [""]


def _row(cells):
    return "| " + " | ".join(cells) + " |"
