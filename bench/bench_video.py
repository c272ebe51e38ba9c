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
it until the last file is decoded; `--nvc-threads 8,16`: threads of one process
(NVIDIA's decode_perf.py mode). DALI (`--dali`, when nvidia.dali imports):
fn.readers.video on the GPU, sequences of 16 frames, resized to the same size,
f16 normalised CHW. Prints one table; the
machine and date go with the figures into bench/RESULTS.md.

Claims it proves (bench/CLAIMS.md): C37, C38, C41.
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


def nvc_worker(path, warm=False):
    """One file through PyNvVideoCodec: (frames, seconds of decoding less
    the session's initialisation, as NVIDIA's decode_perf.py counts it)."""
    import PyNvVideoCodec as nvc

    t0 = time.perf_counter()
    demuxer = nvc.CreateDemuxer(filename=path)
    kw = {"bWaitForSessionWarmUp": True} if warm else {}
    decoder = nvc.CreateDecoder(gpuid=0, codec=demuxer.GetNvCodecId(), cudacontext=0,
                                cudastream=0, usedevicememory=True, **kw)
    n = 0
    for packet in demuxer:  # the demuxer's last packet is empty: the decoder flushes
        for _ in decoder.Decode(packet):
            n += 1
    dt = time.perf_counter() - t0
    if warm:
        dt -= decoder.GetSessionInitTime() / 1000.0
    return n, dt


def nvc_process(todo, done, barrier):
    import PyNvVideoCodec  # noqa: F401  (imported before the clock starts)

    barrier.wait()
    n = 0
    while True:
        path = todo.get()
        if path is None:
            break
        n += nvc_worker(path)[0]
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


def run_nvc_threads(files, threads):
    """NVIDIA's own recommended way (samples/advanced/decode_perf.py, thread
    mode: one process, the CUDA context shared, decoding GIL-free): threads
    take files from one list, one decoder per file. Returns frames, wall
    seconds, and NVIDIA's statistic (the sum over threads of each thread's
    frames over its own decoding time less session start-up)."""
    import queue
    import threading

    import PyNvVideoCodec  # noqa: F401

    todo = queue.Queue()
    for f in files:
        todo.put(f)
    per = [[0, 0.0] for _ in range(threads)]

    def work(k):
        while True:
            try:
                path = todo.get_nowait()
            except queue.Empty:
                return
            n, dt = nvc_worker(path, warm=True)
            per[k][0] += n
            per[k][1] += dt

    ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dt = time.perf_counter() - t0
    nvidia = sum(n / s for n, s in per if s > 0)
    return sum(n for n, _ in per), dt, nvidia


def dali_process(files, size, seq, batch, out):
    """DALI's GPU video reader (fn.readers.video, NVDEC) -> resize -> f16
    normalised CHW, as ferry's batches: sequences of `seq` frames, `batch`
    sequences a step, every frame of every file once (step = seq, no
    shuffle). Puts (frames, seconds) on `out`; the pipeline build is timed
    apart (the clock starts at the first run, as ferry's starts with its
    process). Run in its own process: DALI keeps threads and GPU memory."""
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=batch, num_threads=4, device_id=0, prefetch_queue_depth=2)
    def pipe():
        v = fn.readers.video(device="gpu", filenames=files, sequence_length=seq, step=seq,
                             random_shuffle=False, pad_last_batch=False, name="r",
                             dtype=types.UINT8)
        v = fn.resize(v, resize_x=size, resize_y=size)
        return fn.crop_mirror_normalize(v, dtype=types.FLOAT16, output_layout="FCHW",
                                        mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                        std=[0.229 * 255, 0.224 * 255, 0.225 * 255])

    p = pipe()
    p.build()
    sequences = p.epoch_size("r")
    t0 = time.perf_counter()
    got = 0
    while got < sequences:
        (o,) = p.run()
        got += len(o)
    o.as_tensor()  # the last batch done on the GPU
    dt = time.perf_counter() - t0
    out.put((min(got, sequences) * seq, dt))


def run_dali(files, size, seq=16, batch=4):
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    p = ctx.Process(target=dali_process, args=(files, size, seq, batch, out))
    p.start()
    r = out.get()
    p.join()
    return r


SUMMARY = re.compile(r"(\d+) decoded, ([\d.]+) s: ([\d.]+) decoded frames/s")
STAGES = re.compile(r"^stages, seconds summed over files: .*$", re.M)


