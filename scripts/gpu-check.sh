#!/usr/bin/env bash
# The GPU check (../shared/GUIDE.md §6, README "On a GPU"). The GPU machine has python3 with
# PyTorch (CUDA) but no Rust toolchain, so the binaries are built here and carried over:
#
#   scripts/gpu-check.sh build  # here: release test binaries, the MNIST examples and the steps
#                               # bench, copied with a manifest into target/gpu-check/ and
#                               # archived as target/gpu-check.tar.gz (carry that)
#   scripts/gpu-check.sh run    # on the GPU machine, from the repository root with
#                               # target/gpu-check/ or its archive carried along: the test binaries (CUDA tests
#                               # run or skip by themselves), one MNIST epoch of each example on
#                               # CUDA, the MLP and CNN steps next to PyTorch CUDA, a summary
#   scripts/gpu-check.sh        # build, then run
#
# `run` finishes in under 8 minutes: every stage has a time limit (below). Logs, the example
# outputs, criterion's data and PyTorch's JSON go to $GPU_CHECK_RESULTS (default
# target/gpu-check/results). Exit status: 0 if every stage passed, 1 if one failed or timed
# out, 2 if none failed but the CUDA stages were skipped for want of a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

PACK=target/gpu-check
RESULTS=${GPU_CHECK_RESULTS:-$PACK/results}

# Time limits of the `run` stages, in seconds: 450 in all, to finish within 8 minutes. Each can
# be lowered from the environment (e.g. `TESTS_S=90 scripts/gpu-check.sh run`) to fit a lease.
# BENCH_S and TORCH_S hold for each of the ROUNDS rounds of the steps.
TESTS_S=${TESTS_S:-120} MLP_S=${MLP_S:-50} CNN_S=${CNN_S:-70} BENCH_S=${BENCH_S:-30}
TORCH_S=${TORCH_S:-40} ROUNDS=${ROUNDS:-3}
# Criterion settings of the step benches: short, the whole check has minutes.
CRITERION_ARGS=(--warm-up-time 1 --measurement-time 3 --noplot)

usage() {
  echo "usage: scripts/gpu-check.sh [build|run]" >&2
  exit 64
}

say() { printf '\n== %s\n' "$*" >&2; }

# ---------------------------------------------------------------------------------------------
# build
# ---------------------------------------------------------------------------------------------

# Reads cargo's JSON messages and prints `NAME<TAB>PACKAGE<TAB>PACKAGE_DIR<TAB>EXECUTABLE` for
# each executable artifact (PACKAGE_DIR relative to the repository root). With `tests`, only
# test harness binaries, leaving out those that need the Rust toolchain: the trybuild UI tests
# (they run cargo) and the proc-macro crate's (linked to the toolchain's libstd).
executables() {
  python3 -c '
import json, os, sys, tomllib
tests = sys.argv[1:] == ["tests"]
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    target = m["target"]
    if tests and (not m["profile"]["test"] or target["name"] == "ui"
                  or "proc-macro" in target["kind"]):
        continue
    with open(m["manifest_path"], "rb") as f:
        package = tomllib.load(f)["package"]["name"]
    folder = os.path.relpath(os.path.dirname(m["manifest_path"]))
    print("\t".join([target["name"], package, folder, m["executable"]]))
' "$@"
}

# Copies the executables listed on stdin (as `executables` prints them) into $PACK/bin/,
# stripped, and adds them to the manifest as
# `CLASS<TAB>NAME<TAB>PACKAGE<TAB>PACKAGE_DIR<TAB>bin/FILE`, CLASS being `$1` (test, example or
# bench).
pack() {
  local name package folder executable file
  while IFS=$'\t' read -r name package folder executable; do
    file=bin/$(basename "$executable")
    cp "$executable" "$PACK/$file"
    strip "$PACK/$file"
    printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$name" "$package" "$folder" "$file" \
      >>"$PACK/manifest.tsv"
  done
}

