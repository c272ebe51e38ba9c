#!/usr/bin/env python3
"""Decode-bound loading under torchrun (issue 21): every rank opens a
ferry.Loader on its own GPU (cuda:LOCAL_RANK; rank and world size from
torchrun's RANK and WORLD_SIZE, decoding threads from the default share:
the cores divided by LOCAL_WORLD_SIZE), takes --warmup batches and the rest
of the first --warm-epochs epochs, waits for the other ranks, then times
--batches batches (across epochs where one is shorter) doing nothing else
with them: the loader alone is the limit. Rank 0 prints one JSON line: each
rank's images/s, and the total, the images of all ranks over the window
from the first start to the last end.

    # one rank, then two on two GPUs: the ratio is issue 21's decode-bound figure
    torchrun --standalone --nproc-per-node 1 bench/dist_load.py /data/train
    torchrun --standalone --nproc-per-node 2 bench/dist_load.py /data/train
    # a machine of one GPU: two ranks both on cuda:0 (the mechanics, not a speed-up)
    torchrun --standalone --nproc-per-node 2 bench/dist_load.py /data/train --one-gpu

The ranks meet through torch.distributed's gloo backend (host memory only,
so two ranks on one GPU work too). Nothing waits for ever: the process
group's operations time out after 0.8 x --timeout seconds, and each rank
exits (status 124) once --timeout seconds have passed since it started,
whatever it was doing. A rank that fails (its loader, a GPU it does not have) still
meets the others and reports its error; rank 0's line then has "ok": false
and every rank exits 1.

Claims it proves (bench/CLAIMS.md): C15, C16, C19, C30, C31.
"""
import argparse
import datetime
import json
import os
import socket
import sys
import threading
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", help="ImageFolder directory (class sub-folders) or a ferry list file")
    p.add_argument("--batch-size", type=int, default=256, help="per rank")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--batches", type=int, default=60, help="timed batches per rank")
    p.add_argument("--warmup", type=int, default=10, help="batches per rank before the timing")
    p.add_argument("--warm-epochs", type=int, default=1,
                   help="after --warmup, the rest of this many epochs too before the timing "
                        "(default 1: the first epoch on a GPU runs at about 60 %% of the later "
                        "ones while the JPEG engine's decoding states are set up; 0: time from "
                        "--warmup on)")
    p.add_argument("--dtype", default="float16", help="uint8, float16 or float32")
    p.add_argument("--crop", default="random", help="random (RandomResizedCrop), center or none")
    p.add_argument("--workers", type=int, default=0,
                   help="decoding threads per rank (0: ferry's default, the cores this process "
                        "may use divided by LOCAL_WORLD_SIZE)")
    p.add_argument("--no-hw-decode", dest="hw_decode", action="store_false", default=True,
                   help="decode on the CPU cores only (default: the GPU's JPEG engine too)")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cpu: batches in host memory (a check of the script without a GPU)")
    p.add_argument("--one-gpu", action="store_true",
                   help="every rank on cuda:0 (a machine of one GPU: the mechanics only)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds each rank may run in all (the process group's operations "
                        "time out after 0.8 of it)")
    p.add_argument("--label", default="", help="copied into the JSON line")
    args = p.parse_args()
    if args.warm_epochs < 0:
        p.error(f"--warm-epochs must be 0 or more, not {args.warm_epochs}")
    return args


def env_int(name, default):
    try:
        return int(os.environ.get(name, "") or default)
    except ValueError:
        return default


def deadline(seconds, rank, label):
    """Ends this process after `seconds` whatever it is doing (a daemon timer);
    rank 0 says so in its JSON line."""
    def expire():
        why = f"rank {rank}: still running after --timeout {seconds:g} s"
        sys.stderr.write(f"dist_load: {why}: exiting\n")
        sys.stderr.flush()
        if rank == 0:
            print(json.dumps({"bench": "dist_load", "label": label, "ok": False,
                              "images_per_s": None, "errors": [why]}), flush=True)
        os._exit(124)
    t = threading.Timer(seconds, expire)
    t.daemon = True
    t.start()


