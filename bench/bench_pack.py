#!/usr/bin/env python3
"""Pack benchmark, side by side in one run: the same 224x224 u8 samples
served (a) by ferry from a pack, (b) by ferry decoding the JPEGs, (c) from
a NumPy memmap copied batch by batch into a page-aligned (or, with torch,
pinned) buffer — torch.from_numpy + pinned copy when torch is importable.

  python3 bench/bench_pack.py --ferry build/ferry --dir ../shared/corpus/photos [--device cuda:0]
"""
import argparse
import os
import re
import subprocess
import tempfile
import time

import numpy as np


def ferry_rate(ferry, src, extra):
    cmd = [ferry, "load", src, "--size", "224", "--dtype", "u8", "--layout", "hwc",
           "--batch", "256", "--epochs", "4", "--no-shuffle", "--quiet", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    rates = [float(x) for x in re.findall(r"([0-9.]+) images/s", r.stdout)]
    if not rates:
        raise SystemExit(f"{cmd}: {r.stdout}{r.stderr}")
    return max(rates[1:] or rates)


def memmap_rate(pack_dir, n_images, min_seconds=3.0):
    """The pack's samples as one .npy memmap, copied in batches of 256."""
    path = os.path.join(pack_dir, "..", "samples.npy")
    arr = np.lib.format.open_memmap(path, mode="w+", dtype=np.uint8,
                                    shape=(n_images, 224, 224, 3))
    arr[:] = np.random.default_rng(0).integers(0, 255, arr.shape, dtype=np.uint8)
    arr.flush()
    del arr
    mm = np.load(path, mmap_mode="r")
    try:
        import torch
        out = torch.empty((256, 224, 224, 3), dtype=torch.uint8).pin_memory()
        copy = lambda b: out[: len(b)].copy_(torch.from_numpy(np.ascontiguousarray(b)))
        how = "torch.from_numpy + pinned copy"
    except ImportError:
        out = np.empty((256, 224, 224, 3), np.uint8)
        copy = lambda b: np.copyto(out[: len(b)], b)
        how = "numpy copy (torch not installed)"
    n, t = 0, time.perf_counter()
    while time.perf_counter() - t < min_seconds:
        for i in range(0, n_images, 256):
            copy(mm[i:i + 256])
            n += len(mm[i:i + 256])
    return n / (time.perf_counter() - t), how


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferry", default="build/ferry")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ferry_pack_bench_")
    pack = os.path.join(tmp, "pack")
    t = time.perf_counter()
    subprocess.run([a.ferry, "pack", a.dir, "-o", pack, "--size", "224", "--quiet"], check=True,
                   capture_output=True)
    pack_s = time.perf_counter() - t
    n = sum(int(l.split()[1]) for l in open(os.path.join(pack, "MANIFEST")) if l.startswith("shard-"))
    dev = ["--device", a.device] if a.device != "cpu" else []
    packed = ferry_rate(a.ferry, pack, dev)
    decoded = ferry_rate(a.ferry, a.dir, ["--crop", "center"] + dev)
    mm, how = memmap_rate(pack, n)
    gbs = packed * 224 * 224 * 3 / 1e9
    print(f"{n} samples; packing took {pack_s:.1f} s; {os.cpu_count()} cores; device {a.device}")
    print("| pipeline | images/s | GB/s | ferry pack vs it |\n|---|---:|---:|---:|")
    print(f"| ferry load PACK | {packed:.0f} | {gbs:.1f} | 1.00x |")
    print(f"| ferry load JPEGs (decode path) | {decoded:.0f} | | {packed / decoded:.1f}x |")
    print(f"| memmap .npy, {how} | {mm:.0f} | {mm * 150528 / 1e9:.1f} | {packed / mm:.1f}x |")


if __name__ == "__main__":
    main()
