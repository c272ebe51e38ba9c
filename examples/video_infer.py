#!/usr/bin/env python3
"""Object detection over video files, fed by ferry: frames decoded, sampled and
resized into batches (ferry.VideoReader, on the CPU or the GPU's NVDEC), a
detection model, non-maximum suppression, and a CSV of the detections.

    # torchvision's detector, random weights (no download), frames on a GPU
    python examples/video_infer.py clips/*.mp4 --model torchvision:fasterrcnn_resnet50_fpn \\
        --weights none --device cuda -o detections.csv
    # a local checkpoint, one frame in 10, the first minute
    python examples/video_infer.py clip.mp4 --model torchvision:retinanet_resnet50_fpn \\
        --weights retinanet.pth --stride 10 --end 60 --device cuda:1
    # your own model: module:factory, the factory returns the callable
    python examples/video_infer.py clip.mp4 --model mypkg.models:make_detector --device cpu
    # the same run with PyAV or OpenCV decoding on the CPU, for comparison
    python examples/video_infer.py clips/*.mp4 --model ... --decoder pyav --json

Output: CSV on stdout (or -o FILE), one row per detection:
file, frame (frame number from 0), timestamp (seconds), class, score, x1, y1,
x2, y2 (the box in the pixels of the original, upright frame: ferry's resize
and crop undone). Progress and a summary with frames/s go to stderr; --json
adds a JSON summary (stderr, or --json FILE).

Models. torchvision:NAME is a torchvision detection model (list of CHW float
images in [0, 1] in, a dict of boxes, labels and scores per image out; it
does its own score threshold and NMS, given --score and --iou); --weights
none (random, --seed), default (torchvision's, downloaded or cached), or a
.pth state dict. module.path:factory (or file.py:factory) names a function
whose result is the model, called with --model-arg KEY=VALUE keyword
arguments: a torch.nn.Module gets a [N, 3, H, W] float tensor in [0, 1] on
--device; any other callable a NumPy float32 array [N, 3, H, W] in [0, 1]
(--input overrides). Either returns, per image, a dict with boxes, scores and
labels or a tuple (boxes [K, 4] x1 y1 x2 y2 in input pixels, scores,
labels); --score and class-wise NMS (--iou) are applied to it here
(torchvision.ops.batched_nms for a model that takes tensors, when torchvision
imports; else a NumPy NMS, so that a NumPy model never loads torch).

Decoders (--decoder): ferry (the default), or PyAV / OpenCV decoding on the
CPU, frames resized to the same size (--baseline-resize) and sent to the
model's device: same model, NMS and CSV. Each decodes the next batch in a
thread while the model works on the current one (--no-prefetch: in turn);
--streams N decodes N files at once (rows of different files interleave).
frames/s is measured from the first frame asked for to the last detection
written (model loading and --warmup left out); the summary also says how long
the loop waited for batches and how long the model, NMS and CSV took. Exit
codes: 0; 1 a file failed (reported, the run goes on with the next file;
--strict stops at the first); 2 bad command line or a missing package.
"""
import argparse
import csv
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # infer_model, infer_decode

import ferry  # noqa: E402
# Geometry, output_size and nms_numpy are used by tests/python/test_video_infer.py
from infer_decode import (PROG, Feed, Geometry, Resizer, Streams,  # noqa: E402,F401
                          baseline_resize, events, output_size, say)
from infer_model import UsageError, load_model, nms_numpy  # noqa: E402,F401

VIDEO_EXTENSIONS = (".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".ts", ".mts", ".h264",
                    ".264", ".hevc", ".265", ".ivf", ".y4m")
COLUMNS = ["file", "frame", "timestamp", "class", "score", "x1", "y1", "x2", "y2"]


# ------------------------------------------------------------- command line

