"""Timing helper shared by the PyTorch and JAX sides of `bench/run.sh`."""
import math
import statistics
import time


def median_seconds(step, samples=30, min_sample=0.005, warmup=0.3):
    """Median over `samples` timed samples of the seconds one call of `step` takes.

    Warm-up: calls `step` for at least `warmup` seconds (and at least 3 times). Each sample
    times as many back-to-back calls as needed to last at least `min_sample` seconds
    (ceil(min_sample / t) for a call of t), so that microsecond workloads are not dominated by
    the timer. `benches/steps.rs` samples adjoint by the same rule (criterion's flat sampling,
    `sample_like_python`), so that both sides' medians are the same statistic."""
    start = time.perf_counter()
    calls = 0
    while calls < 3 or time.perf_counter() - start < warmup:
        step()
        calls += 1
    per_call = (time.perf_counter() - start) / calls
    reps = max(1, math.ceil(min_sample / max(per_call, 1e-9)))
    times = []
    for _ in range(samples):
        t = time.perf_counter()
        for _ in range(reps):
            step()
        times.append((time.perf_counter() - t) / reps)
    return statistics.median(times)
