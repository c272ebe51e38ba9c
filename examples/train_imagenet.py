#!/usr/bin/env python3
"""Train torchvision's ResNet-50 on an ImageFolder with mixed precision, fed by
ferry or by torch's DataLoader (--loader), and report images/s and GPU
utilisation: the two loaders side by side on the same model and settings.

    # one GPU
    python examples/train_imagenet.py /data/imagenet/train --loader ferry
    python examples/train_imagenet.py /data/imagenet/train --loader torch --workers 16
    # several GPUs (ferry takes rank/world size from torchrun's environment)
    torchrun --nproc-per-node 8 examples/train_imagenet.py /data/imagenet/train --loader ferry

Both loaders do the same augmentation: RandomResizedCrop(224) (antialiased
bilinear), horizontal flip, ImageNet normalisation. torch: Pillow decoding in
worker processes, pinned memory, copies to the GPU. ferry: decoding on every
core in C threads, resizing and normalising on the GPU (--ferry-device cuda,
the default on a GPU; --hw-decode adds the GPU's JPEG engine), batches
straight into the training step without a copy. SGD runs as one fused CUDA
kernel (--no-fused: foreach), as a tuned training script would.

Output: one line per --log-every steps, and a last JSON line with the
images/s (after --warmup steps), the mean GPU utilisation, the data wait and
the step times (each part on the host's and, on CUDA, the GPU's clock); under
torchrun, every rank's own figures too.
"""
import argparse
import hashlib
import json
import os
import sys
import threading
import time

BEGUN = time.perf_counter()  # before torch's import: where the run's start-up begins

try:
    import resource  # the main thread's context switches (POSIX)
except ImportError:
    resource = None

