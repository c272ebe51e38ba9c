#!/usr/bin/env python3
"""Video frames -> 960x960 batches: ferry on the GPU (NVDEC) against OpenCV
(cv2.VideoCapture, FFmpeg on the CPU, + cv2.resize) in N processes, side by
side in one run on the same files.

    python3 bench/bench_video.py --ferry build/ferry FILE.mp4 [FILE...] \
        [--device cuda:0] [--jobs 4,8] [--cv-procs 16] [--repeat 2]

ferry: `ferry video FILES --device cuda:0 --size 960 --dtype f16 --normalize
--jobs J` (f16 normalised CHW batches of 16 in GPU memory, J files decoded at
once); the files are given `--repeat` times so that every job has work.
OpenCV: each of P processes opens files from the same list in turn, reads every
frame (BGR u8) and resizes it to 960x960 (INTER_LINEAR); frames/s is all
frames over the wall time of the pool. Prints one table; the machine and date
go with the figures into bench/RESULTS.md.
"""
import argparse
import multiprocessing as mp
import os
import platform
import re
import subprocess
import sys
import time


def cv_worker(args):
    path, size = args
    import cv2

    cv2.setNumThreads(1)
    cap = cv2.VideoCapture(path)
    n = 0
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        cv2.resize(frame, (size, size), interpolation=cv2.INTER_LINEAR)
        n += 1
    cap.release()
    return n


def run_opencv(files, procs, size):
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(procs) as pool:
        frames = sum(pool.map(cv_worker, [(f, size) for f in files], chunksize=1))
    dt = time.perf_counter() - t0
    return frames, dt


SUMMARY = re.compile(r"(\d+) decoded, ([\d.]+) s: ([\d.]+) decoded frames/s")


def run_ferry(binary, files, device, jobs, size, batch, cpu_jobs=0):
    cmd = [binary, "video", *files, "--device", device, "--size", str(size), "--dtype", "f16",
           "--normalize", "--batch", str(batch), "--jobs", str(jobs), "--quiet"]
    if cpu_jobs:
        cmd += ["--cpu-jobs", str(cpu_jobs)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    m = SUMMARY.search(out.stdout)
    if out.returncode != 0 or not m:
        sys.exit(f"ferry failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout}{out.stderr}")
    return int(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--ferry", default="build/ferry")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--jobs", default="4,8")
    ap.add_argument("--cpu-jobs", default="0",
                    help="comma list: CPU decoders beside the engines (ferry --cpu-jobs)")
    ap.add_argument("--cv-procs", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=2, help="each file this many times")
    ap.add_argument("--size", type=int, default=960)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--skip-opencv", action="store_true")
    a = ap.parse_args()
    files = [f for _ in range(a.repeat) for f in a.files]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, "
          f"{os.cpu_count()} CPUs, {len(files)} files ({len(a.files)} distinct)")
    rows = []
    run_ferry(a.ferry, files[:4], a.device, 4, a.size, a.batch)  # warm-up
    for c in [int(x) for x in a.cpu_jobs.split(",")]:
        for j in [int(x) for x in a.jobs.split(",")]:
            n, dt = run_ferry(a.ferry, files, a.device, j, a.size, a.batch, c)
            extra = f" + {c} CPU decoders" if c else ""
            rows.append((f"ferry {a.device} NVDEC, {j} files at once{extra}, f16 {a.size}", n, dt))
    if not a.skip_opencv:
        try:
            import cv2  # noqa: F401
        except ImportError as e:
            print(f"SKIPPED OpenCV: {e}")
        else:
            n, dt = run_opencv(files, a.cv_procs, a.size)
            rows.append((f"OpenCV VideoCapture + resize, {a.cv_procs} processes", n, dt))
    base = rows[-1][1] / rows[-1][2] if not a.skip_opencv and len(rows) > 1 else None
    print(f"{'pipeline':64s} {'frames':>7s} {'s':>7s} {'frames/s':>9s} {'vs last':>8s}")
    for name, n, dt in rows:
        fps = n / dt
        ratio = f"{fps / base:.2f}x" if base else ""
        print(f"{name:64s} {n:7d} {dt:7.2f} {fps:9.1f} {ratio:>8s}")


if __name__ == "__main__":
    main()
