"""Generated user crates and the cargo runs that time them (standard library only).

Every crate lives in its own folder under the work directory, depends on the repository's
`adjoint` by path, has its own empty `[workspace]` table (so it is no member of ours), a copy of
the repository's `Cargo.lock` (the same dependency versions, no resolution) and of
`rust-toolchain.toml` (the same compiler), and shares one `CARGO_TARGET_DIR` with the others so
that the dependencies are built once per profile and macro setting.
"""

import os
import re
import shutil
import statistics
import subprocess
import time

from styles import main_rs

# `[profile.*.build-override]`: cargo builds proc-macros and build scripts (and their
# dependencies) at opt-level 0 in both profiles unless the user's Cargo.toml says otherwise.
OPT_MACRO = """
[profile.dev.build-override]
opt-level = 3

[profile.release.build-override]
opt-level = 3
"""

COMMANDS = {
    "check": ["cargo", "check"],
    "build": ["cargo", "build"],
    "release": ["cargo", "build", "--release"],
}

HEADER = re.compile(r"^// ---- companions of `([^`]+)` ----$")
# Cargo's line for each package it compiles: `   Compiling name v0.1.0 (path)`.
BUILT = re.compile(r"^\s*(?:Compiling|Checking) (\S+) v", re.MULTILINE)
# Lines cargo itself may add after the macro's output (its status lines, rustc diagnostics).
CARGO_LINE = re.compile(r"^\s*(Compiling|Checking|Finished|Blocking|warning|error)\b")


class Crate:
    """One generated crate: `n` units of one style, plain or differentiable, one macro setting."""

    def __init__(self, work, repo, style, n, diff, opt_macro):
        variant = "diff" if diff else "plain"
        setting = "optmacro" if opt_macro else "default"
        self.name = f"cc_{style.name}_{variant}_{setting}"
        self.dir = os.path.join(work, "crates", self.name)
        self.main = os.path.join(self.dir, "src", "main.rs")
        self.target = os.path.join(work, "target")
        self.write(repo, style, n, diff, opt_macro)

    def write(self, repo, style, n, diff, opt_macro):
        os.makedirs(os.path.dirname(self.main), exist_ok=True)
        manifest = (
            "[package]\n"
            f'name = "{self.name}"\n'
            'version = "0.0.0"\n'
            'edition = "2024"\n'
            "publish = false\n"
            "\n"
            "[dependencies]\n"
            f'adjoint = {{ path = "{repo}" }}\n'
            "\n"
            "# Not a member of any workspace above this folder.\n"
            "[workspace]\n"
            + (OPT_MACRO if opt_macro else "")
        )
        _write_if_changed(os.path.join(self.dir, "Cargo.toml"), manifest)
        _write_if_changed(self.main, main_rs(style, n, diff))
        for name in ("Cargo.lock", "rust-toolchain.toml"):
            dest = os.path.join(self.dir, name)
            if not os.path.exists(dest):
                shutil.copyfile(os.path.join(repo, name), dest)

    def env(self, expand=False):
        env = dict(os.environ, CARGO_TARGET_DIR=self.target)
        env.pop("ADJOINT_EXPAND", None)
        env.pop("RUSTC_WRAPPER", None)  # no compiler cache: it would time the cache
        if expand:
            env["ADJOINT_EXPAND"] = "*"
        return env

    def touch(self):
        """Marks the source changed (same content), so cargo rebuilds this crate only."""
        now = time.time()
        os.utime(self.main, (now, now))

    def cargo(self, command, expand=False):
        """Runs one cargo command in the crate; returns (seconds, stderr). Fails loudly."""
        start = time.perf_counter()
        done = subprocess.run(
            COMMANDS[command],
            cwd=self.dir,
            env=self.env(expand),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            tail = "\n".join(done.stderr.splitlines()[-40:])
            raise SystemExit(f"`{' '.join(COMMANDS[command])}` failed in {self.dir}:\n{tail}")
        return seconds, done.stderr

    def warm_up(self):
        """Builds the dependencies and the crate once in every profile (not timed)."""
        for command in COMMANDS:
            self.cargo(command)

    def timed(self, command, log, tries=3):
        """Seconds of one rebuild of this crate alone, after touching its source. A run that
        also rebuilt a dependency (the repository changed meanwhile) is discarded and repeated."""
        for _ in range(tries):
            self.touch()
            seconds, stderr = self.cargo(command)
            others = sorted(set(BUILT.findall(stderr)) - {self.name})
            if not others:
                return seconds
            log(f"{self.name} {command}: also rebuilt {', '.join(others)}; run discarded")
        raise SystemExit(f"{self.name}: dependencies kept changing; is the repository being edited?")

    def companion_bytes(self):
        """Bytes of the companions the macro prints with `ADJOINT_EXPAND='*'`, and how many
        functions it printed them for (one `// ---- companions of ... ----` header each)."""
        self.touch()
        _, stderr = self.cargo("check", expand=True)
        return parse_companions(stderr)


def parse_companions(stderr):
    """(total bytes, header count) of the companion listings in `stderr` (headers excluded)."""
    total, count, inside = 0, 0, False
    for line in stderr.splitlines(keepends=True):
        if HEADER.match(line.rstrip("\n")):
            count, inside = count + 1, True
        elif CARGO_LINE.match(line):
            inside = False
        elif inside:
            total += len(line.encode())
    return total, count


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def _write_if_changed(path, text):
    """Writes `text` unless the file already holds it (keeps cargo's fingerprints valid)."""
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, "w") as f:
        f.write(text)
