"""CUB's radix sort on the same GPU, for `murmur flock sort-bench` to be compared with.

torch.sort(int32, stable=True) sorts (key, int64 index) pairs with CUB's DeviceRadixSort;
cupy.sort(uint32) sorts keys only. Mean of 10 timed runs after one warm-up, CUDA events.
"""
import sys

import cupy as cp
import torch

sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "10000000,100000000").split(",")]
print("| pairs | torch.sort int32 keys + int64 indices (CUB) ms | cupy.sort uint32 keys only ms |")
print("|---|---|---|")
for n in sizes:
    k = torch.randint(-(2**31), 2**31 - 1, (n,), dtype=torch.int32, device="cuda")
    torch.sort(k, stable=True)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(10):
        torch.sort(k, stable=True)
    e.record()
    torch.cuda.synchronize()
    t_torch = s.elapsed_time(e) / 10
    a = cp.random.randint(0, 2**32 - 1, n, dtype=cp.uint64).astype(cp.uint32)
    cp.sort(a)
    s2, e2 = cp.cuda.Event(), cp.cuda.Event()
    s2.record()
    for _ in range(10):
        cp.sort(a)
    e2.record()
    e2.synchronize()
    t_cupy = cp.cuda.get_elapsed_time(s2, e2) / 10
    print(f"| {n} | {t_torch:.3f} | {t_cupy:.3f} |")