def parse_size(text):
    """--size N (the long side, aspect kept) or WxH: ("long", N) or
    ("exact", height, width)."""
    t = str(text).lower().strip()
    try:
        if "x" in t:
            w, h = (int(v) for v in t.split("x", 1))
            if not (1 <= w <= 16384 and 1 <= h <= 16384):
                raise ValueError
            return ("exact", h, w)
        n = int(t)
        if not 1 <= n <= 16384:
            raise ValueError
        return ("long", n)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--size wants N or WxH (1..16384), not {text!r}")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="video_infer.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("videos", nargs="+", help="video files, or directories (their video files)")
    p.add_argument("--model", required=True,
                   help="torchvision:NAME, module.path:factory or file.py:factory")
    p.add_argument("--weights", default="none",
                   help="torchvision models: none (random, --seed), default, or a .pth path")
    p.add_argument("--num-classes", type=int, default=None,
                   help="torchvision models: classes of the weights file (default: the model's)")
    p.add_argument("--model-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="a keyword argument for the factory (a Python literal, else a string)")
    p.add_argument("--input", choices=["auto", "numpy", "tensor", "list"], default="auto",
                   help="what the model takes: numpy [N,3,H,W]; tensor [N,3,H,W] on --device; "
                        "list of [3,H,W] tensors (auto: list for torchvision, tensor for a "
                        "torch.nn.Module, else numpy)")
    p.add_argument("--no-nms", dest="nms", action="store_false",
                   help="a factory's model does its own NMS: apply only --score")
    p.add_argument("--device", default=None,
                   help="cpu, cuda or cuda:N: where the model runs and, with --decoder ferry, "
                        "where frames are decoded (default: cuda when torch sees a GPU and the "
                        "model takes tensors, else cpu)")
    p.add_argument("--decode-device", default=None,
                   help="ferry: decode on this device instead (cpu: libavcodec on the CPU, "
                        "batches uploaded to --device)")
    p.add_argument("--decoder", choices=["ferry", "pyav", "opencv"], default="ferry",
                   help="pyav, opencv: a CPU-decoding baseline for comparison")
    p.add_argument("--baseline-resize", choices=["auto", "cv2", "torch", "pillow"],
                   default="auto",
                   help="pyav/opencv: how frames are resized (auto: torch on a CUDA device, "
                        "else cv2 when importable, else Pillow)")
    p.add_argument("--size", type=parse_size, default=("long", 640), metavar="N|WxH",
                   help="model input: N: the long side N, aspect kept (default 640); WxH: "
                        "exactly (stretched, or with --crop center the centre of that aspect)")
    p.add_argument("--crop", choices=["none", "center"], default="none",
                   help="center: the largest centred box of the output's aspect (N: square)")
    p.add_argument("--stride", type=int, default=1, help="keep every Nth frame")
    p.add_argument("--rate", type=float, default=0.0, help="or keep this many frames a second")
    p.add_argument("--start", type=float, default=0.0, help="seconds of stream time")
    p.add_argument("--end", type=float, default=0.0, help="seconds (0: to the end)")
    p.add_argument("--batch", type=int, default=8, help="frames per model call")
    p.add_argument("--dtype", choices=["float32", "float16"], default="float32",
                   help="float16: half batches and autocast (CUDA only)")
    p.add_argument("--threads", type=int, default=0, help="decoder threads (0: every core)")
    p.add_argument("--streams", type=int, default=1,
                   help="decode this many files at once, each in a thread of its own; the "
                        "model takes batches as they are ready (rows of different files "
                        "interleave in the CSV; each file's rows stay in frame order). More "
                        "than one keeps NVDEC's engines busy while the model works")
    p.add_argument("--no-prefetch", dest="prefetch", action="store_false",
                   help="decode and run the model in turn (default: the next batch is decoded "
                        "in a thread while the model works on this one)")
    p.add_argument("--score", type=float, default=0.5, help="keep detections scoring >= this")
    p.add_argument("--iou", type=float, default=0.5,
                   help="NMS: drop a box overlapping a better one of its class by more")
    p.add_argument("--max-det", type=int, default=100, help="detections per frame at most")
    p.add_argument("--seed", type=int, default=0, help="random weights (--weights none)")
    p.add_argument("--warmup", type=int, default=1,
                   help="model calls on a blank batch before timing (first file's size)")
    p.add_argument("--class-ids", action="store_true",
                   help="write class numbers even where the weights name the classes")
    p.add_argument("-o", "--output", default="-", help="CSV file (default: stdout)")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE",
                   help="a JSON summary to stderr, or to FILE")
    p.add_argument("--strict", action="store_true",
                   help="stop at the first file that fails; frames decoded with errors "
                        "(damaged data the decoder concealed) fail their file")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    if args.stride < 1:
        p.error("--stride must be >= 1")
    if args.stride > 1 and args.rate > 0:
        p.error("--stride and --rate exclude each other: give one")
    if args.rate < 0 or args.start < 0 or args.end < 0:
        p.error("--rate, --start and --end must be >= 0")
    if args.end and args.end <= args.start:
        p.error(f"--end ({args.end}) must be after --start ({args.start})")
    if not 1 <= args.batch <= 65536:
        p.error("--batch must be 1..65536")
    if not 0 <= args.iou <= 1:
        p.error("--iou must be in 0..1")
    if args.max_det < 1:
        p.error("--max-det must be >= 1")
    if not 1 <= args.streams <= 256:
        p.error("--streams must be 1..256")
    if args.streams > 1 and not args.prefetch:
        p.error("--no-prefetch decodes and runs the model in turn: it goes with --streams 1")
    if args.decode_device and args.decoder != "ferry":
        p.error("--decode-device is for --decoder ferry (PyAV and OpenCV decode on the CPU)")
    return args


