#!/usr/bin/env python3
"""Soak test of the GPU loader: many short runs of `ferry load --device cuda:0`
and of the Python loader with varied options, each under an outside watchdog.

Per run (drawn from --seed): crop none/center/random, flip, batch 32-512,
prefetch ferry's choice or 1-4, epochs 1-5, --consume-ms 0-40 (CLI), a torch consumer (Python;
one run in three ends without closing its loader, holding its last batch),
the JPEG engine on or off, the memory cache,
and a second GPU process busy
beside it (a torch matmul loop, or another ferry load on the JPEG engine) or
not. The loader's own stall watchdog is set to --stall-timeout; the outside
watchdog (--timeout) catches anything it misses. Every epoch's image and
batch counts are checked against the set's size.

On a stall or hang the run's threads are dumped: /proc/PID/task/*/wchan and
syscall, and cuda-gdb's `thread apply all bt` when cuda-gdb is there (the GPU
machine has it, not gdb). One JSON line per run goes to --log; the summary
(runs, hangs, stalls, wrong counts, failures) is printed last.

  python3 bench/soak_gpu.py --ferry .device/ferry --dir /tmp/set --runs 300 \\
      --max-seconds 500 --log $OUT/soak.jsonl

Claims it proves (bench/CLAIMS.md): C34, C35.
"""
import argparse
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

PY_RUN = r"""
import json, sys, time
import ferry
a = json.loads(sys.argv[1])
torch = None
if a["torch_consumer"]:
    import torch
L = ferry.Loader(a["dir"], batch_size=a["batch"], size=224, device="cuda:0",
                 dtype="float16", normalize=True, crop=a["crop"], flip=a["flip"],
                 # the loop holds a batch while it asks for the next: a ring one longer than
                 # the CLI's (the rings these runs had before prefetch meant the same in both)
                 prefetch=a["prefetch"] + 1 if a["prefetch"] else None, hw_decode=a["hw"],
                 workers=None,
                 output="torch" if torch else "tensor",
                 cache=a["cache_bytes"] or None, stall_timeout=a["stall_timeout"])
out = []
for e in range(a["epochs"]):
    L.set_epoch(e)
    n = b = 0
    t0 = time.monotonic()
    for x, y in L:
        n += int(y.shape[0]) if hasattr(y, "shape") else len(y)
        b += 1
        if torch is not None:
            x.float().mean()  # a consumer kernel on torch's stream
    if torch is not None:
        torch.cuda.synchronize()
    out.append({"epoch": e, "images": n, "batches": b, "s": time.monotonic() - t0})
if a["close"]:
    L.close()  # the loop variable still holds the last batch: the threads stop, L is freed later
# else the script ends with the loader open (ferry stops it at exit)
print("RESULT " + json.dumps(out), flush=True)
"""

BUSY_TORCH = r"""
import time, torch
x = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
t0 = time.time()
while time.time() - t0 < 600:
    for _ in range(20):
        x = (x @ x).clamp_(-1, 1)
    torch.cuda.synchronize()
"""


def count_images(d):
    n = 0
    for _, _, names in os.walk(d):
        n += sum(1 for f in names if f.lower().endswith((".jpg", ".jpeg")))
    return n


def draw(r, i, args):
    crop = r.choice(["none", "center", "random"])
    flip = r.choice([0.0, 0.0, 0.5])
    hw = r.random() < 0.8
    cache = crop != "random" and flip == 0 and r.random() < 0.25
    return {
        "run": i,
        "kind": "python" if r.random() < args.python_share else "cli",
        "crop": crop,
        "flip": flip,
        "batch": r.choice([32, 64, 128, 256, 256, 512]),
        # 0: ferry's choice (the default: 4, or 6 batches with the JPEG engine)
        "prefetch": r.choice([0, 0, 1, 2, 3, 4]),
        "epochs": r.randint(1, 5),
        "consume_ms": r.choice([0, 0, 5, 20, 40]),
        "hw": hw,
        "cache_bytes": (256 << 20) if cache else 0,
        "beside": r.choice(["none", "none", "torch", "ferry"]),
        "torch_consumer": r.random() < 0.7,
        "stall_timeout": args.stall_timeout,
        "dir": args.dir,
        # Python runs: one in three ends without close() (not drawn: the draws above, and so
        # every run's options, stay those of earlier soaks)
        "close": i % 3 != 0,
    }


def cli_cmd(c, args):
    cmd = [args.ferry, "load", args.dir, "--device", "cuda:0", "--size", "224", "--dtype", "f16",
           "--normalize", "--crop", c["crop"], "--batch", str(c["batch"]),
           "--epochs", str(c["epochs"]), "--quiet",
           "--stall-timeout", str(c["stall_timeout"])]
    if c["prefetch"]:
        cmd += ["--prefetch", str(c["prefetch"])]
    if c["flip"]:
        cmd.append(f"--flip={c['flip']}")
    if c["consume_ms"]:
        cmd += ["--consume-ms", str(c["consume_ms"])]
    if not c["hw"]:
        cmd.append("--no-hw-decode")
    if c["cache_bytes"]:
        cmd += ["--cache-mb", str(c["cache_bytes"] >> 20)]
    return cmd


