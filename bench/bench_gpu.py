#!/usr/bin/env python3
"""GPU benchmark, side by side in one run: JPEG files -> normalized f16
224x224 NCHW batches of 256 in GPU memory.

  ferry        `ferry load DIR --device cuda:0 ...` (JPEG engine + all CPU cores)
  torchvision  read_file + decode_jpeg(device="cuda") batched + resize + normalize
  DataLoader   torch DataLoader, 16 workers, Pillow, pinned memory, .cuda()
  DALI         NVIDIA DALI 2.x, the same val (resize) and train (RandomResizedCrop +
               flip) pipelines (examples/dali_pipes.py), hw_decoder_load 0.65 and 0.9,
               when nvidia-dali can be imported (--skip-peers leaves it out)

Run on the GPU machine: python3 bench/bench_gpu.py --ferry build-gpu/ferry --dir DIR

Claims it proves (bench/CLAIMS.md): C13, C14, C17.
"""
import argparse
import os
import re
import subprocess
import sys
import time

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def files_of(d):
    out = []
    for root, _, names in os.walk(d):
        out += [os.path.join(root, n) for n in names if n.lower().endswith((".jpg", ".jpeg"))]
    return sorted(out)


def run_ferry(ferry, d, extra, epochs=4):
    # Epoch 1 warms the page cache and nvJPEG's decoding states; the figure
    # is the best of the next three, as torchvision's is the best of three
    # epochs after one of warm-up.
    cmd = [ferry, "load", d, "--device", "cuda:0", "--crop", "none", "--size", "224",
           "--dtype", "f16", "--normalize", "--layout", "chw", "--batch", "256",
           "--epochs", str(epochs), "--quiet", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    print("$", " ".join(cmd), "\n" + r.stdout + r.stderr, flush=True)
    rates = [float(x) for x in re.findall(r"([0-9.]+) images/s", r.stdout)]
    waits = [float(x) for x in re.findall(r"waited on ferry ([0-9.]+)%", r.stdout)]
    return (max(rates[1:] or rates) if rates else 0.0), (min(waits[1:] or waits) if waits else None)


def run_torchvision(files, batches=3):
    import torch
    import torchvision
    from torchvision.io import decode_jpeg, read_file
    from torchvision.transforms.v2 import functional as F
    mean = torch.tensor(MEAN, device="cuda").view(1, 3, 1, 1)
    std = torch.tensor(STD, device="cuda").view(1, 3, 1, 1)

    def epoch():
        n = 0
        for i in range(0, len(files) - 255, 256):
            datas = [read_file(f) for f in files[i:i + 256]]
            imgs = decode_jpeg(datas, device="cuda")
            x = torch.stack([F.resize(im, [224, 224], antialias=True) for im in imgs])
            x = ((x.float() / 255 - mean) / std).half()
            n += x.shape[0]
        torch.cuda.synchronize()
        return n

    epoch()  # warm-up (nvJPEG handles, allocator)
    best = 0
    for _ in range(batches):
        t = time.perf_counter()
        n = epoch()
        best = max(best, n / (time.perf_counter() - t))
    print(f"torchvision {torchvision.__version__} decode_jpeg(cuda) batched: {best:.0f} images/s",
          flush=True)
    return best


def run_dali(d, train, hw_load, epochs=4, decoder="mixed"):
    """DALI's best epoch of 2..epochs (the first warms up), as for ferry."""
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "examples"))
    from dali_pipes import make_iterator
    it, _ = make_iterator(d, 256, 224, train, hw_decoder_load=hw_load, decoder=decoder)
    best = 0
    for ep in range(epochs):
        t, n = time.perf_counter(), 0
        for out in it:
            n += out[0]["images"].shape[0]
        torch.cuda.synchronize()
        if ep:
            best = max(best, n / (time.perf_counter() - t))
    what = "train (random crop + flip)" if train else "val (resize)"
    how = f"hw_decoder_load {hw_load}" if decoder == "mixed" else "CPU decoding"
    print(f"DALI {what}, {how}: {best:.0f} images/s", flush=True)
    return best