import torch
import torch.nn as nn

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", help="ImageFolder directory (class sub-folders) or a ferry list file")
    p.add_argument("--loader", choices=["ferry", "torch", "dali", "synthetic"], default="ferry",
                   help="synthetic: one random batch on the GPU, reused every step (the step's "
                        "own ceiling, no loading at all); dali: NVIDIA DALI's pipeline doing "
                        "the same (a peer, for comparison; needs nvidia-dali)")
    p.add_argument("--dali-hw-load", type=float, default=0.65,
                   help="dali: share of each batch sent to the JPEG engine (DALI's default 0.65)")
    p.add_argument("--dali-decoder", choices=["mixed", "cpu"], default="mixed",
                   help="dali: decode on the GPU (mixed: the JPEG engine + CUDA, the default) "
                        "or on the CPU threads, resizing on the GPU")
    p.add_argument("--arch", default="resnet50", help="a torchvision.models name")
    p.add_argument("--batch-size", type=int, default=256, help="per GPU")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: all)")
    p.add_argument("--warmup", type=int, default=10, help="steps left out of images/s")
    p.add_argument("--workers", type=int, default=0,
                   help="torch: DataLoader worker processes; ferry: decoding threads "
                        "(0: every core, shared between the ranks of a node)")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--amp", choices=["fp16", "bf16", "off"], default="fp16")
    p.add_argument("--channels-last", action="store_true", default=True)
    p.add_argument("--no-channels-last", dest="channels_last", action="store_false")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--ferry-device", choices=["cpu", "cuda"], default=None,
                   help="where ferry makes batches (default: the training device)")
    p.add_argument("--hw-decode", dest="hw_decode", action="store_true", default=True,
                   help="ferry on a GPU: also decode on the GPU's JPEG engine, as many contexts "
                        "as help (the default; the loader stops them while the CPU cores keep "
                        "up with the step, bench/CLAIMS.md C22)")
    p.add_argument("--no-hw-decode", dest="hw_decode", action="store_false",
                   help="ferry on a GPU: decode on the CPU cores only, resize on the GPU")
    p.add_argument("--no-epoch-ahead", dest="epoch_ahead", action="store_false", default=True,
                   help="ferry: idle between epochs instead of making the next epoch's first "
                        "batches ahead (ferry.Loader's epoch_ahead; for comparisons)")
    p.add_argument("--nccl-high-priority", action="store_true",
                   help="DDP: NCCL's collectives on high-priority CUDA streams, so that the "
                        "all-reduce's blocks go before other work queued on the GPU (the "
                        "step's, a loader's kernels)")
    p.add_argument("--ddp-bn", choices=["epoch-mean", "broadcast", "local"],
                   default="epoch-mean",
                   help="DDP: the BatchNorm running statistics across the ranks. epoch-mean (the "
                        "default): each rank updates its own while an epoch runs, and they are "
                        "averaged over the ranks at each epoch's end and where the run stops, "
                        "so every rank holds the same ones wherever a checkpoint or an "
                        "evaluation would be (as timm's --no-ddp-bb --dist-bn reduce); "
                        "broadcast: PyTorch's DDP default, rank 0's copied to every rank before "
                        "each forward (on ResNet-50 0.4 ms of GPU time and about 4 ms of the "
                        "host's launch path a step, and one more point each step where the ranks "
                        "wait for each other, bench/CLAIMS.md C26); local: never made the same")
    p.add_argument("--no-ddp-broadcast-buffers", dest="ddp_bn", action="store_const",
                   const="local", help="the same as --ddp-bn local (earlier runs' option)")
    p.add_argument("--ddp-bucket-view", action="store_true",
                   help="DDP: gradients are views into the all-reduce buckets "
                        "(gradient_as_bucket_view), not copied into them")
    p.add_argument("--cudnn-benchmark", choices=["on", "quiet", "off"], default="on",
                   help="CUDA: how cuDNN picks its convolution kernels. on: it times its "
                        "candidates at each new shape, in the first steps, beside the loader's "
                        "own GPU work (torch.backends.cudnn.benchmark); quiet: the same, timed "
                        "on one synthetic batch of the step's shape before the loader starts "
                        "(the model's BatchNorm statistics are put back); off: cuDNN's "
                        "heuristics, no timing (each process may otherwise pick other kernels)")
    p.add_argument("--prefetch", type=int, default=4,
                   help="ferry: batches in the ring (ferry.Loader's prefetch)")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile the model (the first steps compile; --warmup leaves them out)")
    p.add_argument("--no-fused", dest="fused", action="store_false",
                   help="foreach SGD instead of the fused CUDA kernel")
    p.add_argument("--profile", metavar="DIR", default=None,
                   help="record the GPU's kernels and copies and the CUDA calls that launched "
                        "them over the last --profile-steps steps into DIR/rank<R>.json (a "
                        "Chrome trace; bench/trace_gaps.py sums it up); needs --steps")
    p.add_argument("--profile-steps", type=int, default=8,
                   help="how many of the last steps --profile keeps (default 8)")
    p.add_argument("--kernel-census", action="store_true",
                   help="CUDA: list the step's kernels over two warm-up steps (steps --warmup - "
                        "3 and - 2, under the profiler, outside the timed steps) and report "
                        "their time per step, how many there are and a digest of their names: "
                        "ranks whose cuDNN picked other kernels show other digests")
    p.add_argument("--forward-stages", action="store_true",
                   help="also mark where the forward enters each of the model's stages "
                        "(ResNet: layer1..layer4, fc) and report each stage's mean time on the "
                        "host's clock and the GPU's, per rank: whether a slower forward is "
                        "slower everywhere or in one place; on CUDA also, at each mark, how "
                        "often the GPU had caught up with the host to within one part "
                        "(gpu_caught_up)")
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if args.forward_stages and args.compile:
        p.error("--forward-stages marks the forward as it runs eagerly; under --compile its "
                "hooks would split the compiled graph: leave one of them out")
    if args.kernel_census and args.warmup < KernelCensus.STEPS + 3:
        p.error(f"--kernel-census needs --warmup {KernelCensus.STEPS + 3} or more, not "
                f"{args.warmup} (it lists steps --warmup - 3 and - 2, before --profile starts)")
    if args.profile:
        start = StepProfile.starts_after(args.warmup)
        if args.profile_steps < 1:
            p.error(f"--profile-steps must be 1 or more, not {args.profile_steps}")
        if args.steps <= args.profile_steps + start:
            p.error(f"--profile needs --steps above {args.profile_steps + start} (the profiler "
                    f"starts after step {start}, --warmup - 2, and keeps the last "
                    f"--profile-steps {args.profile_steps})")
        # here, not after the run: a path that cannot be a folder fails before training
        if os.path.exists(args.profile) and not os.path.isdir(args.profile):
            p.error(f"--profile {args.profile}: exists and is not a folder")
        try:
            os.makedirs(args.profile, exist_ok=True)
        except OSError as e:
            p.error(f"--profile {args.profile}: cannot make the folder: {e.strerror or e}")
    return args


class GpuUtilisation:
    """Samples the GPU's utilisation (NVML) on a thread, 10 times a second."""

    def __init__(self, index):
        self.samples, self.index, self.stop = [], index, threading.Event()
        try:
            import pynvml
            pynvml.nvmlInit()
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self.nvml = pynvml
        except Exception:  # no NVML: torch's own reading, if any
            self.nvml = None
        self.thread = threading.Thread(target=self.run, daemon=True)

    def read(self):
        if self.nvml is not None:
            return self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu
        return torch.cuda.utilization(self.index)

    def run(self):
        while not self.stop.wait(0.1):
            try:
                if self.active:
                    self.samples.append(self.read())
            except Exception:
                return

    def start(self):
        self.active = False
        self.thread.start()
        return self

    def mean(self):
        return sum(self.samples) / len(self.samples) if self.samples else None


