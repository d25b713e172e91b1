#!/usr/bin/env bash
# GradBench side by side: every eval adjoint implements, run for adjoint and for the reference
# tools that run offline here, one after another, single-threaded, then one table per eval
# (primal and derivative means per workload, derivative/primal ratio, score).
#
#   bench/gradbench.sh [EVAL...]          # default: every eval adjoint implements
#
# Environment: GRADBENCH_KIT (default ../shared/gradbench beside the repository),
#   TOOLS (default "adjoint manual tapenade adol-c pytorch jax"), MIN_SECONDS (default 0.5),
#   OUT (default target/gradbench: EVAL-TOOL.jsonl logs and tables.md).
# A tool that does not implement an eval answers `define` with false: its log is dropped.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kit="${GRADBENCH_KIT:-$root/../shared/gradbench}"
[ -x "$kit/run.sh" ] || { echo "no GradBench kit at $kit (set GRADBENCH_KIT)" >&2; exit 1; }
tools=(${TOOLS:-adjoint manual tapenade adol-c pytorch jax})
out="${OUT:-$root/target/gradbench}"
mkdir -p "$out"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 RAYON_NUM_THREADS=1

cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p adjoint-gradbench
adjoint="$root/target/release/adjoint-gradbench"
if [ $# -eq 0 ]; then
    set -- $("$adjoint" --modules)
fi

# Workload flags beyond the defaults: hand12 is not in the offline kit.
flags_of() {
    case "$1" in
        ht) echo "--max 11" ;;
        *) echo "" ;;
    esac
}

for eval in "$@"; do
    for tool in "${tools[@]}"; do
        log="$out/$eval-$tool.jsonl"
        command="$tool"
        [ "$tool" = adjoint ] && command="$adjoint"
        echo "[gradbench.sh] $eval / $tool" >&2
        status=0
        # shellcheck disable=SC2046
        "$kit/run.sh" "$eval" --tool "$command" -o "$log" -- --min-seconds "${MIN_SECONDS:-0.5}" \
            $(flags_of "$eval") >"$out/$eval-$tool.out" 2>&1 || status=$?
        tail -n 1 "$out/$eval-$tool.out" >&2
        if [ "$status" = 2 ]; then
            rm -f "$log"   # the tool does not implement this eval
        elif [ "$status" != 0 ] && [ "$tool" = adjoint ]; then
            echo "[gradbench.sh] adjoint failed $eval (exit $status): see $out/$eval-$tool.out" >&2
        fi
    done
done
python3 "$root/bench/gradbench.py" "$out" | tee "$out/tables.md"