def run_dataloader(d, workers=16):
    import torch
    import torchvision
    from torchvision import transforms as T
    tf = T.Compose([T.Resize((224, 224)), T.ToTensor(), T.Normalize(MEAN, STD)])
    ds = torchvision.datasets.ImageFolder(d, transform=tf)
    dl = torch.utils.data.DataLoader(ds, batch_size=256, num_workers=workers, pin_memory=True,
                                     persistent_workers=True, drop_last=True)
    best = 0
    for ep in range(3):
        t, n = time.perf_counter(), 0
        for x, y in dl:
            x = x.cuda(non_blocking=True).half()
            n += x.shape[0]
        torch.cuda.synchronize()
        if ep:
            best = max(best, n / (time.perf_counter() - t))
    print(f"DataLoader ({workers} workers, Pillow, pinned): {best:.0f} images/s", flush=True)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferry", default="build-gpu/ferry")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--skip-peers", action="store_true")
    ap.add_argument("--peers", default="torchvision,dataloader,dali",
                    help="comma-separated peers to run beside ferry (default all three)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run ferry and DALI this many times, interleaved, and quote each "
                    "one's median round (default 1)")
    a = ap.parse_args()
    files = files_of(a.dir)
    print(f"{len(files)} JPEGs in {a.dir}; {os.cpu_count()} cores", flush=True)
    runs = {}  # name -> the figure of each round

    def measure(name, fn):
        try:
            runs.setdefault(name, []).append(fn())
        except Exception as e:  # a peer's failure is reported, not fatal
            print(f"{name}: FAILED: {e!r}", flush=True)

    train = ["--crop", "random", "--flip"]  # the last --crop wins over run_ferry's "none"
    peers = set() if a.skip_peers else set(a.peers.split(","))
    dali = "dali" in peers
    if dali:
        try:
            import nvidia.dali  # noqa: F401
        except ImportError:
            print("DALI: not installed here (pip install nvidia-dali-cuda130): left out",
                  flush=True)
            dali = False
    for rnd in range(max(1, a.rounds)):
        if a.rounds > 1:
            print(f"--- round {rnd + 1} of {a.rounds}", flush=True)
        measure("ferry GPU (engine + CPU workers)", lambda: run_ferry(a.ferry, a.dir, [])[0])
        measure("ferry GPU (CPU decode, GPU resize)",
                lambda: run_ferry(a.ferry, a.dir, ["--no-hw-decode"])[0])
        measure("ferry GPU, train: random crop + flip",
                lambda: run_ferry(a.ferry, a.dir, train)[0])
        for what, is_train in (("val", False), ("train", True)):
            for load, decoder in ((0.65, "mixed"), (0.9, "mixed"), (0, "cpu")):
                how = f"hw_decoder_load {load}" if decoder == "mixed" else "CPU decoding"
                if dali:
                    measure(f"DALI {what}, {how}",
                            lambda: run_dali(a.dir, is_train, load, decoder=decoder))
    res = {k: sorted(v)[len(v) // 2] for k, v in runs.items()}
    if a.rounds > 1:
        print(f"\nmedian of {a.rounds} rounds (each round: best of epochs 2-4):")
        for k, v in runs.items():
            print(f"  {k}: {res[k]:.0f} (rounds: {', '.join(f'{x:.0f}' for x in v)})")
    _, wait = run_ferry(a.ferry, a.dir, ["--consume-ms", "2"])
    _, wait20 = run_ferry(a.ferry, a.dir, ["--consume-ms", "20"])
    _, wait40 = run_ferry(a.ferry, a.dir, ["--consume-ms", "40"])
    if "torchvision" in peers:
        res["torchvision decode_jpeg(cuda) + resize"] = run_torchvision(files)
    if "dataloader" in peers:
        res["torch DataLoader 16 workers"] = run_dataloader(a.dir)
    ours = res["ferry GPU (engine + CPU workers)"]
    ours_train = res["ferry GPU, train: random crop + flip"]
    print("\n| pipeline | images/s | ferry (same pipeline) vs it |\n|---|---:|---:|")
    for k, v in res.items():
        ref = ours_train if "train" in k else ours
        print(f"| {k} | {v:.0f} | {ref / v if v else 0:.2f}x |")
    for what, ref in (("val", ours), ("train", ours_train)):
        dali = [v for k, v in res.items() if k.startswith(f"DALI {what}")]
        if dali:
            print(f"ferry / DALI's best {what} configuration: {ref / max(dali):.2f}x")
    print(f"\nconsumer with 2 ms of GPU work per batch waited on ferry {wait}% of the time")
    print(f"consumer with 20 ms of GPU work per batch waited on ferry {wait20}% of the time")
    print(f"consumer with 40 ms of GPU work per batch waited on ferry {wait40}% of the time")
    print("(after the first batch of an epoch; see the 'first batch after' lines above)")


if __name__ == "__main__":
    sys.exit(main())