build() {
  rm -rf "$PACK"
  mkdir -p "$PACK/bin"
  # Tests may read repository files through `env!("CARGO_MANIFEST_DIR")`, a path of this machine.
  pwd >"$PACK/build-root"
  say "release test binaries (cargo test --release --workspace --no-run)"
  cargo test --release --workspace --no-run --message-format=json-render-diagnostics |
    executables tests | pack test
  say "MNIST examples"
  cargo build --release --example mnist_mlp --example mnist_cnn \
    --message-format=json-render-diagnostics | executables | pack example
  say "steps bench (cargo bench --bench steps --no-run)"
  cargo bench --bench steps --no-run --message-format=json-render-diagnostics |
    executables | pack bench
  say "packed $(wc -l <"$PACK/manifest.tsv") binaries, $(du -sh "$PACK" | cut -f1), in $PACK/"
  cut -f1-3 "$PACK/manifest.tsv" | sed 's/^/  /' >&2
  # The binaries are larger than a device run carries (64 MiB with the working tree); gzipped
  # they are about a third. `run` unpacks the archive when the folder is not there.
  tar -czf "$PACK.tar.gz" -C "$(dirname "$PACK")" "$(basename "$PACK")"
  say "archived as $PACK.tar.gz ($(du -sh "$PACK.tar.gz" | cut -f1)): carry that file"
}

# ---------------------------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------------------------

# Stage results, printed by `summary`: "stage<TAB>status<TAB>detail".
STAGES=()
FAILED=0 SKIPPED=0

record() {
  STAGES+=("$1"$'\t'"$2"$'\t'"$3")
  case "$2" in
    ok) ;;
    skipped*) SKIPPED=1 ;;
    *) FAILED=1 ;;
  esac
}

# `status_of CODE`: the word for an exit status of `timeout`.
status_of() {
  case "$1" in
    0) echo ok ;;
    124 | 137) echo "timed out" ;;
    *) echo "failed ($1)" ;;
  esac
}

# The packed binaries of CLASS `$1` (test, example or bench):
# `NAME<TAB>PACKAGE<TAB>PACKAGE_DIR<TAB>PATH`, PATH relative to $PACK.
binaries() {
  awk -F'\t' -v class="$1" '$1 == class { print $2 "\t" $3 "\t" $4 "\t" $5 }' "$PACK/manifest.tsv"
}

