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
thread while the model works on the current one (--no-prefetch: in turn).
frames/s is measured from the first frame asked for to the last detection
written (model loading and --warmup left out); the summary also says how long
the loop waited for batches and how long the model, NMS and CSV took. Exit
codes: 0; 1 a file failed (reported, the run goes on with the next file;
--strict stops at the first); 2 bad command line or a missing package.
"""
import argparse
import ast
import concurrent.futures
import csv
import importlib
import importlib.util
import json
import math
import os
import sys
import time

import numpy as np

import ferry

PROG = "video_infer"
VIDEO_EXTENSIONS = (".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".ts", ".mts", ".h264",
                    ".264", ".hevc", ".265", ".ivf", ".y4m")
COLUMNS = ["file", "frame", "timestamp", "class", "score", "x1", "y1", "x2", "y2"]


class UsageError(Exception):
    """A bad option or a missing package: exit 2 with the message."""


def say(msg):
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


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


# ----------------------------------------------------------------- geometry

def output_size(size, crop, width, height):
    """(height, width) of the model's input for a frame shown width x height."""
    if size[0] == "exact":
        return size[1], size[2]
    n = size[1]
    if crop == "center":
        return n, n
    if width >= height:
        return max(1, round(height * n / width)), n
    return n, max(1, round(width * n / height))


class Geometry:
    """Where the model's input comes from in the upright frame: the box
    (x0, y0, x1, y1) that ferry resizes to out_w x out_h (the whole frame,
    or with crop center the largest centred box of the output's aspect, as
    src/video/reader.c plans it). Box coordinates scale linearly: input
    pixel x is frame pixel x0 + x * sx."""

    def __init__(self, width, height, out_h, out_w, crop):
        self.width, self.height, self.out_h, self.out_w = width, height, out_h, out_w
        if crop == "center":
            s = min(width / out_w, height / out_h)
            self.sx = self.sy = s
            self.x0, self.y0 = (width - out_w * s) / 2, (height - out_h * s) / 2
        else:
            self.sx, self.sy, self.x0, self.y0 = width / out_w, height / out_h, 0.0, 0.0
        self.box = (self.x0, self.y0, self.x0 + out_w * self.sx, self.y0 + out_h * self.sy)

    def to_frame(self, boxes):
        """[K, 4] boxes in input pixels to frame pixels, clipped to the frame."""
        b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4).copy()
        b[:, 0::2] = np.clip(self.x0 + b[:, 0::2] * self.sx, 0, self.width)
        b[:, 1::2] = np.clip(self.y0 + b[:, 1::2] * self.sy, 0, self.height)
        return b


# ------------------------------------------------------------------ sampling

class Sampler:
    """The baselines' frame selection, the rules of src/video/sample.c: a
    time range [start, end), then every stride-th frame (by frame number)
    or the first frame at or after each point of a 1/rate grid anchored at
    the first frame of the range. keep() is 1, 0, or -1 past the end."""
    EPS = 1e-6

    def __init__(self, stride, rate, start, end):
        self.stride, self.rate, self.start, self.end = stride, rate, start, end
        self.first_index = None
        self.first_t = self.next_t = None

    def keep(self, t, index):
        if t + self.EPS < self.start:
            return 0
        if self.end > 0 and t + self.EPS >= self.end:
            return -1
        if self.first_index is None:
            self.first_index = index
        if self.rate <= 0:
            return int((index - self.first_index) % self.stride == 0)
        if self.next_t is not None and t + self.EPS < self.next_t:
            return 0
        if self.first_t is None:
            self.first_t = t
        k = math.floor((t - self.first_t) * self.rate + self.EPS) + 1
        self.next_t = self.first_t + k / self.rate
        return 1


# -------------------------------------------------------------------- models

def need_torch(why):
    try:
        import torch  # noqa: F401
    except ImportError:
        raise UsageError(f"{why} needs PyTorch: pip install torch torchvision (or use a NumPy "
                         "model: --model module:factory whose callable takes NumPy arrays)")
    return torch