def video_files(items):
    """The files to run: files as given, directories' video files sorted."""
    out = []
    for item in items:
        if os.path.isdir(item):
            names = sorted(n for n in os.listdir(item)
                           if n.lower().endswith(VIDEO_EXTENSIONS) and not n.startswith("."))
            out += [os.path.join(item, n) for n in names]
        else:
            out.append(item)  # a missing file is reported when its turn comes
    return out



# -------------------------------------------------------------------- output

class Progress:
    """Files done, frames and frames/s on stderr: a line per file (on a
    terminal also a line that rewrites itself as batches come)."""

    def __init__(self, total, quiet):
        self.total, self.quiet = total, quiet
        self.tty = sys.stderr.isatty() and not quiet
        self.t0 = None
        self.files = self.failed = self.frames = self.detections = 0
        self.last = 0.0
        self.wait_s = self.model_s = 0.0  # waiting for batches; the model and the CSV

    def start(self):
        self.t0 = time.perf_counter()

    def rate(self):
        el = time.perf_counter() - self.t0
        return self.frames / el if el > 0 else 0.0

    def batch(self, path, n):
        self.frames += n
        now = time.perf_counter()
        if self.tty and now - self.last > 0.1:
            self.last = now
            print(f"\r{PROG}: [{self.files}/{self.total}] {os.path.basename(path)}: "
                  f"{self.frames} frames, {self.rate():.1f} frames/s", end="", file=sys.stderr,
                  flush=True)

    def file_done(self, path, frames, detections, seconds, error=None):
        self.files += 1
        self.detections += detections
        if self.tty:
            print("\r\033[K", end="", file=sys.stderr)
        if error is not None:
            self.failed += 1
            msg = error if path in error else f"{path}: {error}"
            done = f"; its first {frames} frames are in the CSV" if frames else ""
            say(f"error: {msg}{done}")
        elif not self.quiet:
            say(f"[{self.files}/{self.total}] {path}: {frames} frames, {detections} detections "
                f"in {seconds:.2f} s; all: {self.frames} frames, {self.rate():.1f} frames/s")


def open_output(name):
    if name == "-":
        return sys.stdout, False
    return open(name, "w", newline=""), True


def run(args, model):
    files = video_files(args.videos)
    if not files:
        raise UsageError("no video files found")
    feed = Feed(model)
    resizer = None
    if args.decoder == "pyav":
        try:
            import av  # noqa: F401
        except ImportError:
            raise UsageError("--decoder pyav needs PyAV: pip install av")
    elif args.decoder == "opencv":
        try:
            import cv2  # noqa: F401
        except ImportError:
            raise UsageError("--decoder opencv needs OpenCV: pip install opencv-python-headless")
    if args.decoder != "ferry":
        resizer = Resizer(baseline_resize(args, model), feed)
        args.baseline_resize = resizer.how
    if args.warmup > 0:
        warm_up(args, model, feed, files[0])

    out, close = open_output(args.output)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    progress = Progress(len(files), args.quiet)
    progress.start()
    if args.prefetch:  # one decoding thread, or one per --streams
        stream = Streams(files, args, feed, resizer, args.streams)
    else:
        stream = events(files, args, feed, resizer)
    stop = False
    state = {}  # per file being read: [start time, frames, detections, the model's error]
    try:
        while True:
            t0 = time.perf_counter()
            try:
                kind, job, item = next(stream)
            except StopIteration:
                break
            path = job[1]
            t1 = time.perf_counter()
            progress.wait_s += t1 - t0
            st = state.setdefault(job, [t0, 0, 0, None])
            if kind == "batch" and st[3] is None:
                try:
                    n, d = detect(model, item, path, writer, args)
                    st[1], st[2] = st[1] + n, st[2] + d
                    progress.batch(path, n)
                except (UsageError, BrokenPipeError):
                    raise
                except Exception as e:  # the model's: this file fails, the run goes on
                    st[3] = f"{path}: the model failed: {type(e).__name__}: {e}"
                    if isinstance(stream, Streams):
                        stream.drop(job)
                progress.model_s += time.perf_counter() - t1
            elif kind != "batch":
                error = item if kind == "error" else st[3]
                progress.file_done(path, st[1], st[2], time.perf_counter() - st[0], error)
                del state[job]
                if error is not None and args.strict:
                    say("--strict: stopping at the first file that failed")
                    stop = True
                    break
    finally:
        if hasattr(stream, "close"):
            stream.close()
        out.flush()
        if close:
            out.close()
    seconds = time.perf_counter() - progress.t0
    return summarise(args, model, progress, len(files), seconds, stop)


