#!/usr/bin/env python3
"""Pack benchmark, side by side in one run: the same 224x224 u8 samples
served (a) by ferry from a pack, in order and shuffled, (b) by ferry from a
JPEG pack (`--store jpeg`, short side --jpeg-size, decoded per sample), (c)
by ferry decoding the original JPEGs, (d) WebDataset-style: tar shards of
the JPEG pack's small JPEGs read with the `webdataset` package when
importable, else with Python's tarfile + Pillow decode + resize (what
WebDataset does per sample), one process per core, (e) from a NumPy memmap
of as many samples, in batches of 256, in order and shuffled: numpy
indexing, torch.from_numpy, a copy into pinned memory and (with --device
cuda:N) onto the GPU; a numpy copy without torch. The u8 pack lists the
corpus several times (--samples): at pack speed an epoch of the corpus alone
lasts a few milliseconds. Bytes on disk are given for each.

  python3 bench/bench_pack.py --ferry build/ferry --dir ../shared/corpus/photos [--device cuda:0]

Claims it proves (bench/CLAIMS.md): C6, C7, C8, C9, C10, C12.
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


def ferry_rate(ferry, src, extra, epochs=4):
    """Images/s over epochs 2..N (epoch 1 maps the pack and touches the
    ring): their images over their time, the statistic the baselines use."""
    cmd = [ferry, "load", src, "--size", "224", "--dtype", "u8", "--layout", "hwc",
           "--batch", "256", "--epochs", str(epochs), "--quiet", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    # "epoch E: N images, ... in S s: R images/s" (R from the unrounded time)
    runs = [(int(n), float(rate)) for n, rate in
            re.findall(r"epoch \d+: (\d+) images, .* ([0-9.]+) images/s", r.stdout)]
    if not runs:
        raise SystemExit(f"{cmd}: {r.stdout}{r.stderr}")
    runs = runs[1:] or runs
    return sum(n for n, _ in runs) / max(1e-9, sum(n / max(rate, 1e-9) for n, rate in runs))


def memmap_rate(pack_dir, n_images, shuffle, device="cpu", min_seconds=3.0):
    """The same number of 224x224x3 u8 samples as one .npy memmap, served in
    batches of 256 the PyTorch way into pinned memory and, for a CUDA
    device, onto the GPU (two pinned buffers in turn, so that one's upload
    overlaps the next batch's copy). In order: torch.from_numpy of the
    batch's slice of the memmap and one copy_ (torch copies large tensors
    with several threads). Shuffled: each sample copied from the memmap into
    the pinned batch's numpy view, one by one (the fastest of the ways
    tried: numpy fancy indexing, np.take and sorted indices were slower)."""
    path = os.path.join(pack_dir, "..", "samples.npy")
    if not os.path.exists(path):
        arr = np.lib.format.open_memmap(path, mode="w+", dtype=np.uint8,
                                        shape=(n_images, 224, 224, 3))
        rng = np.random.default_rng(0)
        for i in range(0, n_images, 1024):
            arr[i:i + 1024] = rng.integers(0, 255, arr[i:i + 1024].shape, dtype=np.uint8)
        arr.flush()
        del arr
    mm = np.load(path, mmap_mode="r")
    rng = np.random.default_rng(1)
    try:
        import torch
    except ImportError:
        torch = None
    cuda = torch is not None and device.startswith("cuda") and torch.cuda.is_available()
    if torch is not None:
        pinned = [torch.empty((256, 224, 224, 3), dtype=torch.uint8).pin_memory()
                  for _ in range(2)]
        views = [p.numpy() for p in pinned]
        gpu = torch.empty((256, 224, 224, 3), dtype=torch.uint8, device=device) if cuda else None
        events = [None, None]
        how = "torch.from_numpy + pinned copy" + (" + copy to the GPU" if cuda else "")
    else:
        views = [np.empty((256, 224, 224, 3), np.uint8)] * 2
        how = "numpy copy (torch not installed)"

    def batch(k, start, idx):
        if torch is not None and events[k] is not None:
            events[k].synchronize()  # that pinned buffer's last upload is done
        if idx is None:
            b = mm[start:start + 256]
            if torch is not None:
                pinned[k][: len(b)].copy_(torch.from_numpy(b))
            else:
                np.copyto(views[k][: len(b)], b)
            m = len(b)
        else:
            out = views[k]
            for j, i in enumerate(idx):
                out[j] = mm[i]
            m = len(idx)
        if cuda:
            gpu[:m].copy_(pinned[k][:m], non_blocking=True)
            events[k] = torch.cuda.Event()
            events[k].record()
        return m

    n, t, k = 0, time.perf_counter(), 0
    while time.perf_counter() - t < min_seconds:
        order = rng.permutation(n_images) if shuffle else None
        for i in range(0, n_images, 256):
            n += batch(k, i, order[i:i + 256] if shuffle else None)
            k ^= 1
    if cuda:
        torch.cuda.synchronize()
    return n / (time.perf_counter() - t), how + (", shuffled" if shuffle else ", in order")


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
    ap.add_argument("--samples", type=int, default=8000,
                    help="u8 pack size: the corpus listed as many times as it takes (epochs "
                         "of the corpus alone last a few ms at pack speed)")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--jpeg-size", type=int, default=256,
                    help="short side of the JPEG pack (256 = Resize(256) for a 224 centre crop)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ferry_pack_bench_")
    files = sorted(os.path.abspath(os.path.join(a.dir, f)) for f in os.listdir(a.dir)
                   if f.lower().endswith((".jpg", ".jpeg", ".png", ".webp")))
    reps = max(1, -(-a.samples // len(files)))
    listing = os.path.join(tmp, "list.txt")
    with open(listing, "w") as lf:
        lf.writelines(f + "\n" for _ in range(reps) for f in files)
    pack = os.path.join(tmp, "pack")
    t = time.perf_counter()
    subprocess.run([a.ferry, "pack", listing, "-o", pack, "--size", "224", "--quiet"],
                   check=True, capture_output=True)
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
    for f in os.listdir(pack):  # page cache warm for every reader alike
        open(os.path.join(pack, f), "rb").read()
    packed = ferry_rate(a.ferry, pack, ["--no-shuffle"] + dev, a.epochs)
    packed_sh = ferry_rate(a.ferry, pack, dev, a.epochs)
    jpacked = ferry_rate(a.ferry, jpack, ["--no-shuffle", "--crop", "center"] + dev)
    jrandom = ferry_rate(a.ferry, jpack, ["--no-shuffle", "--crop", "random"] + dev)
    decoded = ferry_rate(a.ferry, listing, ["--no-shuffle", "--crop", "center"] + dev, 3)
    tr, tar_how = tar_rate(tars, nj)
    mm, how = memmap_rate(pack, n, False, a.device)
    mm_sh, how_sh = memmap_rate(pack, n, True, a.device)
    src_b = sum(os.path.getsize(f) for f in files)
    print(f"{n} samples (the corpus x {reps}); packing took {pack_s:.1f} s (u8), {jpack_s:.1f} s "
          f"(jpeg pack of the {nj} corpus files, short side {a.jpeg_size}); {os.cpu_count()} cores; "
          f"device {a.device}; ferry: mean of epochs 2..N")
    print("| pipeline | images/s | GB/s | ferry pack vs it | bytes on disk |\n"
          "|---|---:|---:|---:|---:|")
    mb = lambda b: f"{b / 1e6:.1f} MB"
    gb = lambda r: f"{r * 150528 / 1e9:.1f}"
    print(f"| ferry load PACK (u8 224x224), in order | {packed:.0f} | {gb(packed)} | 1.00x | "
          f"{mb(dir_bytes(pack))} |")
    print(f"| ferry load PACK, shuffled | {packed_sh:.0f} | {gb(packed_sh)} | "
          f"{packed / packed_sh:.2f}x | |")
    print(f"| ferry load JPEG PACK (--store jpeg, centre crop) | {jpacked:.0f} | | "
          f"{packed / jpacked:.1f}x | {mb(dir_bytes(jpack))} |")
    print(f"| ferry load JPEG PACK, --crop random | {jrandom:.0f} | | {packed / jrandom:.1f}x | "
          f"{mb(dir_bytes(jpack))} |")
    print(f"| ferry load JPEGs (decode path, centre crop) | {decoded:.0f} | | "
          f"**{packed / decoded:.1f}x** | {mb(src_b * reps)} |")
    print(f"| WebDataset-style tar shards of the same JPEGs, {tar_how}, "
          f"{os.cpu_count()} processes | {tr:.0f} | | {packed / tr:.1f}x | "
          f"{mb(sum(os.path.getsize(t) for t in tars))} |")
    print(f"| memmap .npy, {how} | {mm:.0f} | {gb(mm)} | **{packed / mm:.2f}x** | "
          f"{mb(n * 150528)} |")
    print(f"| memmap .npy, {how_sh} | {mm_sh:.0f} | {gb(mm_sh)} | "
          f"**{packed_sh / mm_sh:.2f}x** (shuffled vs shuffled) | |")
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