def literal(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def load_factory(spec):
    """module.path:name or path/to/file.py:name (name may be dotted)."""
    mod_name, _, attr = spec.rpartition(":")
    if not mod_name or not attr:
        raise UsageError(f"--model {spec!r}: want torchvision:NAME, module.path:factory or "
                         "file.py:factory")
    try:
        if mod_name.endswith(".py") or os.sep in mod_name:
            if not os.path.isfile(mod_name):
                raise UsageError(f"--model {spec!r}: no such file {mod_name}")
            name = "video_infer_model_" + os.path.splitext(os.path.basename(mod_name))[0]
            s = importlib.util.spec_from_file_location(name, mod_name)
            module = importlib.util.module_from_spec(s)
            sys.modules[name] = module
            s.loader.exec_module(module)
        else:
            module = importlib.import_module(mod_name)
    except ImportError as e:
        raise UsageError(f"--model {spec!r}: cannot import {mod_name}: {e}")
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"--model {spec!r}: {mod_name} has no {attr}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UsageError(f"--model {spec!r}: {attr} is not callable")
    return obj


class Model:
    """The model and its conventions: input kind (numpy, tensor or list),
    whether NMS is applied here, class names; __call__ gives per image
    (boxes [K, 4] float64, scores [K], labels [K]) NumPy arrays in input
    pixels after --score, NMS and --max-det."""

    def __init__(self, fn, kind, device, dtype, nms, names, score, iou, max_det, spec):
        self.fn, self.kind, self.device, self.dtype = fn, kind, device, dtype
        self.nms, self.names, self.spec = nms, names, spec
        self.score, self.iou, self.max_det = score, iou, max_det
        self.torch = self.batched_nms = None
        if kind != "numpy":  # a NumPy model never loads torch (seconds of start-up)
            import torch
            self.torch = torch
            try:
                import torchvision.ops
                self.batched_nms = torchvision.ops.batched_nms
            except Exception:  # no torchvision (or a broken one): the NumPy NMS
                pass

    def __call__(self, x):
        if self.torch is None:
            return [self.post(*split_output(o, i)) for i, o in enumerate(self.fn(x))]
        torch = self.torch
        arg = list(x) if self.kind == "list" else x
        with torch.inference_mode():
            if self.dtype == "float16":
                with torch.autocast("cuda", dtype=torch.float16):
                    outs = self.fn(arg)
            else:
                outs = self.fn(arg)
            return [self.post(*split_output(o, i)) for i, o in enumerate(outs)]

    def post(self, boxes, scores, labels):
        """--score, NMS (class-wise, where this side does it), --max-det:
        NumPy arrays out, best score first. Tensors stay on their device
        for the score filter and torchvision's NMS."""
        if self.torch is not None and self.torch.is_tensor(boxes):
            keep = scores >= self.score
            boxes, scores, labels = boxes[keep].float(), scores[keep].float(), labels[keep]
            if self.nms and self.batched_nms is not None:
                k = self.batched_nms(boxes, scores, labels, self.iou)[:self.max_det]
                return tuple(t[k].detach().cpu().numpy() for t in (boxes, scores, labels))
            boxes, scores, labels = (t.detach().cpu().numpy() for t in (boxes, scores, labels))
        boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        scores = np.asarray(scores, dtype=np.float64).reshape(-1)
        labels = np.asarray(labels).reshape(-1)
        keep = np.flatnonzero(scores >= self.score)
        boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
        if self.nms and self.batched_nms is not None:
            torch = importlib.import_module("torch")
            k = self.batched_nms(torch.from_numpy(boxes), torch.from_numpy(scores),
                                 torch.from_numpy(labels.astype(np.int64)), self.iou).numpy()
        elif self.nms:
            k = nms_numpy(boxes, scores, labels, self.iou)
        else:  # the model's own NMS: best first, as the others
            k = np.argsort(-scores, kind="stable")
        k = k[:self.max_det]
        return boxes[k], scores[k], labels[k]

    def class_name(self, label, ids=False):
        """The class column: the weights' name for a label number where
        they name the classes (and ids is off), else the number."""
        if isinstance(label, (np.integer, int)):
            i = int(label)
            if self.names and not ids and 0 <= i < len(self.names):
                return self.names[i]
            return i
        return label.item() if isinstance(label, np.generic) else label


def split_output(o, i):
    """One image's output: a dict (boxes, scores, labels) or a 3-tuple."""
    if isinstance(o, dict):
        try:
            return o["boxes"], o["scores"], o["labels"]
        except KeyError as e:
            raise RuntimeError(f"the model's output for image {i} has no {e} key (want boxes, "
                               "scores and labels)") from None
    if isinstance(o, (tuple, list)) and len(o) == 3:
        return o
    raise RuntimeError(f"the model's output for image {i} is a {type(o).__name__}: want a dict "
                       "of boxes, scores and labels or a tuple (boxes, scores, labels)")


def nms_numpy(boxes, scores, labels, iou):
    """Class-wise non-maximum suppression: indices of the boxes kept, best
    score first. A box is dropped when it overlaps a better-scoring kept box
    of its class by IoU > iou (torchvision.ops.batched_nms's rule)."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    labels = np.asarray(labels).reshape(-1)
    area = np.clip(boxes[:, 2] - boxes[:, 0], 0, None) * np.clip(boxes[:, 3] - boxes[:, 1], 0,
                                                                   None)
    keep = []
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        order = idx[np.argsort(-scores[idx], kind="stable")]
        while order.size:
            i, rest = order[0], order[1:]
            keep.append(i)
            w = np.minimum(boxes[i, 2], boxes[rest, 2]) - np.maximum(boxes[i, 0], boxes[rest, 0])
            h = np.minimum(boxes[i, 3], boxes[rest, 3]) - np.maximum(boxes[i, 1], boxes[rest, 1])
            inter = np.clip(w, 0, None) * np.clip(h, 0, None)
            union = area[i] + area[rest] - inter
            overlap = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
            order = rest[overlap <= iou]
    keep = np.asarray(keep, dtype=np.int64)
    return keep[np.argsort(-scores[keep], kind="stable")]


def torchvision_model(name, args, device):
    torch = need_torch(f"--model torchvision:{name}")
    try:
        import torchvision
        from torchvision.models import detection
    except ImportError:
        raise UsageError(f"--model torchvision:{name} needs torchvision: pip install torchvision")
    if name not in detection.__dict__ or not callable(detection.__dict__[name]):
        known = sorted(n for n, f in detection.__dict__.items()
                       if callable(f) and n[0].islower() and "_" in n and not n.startswith("_")
                       and not n.endswith("_weights"))
        raise UsageError(f"--model torchvision:{name}: not a torchvision detection model "
                         f"(torchvision {torchvision.__version__} has: {', '.join(known)})")
    # the thresholds go into the model: its own score filter and NMS use them
    if "rcnn" in name:
        kw = dict(box_score_thresh=args.score, box_nms_thresh=args.iou,
                  box_detections_per_img=args.max_det)
    else:
        kw = dict(score_thresh=args.score, nms_thresh=args.iou, detections_per_img=args.max_det)
    names = None
    try:
        meta = torchvision.models.get_model_weights(name).DEFAULT.meta
        names = list(meta.get("categories") or []) or None
    except Exception:  # older torchvision: no registry; numbers then
        pass
    if args.num_classes:
        kw["num_classes"] = args.num_classes
    torch.manual_seed(args.seed)
    w = args.weights
    try:
        if w == "default":
            if args.num_classes:
                raise UsageError("--num-classes goes with --weights none or a file")
            model = detection.__dict__[name](weights="DEFAULT", **kw)
        else:
            model = detection.__dict__[name](weights=None, weights_backbone=None, **kw)
    except UsageError:
        raise
    except Exception as e:
        hint = " (no network? --weights none or a local .pth)" if w == "default" else ""
        raise UsageError(f"cannot make torchvision:{name} with --weights {w}: {e}{hint}")
    if w not in ("none", "default"):
        if not os.path.isfile(w):
            raise UsageError(f"--weights {w}: no such file (want none, default or a .pth file)")
        try:
            state = torch.load(w, map_location="cpu", weights_only=True)
        except Exception as e:
            raise UsageError(f"--weights {w}: cannot load it as a state dict: {e}")
        if isinstance(state, dict) and "model" in state and isinstance(state["model"], dict):
            state = state["model"]  # a training checkpoint (torchvision's references)
        try:
            model.load_state_dict(state)
        except Exception as e:
            raise UsageError(f"--weights {w} does not fit torchvision:{name}: {str(e)[:400]} "
                             "(another --num-classes?)")
    head_classes = args.num_classes or (len(names) if names else None)
    if names and head_classes != len(names):
        names = None
    return model.to(device).eval(), names


def load_model(args):
    """(Model, load seconds); UsageError for what the user can fix."""
    t0 = time.perf_counter()
    spec = args.model
    if spec.startswith("torchvision:"):
        kind = "list" if args.input == "auto" else args.input
        if kind == "numpy":
            raise UsageError("torchvision models take tensors (--input list or tensor)")
        need_torch(f"--model {spec}")
        device = resolve_device(args, torch_model=True)
        fn, names = torchvision_model(spec.split(":", 1)[1], args, device)
        nms = False  # the model did it, with --iou
    else:
        factory = load_factory(spec)
        kwargs = {}
        for item in args.model_arg:
            k, eq, v = item.partition("=")
            if not eq or not k.isidentifier():
                raise UsageError(f"--model-arg {item!r}: want KEY=VALUE")
            kwargs[k] = literal(v)
        fn = factory(**kwargs)
        kind = args.input
        if kind == "auto":
            kind = "numpy"
            if "torch" in sys.modules:
                import torch
                if isinstance(fn, torch.nn.Module):
                    kind = "tensor"
        if kind != "numpy":
            torch = need_torch(f"--model {spec} (--input {kind})")
        device = resolve_device(args, torch_model=kind != "numpy")
        if kind != "numpy" and isinstance(fn, torch.nn.Module):
            fn = fn.to(device).eval()
        names, nms = getattr(fn, "class_names", None), args.nms
    if kind == "numpy" and device != "cpu":
        raise UsageError(f"a NumPy model runs on the CPU, not {device}: --device cpu (or "
                         "--input tensor for a model that takes torch tensors)")
    if kind == "numpy" and args.dtype != "float32":
        raise UsageError("a NumPy model takes float32 (--dtype float32)")
    if args.dtype == "float16" and not device.startswith("cuda"):
        raise UsageError("--dtype float16 is for CUDA devices")
    model = Model(fn, kind, device, args.dtype, nms, names, args.score, args.iou, args.max_det,
                  spec)
    if device.startswith("cuda"):
        model.torch.cuda.synchronize(device)
    return model, time.perf_counter() - t0


def resolve_device(args, torch_model):
    """--device (and --decode-device) as cpu or cuda:N."""
    dev = args.device
    if dev is None:
        dev = "cpu"
        if torch_model:
            import torch
            dev = "cuda" if torch.cuda.is_available() else "cpu"
    args.device = dev = device_name(dev, "--device")
    if args.decode_device:
        args.decode_device = device_name(args.decode_device, "--decode-device")
        if not torch_model and args.decode_device != "cpu":
            raise UsageError("a NumPy model takes batches decoded on the CPU (--decode-device "
                             "cpu)")
    return dev


def device_name(dev, what):
    dev = str(dev).lower()
    if dev != "cpu" and not (dev == "cuda" or (dev.startswith("cuda:") and dev[5:].isdigit())):
        raise UsageError(f"{what} {dev!r}: want cpu, cuda or cuda:N")
    if dev.startswith("cuda"):
        torch = need_torch(f"{what} {dev}")
        if not torch.cuda.is_available():
            raise UsageError(f"{what} {dev}: torch sees no CUDA device")
        if dev == "cuda":
            dev = f"cuda:{torch.cuda.current_device()}"
    return dev


# ------------------------------------------------------------------ decoding

class Feed:
    """Model input from what the decoders give: a ferry batch (zero copy
    through DLPack), or uint8 frames [N, H, W, 3] from the baselines."""

    def __init__(self, model):
        self.kind, self.device, self.dtype = model.kind, model.device, model.dtype
        self.torch = model.torch

    def ferry(self, batch):
        if self.torch is None:
            return np.from_dlpack(batch)  # [N, 3, H, W] float32 in [0, 1], the reader's memory
        x = self.torch.from_dlpack(batch)  # no copy; on the GPU with a CUDA reader
        if str(x.device) != self.device:  # uint8 from another device: upload, scale
            x = x.to(self.device).to(getattr(self.torch, self.dtype)).div_(255)
        return x

    def frames_u8(self, frames):
        """uint8 [N, H, W, 3] (NumPy) at the model's input size."""
        if self.torch is None:
            return np.ascontiguousarray(frames.transpose(0, 3, 1, 2), dtype=np.float32) / 255.0
        t = self.torch.from_numpy(frames).to(self.device)
        return t.permute(0, 3, 1, 2).to(getattr(self.torch, self.dtype)).div_(255).contiguous()


def ferry_batches(path, args, feed):
    """(model input, frame numbers, timestamps, Geometry) per batch."""
    decode_device = args.decode_device or args.device
    if args.size[0] == "exact":
        out_h, out_w = args.size[1], args.size[2]
    else:  # the long side: the upright size first (the container's header)
        with ferry.VideoReader(path, threads=1) as probe:
            info = probe.info
        out_h, out_w = output_size(args.size, args.crop, info["upright_width"],
                                   info["upright_height"])
    # A batch is a view of the reader's buffer, valid until the next one is
    # fetched (GPU: the one after). In turn (--no-prefetch), the model is
    # done with batch k and its detections are on the host before k+1 is
    # fetched. With prefetching, k+1 is fetched while the model works on k:
    # a GPU batch stays valid for that, an upload to another device is a copy
    # of its own, and a host batch the model reads in place is copied
    # (copy=True: each batch owns its frames).
    copy = args.prefetch and decode_device == "cpu" and feed.device == "cpu"
    # batches for another device travel as uint8 (a quarter of float32's
    # bytes) and become floats in [0, 1] there
    dtype = args.dtype if decode_device == feed.device else "uint8"
    reader = ferry.VideoReader(path, size=(out_h, out_w), crop=args.crop, stride=args.stride,
                               rate=args.rate, start=args.start, end=args.end,
                               batch_size=args.batch, dtype=dtype, threads=args.threads,
                               device=decode_device, strict=args.strict, copy=copy)
    with reader:
        info = reader.info
        geom = Geometry(info["upright_width"], info["upright_height"], out_h, out_w, args.crop)
        for batch in reader:
            yield feed.ferry(batch), batch.frame_indices, batch.timestamps, geom
        stats = reader.stats()
    if stats.get("damaged"):
        say(f"{path}: {stats['damaged']} frames decoded with errors (damaged data the decoder "
            f"concealed), the first frame {stats.get('first_damaged')}")


def pyav_frames(path, args):
    """(frame number, seconds, upright RGB uint8 [H, W, 3]) of kept frames."""
    try:
        import av
    except ImportError:
        raise UsageError("--decoder pyav needs PyAV: pip install av")
    with av.open(path) as container:
        if not container.streams.video:
            raise RuntimeError(f"{path}: no video stream")
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        if args.threads:
            stream.codec_context.thread_count = args.threads
        tb = float(stream.time_base) if stream.time_base else 0.0
        t_start = stream.start_time * tb if stream.start_time is not None else 0.0
        rate = stream.guessed_rate or stream.average_rate
        fps = float(rate) if rate else 0.0
        from_time = False
        if args.start > 0 and tb > 0:
            container.seek(int(args.start / tb), stream=stream, backward=True)
            from_time = fps > 0  # after a seek, frames are numbered from their time
        sampler = Sampler(args.stride, args.rate, args.start, args.end)
        count, last_t = 0, None
        for frame in container.decode(stream):
            if frame.pts is not None:
                t = frame.pts * tb
            else:
                t = (last_t + 1 / fps) if last_t is not None and fps else 0.0
            last_t = t
            index = round((t - t_start) * fps) if from_time else count
            count += 1
            k = sampler.keep(t, index)
            if k < 0:
                break
            if k:
                rgb = frame.to_ndarray(format="rgb24")
                turns = round(getattr(frame, "rotation", 0) or 0) // 90 % 4
                if turns:  # the display matrix's counter-clockwise angle
                    rgb = np.ascontiguousarray(np.rot90(rgb, turns))
                yield index, t, rgb


def opencv_frames(path, args):
    try:
        import cv2
    except ImportError:
        raise UsageError("--decoder opencv needs OpenCV: pip install opencv-python-headless")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    cap = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
    if not cap.isOpened():
        raise RuntimeError(f"{path}: OpenCV cannot open it")
    try:
        if args.threads:
            cap.set(cv2.CAP_PROP_N_THREADS, args.threads)
        sampler = Sampler(args.stride, args.rate, args.start, args.end)
        index = 0
        while cap.grab():  # decodes; colour conversion only for the frames kept
            t = cap.get(cv2.CAP_PROP_POS_MSEC) / 1000.0
            k = sampler.keep(t, index)
            if k < 0:
                break
            if k:
                ok, bgr = cap.retrieve()  # upright: OpenCV applies the display matrix
                if not ok:
                    raise RuntimeError(f"{path}: OpenCV could not convert frame {index}")
                yield index, t, bgr[:, :, ::-1]
            index += 1
    finally:
        cap.release()


class Resizer:
    """The baselines' resize to the model's input size, the box of ferry's
    geometry: cv2.resize (INTER_AREA shrinking, else INTER_LINEAR), torch
    (uploaded, then bilinear with antialiasing on the model's device) or
    Pillow (BILINEAR with the exact box: ferry's own filter)."""

    def __init__(self, how, feed):
        self.how, self.feed = how, feed
        if how == "cv2":
            import cv2
            self.cv2 = cv2
        elif how == "pillow":
            from PIL import Image
            self.Image = Image

    def __call__(self, frames, geom):
        h, w = geom.out_h, geom.out_w
        x0, y0, x1, y1 = geom.box
        if self.how == "pillow":
            out = [np.asarray(self.Image.fromarray(np.ascontiguousarray(f)).resize(
                (w, h), self.Image.BILINEAR, box=(x0, y0, x1, y1))) for f in frames]
            return self.feed.frames_u8(np.stack(out))
        ix0, iy0, ix1, iy1 = (int(round(v)) for v in (x0, y0, x1, y1))
        if self.how == "cv2":
            cv2 = self.cv2
            interp = cv2.INTER_AREA if (ix1 - ix0 > w and iy1 - iy0 > h) else cv2.INTER_LINEAR
            out = [cv2.resize(np.ascontiguousarray(f[iy0:iy1, ix0:ix1]), (w, h),
                              interpolation=interp) for f in frames]
            return self.feed.frames_u8(np.stack(out))
        torch = self.feed.torch
        full = torch.from_numpy(np.stack([f[iy0:iy1, ix0:ix1] for f in frames]))
        x = full.to(self.feed.device).permute(0, 3, 1, 2).float()
        x = torch.nn.functional.interpolate(x, size=(h, w), mode="bilinear", antialias=True,
                                            align_corners=False)
        x = x.clamp_(0, 255).div_(255)
        return x.to(getattr(torch, self.feed.dtype)).contiguous()


def baseline_resize(args, model):
    how = args.baseline_resize
    if how == "auto":
        if model.torch is not None and model.device.startswith("cuda"):
            how = "torch"
        else:
            try:
                import cv2  # noqa: F401
                how = "cv2"
            except ImportError:
                how = "pillow"
    if how == "torch" and model.torch is None:
        raise UsageError("--baseline-resize torch needs a model that takes torch tensors")
    if how == "cv2":
        try:
            import cv2  # noqa: F401
        except ImportError:
            raise UsageError("--baseline-resize cv2 needs OpenCV: pip install "
                             "opencv-python-headless")
    return how


def baseline_batches(path, args, feed, resizer):
    frames_of = pyav_frames if args.decoder == "pyav" else opencv_frames
    geom, frames, indices, times = None, [], [], []
    for index, t, rgb in frames_of(path, args):
        if geom is None:
            height, width = rgb.shape[:2]
            out_h, out_w = output_size(args.size, args.crop, width, height)
            geom = Geometry(width, height, out_h, out_w, args.crop)
        frames.append(rgb)
        indices.append(index)
        times.append(t)
        if len(frames) == args.batch:
            yield resizer(frames, geom), tuple(indices), tuple(times), geom
            frames, indices, times = [], [], []
    if frames:
        yield resizer(frames, geom), tuple(indices), tuple(times), geom


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


def events(files, args, feed, resizer):
    """("batch", path, (input, frame numbers, timestamps, Geometry)) for each
    batch of each file, then ("done", path, None) or ("error", path,
    message): a file that fails ends in its error and the next one starts."""
    for path in files:
        try:
            if args.decoder == "ferry":
                batches = ferry_batches(path, args, feed)
            else:
                batches = baseline_batches(path, args, feed, resizer)
            for item in batches:
                yield "batch", path, item
        except (UsageError, BrokenPipeError):
            raise
        except Exception as e:  # ferry.Error (names the file), PyAV's and OpenCV's errors
            yield "error", path, str(e) or type(e).__name__
            continue
        yield "done", path, None


class Ahead:
    """An iterator's next item fetched in a thread while the caller works on
    the current one: exactly one ahead, never two (a ferry GPU batch is
    valid until the one after the next is fetched)."""

    def __init__(self, it):
        self.it = iter(it)
        self.pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="decode")
        self.future = self.pool.submit(self.fetch)

    def fetch(self):
        try:
            return next(self.it), None
        except BaseException as e:  # StopIteration included: handed to the caller
            return None, e

    def __iter__(self):
        return self

    def __next__(self):
        item, error = self.future.result()
        if error is not None:
            raise error
        self.future = self.pool.submit(self.fetch)
        return item

    def close(self):
        self.future.cancel()
        self.pool.shutdown(wait=True)


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
    stream = events(files, args, feed, resizer)
    if args.prefetch:
        stream = Ahead(stream)
    stop = False
    t_file, frames, dets, failed = time.perf_counter(), 0, 0, None
    try:
        while True:
            t0 = time.perf_counter()
            try:
                kind, path, item = next(stream)
            except StopIteration:
                break
            t1 = time.perf_counter()
            progress.wait_s += t1 - t0
            if kind == "batch" and failed is None:
                try:
                    n, d = detect(model, item, path, writer, args)
                    frames, dets = frames + n, dets + d
                    progress.batch(path, n)
                except (UsageError, BrokenPipeError):
                    raise
                except Exception as e:  # the model's: this file fails, the run goes on
                    failed = f"{path}: the model failed: {type(e).__name__}: {e}"
                progress.model_s += time.perf_counter() - t1
            elif kind != "batch":
                error = item if kind == "error" else failed
                progress.file_done(path, frames, dets, time.perf_counter() - t_file, error)
                t_file, frames, dets, failed = time.perf_counter(), 0, 0, None
                if error is not None and args.strict:
                    say("--strict: stopping at the first file that failed")
                    stop = True
                    break
    finally:
        if args.prefetch:
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
               "prefetch": args.prefetch,
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