def dump_threads(pid, path):
    """Every thread of pid (and its children): kernel wait channel and
    system call, then cuda-gdb's backtraces where cuda-gdb exists."""
    lines = []
    pids = [pid]
    try:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
        pids += [int(p) for p in out.split()]
    except OSError:
        pass
    for p in pids:
        try:
            cmdline = open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ").decode()
        except OSError:
            continue
        lines.append(f"== pid {p}: {cmdline}")
        for t in sorted(os.listdir(f"/proc/{p}/task"), key=int):
            base = f"/proc/{p}/task/{t}"
            info = []
            for name in ("comm", "wchan", "syscall"):
                try:
                    info.append(open(f"{base}/{name}").read().strip())
                except OSError:
                    info.append("?")
            lines.append(f"  tid {t} {info[0]}: wchan {info[1]}; syscall {info[2]}")
        gdb = shutil.which("cuda-gdb") or shutil.which("gdb")
        if gdb:
            try:
                r = subprocess.run([gdb, "-q", "-batch", "-p", str(p), "-ex", "set pagination off",
                                    "-ex", "info threads", "-ex", "thread apply all bt"],
                                   capture_output=True, text=True, timeout=120)
                lines.append(r.stdout[-60000:])
                lines.append(r.stderr[-4000:])
            except (OSError, subprocess.TimeoutExpired) as e:
                lines.append(f"  {gdb} failed: {e}")
        else:
            lines.append("  (no cuda-gdb or gdb here: no user-space backtraces)")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def start_beside(kind, args):
    if kind == "torch":
        return subprocess.Popen([sys.executable, "-c", BUSY_TORCH], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    if kind == "ferry":
        cmd = [args.ferry, "load", args.dir, "--device", "cuda:0", "--size", "224", "--dtype",
               "f16", "--normalize", "--crop", "none", "--epochs", "1000", "--quiet"]
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
    return None


def stop(p):
    if p and p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        p.wait()


def check_counts(c, epochs, n):
    want_b = math.ceil(n / c["batch"])
    bad = []
    if len(epochs) != c["epochs"]:
        bad.append(f"{len(epochs)} epochs reported, {c['epochs']} asked")
    for e in epochs:
        if e["images"] != n or e["batches"] != want_b:
            bad.append(f"epoch {e['epoch']}: {e['images']} images in {e['batches']} batches, "
                       f"want {n} in {want_b}")
    return bad


def run_one(c, args, n):
    beside = start_beside(c["beside"], args)
    if beside:
        time.sleep(1.0)  # let it reach the GPU
    if c["kind"] == "cli":
        cmd = cli_cmd(c, args)
    else:
        cmd = [sys.executable, "-c", PY_RUN, json.dumps(c)]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         errors="replace",
                         start_new_session=True)
    res = dict(c)
    try:
        out, err = p.communicate(timeout=args.timeout)
        res["status"] = "ok"
    except subprocess.TimeoutExpired:
        res["status"] = "HANG"
        dump = os.path.join(args.dumps, f"hang-run{c['run']}.txt")
        dump_threads(p.pid, dump)
        res["dump"] = dump
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    stop(beside)
    res["seconds"] = round(time.monotonic() - t0, 2)
    res["rc"] = p.returncode
    if res["status"] == "ok":
        if "stalled" in err:
            res["status"] = "STALL"
            res["stall"] = err[-3000:]
        elif c["kind"] == "cli":
            epochs = [{"epoch": int(m[0]), "images": int(m[1]) + int(m[2]), "batches": int(m[3])}
                      for m in re.findall(r"epoch (\d+): (\d+) images, (\d+) skipped, (\d+) "
                                          r"batches", out)]
            res["epochs_seen"] = epochs
            bad = check_counts(c, epochs, n)
            if p.returncode != 0 or bad:
                res["status"] = "FAIL" if p.returncode != 0 else "WRONG"
                res["problems"] = bad
        else:
            m = re.search(r"^RESULT (.*)$", out, re.M)
            epochs = json.loads(m.group(1)) if m else []
            res["epochs_seen"] = epochs
            bad = check_counts(c, epochs, n)
            if p.returncode != 0 or not m or bad:
                res["status"] = "FAIL" if p.returncode != 0 or not m else "WRONG"
                res["problems"] = bad
        if res["status"] != "ok":
            res["stderr"] = err[-3000:]
        rates = re.findall(r"([0-9.]+) images/s", out)
        if rates:
            res["rates"] = [float(x) for x in rates]
    else:
        res["stderr"] = (err or "")[-3000:]
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ferry", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--first", type=int, default=0, help="index of the first run (to resume)")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--timeout", type=float, default=120, help="outside watchdog, s")
    ap.add_argument("--stall-timeout", type=float, default=30, help="the loader's, s")
    ap.add_argument("--max-seconds", type=float, default=1e9,
                    help="start no run after this long (the device's call limit)")
    ap.add_argument("--python-share", type=float, default=0.3)
    ap.add_argument("--log", default="soak.jsonl")
    ap.add_argument("--dumps", default=".")
    args = ap.parse_args()
    args.ferry = os.path.abspath(args.ferry)
    os.makedirs(args.dumps, exist_ok=True)
    n = count_images(args.dir)
    r = random.Random(args.seed)
    plans = [draw(r, i, args) for i in range(args.first + args.runs)][args.first:]
    t_start = time.monotonic()
    tally = {}
    done = 0
    with open(args.log, "a") as log:
        for c in plans:
            if time.monotonic() - t_start > args.max_seconds:
                break
            res = run_one(c, args, n)
            done += 1
            tally[res["status"]] = tally.get(res["status"], 0) + 1
            log.write(json.dumps(res) + "\n")
            log.flush()
            if res["status"] != "ok":
                print(f"run {c['run']}: {res['status']}: {json.dumps(res)[:1500]}", flush=True)
    print(f"soak: {done} runs (from {args.first}) over {n} images in "
          f"{time.monotonic() - t_start:.0f} s: " +
          ", ".join(f"{k} {v}" for k, v in sorted(tally.items())), flush=True)
    return 0 if set(tally) <= {"ok"} else 1


if __name__ == "__main__":
    sys.exit(main())