def detect(model, item, path, writer, args):
    """One batch through the model, its rows written: (frames, detections)."""
    x, indices, times, geom = item
    results = model(x)
    del x  # done with the batch's memory: the reader may overwrite it
    if len(results) != len(indices):
        raise RuntimeError(f"{len(results)} results for {len(indices)} frames")
    dets = 0
    for (boxes, scores, labels), index, t in zip(results, indices, times):
        for b, s, c in zip(geom.to_frame(boxes), scores, labels):
            writer.writerow([path, index, f"{t:.6f}", model.class_name(c, ids=args.class_ids),
                             f"{s:.5f}", f"{b[0]:.2f}", f"{b[1]:.2f}", f"{b[2]:.2f}",
                             f"{b[3]:.2f}"])
            dets += 1
    return len(indices), dets


def warm_up(args, model, feed, first):
    """--warmup model calls on a blank batch of the first file's input size
    (not timed: the first calls of a CUDA model set up its kernels)."""
    try:
        if args.size[0] == "exact":
            h, w = args.size[1], args.size[2]
        else:
            with ferry.VideoReader(first, threads=1) as probe:
                info = probe.info
            h, w = output_size(args.size, args.crop, info["upright_width"],
                               info["upright_height"])
    except Exception:
        return  # the file's error is reported in its turn
    blank = np.zeros((args.batch, h, w, 3), dtype=np.uint8)
    for _ in range(args.warmup):
        model(feed.frames_u8(blank))
    if model.device.startswith("cuda"):
        model.torch.cuda.synchronize(model.device)


def summarise(args, model, progress, nfiles, seconds, stopped):
    fps = progress.frames / seconds if seconds > 0 else 0.0
    size = (f"{args.size[2]}x{args.size[1]}" if args.size[0] == "exact"
            else f"long side {args.size[1]}")
    decode_device = (args.decode_device or args.device) if args.decoder == "ferry" else "cpu"
    failed = f" ({progress.failed} failed)" if progress.failed else ""
    say(f"{progress.files} of {nfiles} files{failed}, {progress.frames} frames, "
        f"{progress.detections} detections in {seconds:.2f} s: {fps:.1f} frames/s "
        f"(decoder {args.decoder} on {decode_device}, model {model.spec} on {model.device}, "
        f"{size}, batch {args.batch}; waited {progress.wait_s:.2f} s for batches, "
        f"{progress.model_s:.2f} s in the model, NMS and CSV)")
    summary = {"decoder": args.decoder, "device": model.device, "decode_device": decode_device,
               "model": model.spec, "files": progress.files, "failed": progress.failed,
               "frames": progress.frames, "detections": progress.detections,
               "seconds": round(seconds, 4), "frames_per_s": round(fps, 2),
               "wait_s": round(progress.wait_s, 4), "model_s": round(progress.model_s, 4),
               "size": size, "batch": args.batch, "dtype": args.dtype,
               "prefetch": args.prefetch, "streams": args.streams,
               "baseline_resize": args.baseline_resize if args.decoder != "ferry" else None}
    if args.json == "-":
        print(json.dumps(summary), file=sys.stderr, flush=True)
    elif args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
    return 1 if progress.failed or stopped else 0


def main(argv=None):
    args = parse_args(argv)
    try:
        model, load_s = load_model(args)
        if not args.quiet:
            say(f"model {args.model} on {model.device} ({model.kind} input) loaded in "
                f"{load_s:.2f} s")
        return run(args, model)
    except UsageError as e:
        say(str(e))
        return 2
    except BrokenPipeError:  # the reader of stdout went away (| head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
