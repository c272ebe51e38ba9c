#!/usr/bin/env python3
"""CPU benchmark, side by side in one run: files -> RGB -> 224x224 u8.

  ferry      `ferry load DIR --crop none --size 224 --dtype u8` (1 worker, then all cores):
             the default (fast decode: box chroma upsampling where the image is then
             downscaled, 14-bit resampling), --exact-decode (Pillow's decoder settings and
             22-bit resampling on the DCT-scaled image) and --no-dct-scale (full decode, the
             output equals Pillow's decode + resize)
  Pillow     Image.open(f).convert("RGB").resize((224, 224), Image.BILINEAR)
  OpenCV     cv2.imdecode(bytes) -> cvtColor(BGR2RGB) -> cv2.resize(224x224, INTER_LINEAR)

Every contender reads each file from the page cache (warmed first) and
decodes it completely. Every figure is images over seconds of steady work
(ferry: epochs 2..N; Pillow and OpenCV: a loop of at least --min-seconds),
and the contenders run in interleaved rounds (--rounds): the table gives
each one's median, so that a machine whose speed drifts (a shared VM) moves
every contender alike. ferry's epochs list the corpus K times (one worker:
at least --min-seconds of work an epoch; all cores: at least 400 images per
worker), so that epoch start and tail do not weigh. Prints a table and,
with --record, appends it to bench/RESULTS.md with machine and date (then move
its figures into their subject's section there and their rows in bench/CLAIMS.md).

Claims it proves (bench/CLAIMS.md): C1, C2, C3.
"""
import argparse
import datetime
import os
import pathlib
import platform
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def files_of(d):
    exts = {".jpg", ".jpeg", ".png", ".webp"}
    return sorted(p for p in pathlib.Path(d).rglob("*") if p.suffix.lower() in exts)


def timed_loop(fn, files, min_seconds):
    n, t0 = 0, time.perf_counter()
    while True:
        for f in files:
            fn(f)
        n += len(files)
        el = time.perf_counter() - t0
        if el >= min_seconds:
            return n / el


def bench_pillow(files, min_seconds):
    from PIL import Image

    def one(f):
        with open(f, "rb") as fh:
            import io
            im = Image.open(io.BytesIO(fh.read()))
            im.convert("RGB").resize((224, 224), Image.BILINEAR)

    return timed_loop(one, files, min_seconds)


def bench_opencv(files, min_seconds):
    try:
        import cv2
        import numpy as np
    except ImportError:
        return None
    cv2.setNumThreads(1)

    def one(f):
        with open(f, "rb") as fh:
            a = cv2.imdecode(np.frombuffer(fh.read(), np.uint8), cv2.IMREAD_COLOR)
        if a is not None:
            cv2.resize(cv2.cvtColor(a, cv2.COLOR_BGR2RGB), (224, 224),
                       interpolation=cv2.INTER_LINEAR)

    return timed_loop(one, files, min_seconds)


def bench_ferry(ferry, src, workers, epochs, extra=()):
    """images/s over epochs 2..N (their images over their time) and the
    peak RSS after each epoch."""
    cmd = [ferry, "load", str(src), "--crop", "none", "--size", "224", "--dtype", "u8",
           "--layout", "hwc", "--batch", "64", "--workers", str(workers), "--no-shuffle",
           "--epochs", str(epochs), "--quiet", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 3):
        sys.exit(f"ferry failed: {r.stderr}")
    runs = [(int(n), float(rate)) for n, rate in
            re.findall(r"epoch \d+: (\d+) images, .* ([0-9.]+) images/s", r.stdout)]
    rss = [float(m) for m in re.findall(r"peak RSS ([0-9.]+) MiB", r.stdout)]
    runs = runs[1:] or runs  # the first epoch warms up
    return sum(n for n, _ in runs) / sum(n / rate for n, rate in runs), rss


def list_file(files, reps):
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as lf:
        for _ in range(reps):
            for f in files:
                lf.write(f"{f.resolve()}\n")
    return lf.name


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferry", default=str(ROOT / "build" / "ferry"))
    ap.add_argument("--dir", default=str(ROOT.parent / "shared" / "corpus" / "photos"))
    ap.add_argument("--min-seconds", type=float, default=4.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--record", action="store_true", help="append to bench/RESULTS.md")
    a = ap.parse_args()
    files = files_of(a.dir)
    if not files:
        sys.exit(f"no images in {a.dir}")
    for f in files:  # warm the page cache
        f.read_bytes()
    cores = os.cpu_count()
    # One worker: an epoch of about --min-seconds at ~1,000 images/s.
    one_list = list_file(files, max(1, round(a.min_seconds * 1000 / len(files))))
    # All cores: >= 400 images per worker an epoch (an epoch of the corpus
    # alone is ~26 images per worker on 16 cores: its start and tail would
    # be most of it); the corpus-sized epoch is reported beside it.
    reps = max(1, -(-400 * cores // len(files)))
    all_list = list_file(files, reps)
    runs, rss = {}, []
    allc = f"ferry, {cores} cores"
    try:
        for r in range(a.rounds):
            runs.setdefault("ferry, 1 core", []).append(bench_ferry(a.ferry, one_list, 1, 3)[0])
            cv = bench_opencv(files, a.min_seconds)
            if cv:
                runs.setdefault("OpenCV, 1 core", []).append(cv)
            runs.setdefault("Pillow, 1 core", []).append(bench_pillow(files, a.min_seconds))
            rate, rss_r = bench_ferry(a.ferry, all_list, cores, 5)
            runs.setdefault(allc, []).append(rate)
            rss = rss or rss_r
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.0f}" for k, v in runs.items()),
                  file=sys.stderr, flush=True)
        runs["ferry, 1 core, --exact-decode"] = [bench_ferry(a.ferry, one_list, 1, 3,
                                                             ["--exact-decode"])[0]]
        runs["ferry, 1 core, no DCT scaling"] = [bench_ferry(a.ferry, one_list, 1, 3,
                                                             ["--no-dct-scale"])[0]]
        runs[f"{allc}, corpus-sized epochs"] = [bench_ferry(a.ferry, a.dir, cores, 5)[0]]
    finally:
        os.unlink(one_list)
        os.unlink(all_list)
    med = {k: sorted(v)[len(v) // 2] for k, v in runs.items()}
    one = med["ferry, 1 core"]
    lines = [f"### CPU decode + RGB + resize 224x224 u8 — {datetime.date.today()}",
             "",
             f"Machine: {cpu_name()}, {cores} cores; {len(files)} files from {a.dir}; "
             f"median of {a.rounds} interleaved rounds (single runs: one figure)",
             "",
             "| pipeline | images/s (median) | rounds | ferry 1-core vs it |",
             "|---|---:|---|---:|"]
    for k, v in med.items():
        lines.append(f"| {k} | {v:.0f} | {', '.join(f'{x:.0f}' for x in runs[k])} | "
                     f"{one / v:.2f}x |")
    lines += ["",
              f"Scaling: {cores} cores = {med[allc] / one:.2f} x one core "
              f"({med[allc] / one / cores:.2f} of linear; epochs of {reps * len(files)} images: "
              f"the corpus listed {reps} times).",
              f"Peak RSS per epoch ({cores} cores): " + ", ".join(f"{x:.1f}" for x in rss) +
              f" MiB (epoch 5 / epoch 1 = {rss[-1] / rss[0]:.3f})" if rss else "", ""]
    text = "\n".join(lines)
    print(text)
    if a.record:
        with open(ROOT / "bench" / "RESULTS.md", "a") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
