"""Side-by-side tables of GradBench logs: one table per eval, one row per workload, one column
group per tool (primal and derivative means in ms, derivative/primal ratio), and each tool's
score, 1 / Σ over workloads of (mean primal + mean derivative) in s⁻¹, as GradBench computes it.

    python3 bench/gradbench.py LOG_DIR        # LOG_DIR holds EVAL-TOOL.jsonl files

Only the standard library. A workload whose output failed validation, or whose function
failed, is marked, and the tool's score for that eval is left out ("-"): an invalid answer
scores nothing.
"""

import json
import pathlib
import statistics
import sys

# The (primal, derivative) function names of each eval; particle and saddle have four
# derivative variants and no primal.
PAIRS = {
    "hello": ("square", "double"),
    "gmm": ("objective", "jacobian"),
    "ba": ("objective", "jacobian"),
    "ht": ("objective", "jacobian"),
    "lstm": ("objective", "jacobian"),
    "lse": ("primal", "gradient"),
    "det": ("primal", "gradient"),
    "ode": ("primal", "gradient"),
    "llsq": ("primal", "gradient"),
    "kmeans": ("cost", "dir"),
}


def load(path):
    """Per workload (in order): {function: [ns, ...]} and whether every answer was valid."""
    messages, responses, verdicts = {}, {}, {}
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        entry = json.loads(line)
        if "message" in entry:
            m = entry["message"]
            messages[m["id"]] = m
            if m.get("kind") == "analysis":
                verdicts[m["of"]] = m.get("valid")
        elif "response" in entry:
            responses[entry["response"]["id"]] = entry["response"]
    rows = {}
    for i in sorted(messages):
        m = messages[i]
        if m.get("kind") != "evaluate":
            continue
        row = rows.setdefault(m.get("description") or f"#{i}", {"times": {}, "ok": True})
        r = responses.get(i, {})
        if not r.get("success") or verdicts.get(i) is False:
            row["ok"] = False
            continue
        times = [t["nanoseconds"] for t in r.get("timings") or [] if t.get("name") == "evaluate"]
        row["times"].setdefault(m["function"], []).extend(times)
    return rows


def ms(ns):
    return "-" if ns is None else f"{ns / 1e6:.3g}"


def table(eval_name, logs):
    """Prints the table of one eval from {tool: rows}."""
    primal, derivative = PAIRS.get(eval_name, (None, None))
    tools = list(logs)
    workloads = []
    for rows in logs.values():
        workloads += [w for w in rows if w not in workloads]
    print(f"\n## {eval_name}\n")
    if primal:
        head = " | ".join(f"{t} primal | {t} deriv | {t} ratio" for t in tools)
    else:
        functions = sorted({f for rows in logs.values() for r in rows.values() for f in r["times"]})
        head = " | ".join(f"{t} {f}" for t in tools for f in functions)
    print(f"| workload | {head} |")
    print("|---" * (1 + head.count("|") + 1) + "|")
    for w in workloads:
        cells = []
        for t in tools:
            row = logs[t].get(w)
            if row is None:
                cells += ["-"] * (3 if primal else len(functions))
                continue
            mean = {f: statistics.fmean(v) for f, v in row["times"].items() if v}
            mark = "" if row["ok"] else " ✗"
            if primal:
                p, d = mean.get(primal), mean.get(derivative)
                ratio = f"{d / p:.2f}×" if p and d else "-"
                cells += [ms(p), ms(d), ratio + mark]
            else:
                cells += [ms(mean.get(f)) + mark for f in functions]
        print(f"| {w} | " + " | ".join(cells) + " |")
    scores = []
    for t in tools:
        rows = logs[t]
        total = sum(statistics.fmean(v) for r in rows.values() for v in r["times"].values() if v)
        ok = rows and all(r["ok"] for r in rows.values())
        scores.append(f"{t} {1e9 / total:.3g}" if ok and total else f"{t} -")
    print("\nscore (1/Σ(primal + derivative) means, s⁻¹): " + ", ".join(scores))


def main():
    directory = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    by_eval = {}
    for log in sorted(directory.glob("*.jsonl")):
        eval_name, _, tool = log.stem.partition("-")
        by_eval.setdefault(eval_name, {})[tool] = load(log)
    for eval_name, logs in by_eval.items():
        ordered = dict(sorted(logs.items(), key=lambda kv: kv[0] != "adjoint"))
        table(eval_name, ordered)


if __name__ == "__main__":
    main()
