#!/usr/bin/env python3
"""A whole JPEG set into one GPU tensor (issue 20): ferry.load_tensor against
the ways people do it today, on the same machine and files, same statistic
(wall seconds for the set, images/s):

  pil          the loop of the project's first seed: decode, resize, centre crop,
               normalise and .to(device) image by image into a preallocated tensor
               (Pillow, one process)
  tv-gpu       torchvision.io.decode_jpeg on the GPU in batches of 256 (nvJPEG),
               then resize + centre crop + normalise per image on the GPU
  ferry        ferry.load_tensor(..., device="cuda", dtype=float16)

Then ferry alone on the whole list (the set listed --repeat times: a list file
of N x repeat entries; the files repeat, so after the first pass they are in
the page cache, as the distinct files of a real set on a local NVMe would be
only partly). Also: pin_memory (is a CPU batch pinned; host-to-device copy
speed of pinned and unpinned batches), and the set as WebDataset shards
against the folder (ferry load, CPU and GPU, best of two epochs).

  python3 bench/bench_load_tensor.py DIR [--repeat 8] [--peer-subset 2000]

Claims it proves (bench/CLAIMS.md): C68, C69, C70.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tarfile
import time

import numpy as np

import ferry

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def listing(root):
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    out = []
    for k, c in enumerate(classes):
        for f in sorted(glob.glob(os.path.join(root, c, "*.jpg"))):
            out.append((f, k))
    return out


def bench_pil(files, size, dev):
    import torch
    from PIL import Image
    out = torch.empty((len(files), 3, size, size), dtype=torch.float16, device=dev)
    mean = torch.tensor(MEAN, device=dev).view(3, 1, 1)
    std = torch.tensor(STD, device=dev).view(3, 1, 1)
    t0 = time.perf_counter()
    for i, (f, _) in enumerate(files):
        im = Image.open(f).convert("RGB")
        w, h = im.size
        s = 256 / min(w, h)
        im = im.resize((max(size, round(w * s)), max(size, round(h * s))), Image.BILINEAR)
        w, h = im.size
        x0, y0 = (w - size) // 2, (h - size) // 2
        im = im.crop((x0, y0, x0 + size, y0 + size))
        t = torch.from_numpy(np.asarray(im)).to(dev, non_blocking=False)
        out[i] = ((t.permute(2, 0, 1).float() / 255 - mean) / std).half()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def bench_tv_gpu(files, size, dev):
    import torch
    import torchvision
    from torchvision.io import decode_jpeg, read_file
    from torchvision.transforms.v2 import functional as F
    out = torch.empty((len(files), 3, size, size), dtype=torch.float16, device=dev)
    mean = torch.tensor(MEAN, device=dev).view(3, 1, 1)
    std = torch.tensor(STD, device=dev).view(3, 1, 1)
    t0 = time.perf_counter()
    for a in range(0, len(files), 256):
        datas = [read_file(f) for f, _ in files[a:a + 256]]
        ims = decode_jpeg(datas, device=dev)
        for j, im in enumerate(ims):
            im = F.center_crop(F.resize(im, 256, antialias=True), [size, size])
            out[a + j] = ((im.float() / 255 - mean) / std).half()
    torch.cuda.synchronize()
    del torchvision
    return time.perf_counter() - t0


def bench_ferry(files, size, dev, progress=False):
    import torch
    t0 = time.perf_counter()
    x, y = ferry.load_tensor([f for f, _ in files], size, labels=[k for _, k in files],
                             device=dev, dtype="float16", mean=MEAN, std=STD,
                             progress=progress)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    n = x.shape[0]
    del x, y
    torch.cuda.empty_cache()
    return dt, n


def pin_check(root):
    import torch
    res = {}
    for pin in (False, True):
        with ferry.Loader(root, batch_size=256, size=224, dtype="float16", pin_memory=pin,
                          output="torch", shuffle=False) as L:
            it = iter(L)
            x, _ = next(it)
            res[f"pinned={pin}"] = {"loader.pinned": L.pinned, "x.is_pinned()": x.is_pinned()}
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(20):
                g = x.to("cuda", non_blocking=True)
            torch.cuda.synchronize()
            gbs = 20 * x.numel() * 2 / (time.perf_counter() - t0) / 1e9
            res[f"pinned={pin}"]["h2d_GB_s"] = round(gbs, 1)
            del g, x
    return res


def make_shards(files, dst, per=1000):
    os.makedirs(dst, exist_ok=True)
    n = 0
    for s in range(0, len(files), per):
        with tarfile.open(os.path.join(dst, f"train-{s // per:06d}.tar"), "w",
                          format=tarfile.GNU_FORMAT) as t:
            for i, (f, k) in enumerate(files[s:s + per], start=s):
                t.add(f, arcname=f"{i:08d}.jpg")
                data = str(k).encode()
                info = tarfile.TarInfo(f"{i:08d}.cls")
                info.size = len(data)
                import io
                t.addfile(info, io.BytesIO(data))
        n += 1
    return f"{dst}/train-{{000000..{n - 1:06d}}}.tar"


def ferry_load(binary, src, device, shuffle):
    """Median images/s of epochs 2..6 (the first holds the start-up)."""
    cmd = [binary, "load", src, "--size", "224", "--epochs", "6", "--json", "--quiet"]
    if device:
        cmd += ["--device", device]
    if not shuffle:
        cmd += ["--no-shuffle"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        return f"exit {r.returncode}: {r.stderr.strip()[-300:]}"
    j = json.loads(r.stdout)
    return float(np.median([e["images_per_s"] for e in j["epochs"][1:]]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--repeat", type=int, default=8)
    ap.add_argument("--peer-subset", type=int, default=20000)
    ap.add_argument("--pil-subset", type=int, default=2000)
    ap.add_argument("--ferry", default="ferry")
    ap.add_argument("--size", type=int, default=224)
    a = ap.parse_args()
    import torch
    dev = "cuda:0"
    files = listing(a.dir)
    print(f"set: {len(files)} JPEGs in {a.dir}; torch {torch.__version__}; "
          f"{torch.cuda.get_device_name(0)}")
    print("pin_memory:", json.dumps(pin_check(a.dir)))
    bench_ferry(files[:512], a.size, dev)  # CUDA context, engine warm-up: not timed
    # each peer against ferry on the same files (Pillow's loop on fewer: it is slow)
    for name, fn, count in (("pil", bench_pil, a.pil_subset),
                            ("tv-gpu", bench_tv_gpu, a.peer_subset)):
        sub = files[:count]
        try:
            dt = fn(sub, a.size, dev)
        except Exception as e:  # a peer that cannot run here is reported, not hidden
            print(f"{name}: failed: {type(e).__name__}: {e}")
            continue
        fdt, n = bench_ferry(sub, a.size, dev)
        print(f"{count} files (same files, same statistic: wall s for the set): "
              f"{name} {dt:.2f} s ({count / dt:.0f} images/s), ferry.load_tensor {fdt:.2f} s "
              f"({n / fdt:.0f} images/s): ferry {dt / fdt:.1f}x")
    whole = files * a.repeat
    for run in (1, 2):
        dt, n = bench_ferry(whole, a.size, dev, progress=False)
        print(f"ferry.load_tensor run {run}: {n} images ({len(files)} files x {a.repeat}) "
              f"-> float16 [N, 3, {a.size}, {a.size}] on {dev} "
              f"({n * 3 * a.size * a.size * 2 / 1e9:.1f} GB) in {dt:.2f} s: {n / dt:.0f} images/s")
    spec = make_shards(files, "/tmp/shards")
    for device in ("", "cuda"):
        for shuffle in (True, False):
            d = ferry_load(a.ferry, a.dir, device, shuffle)
            s = ferry_load(a.ferry, spec, device, shuffle)
            print(f"ferry load --device {device or 'cpu'} shuffle={shuffle} (median of epochs "
                  f"2-6): folder {d:.0f} images/s, shards {s:.0f} images/s"
                  + (f" (shards/folder {s / d:.2f})" if isinstance(d, float) and
                     isinstance(s, float) else ""))


if __name__ == "__main__":
    sys.exit(main())
