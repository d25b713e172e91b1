#!/usr/bin/env bash
# Runs the training-step workloads of `benches/steps.rs` in adjoint (criterion), PyTorch eager
# and JAX jit, one after the other on 2 threads, and prints one table of medians and ratios.
#
#   bench/run.sh              # installs the Python side into bench/.venv on first use
#   SKIP_PYTHON=1 bench/run.sh  # adjoint only
#
# The Python side (torch, jax[cpu], numpy from PyPI) takes ~6 GB: the default torch wheel pulls
# the CUDA libraries. Without 8 GB free the script says so and runs adjoint alone.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/results
export RAYON_NUM_THREADS=2 OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2
export XLA_FLAGS="--xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads=2"
export JAX_PLATFORMS=cpu PYTHONDONTWRITEBYTECODE=1
VENV=bench/.venv
PY="$VENV/bin/python"
rm -rf bench/results/round*

have_torch=0 have_jax=0
if [ -z "${SKIP_PYTHON:-}" ]; then
  if ! "$PY" -c "import torch" 2>/dev/null; then
    free_kb=$(df -Pk bench | awk 'NR==2 {print $4}')
    if [ "$free_kb" -lt $((8 * 1024 * 1024)) ]; then
      echo "bench/run.sh: only $((free_kb / 1024 / 1024)) GB free; the Python side needs ~6 GB (torch pulls CUDA libraries). Skipping PyTorch and JAX." >&2
    else
      echo "bench/run.sh: installing torch, jax[cpu] and numpy into $VENV (~6 GB, a few minutes)" >&2
      python3 -m venv "$VENV"
      "$PY" -m pip install -q --upgrade pip
      "$PY" -m pip install -q torch numpy || echo "bench/run.sh: torch did not install; skipping it." >&2
      "$PY" -m pip install -q "jax[cpu]" || echo "bench/run.sh: jax did not install; skipping it." >&2
    fi
  fi
  "$PY" -c "import torch" 2>/dev/null && have_torch=1
  "$PY" -c "import jax" 2>/dev/null && have_jax=1
fi

# ROUNDS=n repeats the three sides n times, alternating, and the table reports the median
# of each side's times and of the per-round ratios: on a shared VM one round can move by
# ±10% (the default is 1).
rounds=${ROUNDS:-1}
target=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
round_dirs=()
for round in $(seq "$rounds"); do
  dir=bench/results/round$round
  mkdir -p "$dir"
  echo "== round $round/$rounds: adjoint (cargo bench --bench steps)" >&2
  cargo bench --bench steps -- --noplot 2>&1 | tee bench/results/steps.log >&2
  python3 bench/table.py --collect "$target/criterion" > "$dir/adjoint.json"
  if [ "$have_torch" = 1 ]; then
    echo "== round $round/$rounds: PyTorch eager" >&2
    (cd bench && ../"$PY" steps_torch.py > "../$dir/torch.json") || echo "PyTorch side failed" >&2
  fi
  if [ "$have_jax" = 1 ]; then
    echo "== round $round/$rounds: JAX jit" >&2
    (cd bench && ../"$PY" steps_jax.py > "../$dir/jax.json") || echo "JAX side failed" >&2
  fi
  round_dirs+=("$dir")
done

echo
python3 bench/table.py bench/results/steps.log "${round_dirs[@]}" | tee bench/results/table.md
