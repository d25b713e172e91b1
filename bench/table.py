"""Prints the side-by-side table of `bench/run.sh` (standard library only).

Usage: table.py STEPS_LOG ROUND_DIR...   (each ROUND_DIR holds adjoint.json, torch.json and
       jax.json of one round: workload -> seconds; times are the medians over the rounds,
       ratios the medians of the per-round ratios)
       table.py --collect CRITERION_DIR  (prints adjoint.json of the last criterion run)"""
import json
import os
import statistics
import sys

# Multiply-add = 2 FLOPs, elementwise work ignored (BASELINES.md).
FLOPS = {"mlp": 410.8e6, "cnn": 4.58e9, "gpt": 2.67e9, "rnn": 0.84e6}
LABELS = {
    "mlp": "MLP 784-512-512-10, batch 128, SGD step",
    "cnn": "CNN (PyTorch mnist, no dropout), batch 64, SGD step",
    "gpt": "tiny GPT 2x4x128, T 64, V 65, batch 16, AdamW step",
    "rnn": "Elman RNN h32 x16 T100, grad W,U,b",
    "rosen2": "Rosenbrock 2-D gradient, f64",
    "rosen100": "Rosenbrock 100-D gradient, f64",
}
TARGETS = {"mlp": "<=0.8x torch", "cnn": "<=0.8x torch", "gpt": "<=0.7x torch",
           "rnn": "<=0.25x jax",
           "rosen2": "<=0.01x torch", "rosen100": "<=0.01x torch"}
SGEMM_FALLBACK = 200.0  # BASELINES.md, 2 threads
SGEMM_SIZES = (1024, 2048)  # `sgemm{n}` of benches/steps.rs, `sgemm_gflops` of steps_torch.py


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def adjoint_median(criterion_dir, name):
    path = os.path.join(criterion_dir, "steps", name, "new", "estimates.json")
    try:
        with open(path) as f:
            return json.load(f)["median"]["point_estimate"] * 1e-9
    except (OSError, ValueError, KeyError):
        return None


def collect(criterion_dir):
    """adjoint.json of one round: the criterion medians of the steps bench, in seconds."""
    names = [*LABELS, "mlp_on_caller", *(f"sgemm{n}" for n in SGEMM_SIZES)]
    times = {name: adjoint_median(criterion_dir, name) for name in names}
    print(json.dumps({k: v for k, v in times.items() if v is not None}))


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt_time(s):
    if s is None:
        return "-"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.1f} us"
    return f"{s * 1e9:.1f} ns"


def fmt_ratio(r):
    if r is None:
        return "-"
    return f"{r:.3f}x" if r >= 1e-3 else f"{r:.1e}x"


def ratios(rounds, name, other):
    """The per-round ratios adjoint / `other` of workload `name`."""
    return [r["adjoint"][name] / r[other][name] for r in rounds
            if r["adjoint"].get(name) and r[other].get(name)]


def main():
    if sys.argv[1] == "--collect":
        return collect(sys.argv[2])
    log_path, round_dirs = sys.argv[1], sys.argv[2:]
    rounds = [{side: load(os.path.join(d, side + ".json"))
               for side in ("adjoint", "torch", "jax")} for d in round_dirs]
    torch = {k: median_or_none(r["torch"].get(k) for r in rounds)
             for k in set().union(*(r["torch"] for r in rounds))}
    jax = {k: median_or_none(r["jax"].get(k) for r in rounds)
           for k in set().union(*(r["jax"] for r in rounds))}
    # The machine's SGEMM rate: the better of PyTorch's and adjoint's own in this run (each
    # the best of n = 1024 and 2048), since either library may miss the CPU's fastest path.
    rates = {"torch": torch.get("sgemm_gflops")}
    times = [(n, median_or_none(r["adjoint"].get(f"sgemm{n}") for r in rounds))
             for n in SGEMM_SIZES]
    rates["adjoint"] = max((2 * n ** 3 / t / 1e9 for n, t in times if t), default=None)
    measured = {k: v for k, v in rates.items() if v}
    if measured:
        best = max(measured, key=measured.get)
        sgemm = measured[best]
        sgemm_note = f"{best}'s SGEMM, same run; " + ", ".join(
            f"{k} {v:.0f}" for k, v in sorted(measured.items()))
    else:
        sgemm, sgemm_note = SGEMM_FALLBACK, "BASELINES.md, not same run"
    header = ["workload", "adjoint", "PyTorch", "JAX", "adj/torch", "adj/jax", "target",
              "GFLOP/s", "% SGEMM"]
    rows = []
    for name, label in LABELS.items():
        a = median_or_none(r["adjoint"].get(name) for r in rounds)
        t, j = torch.get(name), jax.get(name)
        gflops = FLOPS[name] / a / 1e9 if a and name in FLOPS else None
        rows.append([
            label, fmt_time(a), fmt_time(t), fmt_time(j),
            fmt_ratio(median_or_none(ratios(rounds, name, "torch"))),
            fmt_ratio(median_or_none(ratios(rounds, name, "jax"))),
            TARGETS[name],
            f"{gflops:.1f}" if gflops else "-",
            f"{100 * gflops / sgemm:.0f}%" if gflops else "-",
        ])
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
    print(f"\n{len(rounds)} round(s); times are medians over the rounds, ratios medians of the "
          "per-round ratios.")
    for name in ("mlp", "cnn", "gpt", "rnn"):
        for other in ("torch", "jax"):
            rs = ratios(rounds, name, other)
            if len(rs) > 1:
                print(f"{name} / {other} per round: " + ", ".join(f"{r:.3f}x" for r in rs))
    caller = [(r["adjoint"]["mlp"], r["adjoint"]["mlp_on_caller"]) for r in rounds
              if r["adjoint"].get("mlp") and r["adjoint"].get("mlp_on_caller")]
    if caller:
        print("adjoint mlp through Backend::install / on the calling thread per round: "
              + ", ".join(f"{fmt_time(i)} / {fmt_time(c)} ({i / c:.3f}x)" for i, c in caller))
    print(f"SGEMM rate: {sgemm:.0f} GFLOP/s ({sgemm_note}).")
    if "gpt_manual_attention" in torch:
        print(f"PyTorch GPT: F.scaled_dot_product_attention in the table; the attention written "
              f"out as adjoint's (matmul, masked_fill, softmax, matmul): "
              f"{fmt_time(torch['gpt_manual_attention'])}.")
    if "rnn_unrolled" in jax:
        print(f"JAX RNN: lax.scan in the table; Python-unrolled under jit: "
              f"{fmt_time(jax['rnn_unrolled'])}.")
    if not torch:
        print("PyTorch side not run (see the messages above).")
    if not jax:
        print("JAX side not run (see the messages above).")
    try:
        with open(log_path) as f:
            for l in f:
                if l.startswith("memory:"):
                    print(l.rstrip())
    except OSError:
        pass


if __name__ == "__main__":
    main()