def endless(loader, first_epoch, where):
    """Batches of epoch after epoch (each rank's share of each); where[0]: the
    epoch of the batch last given."""
    epoch = first_epoch
    while True:
        where[0] = epoch
        loader.set_epoch(epoch)
        got = 0
        for images, _labels in loader:
            got += 1
            yield images
        if got == 0:
            raise RuntimeError(f"epoch {epoch} gave no batch")
        epoch += 1


def thread_cpu():
    """CPU seconds (user + system) of this process's threads, by kind: ferry's
    loader names its threads ferry-worker (CPU decoding) and ferry-engine
    (feeding the JPEG engine); every other thread (Python, torch, CUDA's) is
    "other". Read from /proc/self/task (Linux); {} where that cannot be read."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:  # the thread ended
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        kind = name if name in ("ferry-worker", "ferry-engine") else "other"
        out[kind] = out.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


class Rank:
    """One rank's run, step by step; a step after a failure does nothing, so
    that a failed rank still meets the others at every barrier."""

    def __init__(self, args, torch, rank, world, local_rank):
        self.args, self.torch = args, torch
        self.error = None
        self.gpu = None
        if args.device == "cuda":
            self.gpu = 0 if args.one_gpu else local_rank
        self.result = {"rank": rank, "local_rank": local_rank, "host": socket.gethostname(),
                       "device": "cpu" if self.gpu is None else f"cuda:{self.gpu}",
                       "workers": args.workers or None}  # the loader's own count, once made
        self.loader = None
        self.it = None
        self.rank, self.world = rank, world

    def step(self, what, fn):
        if self.error is not None:
            return
        try:
            fn()
        except Exception as e:  # reported by rank 0, with the step
            self.error = f"{what}: {type(e).__name__}: {e}"

    def open(self):
        import ferry
        torch, args = self.torch, self.args
        if self.gpu is not None:
            count = torch.cuda.device_count()
            if self.gpu >= count:
                raise RuntimeError(f"cuda:{self.gpu} asked for, {count} GPU(s) visible")
            torch.cuda.set_device(self.gpu)
            self.result["gpu_name"] = torch.cuda.get_device_name(self.gpu)
        self.loader = ferry.Loader(
            args.data, args.batch_size, args.size, device=self.result["device"],
            dtype=args.dtype, crop=args.crop, flip=True, mean=ferry.IMAGENET_MEAN,
            std=ferry.IMAGENET_STD, shuffle=True,
            seed=args.seed, drop_last=True, rank=self.rank, world_size=self.world,
            workers=args.workers or None, hw_decode=args.hw_decode if self.gpu is not None
            else None, output="torch")
        self.result["workers"] = self.loader.workers
        n = len(self.loader)
        self.result.update(batches_per_epoch=n, ring=self.loader.ring, numa=list(self.loader.numa))
        if n == 0:
            raise RuntimeError(f"no full batch of {args.batch_size} in this rank's share of "
                               f"{self.loader.source_size} images ({self.world} ranks)")
        self.where = [0]
        self.it = endless(self.loader, 0, self.where)

    def sync(self):
        if self.gpu is not None:
            self.torch.cuda.synchronize(self.gpu)

    def take(self, count):
        images = 0
        for _ in range(count):
            images += int(next(self.it).shape[0])
        return images

    def warmup(self):
        self.take(self.args.warmup)
        while self.where[0] < self.args.warm_epochs:  # ends on the next epoch's first batch
            self.take(1)
        self.sync()

    def timed(self):
        s0, c0 = self.loader.stats(), thread_cpu()
        start, t0 = time.time(), time.perf_counter()
        images = self.take(self.args.batches)
        self.sync()
        seconds = time.perf_counter() - t0
        end = time.time()
        s1, c1 = self.loader.stats(), thread_cpu()
        # the cores this rank kept busy over the window, by kind of thread (thread_cpu)
        cpu = {k: round(c1[k] - c0.get(k, 0.0), 2) for k in c1}
        self.result.update(cpu_s=cpu, cores_busy=round(sum(cpu.values()) / seconds, 2)
                           if seconds > 0 else None)
        self.result.update(
            images=images, seconds=round(seconds, 4), start=start, end=end,
            images_per_s=round(images / seconds, 1) if seconds > 0 else None,
            decode_s=round(s1["decode_s"] - s0["decode_s"], 3),
            idle_s=round(s1["idle_s"] - s0["idle_s"], 3),
            wait_s=round(s1["wait_s"] - s0["wait_s"], 3),
            gpu_decoded=int(s1["gpu_decoded"] - s0["gpu_decoded"]),
            gpu_chunks=int(s1["gpu_chunks"] - s0["gpu_chunks"]),
            gpu_call_s=round(s1["gpu_call_s"] - s0["gpu_call_s"], 3),
            skipped=int(s1["skipped"] - s0["skipped"]))

    def close(self):
        self.it = None
        if self.loader is not None:
            self.loader.close()
            self.loader = None

    def report(self):
        r = dict(self.result)
        if self.error is not None:
            r["error"] = self.error
        return r


def summary(args, reports, world, local_world):
    ok = all("error" not in r for r in reports) and len(reports) == world
    out = {"bench": "dist_load", "label": args.label, "world_size": world,
           "local_world_size": local_world, "one_gpu": args.one_gpu, "device": args.device,
           "hw_decode": args.hw_decode, "batch_size": args.batch_size, "size": args.size,
           "dtype": args.dtype, "crop": args.crop, "warmup": args.warmup,
           "warm_epochs": args.warm_epochs,
           "batches": args.batches, "ok": ok}
    timed = [r for r in reports if r.get("images")]
    if ok and timed:
        images = sum(r["images"] for r in timed)
        window = max(r["end"] for r in timed) - min(r["start"] for r in timed)
        out.update(images=images, window_s=round(window, 4),
                   images_per_s=round(images / window, 1) if window > 0 else None,
                   sum_of_rank_rates=round(sum(r["images_per_s"] for r in timed), 1))
    else:
        out["images_per_s"] = None
        out["errors"] = [f"rank {r['rank']}: {r['error']}" for r in reports if "error" in r]
        if len(reports) != world:
            out["errors"].append(f"{len(reports)} reports for {world} ranks")
    for r in reports:
        r.pop("start", None)
        r.pop("end", None)
    out["ranks"] = reports
    return out


def main():
    args = parse_args()
    rank, world = env_int("RANK", 0), env_int("WORLD_SIZE", 1)
    local_rank, local_world = env_int("LOCAL_RANK", 0), env_int("LOCAL_WORLD_SIZE", 1)
    deadline(args.timeout, rank, args.label)
    import torch
    import torch.distributed as dist
    # the group's operations give up first, so that rank 0 can say which step failed
    timeout = datetime.timedelta(seconds=0.8 * args.timeout)
    group = world > 1

    def barrier():
        if group:
            dist.barrier()

    me = Rank(args, torch, rank, world, local_rank)
    try:
        if group:
            dist.init_process_group("gloo", timeout=timeout)
        me.step("open", me.open)
        barrier()
        me.step("warm-up", me.warmup)
        barrier()  # every rank starts the timing together
        me.step("timed", me.timed)
        me.step("close", me.close)
        if group:
            reports = [None] * world
            dist.all_gather_object(reports, me.report())
        else:
            reports = [me.report()]
    except Exception as e:  # the group itself failed: a rank died, or the timeout
        report = me.report()
        report["error"] = "; ".join(x for x in (report.get("error"), f"process group: "
                                                f"{type(e).__name__}: {e}") if x)
        sys.stderr.write(f"dist_load: rank {rank}: {report['error']}\n")
        if rank == 0:
            print(json.dumps(summary(args, [report], world, local_world)), flush=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)  # no clean shutdown of a broken group: it may wait
    out = summary(args, reports, world, local_world)
    if rank == 0:
        print(json.dumps(out), flush=True)
    if group:
        dist.destroy_process_group()
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
