#!/usr/bin/env python3
"""Pack benchmark, side by side in one run: the same 224x224 u8 samples
served (a) by ferry from a pack, (b) by ferry from a JPEG pack (`--store
jpeg`, short side --jpeg-size, decoded per sample), (c) by ferry decoding the
original JPEGs, (d) WebDataset-style: tar shards of the JPEG pack's small
JPEGs read with the `webdataset` package when importable, else with Python's
tarfile + Pillow decode + resize (what WebDataset does per sample), one
process per core, (e) from a NumPy memmap copied batch by batch into a
page-aligned (or, with torch, pinned) buffer — torch.from_numpy + pinned
copy when torch is importable. Bytes on disk are given for each.

  python3 bench/bench_pack.py --ferry build/ferry --dir ../shared/corpus/photos [--device cuda:0]
"""
import argparse
import io
import multiprocessing
import os
import re
import struct
import subprocess
import tarfile
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


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)


def jpeg_pack_samples(pack):
    """(name, JPEG bytes) of every sample of a --store jpeg pack, from the
    shards' indexes (src/pack/pack.h)."""
    for name in sorted(f for f in os.listdir(pack) if f.endswith(".fpk")):
        data = open(os.path.join(pack, name), "rb").read()
        kind, _, _, _, count, index_off = struct.unpack_from("<IIIIIQ", data, 12)
        assert data[:8] == b"FERRYPK1" and kind == 2, name
        strings = index_off + 32 * count
        for k in range(count):
            off, length, _, _, poff, plen = struct.unpack_from("<QQiIII", data, index_off + 32 * k)
            path = data[strings + poff:strings + poff + plen].decode()
            yield f"{name[:-4]}_{k:05d}_{os.path.basename(path)}", data[off:off + length]


def write_tars(pack, out_dir, per_shard=128):
    """WebDataset layout: shard-NNNNNN.tar of KEY.jpg members."""
    os.makedirs(out_dir)
    tars, tf = [], None
    for i, (key, jpeg) in enumerate(jpeg_pack_samples(pack)):
        if i % per_shard == 0:
            if tf:
                tf.close()
            tars.append(os.path.join(out_dir, f"shard-{len(tars):06d}.tar"))
            tf = tarfile.open(tars[-1], "w")
        info = tarfile.TarInfo(key.replace(".", "_") + ".jpg")
        info.size = len(jpeg)
        tf.addfile(info, io.BytesIO(jpeg))
    if tf:
        tf.close()
    return tars


def _center_224(img):
    """ferry's centre crop (ratio 0.875) + triangle resize to 224x224, in
    Pillow: the box the loader computes, resized with BILINEAR (triangle)."""
    from PIL import Image
    w, h = img.size
    r = max(224 / 0.875 / w, 224 / 0.875 / h)
    bw, bh = min(224 / r, w), min(224 / r, h)
    box = ((w - bw) / 2, (h - bh) / 2, (w + bw) / 2, (h + bh) / 2)
    return img.convert("RGB").resize((224, 224), Image.BILINEAR, box=box)


def _read_tar(path):
    """One worker's shard: decode + resize + stack, returned as a batch."""
    from PIL import Image
    out = []
    try:
        import webdataset as wds
        for s in wds.WebDataset(path, shardshuffle=False).decode("pil"):
            out.append(np.asarray(_center_224(s["jpg"])))
    except ImportError:
        with tarfile.open(path) as tf:
            for m in tf:
                img = Image.open(io.BytesIO(tf.extractfile(m).read()))
                out.append(np.asarray(_center_224(img)))
    return np.stack(out)


def tar_rate(tars, n_images, rounds=3):
    try:
        import webdataset  # noqa: F401
        how = "webdataset"
    except ImportError:
        how = "tarfile + Pillow (webdataset not installed)"
    best = 0.0
    with multiprocessing.Pool(os.cpu_count()) as pool:
        for _ in range(rounds):
            t = time.perf_counter()
            n = sum(len(b) for b in pool.imap_unordered(_read_tar, tars))
            assert n == n_images, (n, n_images)
            best = max(best, n / (time.perf_counter() - t))
    return best, how


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferry", default="build/ferry")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--jpeg-size", type=int, default=256,
                    help="short side of the JPEG pack (256 = Resize(256) for a 224 centre crop)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ferry_pack_bench_")
    pack = os.path.join(tmp, "pack")
    t = time.perf_counter()
    subprocess.run([a.ferry, "pack", a.dir, "-o", pack, "--size", "224", "--quiet"], check=True,
                   capture_output=True)
    pack_s = time.perf_counter() - t
    jpack = os.path.join(tmp, "jpack")
    t = time.perf_counter()
    subprocess.run([a.ferry, "pack", a.dir, "-o", jpack, "--size", str(a.jpeg_size), "--store",
                    "jpeg", "--quiet"], check=True, capture_output=True)
    jpack_s = time.perf_counter() - t
    n = sum(int(l.split()[1]) for l in open(os.path.join(pack, "MANIFEST")) if l.startswith("shard-"))
    nj = sum(int(l.split()[1]) for l in open(os.path.join(jpack, "MANIFEST"))
             if l.startswith("shard-"))
    tars = write_tars(jpack, os.path.join(tmp, "tars"))
    dev = ["--device", a.device] if a.device != "cpu" else []
    packed = ferry_rate(a.ferry, pack, dev)
    jpacked = ferry_rate(a.ferry, jpack, ["--crop", "center"] + dev)
    jrandom = ferry_rate(a.ferry, jpack, ["--crop", "random"] + dev)
    decoded = ferry_rate(a.ferry, a.dir, ["--crop", "center"] + dev)
    tr, tar_how = tar_rate(tars, nj)
    mm, how = memmap_rate(pack, n)
    gbs = packed * 224 * 224 * 3 / 1e9
    src_b = sum(os.path.getsize(os.path.join(a.dir, f)) for f in os.listdir(a.dir)
                if f.lower().endswith((".jpg", ".jpeg", ".png", ".webp")))
    print(f"{n} samples; packing took {pack_s:.1f} s (u8), {jpack_s:.1f} s (jpeg, short side "
          f"{a.jpeg_size}); {os.cpu_count()} cores; device {a.device}")
    print("| pipeline | images/s | GB/s | ferry pack vs it | bytes on disk |\n"
          "|---|---:|---:|---:|---:|")
    mb = lambda b: f"{b / 1e6:.1f} MB"
    print(f"| ferry load PACK (u8 224x224) | {packed:.0f} | {gbs:.1f} | 1.00x | "
          f"{mb(dir_bytes(pack))} |")
    print(f"| ferry load JPEG PACK (--store jpeg, centre crop) | {jpacked:.0f} | | "
          f"{packed / jpacked:.1f}x | {mb(dir_bytes(jpack))} |")
    print(f"| ferry load JPEG PACK, --crop random | {jrandom:.0f} | | {packed / jrandom:.1f}x | "
          f"{mb(dir_bytes(jpack))} |")
    print(f"| ferry load JPEGs (decode path) | {decoded:.0f} | | {packed / decoded:.1f}x | "
          f"{mb(src_b)} |")
    print(f"| WebDataset-style tar shards of the same JPEGs, {tar_how}, "
          f"{os.cpu_count()} processes | {tr:.0f} | | {packed / tr:.1f}x | "
          f"{mb(sum(os.path.getsize(t) for t in tars))} |")
    print(f"| memmap .npy, {how} | {mm:.0f} | {mm * 150528 / 1e9:.1f} | {packed / mm:.1f}x | "
          f"{mb(n * 150528)} |")


if __name__ == "__main__":
    main()