def torch_loader(args, rank, world, distributed):
    import torchvision.datasets as datasets
    import torchvision.transforms as T
    tf = T.Compose([T.RandomResizedCrop(args.size, antialias=True), T.RandomHorizontalFlip(),
                    T.ToTensor(), T.Normalize(MEAN, STD)])
    ds = datasets.ImageFolder(args.data, tf)
    sampler = None
    if distributed:
        sampler = torch.utils.data.distributed.DistributedSampler(ds, world, rank, shuffle=True,
                                                                  seed=args.seed, drop_last=True)
    workers = args.workers or max(1, (os.cpu_count() or 1) // max(1, world))
    dl = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=sampler is None,
                                     sampler=sampler, num_workers=workers, pin_memory=True,
                                     drop_last=True, persistent_workers=workers > 0,
                                     prefetch_factor=4 if workers > 0 else None)

    def epoch(e):
        if sampler is not None:
            sampler.set_epoch(e)
        for images, labels in dl:
            yield (images.to(args.device, non_blocking=True),
                   labels.to(args.device, non_blocking=True))

    return epoch, len(dl)


def synthetic_loader(args, steps_per_epoch):
    g = torch.Generator(device="cpu").manual_seed(args.seed)
    dtype = torch.float16 if args.amp == "fp16" else torch.float32
    images = torch.randn(args.batch_size, 3, args.size, args.size, generator=g).to(
        args.device, dtype)
    labels = torch.randint(0, 1000, (args.batch_size,), generator=g).to(args.device)

    def epoch(e):
        for _ in range(steps_per_epoch):
            yield images, labels

    return epoch, steps_per_epoch


def dali_loader(args, rank, world):
    from dali_pipes import make_iterator  # examples/dali_pipes.py, beside this script
    it, n = make_iterator(args.data, args.batch_size, args.size, True,
                          hw_decoder_load=args.dali_hw_load, threads=args.workers or None,
                          seed=args.seed, fp16=args.amp == "fp16", shard_id=rank,
                          num_shards=world, device_id=torch.cuda.current_device(),
                          decoder=args.dali_decoder)

    def epoch(e):
        for out in it:
            yield out[0]["images"], out[0]["labels"].squeeze(-1).long()

    return epoch, n


