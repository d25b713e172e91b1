"""SGEMM with numpy (OpenBLAS) at 512/1024/2048 on 2 threads: median GFLOP/s, printed as the
OPENBLAS_GFLOPS value `benches/gemm.rs` reads.

Run: OPENBLAS_CORETYPE=SkylakeX OPENBLAS_NUM_THREADS=2 python3 bench/gemm_numpy.py
(OpenBLAS 0.3.31 does not recognise this Zen 5 CPU and falls back to its AVX2 Haswell kernel,
at about half speed; SkylakeX is the AVX-512 kernel that BASELINES.md measured.)"""
import time

import numpy as np

out = []
for n in (512, 1024, 2048):
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    a @ b
    reps = 10 if n == 2048 else 30
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t)
    times.sort()
    out.append(f"{n}:{2 * n**3 / times[reps // 2] / 1e9:.1f}")
print(",".join(out))