def run_ferry(binary, files, device, jobs, size, batch, cpu_jobs=0, stride=1):
    # -v: the stage line beside --quiet's summary (stdout); the library's debug
    # lines and FFmpeg's log go to stderr, which only a failure shows (its tail)
    cmd = [binary, "-v", "video", *files, "--device", device, "--size", str(size), "--dtype",
           "f16", "--normalize", "--batch", str(batch), "--jobs", str(jobs), "--quiet"]
    if stride > 1:
        cmd += ["--stride", str(stride)]
    if cpu_jobs:
        cmd += ["--cpu-jobs", str(cpu_jobs)]
    out = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    for line in STAGES.findall(out.stdout):  # where the files' time went
        print(f"  ferry --jobs {jobs}{f' --stride {stride}' if stride > 1 else ''}: {line}")
    m = SUMMARY.search(out.stdout)
    if out.returncode != 0 or not m:
        tail = "\n".join(out.stderr.splitlines()[-40:])
        sys.exit(f"ferry failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout}{tail}")
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
    ap.add_argument("--nvc-threads", default="",
                    help="comma list: PyNvVideoCodec thread counts in one process (NVIDIA's "
                    "decode_perf.py thread mode)")
    ap.add_argument("--stride", default="1",
                    help="comma list: ferry --stride values (1: every frame)")
    ap.add_argument("--dali", action="store_true",
                    help="add DALI's GPU video reader (fn.readers.video) when nvidia.dali imports")
    ap.add_argument("--dali-files", type=int, default=0,
                    help="DALI reads only the first N files of the list (its rate is frames/s "
                    "like every row; 0: all)")
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
    dali_ok = False
    if a.dali:
        try:
            import nvidia.dali  # noqa: F401
            dali_ok = True
        except ImportError as e:
            print(f"SKIPPED DALI: {e}")
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
                for sd in [int(x) for x in a.stride.split(",")]:
                    extra = f" + {c} CPU decoders" if c else ""
                    extra += f", --stride {sd} (frames actually decoded)" if sd > 1 else ""
                    name = f"ferry {a.device} NVDEC, {j} files at once{extra}, f16 {a.size}"
                    runs.setdefault(name, []).append(
                        run_ferry(a.ferry, files, a.device, j, a.size, a.batch, c, sd))
        for p in [int(x) for x in a.nvc_procs.split(",") if x] if nvc_ok else []:
            name = f"PyNvVideoCodec raw decode (NV12 on the GPU, no resize), {p} processes"
            runs.setdefault(name, []).append(run_nvc(files, p))
        for t in [int(x) for x in a.nvc_threads.split(",") if x] if nvc_ok else []:
            name = f"PyNvVideoCodec raw decode (NV12 on the GPU, no resize), {t} threads"
            n, dt, nv = run_nvc_threads(files, t)
            print(f"{name}: {n / dt:.0f} frames/s over the wall time; NVIDIA's statistic "
                  f"(sum of per-thread rates, start-up excluded): {nv:.0f}")
            runs.setdefault(name, []).append((n, dt))
        if dali_ok:
            name = f"DALI readers.video (NVDEC) + resize, f16 {a.size}, sequences of 16"
            runs.setdefault(name, []).append(run_dali(files[:a.dali_files or None], a.size))
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
    every = {n.split(", --stride")[0]: dt for n, _, dt in rows if ", --stride" not in n}
    for name, n, dt in rows:  # sampling: the same files' wall time, every frame / sampled
        base_name = name.split(", --stride")[0] + name.split("decoded)")[-1]
        if ", --stride" in name and base_name in every:
            print(f"{name}: {every[base_name] / dt:.2f}x faster than keeping every frame "
                  f"({every[base_name]:.2f} s / {dt:.2f} s)")
    best = {}
    for name, n, dt in rows:
        if ", --stride" in name:
            continue
        who = name.split(" ")[0]
        best[who] = max(best.get(who, 0), n / dt)
    if "ferry" in best and "PyNvVideoCodec" in best:
        print(f"ferry's best / PyNvVideoCodec's best: {best['ferry'] / best['PyNvVideoCodec']:.2f}x")
    if "ferry" in best and "DALI" in best:
        print(f"ferry's best / DALI's: {best['ferry'] / best['DALI']:.2f}x")


if __name__ == "__main__":
    main()
