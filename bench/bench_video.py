#!/usr/bin/env python3
"""Video frames -> 960x960 batches: ferry on the GPU (NVDEC) against OpenCV
(cv2.VideoCapture, FFmpeg on the CPU, + cv2.resize) in N processes and
NVIDIA's PyNvVideoCodec (raw NVDEC decode into GPU memory, no resize) in N
processes, side by side in one run on the same files.

    python3 bench/bench_video.py --ferry build/ferry FILE.mp4 [FILE...] \
        [--device cuda:0] [--jobs 4,8] [--cv-procs 16] [--repeat 2]

ferry: `ferry video FILES --device cuda:0 --size 960 --dtype f16 --normalize
--jobs J` (f16 normalised CHW batches of 16 in GPU memory, J files decoded at
once); the files are given `--repeat` times so that every job has work.
OpenCV: each of P processes opens files from the same list in turn, reads every
frame (BGR u8) and resizes it to 960x960 (INTER_LINEAR); frames/s is all
frames over the wall time of the pool. PyNvVideoCodec (when importable;
`--nvc-procs 8,16`): each process demuxes and decodes whole files
(CreateDemuxer + CreateDecoder, frames left in device memory, nothing
converted or resized), timed from when every process has started and imported
it until the last file is decoded. Prints one table; the
machine and date go with the figures into bench/RESULTS.md.
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


def nvc_worker(path):
    import PyNvVideoCodec as nvc

    demuxer = nvc.CreateDemuxer(filename=path)
    decoder = nvc.CreateDecoder(gpuid=0, codec=demuxer.GetNvCodecId(), cudacontext=0,
                                cudastream=0, usedevicememory=True)
    n = 0
    for packet in demuxer:  # the demuxer's last packet is empty: the decoder flushes
        for _ in decoder.Decode(packet):
            n += 1
    return n


def nvc_process(todo, done, barrier):
    import PyNvVideoCodec  # noqa: F401  (imported before the clock starts)

    barrier.wait()
    n = 0
    while True:
        path = todo.get()
        if path is None:
            break
        n += nvc_worker(path)
    done.put(n)


def run_nvc(files, procs):
    """procs processes, started and PyNvVideoCodec imported before the clock
    starts (as ferry's own clock starts after its process has): from then,
    every file opened, demuxed and decoded, as ferry's time counts it."""
    ctx = mp.get_context("spawn")
    todo, done, barrier = ctx.Queue(), ctx.Queue(), ctx.Barrier(procs + 1)
    for f in files:
        todo.put(f)
    for _ in range(procs):
        todo.put(None)
    ps = [ctx.Process(target=nvc_process, args=(todo, done, barrier)) for _ in range(procs)]
    for p in ps:
        p.start()
    barrier.wait()
    t0 = time.perf_counter()
    frames = sum(done.get() for _ in ps)
    dt = time.perf_counter() - t0
    for p in ps:
        p.join()
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
    ap.add_argument("--nvc-procs", default="8,16",
                    help="comma list: PyNvVideoCodec process counts (when importable)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run every contender this many times, interleaved; each row is its "
                    "median round")
    a = ap.parse_args()
    files = [f for _ in range(a.repeat) for f in a.files]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, "
          f"{os.cpu_count()} CPUs, {len(files)} files ({len(a.files)} distinct)")
    runs = {}  # name -> [(frames, seconds) of each round]
    run_ferry(a.ferry, files[:4], a.device, 4, a.size, a.batch)  # warm-up
    nvc_ok = False
    try:
        import PyNvVideoCodec  # noqa: F401
        nvc_ok = True
    except ImportError as e:
        print(f"SKIPPED PyNvVideoCodec: {e}")
    cv_ok = False
    if not a.skip_opencv:
        try:
            import cv2  # noqa: F401
            cv_ok = True
        except ImportError as e:
            print(f"SKIPPED OpenCV: {e}")
    for _ in range(max(1, a.rounds)):
        for c in [int(x) for x in a.cpu_jobs.split(",")]:
            for j in [int(x) for x in a.jobs.split(",")]:
                extra = f" + {c} CPU decoders" if c else ""
                name = f"ferry {a.device} NVDEC, {j} files at once{extra}, f16 {a.size}"
                runs.setdefault(name, []).append(
                    run_ferry(a.ferry, files, a.device, j, a.size, a.batch, c))
        for p in [int(x) for x in a.nvc_procs.split(",")] if nvc_ok else []:
            name = f"PyNvVideoCodec raw decode (NV12 on the GPU, no resize), {p} processes"
            runs.setdefault(name, []).append(run_nvc(files, p))
        if cv_ok:
            name = f"OpenCV VideoCapture + resize, {a.cv_procs} processes"
            runs.setdefault(name, []).append(run_opencv(files, a.cv_procs, a.size))
    rows = []
    for name, rs in runs.items():
        rs = sorted(rs, key=lambda r: r[0] / r[1])
        rows.append((name, *rs[len(rs) // 2]))
        if len(rs) > 1:
            print(f"{name}: rounds {', '.join(f'{n / dt:.0f}' for n, dt in rs)} frames/s")
    base = rows[-1][1] / rows[-1][2] if len(rows) > 1 else None
    print(f"{'pipeline':72s} {'frames':>7s} {'s':>7s} {'frames/s':>9s} {'vs last':>8s}")
    for name, n, dt in rows:
        fps = n / dt
        ratio = f"{fps / base:.2f}x" if base else ""
        print(f"{name:72s} {n:7d} {dt:7.2f} {fps:9.1f} {ratio:>8s}")
    best = {}
    for name, n, dt in rows:
        who = name.split(" ")[0]
        best[who] = max(best.get(who, 0), n / dt)
    if "ferry" in best and "PyNvVideoCodec" in best:
        print(f"ferry's best / PyNvVideoCodec's best: {best['ferry'] / best['PyNvVideoCodec']:.2f}x")


if __name__ == "__main__":
    main()
