"""GEMM GFLOP/s of torch.matmul for the shapes bench/kernels.mjs sends on stdin.

Input: JSON list of [label, m, n, k, transA, transB]; output: JSON {label: GFLOP/s}.
Arguments: threads (2, like the engine), seconds per shape, dtype: fp32 (default)
or bf16 (both operands bf16 tensors: PyTorch's bf16 matmul, fp32 accumulation;
on a CPU without bf16 dot products it is slow, and that is the figure).
Run with Debian's /usr/bin/python3 (python3-torch).
"""
import json
import sys
import time

import torch

torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
shapes = json.load(sys.stdin)
budget = float(sys.argv[2]) if len(sys.argv) > 2 else 0.6
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
dtype_name = sys.argv[3] if len(sys.argv) > 3 else "fp32"
if dtype_name not in DTYPES:
    sys.exit(f"kernels_torch.py: dtype must be one of {', '.join(DTYPES)}, got {dtype_name!r}")
dtype = DTYPES[dtype_name]
result = {}
with torch.inference_mode():
    for label, m, n, k, trans_a, trans_b in shapes:
        a = torch.randn(k, m, dtype=dtype) if trans_a else torch.randn(m, k, dtype=dtype)
        b = torch.randn(n, k, dtype=dtype) if trans_b else torch.randn(k, n, dtype=dtype)
        opa = a.t() if trans_a else a
        opb = b.t() if trans_b else b
        c = torch.empty(m, n, dtype=dtype)
        torch.matmul(opa, opb, out=c)
        best = float("inf")
        start = time.perf_counter()
        while time.perf_counter() - start < budget or best == float("inf"):
            t0 = time.perf_counter()
            torch.matmul(opa, opb, out=c)
            best = min(best, time.perf_counter() - t0)
        result[label] = 2.0 * m * n * k / best / 1e9
print(
    json.dumps(
        {"version": torch.__version__, "threads": torch.get_num_threads(), "dtype": dtype_name, "gflops": result}
    )
)