# Puts the `lib` folders of the `nvidia-*` wheels of python3 (cuBLAS, cuDNN, NVRTC, the CUDA
# runtime: `nvidia/*/lib`, `nvidia/cu13/lib` among them) on LD_LIBRARY_PATH.
use_python_cuda_libraries() {
  local libs
  if ! libs=$(python3 -c '
import glob, os, nvidia
print(":".join(sorted({d for p in nvidia.__path__ for d in glob.glob(os.path.join(p, "*", "lib"))})))
' 2>/dev/null) || [ -z "$libs" ]; then
    echo "gpu-check: no nvidia-* Python packages found; CUDA libraries must be on the system paths" >&2
    return
  fi
  export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "gpu-check: LD_LIBRARY_PATH += ${libs//:/ }" >&2
}

# Makes the build machine's repository path (compiled into tests that read repository files)
# lead here, if it does not exist on this machine.
link_build_root() {
  local build_root
  build_root=$(cat "$PACK/build-root")
  if [ "$build_root" != "$PWD" ] && [ ! -e "$build_root" ]; then
    if mkdir -p "$(dirname "$build_root")" 2>/dev/null && ln -s "$PWD" "$build_root" 2>/dev/null; then
      echo "gpu-check: linked $build_root (the build machine's checkout) to $PWD" >&2
    else
      echo "gpu-check: cannot link $build_root to $PWD; tests reading repository files will fail" >&2
    fi
  fi
}

# Runs every test binary from its package's folder (as cargo does), within TESTS_S seconds
# in all, the CUDA backend's first; records one stage per package.
run_tests() {
  local deadline=$((SECONDS + TESTS_S)) root=$PWD packages=(adjoint-cuda) package
  mapfile -t -O 1 packages < <(binaries test | cut -f2 | sort -u | grep -vx adjoint-cuda)
  for package in "${packages[@]}"; do
    local passed=0 failed=0 ignored=0 skipped=0 broken=() name owner dir path log code left counts
    while IFS=$'\t' read -r name owner dir path; do
      [ "$owner" = "$package" ] || continue
      left=$((deadline - SECONDS))
      if [ "$left" -le 0 ]; then
        broken+=("$name: no time left")
        continue
      fi
      log="$RESULTS/test-$(basename "$path").log"
      code=0
      (cd "$dir" && timeout -k 5 "$left" "$root/$PACK/$path" --show-output) >"$log" 2>&1 ||
        code=$?
      [ "$code" = 0 ] || broken+=("$name: $(status_of "$code")")
      read -r -a counts < <(test_counts "$log")
      passed=$((passed + counts[0])) failed=$((failed + counts[1]))
      ignored=$((ignored + counts[2]))
      skipped=$((skipped + $(grep -c '^skipped: no CUDA device' "$log" || true)))
    done < <(binaries test)
    local detail="$passed passed ($skipped of them skipped: no CUDA device), $failed failed, $ignored ignored"
    if [ ${#broken[@]} = 0 ]; then
      record "tests $package" ok "$detail"
    else
      record "tests $package" failed "$detail; $(IFS=';'; echo "${broken[*]}")"
    fi
  done
}

# `passed failed ignored`, summed over the `test result:` lines of libtest's output in `$1`.
test_counts() {
  awk '/^test result:/ {
    for (k = 2; k <= NF; k++) {
      if ($k ~ /^passed;/) p += $(k - 1)
      if ($k ~ /^failed;/) f += $(k - 1)
      if ($k ~ /^ignored;/) i += $(k - 1)
    }
  }
  END { print p + 0, f + 0, i + 0 }' "$1"
}

# One epoch of the MNIST example `$1` on CUDA within `$2` seconds.
run_example() {
  local example=$1 limit=$2 path log code=0
  path=$(binaries example | awk -F'\t' -v n="$example" '$1 == n { print $4 }')
  log="$RESULTS/$example.log"
  say "$example: one epoch on CUDA"
  timeout -k 5 "$limit" "$PACK/$path" --epochs 1 --device cuda \
    --plot "$RESULTS/$example.svg" --weights "$RESULTS/$example.safetensors" 2>&1 |
    tee "$log" >&2 || code=${PIPESTATUS[0]}
  local epoch
  epoch=$(sed -n 's/^epoch *1 *train loss \([0-9.]*\) *test accuracy \([0-9.]*%\) *(\(.*\))$/loss \1, test accuracy \2, \3/p' "$log")
  record "$example, 1 epoch" "$(status_of "$code")" "${epoch:-$(tail -n 1 "$log")}"
}

# The MLP and CNN steps on CUDA: adjoint's criterion bench, then PyTorch's, alternating
# $ROUNDS times (PyTorch's eager steps are bound by its host side: its MLP step took 0.60 to
# 1.01 ms in the rounds of one run on an H200); the summary reports the median of the
# per-round ratios.
run_benches() {
  local path code round
  path=$(binaries bench | awk -F'\t' '$1 == "steps" { print $4 }')
  for round in $(seq "$ROUNDS"); do
    say "round $round/$ROUNDS: steps bench on CUDA (mlp, cnn)"
    code=0
    ADJOINT_BENCH_DEVICE=cuda CRITERION_HOME="$RESULTS/criterion-$round" timeout -k 5 "$BENCH_S" \
      "$PACK/$path" --bench "${CRITERION_ARGS[@]}" '^steps/(mlp|cnn)$' 2>&1 |
      tee "$RESULTS/steps-$round.log" >&2 || code=${PIPESTATUS[0]}
    record "adjoint steps, round $round" "$(status_of "$code")" "log: $RESULTS/steps-$round.log"
    say "round $round/$ROUNDS: PyTorch steps on CUDA (bench/steps_torch.py --device cuda)"
    code=0
    (cd bench && timeout -k 5 "$TORCH_S" python3 steps_torch.py --device cuda) \
      >"$RESULTS/torch_cuda-$round.json" 2>"$RESULTS/torch_cuda-$round.log" || code=$?
    cat "$RESULTS/torch_cuda-$round.log" >&2
    record "PyTorch steps, round $round" "$(status_of "$code")" \
      "log: $RESULTS/torch_cuda-$round.log"
  done
}

summary() {
  local row stage status detail
  printf '\n== gpu-check summary\n'
  printf '%-28s %-12s %s\n' stage status detail
  for row in "${STAGES[@]}"; do
    IFS=$'\t' read -r stage status detail <<<"$row"
    printf '%-28s %-12s %s\n' "$stage" "$status" "$detail"
  done
  echo
  python3 - "$RESULTS" "$ROUNDS" <<'EOF'
import os
import statistics
import sys
sys.path.insert(0, "bench")
from table import adjoint_median, fmt_ratio, fmt_time, load

results, rounds = sys.argv[1], int(sys.argv[2])
sides = [(os.path.join(results, f"criterion-{r}"), load(os.path.join(results, f"torch_cuda-{r}.json")))
         for r in range(1, rounds + 1)]
rows = [["workload (CUDA)", "adjoint median", "PyTorch median", "adjoint/PyTorch", "per round"]]
for name, label in [("mlp", "MLP step, batch 128"), ("cnn", "CNN step, batch 64")]:
    pairs = [(adjoint_median(c, name), t.get(name)) for c, t in sides]
    ratios = [a / t for a, t in pairs if a and t]
    med = lambda xs: statistics.median(xs) if xs else None
    rows.append([label, fmt_time(med([a for a, _ in pairs if a])),
                 fmt_time(med([t for _, t in pairs if t])), fmt_ratio(med(ratios)),
                 ", ".join(f"{r:.3f}" for r in ratios)])
widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
for k, r in enumerate(rows):
    print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
    if k == 0:
        print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
print(f"\n{rounds} round(s), alternating; times are medians over the rounds, the ratio the median of the per-round ratios.")
EOF
}

run() {
  if [ ! -f "$PACK/manifest.tsv" ] && [ -f "$PACK.tar.gz" ]; then
    tar -xzf "$PACK.tar.gz" -C "$(dirname "$PACK")"
  fi
  if [ ! -f "$PACK/manifest.tsv" ]; then
    echo "gpu-check: no $PACK/manifest.tsv; run \`scripts/gpu-check.sh build\` on a machine with cargo first" >&2
    exit 1
  fi
  mkdir -p "$RESULTS"
  rm -rf "$RESULTS"/criterion* "$RESULTS"/torch_cuda* # nothing from an earlier run
  export PYTHONDONTWRITEBYTECODE=1
  use_python_cuda_libraries
  link_build_root
  local gpu=1
  if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    gpu=0
    echo "gpu-check: no GPU found (nvidia-smi -L); the tests run, the CUDA stages are skipped" >&2
  fi
  say "tests (at most ${TESTS_S} s)"
  run_tests
  if [ "$gpu" = 1 ]; then
    run_example mnist_mlp "$MLP_S"
    run_example mnist_cnn "$CNN_S"
    run_benches
  else
    record "MNIST examples, benches" "skipped" "no GPU"
  fi
  summary
  if [ "$FAILED" = 1 ]; then
    exit 1
  elif [ "$SKIPPED" = 1 ]; then
    exit 2
  fi
}

case "${1:-all}" in
  build) build ;;
  run) run ;;
  all)
    build
    run
    ;;
  *) usage ;;
esac
