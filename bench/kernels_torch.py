"""SGEMM GFLOP/s of torch.matmul for the shapes bench/kernels.mjs sends on stdin.

Input: JSON list of [label, m, n, k, transA, transB]; output: JSON {label: GFLOP/s}.
Run with Debian's /usr/bin/python3 (python3-torch); 2 threads, like the engine.
"""
import json
import sys
import time

import torch

torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
shapes = json.load(sys.stdin)
budget = float(sys.argv[2]) if len(sys.argv) > 2 else 0.6
result = {}
with torch.inference_mode():
    for label, m, n, k, trans_a, trans_b in shapes:
        a = torch.randn(k, m) if trans_a else torch.randn(m, k)
        b = torch.randn(n, k) if trans_b else torch.randn(k, n)
        opa = a.t() if trans_a else a
        opb = b.t() if trans_b else b
        c = torch.empty(m, n)
        torch.matmul(opa, opb, out=c)
        best = float("inf")
        start = time.perf_counter()
        while time.perf_counter() - start < budget or best == float("inf"):
            t0 = time.perf_counter()
            torch.matmul(opa, opb, out=c)
            best = min(best, time.perf_counter() - t0)
        result[label] = 2.0 * m * n * k / best / 1e9
print(json.dumps({"version": torch.__version__, "threads": torch.get_num_threads(), "gflops": result}))
