#!/usr/bin/env python3
"""What a batch's labels cost the host on their way to the GPU, while the GPU is busy: the copy
from pageable memory (a clone, then .to(cuda, non_blocking=True), as ferry's Python did up to
this benchmark), and through pinned memory (.pin_memory(), then the same). For each: the host's
time per call (median and p90, µs) and whether a call waited for the stream's earlier work (a
long kernel queued before it: torch.cuda._sleep), which would leave the GPU idle after it.

    python3 bench/label_copy.py [--batch 256] [--calls 200]

Output: one JSON line per way. Needs torch with CUDA; says so and exits 2 without it.
"""
import argparse
import json
import sys
import time


def measure(torch, make, calls, busy_cycles):
    """Host µs per call, with a long kernel ahead of every call; and how many calls returned
    only after that kernel was done (they waited for the stream)."""
    dev = torch.device("cuda")
    times, waited = [], 0
    for _ in range(calls):
        torch.cuda._sleep(busy_cycles)  # the stream is busy for about a millisecond or more
        done = torch.cuda.Event()
        done.record()
        t = time.perf_counter()
        y = make().to(dev, non_blocking=True)
        times.append(1e6 * (time.perf_counter() - t))
        waited += done.query()  # the kernel ahead had finished by the time the copy returned
        del y
    torch.cuda.synchronize()
    times.sort()
    return {"host_us_p50": round(times[len(times) // 2], 1),
            "host_us_p90": round(times[len(times) * 9 // 10], 1),
            "calls_after_the_busy_kernel": waited, "calls": calls}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--busy-cycles", type=int, default=5_000_000,
                   help="the kernel queued before each copy (GPU cycles: ~3 ms at 1.8 GHz)")
    a = p.parse_args()
    try:
        import torch
    except ImportError:
        print("label_copy: torch is not installed", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("label_copy: no CUDA device", file=sys.stderr)
        return 2
    host = torch.randint(0, 1000, (a.batch,), dtype=torch.int64)
    ways = {"pageable clone": lambda: host.clone(),
            "pinned (pin_memory)": lambda: host.pin_memory()}
    for name, make in ways.items():
        measure(torch, make, 10, a.busy_cycles)  # warm up: the caching host allocator
        r = measure(torch, make, a.calls, a.busy_cycles)
        print(json.dumps(dict(way=name, batch=a.batch, **r)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