def percentiles(values):
    """p10, p50, p90 and p99 of values (None when there are none)."""
    v = sorted(values)
    if not v:
        return None
    return {f"p{q}": round(v[min(len(v) - 1, len(v) * q // 100)], 3) for q in (10, 50, 90, 99)}


def mean_by_key(pairs):
    """The mean of each key's values over (key, value) pairs, to 3 decimals, keys in the order
    they first come."""
    sums, counts = {}, {}
    for k, v in pairs:
        sums[k] = sums.get(k, 0.0) + v
        counts[k] = counts.get(k, 0) + 1
    return {k: round(sums[k] / counts[k], 3) for k in sums}


class StepTimeline:
    """Marks at five points of each timed step: its batch in hand, the model's own forward
    starting (a forward pre-hook: after the channels-last copy and, under DDP, the broadcast
    of rank 0's buffers), the loss computed, backward done (DDP: the gradients' all-reduce
    waited for), the optimizer's update done. Each mark reads the host's clock and, on CUDA,
    records an event on the current stream, so that each part of the step has a host time and
    a GPU time."""
    PARTS = ("gap", "prepare", "forward", "backward", "optimizer")
    # the part each mark starts, in the order a step makes them ("end": the step's end)
    POINTS = ("prepare", "forward", "backward", "optimizer", "end")

    def __init__(self, cuda, catch_up=False):
        self.cuda, self.steps, self.cur = cuda, [], None
        self.stages, self.cur_stages = [], None  # --forward-stages: marks inside the forward
        # --forward-stages on CUDA: at each mark, whether the step's stream had already reached
        # the previous mark (its event complete): the GPU was then less than one part of the
        # step behind the host, close to waiting for the host's launches
        self.catch_up, self.last_ev, self.caught, self.cur_caught = catch_up and cuda, None, [], None

    def begin(self):
        self.cur, self.cur_stages, self.cur_caught = [], [], {}
        self.mark()

    def _now(self, point):
        ev = None
        if self.cuda:
            if self.catch_up and self.last_ev is not None:
                self.cur_caught[point] = bool(self.last_ev.query())  # never waits
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            self.last_ev = ev
        return time.perf_counter(), ev

    def mark(self):
        if self.cur is not None:
            self.cur.append(self._now(self.POINTS[min(len(self.cur), len(self.POINTS) - 1)]))

    def stage(self, name):
        """--forward-stages: the forward reached the model's part NAME (a pre-hook on it)."""
        if self.cur is not None:  # begin() made cur and cur_stages together
            self.cur_stages.append((name,) + self._now(name))

    def end(self):
        if self.cur is not None:
            self.mark()
            self.steps.append(self.cur)
            self.stages.append(self.cur_stages)
            self.caught.append(self.cur_caught)
            self.cur, self.cur_stages, self.cur_caught = None, None, None

    def caught_up_summary(self):
        """--forward-stages on CUDA: for each mark (the step's parts and the forward's stages,
        in the order a step makes them), the share of the timed steps in which the step's
        stream had already reached the previous mark when the host got to this one: the GPU
        was less than one part behind the host. About 0 where the host keeps well ahead (a step
        bound by the GPU); where it is high the GPU runs close behind the host's launches and
        can wait for them. None without CUDA or --forward-stages."""
        if not self.catch_up or not any(self.caught):
            return None
        return mean_by_key((k, int(v)) for d in self.caught for k, v in d.items())

    def stages_summary(self, gpu):
        """--forward-stages: each stage's mean ms over the timed steps, on the GPU's clock (gpu
        true; None without CUDA) or the host's: "stem" from the forward's start to the first
        stage, each stage to the next, the last one to the loss computed (None where no step
        had stage marks). Where a slow forward's extra time goes: spread over every stage (its
        kernels slower) or in one (a stall)."""
        if (gpu and not self.cuda) or not any(self.stages):
            return None

        def parts():
            for marks, stages in zip(self.steps, self.stages):
                if len(marks) < 3 or not stages:
                    continue
                seq = [("stem",) + marks[1]] + stages + [("loss",) + marks[2]]
                for (name, t0, e0), (_, t1, e1) in zip(seq, seq[1:]):
                    yield name, e0.elapsed_time(e1) if gpu else 1e3 * (t1 - t0)
        return mean_by_key(parts()) or None

    def periods_ms(self, end):
        """Each timed step's wall time in ms, from its batch in hand to the next step's (the
        last one's: to end, the host's clock after the final synchronize)."""
        starts = [marks[0][0] for marks in self.steps]
        return [1e3 * (b - a) for a, b in zip(starts, starts[1:] + [end])]

    def summary(self, gpu):
        """Each part's mean and p10..p99 in ms over the timed steps: on the GPU's clock (gpu
        true, after a synchronize; None without CUDA) or the host's. gap: from a step's end
        to the next step's batch in hand; on the GPU, the stream's idle wait for the host
        (about 0 while the host is ahead)."""
        if gpu and not self.cuda:
            return None

        def ms(a, b):
            return a[1].elapsed_time(b[1]) if gpu else 1e3 * (b[0] - a[0])
        parts = {k: [] for k in self.PARTS}
        for prev, marks in zip([None] + self.steps, self.steps):
            if prev is not None:
                parts["gap"].append(ms(prev[-1], marks[0]))
            for k, (a, b) in zip(self.PARTS[1:], zip(marks, marks[1:])):
                parts[k].append(ms(a, b))
        out = {}
        for k, v in parts.items():
            if v:
                out[k] = percentiles(v)
                out[k]["mean"] = round(sum(v) / len(v), 3)
        return out or None


class StepProfile:
    """--profile: the kernels and copies of every stream of this process's GPU (the step's,
    NCCL's, the loader's) and the CUDA calls that launched them, over the last
    --profile-steps steps, as a Chrome trace in DIR/rank<R>.json. The profiler starts two steps
    before the timed ones, so that its start-up falls outside them and its cost (CUPTI's, per
    kernel) weighs on every timed step alike. Without CUDA it records the host's operators."""

    def __init__(self, args, rank, cuda):
        self.args, self.rank, self.cuda, self.prof, self.saved = args, rank, cuda, None, False
        self.start_after = self.starts_after(args.warmup)

    @staticmethod
    def starts_after(warmup):
        """The steps done when the profiler starts: two before the timed ones, at least one."""
        return max(1, warmup - 2)

    def after_step(self, step):
        """Called with the number of steps done, after each one."""
        a = self.args
        if not a.profile:
            return
        if self.prof is None and step == self.start_after:
            from torch.profiler import ProfilerActivity, profile, schedule
            acts = [ProfilerActivity.CUDA if self.cuda else ProfilerActivity.CPU]
            # warmup: traced and dropped, until the last profile_steps steps, which it keeps
            warm = a.steps - a.profile_steps - step
            self.prof = profile(activities=acts, on_trace_ready=self._save,
                                schedule=schedule(wait=0, warmup=warm, active=a.profile_steps))
            self.prof.start()
        elif self.prof is not None and step < a.steps:
            self.prof.step()

    def finish(self):
        """After the final synchronize: the last steps' kernels are all done, so all traced."""
        if self.prof is not None:
            self.prof.stop()
            self.prof = None
        if self.args.profile and not self.saved:
            print(f"--profile: the run ended before its last {self.args.profile_steps} steps "
                  f"(--steps {self.args.steps}): no trace", file=sys.stderr)

    def _save(self, prof):  # parse_args made the folder
        self.saved = True
        prof.export_chrome_trace(os.path.join(self.args.profile, f"rank{self.rank}.json"))


class KernelCensus:
    """--kernel-census: the kernels of the step's stream (the one with the most kernel time)
    over STEPS warm-up steps that end two steps before the timed ones (and before --profile
    starts), on a synchronized GPU at both ends. Reports their time per step, how many distinct
    kernels and a digest of their sorted names."""
    STEPS = 2

    def __init__(self, args, cuda):
        self.on = bool(args.kernel_census and cuda)
        self.start_after = args.warmup - 2 - self.STEPS
        self.prof, self.result = None, None

    def after_step(self, step):
        if not self.on:
            return
        if step == self.start_after:
            from torch.profiler import ProfilerActivity, profile
            torch.cuda.synchronize()
            self.prof = profile(activities=[ProfilerActivity.CUDA])
            self.prof.start()
        elif step == self.start_after + self.STEPS and self.prof is not None:
            torch.cuda.synchronize()
            self.prof.stop()
            self.result = self._count(self.prof)
            self.prof = None

    def finish(self):
        """After the run: a census the run ended within (too few --steps) says so."""
        if self.prof is not None:
            self.prof.stop()
            self.prof = None
            self.result = {"error": f"the run ended within the census's steps "
                                    f"({self.start_after + 1}..{self.start_after + self.STEPS})"}

    def _count(self, prof):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "census.json")
            prof.export_chrome_trace(path)
            with open(path) as f:
                doc = json.load(f)
        return kernel_census(doc["traceEvents"] if isinstance(doc, dict) else doc, self.STEPS)


def kernel_census(events, steps):
    """A trace's kernels on the stream with the most kernel time: their time per step (ms), how
    many distinct ones, and a digest of their sorted names."""
    by_stream = {}
    for e in events:
        if str(e.get("cat", "")).lower() == "kernel" and "dur" in e:
            k = by_stream.setdefault((e.get("args") or {}).get("stream"), {})
            k[e.get("name", "")] = k.get(e.get("name", ""), 0.0) + float(e["dur"])
    if not by_stream:
        return {"error": "no kernel in the census's window"}
    kernels = max(by_stream.values(), key=lambda k: sum(k.values()))
    names = "\n".join(sorted(kernels)).encode()
    return {"steps": steps, "kernel_ms_per_step": round(sum(kernels.values()) / 1e3 / steps, 3),
            "distinct": len(kernels), "digest": hashlib.sha1(names).hexdigest()[:10]}


def tune_quietly(model, args):
    """--cudnn-benchmark quiet: one forward and backward of a synthetic batch of the step's
    shape, dtype and layout, before the loader (and DDP) start, so that cuDNN times its
    candidate kernels on a GPU that runs nothing else; it keeps its choice for every later step
    of that shape. The gradients are dropped and the BatchNorm statistics put back: the model
    trains as if this pass had not been."""
    saved = [b.detach().clone() for b in model.buffers()]
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.amp)
    x = torch.randn(args.batch_size, 3, args.size, args.size, device=args.device,
                    dtype=dtype or torch.float32)
    if args.channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (args.batch_size,), device=args.device)
    where = torch.device(args.device).type
    with torch.autocast(where, dtype=dtype, enabled=dtype is not None):
        loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    with torch.no_grad():
        for b, v in zip(model.buffers(), saved):
            b.copy_(v)
    for q in model.parameters():
        q.grad = None
    if where == "cuda":
        torch.cuda.synchronize()


def hook_stages(model, timeline, rank):
    """--forward-stages: a forward pre-hook on each of the model's stages: its direct children
    named layer<N> (torchvision's ResNets) and its classifier (fc). Another architecture has
    none of them: said on stderr, and the forward is reported whole."""
    names = [n for n, _ in model.named_children() if n.startswith("layer") or n == "fc"]
    if not names:
        if rank == 0:
            print("--forward-stages: the model has no layer<N> or fc child: the forward is "
                  "reported whole", file=sys.stderr)
        return
    for n in names:
        getattr(model, n).register_forward_pre_hook(lambda *_, n=n: timeline.stage(n))


def float_buffers(model):
    """The model's floating-point buffers: BatchNorm's running means and variances (not the
    integer counts of batches)."""
    return [b for b in model.buffers() if b.is_floating_point()]


def average_buffers(model, world):
    """--ddp-bn epoch-mean: every floating-point buffer (BatchNorm's running means and
    variances) replaced by its mean over the ranks, all in one all-reduce, so that every rank
    holds the same statistics. Integer buffers (the batches each BatchNorm counted) are the same
    on every rank already and left alone. Every rank calls this at the same points (each
    epoch's end, the run's end), as it must for a collective."""
    import torch.distributed as dist
    bufs = float_buffers(model)
    if not bufs or world < 2:
        return
    with torch.no_grad():
        flat = torch.cat([b.reshape(-1).float() for b in bufs])
        dist.all_reduce(flat)
        flat /= world
        for b, v in zip(bufs, flat.split([b.numel() for b in bufs])):
            b.copy_(v.view_as(b))


def buffers_digest(model):
    """A short digest of the model's floating-point buffers' bytes (None when it has none)."""
    bufs = float_buffers(model)
    if not bufs:
        return None
    h = hashlib.sha1()
    for b in bufs:
        # the float32 values' bytes, through a uint8 view (no NumPy needed)
        h.update(bytes(b.detach().float().cpu().contiguous().reshape(-1).view(torch.uint8)
                       .tolist()))
    return h.hexdigest()[:10]


def allocator_counts(cuda):
    """PyTorch's CUDA caching allocator's counters (None off CUDA): its cudaMalloc and cudaFree
    calls (a cudaFree waits for the whole GPU), the allocations it retried after freeing its
    cache, and its synchronisations of every stream."""
    if not cuda:
        return None
    st = torch.cuda.memory_stats()
    return {"device_allocs": st.get("num_device_alloc", 0),
            "device_frees": st.get("num_device_free", 0),
            "alloc_retries": st.get("num_alloc_retries", 0),
            "syncs_all_streams": st.get("num_sync_all_streams", 0)}


def main_thread_switches():
    """The calling thread's involuntary context switches so far (None where not reported)."""
    who = getattr(resource, "RUSAGE_THREAD", None) if resource else None
    return resource.getrusage(who).ru_nivcsw if who is not None else None


def ferry_loader(args, rank, world):
    import ferry
    where = args.ferry_device or ("cuda" if str(args.device).startswith("cuda") else "cpu")
    device = args.device if where == "cuda" else "cpu"
    loader = ferry.Loader(args.data, args.batch_size, args.size, device=device,
                          dtype="float16" if args.amp == "fp16" else "float32",
                          crop="random", flip=True, mean=MEAN, std=STD, shuffle=True,
                          seed=args.seed, drop_last=True, rank=rank, world_size=world,
                          workers=args.workers or None, prefetch=args.prefetch,
                          hw_decode=args.hw_decode, epoch_ahead=args.epoch_ahead,
                          output="torch")
    args.ferry_loader = loader  # its workers and stats in the result line

    def epoch(e):
        loader.set_epoch(e)
        for images, labels in loader:
            if images.device.type != torch.device(args.device).type:
                images = images.to(args.device, non_blocking=True)
                labels = labels.to(args.device, non_blocking=True)
            yield images, labels

    return epoch, len(loader)


def main():
    args = parse_args()
    args.ferry_loader = None
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    distributed = world > 1
    if str(args.device).startswith("cuda"):
        torch.cuda.set_device(local_rank)
        args.device = f"cuda:{local_rank}"
        torch.backends.cudnn.benchmark = args.cudnn_benchmark != "off"
    else:  # said, not silently left out
        for flag, asked in (("--kernel-census", args.kernel_census),
                            (f"--cudnn-benchmark {args.cudnn_benchmark}",
                             args.cudnn_benchmark != "on")):
            if asked and rank == 0:
                print(f"{flag}: CUDA only, not on {args.device}: left out", file=sys.stderr)
    if distributed:
        import torch.distributed as dist
        if args.device.startswith("cuda") and args.nccl_high_priority:
            opts = dist.ProcessGroupNCCL.Options()
            opts.is_high_priority_stream = True
            dist.init_process_group("nccl", pg_options=opts)
        else:
            dist.init_process_group("nccl" if args.device.startswith("cuda") else "gloo")
    torch.manual_seed(args.seed)

    import torchvision.models as models
    model = getattr(models, args.arch)(num_classes=1000).to(args.device)
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    if args.cudnn_benchmark == "quiet" and args.device.startswith("cuda"):
        tune_quietly(model, args)
    if args.compile:
        model = torch.compile(model)
    if distributed:
        model = nn.parallel.DistributedDataParallel(
            model, device_ids=[local_rank] if args.device.startswith("cuda") else None,
            broadcast_buffers=args.ddp_bn == "broadcast",
            gradient_as_bucket_view=args.ddp_bucket_view)
    device_type = "cuda" if args.device.startswith("cuda") else "cpu"
    # One fused kernel for the whole update on CUDA (torch >= 2.4), else foreach.
    try:
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4,
                              fused=args.fused and device_type == "cuda")
    except (TypeError, RuntimeError):
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    criterion = nn.CrossEntropyLoss()
    amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.amp)
    scaler = torch.amp.GradScaler(device_type, enabled=args.amp == "fp16" and device_type == "cuda")

    if args.loader == "ferry":
        epoch_iter, steps_per_epoch = ferry_loader(args, rank, world)
    elif args.loader == "dali":
        epoch_iter, steps_per_epoch = dali_loader(args, rank, world)
    elif args.loader == "synthetic":
        epoch_iter, steps_per_epoch = synthetic_loader(args, args.steps or 100)
    else:
        epoch_iter, steps_per_epoch = torch_loader(args, rank, world, distributed)
    util = GpuUtilisation(local_rank).start() if device_type == "cuda" else None

    step, timed_images, t0, data_wait = 0, 0, None, 0.0
    cpu0 = wait0 = 0.0
    st0 = None  # ferry's counters when the timed steps start
    waits = []  # each timed step's data wait: its longest ones are when a GPU may have idled
    timeline = StepTimeline(device_type == "cuda", catch_up=args.forward_stages)
    # the model's own forward starts: after what DDP does first (its buffers' broadcast)
    getattr(model, "module", model).register_forward_pre_hook(lambda *_: timeline.mark())
    if args.forward_stages:
        hook_stages(getattr(model, "module", model), timeline, rank)
    profiler = StepProfile(args, rank, device_type == "cuda")
    census = KernelCensus(args, device_type == "cuda")
    nivcsw0 = None  # the main thread's involuntary switches: how often others pushed it off
    alloc0 = None  # the CUDA caching allocator's counters when the timed steps start
    done = False
    start = time.perf_counter()
    first_step = None  # when the first step began: what came before is start-up
    for e in range(args.epochs):
        model.train()
        it = epoch_iter(e)
        while True:
            tw = time.perf_counter()
            try:
                images, labels = next(it)
            except StopIteration:
                break
            if first_step is None:
                first_step = tw
            if t0 is not None:  # host time the step waited for its batch
                waits.append(time.perf_counter() - tw)
                data_wait += waits[-1]
                timeline.begin()
            if args.channels_last:
                images = images.contiguous(memory_format=torch.channels_last)
            with torch.autocast(device_type, dtype=amp_dtype, enabled=amp_dtype is not None):
                loss = criterion(model(images), labels)
            timeline.mark()
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            timeline.mark()
            scaler.step(opt)
            scaler.update()
            timeline.end()
            step += 1
            census.after_step(step)  # its window ends where the profiler's starts
            profiler.after_step(step)
            if step == args.warmup:
                if device_type == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                cpu0 = time.process_time()
                nivcsw0 = main_thread_switches()
                alloc0 = allocator_counts(device_type == "cuda")
                st0 = args.ferry_loader.stats() if args.ferry_loader else None
                wait0 = st0["wait_s"] if st0 else 0.0
                if util:
                    util.active = True
            elif step > args.warmup:
                timed_images += images.shape[0]
            if rank == 0 and args.log_every and step % args.log_every == 0:
                el = time.perf_counter() - (t0 or start)
                rate = timed_images * world / el if t0 and el > 0 else 0.0
                print(f"epoch {e} step {step}/{steps_per_epoch} loss {loss.item():.3f} "
                      f"{rate:.0f} images/s", flush=True)
            if args.steps and step >= args.steps:
                done = True
                break
        if distributed and args.ddp_bn == "epoch-mean":  # the epoch's end, or the run's
            average_buffers(model, world)
        if done:
            break
    if device_type == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - (t0 or start)
    profiler.finish()
    census.finish()
    # the spread of step times, on the host's clock (with fused SGD, GradScaler does not wait for
    # the GPU): a loader that costs every step the same shifts the median; one that delays some
    # steps (in DDP every rank waits for the slowest) lengthens the tail
    step_ms = percentiles(timeline.periods_ms(time.perf_counter()))
    nivcsw1 = main_thread_switches()
    alloc1 = allocator_counts(device_type == "cuda")
    timed = max(1, step - args.warmup)
    # this rank's process: cores kept busy (the loader's threads and the step's) over the timed
    # steps (not the DataLoader's worker processes); ferry's: its workers, those active at the
    # end, and the share of the images its JPEG engine decoded
    cores_busy = round((time.process_time() - cpu0) / elapsed, 2) if t0 and elapsed > 0 else None
    if util:
        util.stop.set()
    result = {"loader": args.loader, "arch": args.arch, "batch_size": args.batch_size,
              "steps_per_epoch": steps_per_epoch,
              "world_size": world, "steps": step, "timed_steps": max(0, step - args.warmup),
              "images_per_s": round(timed_images * world / elapsed, 1) if t0 else None,
              "gpu_util_mean": round(util.mean(), 1) if util and util.mean() is not None else None,
              "data_wait_ms_per_step": round(1e3 * data_wait / timed, 2),
              "data_wait_ms_max": round(1e3 * max(waits), 2) if waits else None,
              "step_ms": step_ms,
              # each part of the step on the GPU's clock (CUDA) and the host's: on the GPU,
              # "gap" is the stream's idle time between a step's end and the next batch in hand
              # (about 0: the host is ahead); on the host, each part ends when its last launch
              # returns (with --no-fused, "optimizer" holds GradScaler's wait for the GPU)
              "gpu_ms": timeline.summary(gpu=True),
              "host_ms": timeline.summary(gpu=False),
              # --forward-stages: the forward's parts (mean ms), on each clock
              "forward_stages_ms": ({"gpu": timeline.stages_summary(gpu=True),
                                     "host": timeline.stages_summary(gpu=False)}
                                    if args.forward_stages else None),
              # --forward-stages on CUDA: at each mark, the share of timed steps in which the
              # GPU had already reached the previous mark (less than one part behind the host)
              "gpu_caught_up": timeline.caught_up_summary(),
              "main_thread_preempted_per_step": (round((nivcsw1 - nivcsw0) / timed, 2)
                                                 if None not in (nivcsw0, nivcsw1) else None),
              # what PyTorch's allocator did in the timed steps (CUDA): a steady step asks the
              # driver for nothing; a cudaFree there stalls the whole GPU
              "cuda_allocator_timed": ({k: alloc1[k] - alloc0[k] for k in alloc1}
                                       if alloc0 and alloc1 else None),
              "cuda_reserved_mib": (round(torch.cuda.memory_reserved() / 2**20)
                                    if device_type == "cuda" else None),
              # steps that waited over 5 ms, and where (the step numbers, epoch starts included)
              "data_waits_over_5ms": [args.warmup + 1 + i for i, w in enumerate(waits)
                                      if w > 5e-3],
              "amp": args.amp, "fused_sgd": args.fused, "device": args.device,
              "nccl_high_priority": args.nccl_high_priority,
              "cudnn_benchmark": args.cudnn_benchmark if device_type == "cuda" else None,
              "kernel_census": census.result,
              "ddp": ({"broadcast_buffers": args.ddp_bn == "broadcast", "bn_stats": args.ddp_bn,
                       "gradient_as_bucket_view": args.ddp_bucket_view} if distributed else None),
              # the model's running statistics as the run leaves them: under DDP with
              # --ddp-bn epoch-mean every rank's is the same
              "bn_stats_digest": buffers_digest(model),
              "ferry_device": (args.ferry_device or device_type) if args.loader == "ferry" else None,
              "cores_busy": cores_busy,
              "profiled_steps": args.profile_steps if args.profile else 0,
              # where the run's wall time went: imports, model, loader and DDP up to the first
              # batch asked for; the warm-up steps (cuDNN's tuning among them); the timed steps
              "seconds": {"start_up": round((first_step or start) - BEGUN, 2),
                          "warmup": round(t0 - first_step, 2) if t0 and first_step else None,
                          "timed": round(elapsed, 2) if t0 else None}}
    if args.ferry_loader is not None:
        result["ferry_workers"] = args.ferry_loader.workers
        st = args.ferry_loader.stats()  # the whole run's: the timed steps' images came early
        result["ferry_workers_active"] = st.get("workers_active")
        result["ferry_engine_share"] = (round(st["gpu_decoded"] / st["images"], 3)
                                        if st["images"] > 0 else None)
        # of the data wait, the part inside ferry's C loader (a batch not ready yet, or its GPU
        # kernels not done); the rest is Python's and torch's per-batch work
        result["ferry_wait_ms_per_step"] = round(
            1e3 * (st["wait_s"] - wait0) / timed, 2) if t0 else None
        # the engine's share of the images made while the timed steps ran (the whole run's
        # share above includes the first batches, made before the step started)
        made = st["images"] - st0["images"] if st0 else 0
        result["ferry_engine_share_timed"] = (round((st["gpu_decoded"] - st0["gpu_decoded"])
                                                    / made, 3) if made > 0 else None)
    if distributed:  # every rank's own figures: in DDP the slowest rank sets the pace
        keys = ("data_wait_ms_per_step", "data_wait_ms_max", "data_waits_over_5ms", "step_ms",
                "cores_busy", "gpu_util_mean", "gpu_ms", "host_ms", "main_thread_preempted_per_step",
                "ferry_wait_ms_per_step", "ferry_engine_share", "ferry_engine_share_timed",
                "ferry_workers_active", "kernel_census", "bn_stats_digest",
                "cuda_allocator_timed", "cuda_reserved_mib", "forward_stages_ms", "gpu_caught_up")
        mine = {k: result[k] for k in keys if k in result}
        mine["rank"] = rank
        everyone = [None] * world
        torch.distributed.all_gather_object(everyone, mine)
        result["ranks"] = everyone
    if rank == 0:
        print(json.dumps(result), flush=True)
    if distributed:
        torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
