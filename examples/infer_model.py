"""The model side of examples/video_infer.py: loading a detection model
(torchvision:NAME, module.path:factory or file.py:factory), calling it on a
batch, the score filter, class-wise NMS (torchvision's, or a NumPy one so that
a NumPy model never loads torch) and the class names. Run video_infer.py;
this module is imported by it."""
import ast
import importlib
import importlib.util
import os
import sys
import time

import numpy as np


class UsageError(Exception):
    """A bad option or a missing package: exit 2 with the message."""

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
            parts = [split_output(o, i) for i, o in enumerate(outs)]
            if parts and all(torch.is_tensor(t) for p in parts for t in p):
                return self.post_batch(parts)
            return [self.post(*(t.detach().cpu().numpy() if torch.is_tensor(t) else t
                                for t in p)) for p in parts]

    def post_batch(self, parts):
        """post() for a batch of tensors, on their device and at once: the
        score filter, then torchvision's NMS over (image, class) groups, then
        one copy to the host and --max-det per image. A few waits for the GPU
        a batch, where an image at a time waited several times an image."""
        torch = self.torch
        dev = parts[0][1].device
        counts = torch.tensor([p[1].numel() for p in parts], device=dev)
        image = torch.repeat_interleave(torch.arange(len(parts), device=dev), counts)
        boxes = torch.cat([p[0].detach().reshape(-1, 4).float() for p in parts])
        scores = torch.cat([p[1].detach().reshape(-1).float() for p in parts])
        labels = torch.cat([p[2].detach().reshape(-1) for p in parts])
        keep = torch.nonzero(scores >= self.score).squeeze(1)
        boxes, scores, labels, image = boxes[keep], scores[keep], labels[keep], image[keep]
        if self.nms and self.batched_nms is not None and len(keep):
            # groups numbered 0..G-1 (torchvision offsets boxes by group number)
            pairs = torch.stack([image, labels.to(torch.int64)], dim=1)
            group = torch.unique(pairs, dim=0, return_inverse=True)[1]
            order = self.batched_nms(boxes, scores, group, self.iou)  # best first
            done = True
        else:
            order = torch.argsort(scores, descending=True, stable=True)
            done = not self.nms
        boxes, scores, labels, image = (t[order].cpu().numpy()
                                        for t in (boxes, scores, labels, image))
        out = []
        for i in range(len(parts)):
            k = np.flatnonzero(image == i)
            if done:
                k = k[:self.max_det]
                out.append((boxes[k].astype(np.float64), scores[k].astype(np.float64),
                            labels[k]))
            else:  # NumPy's NMS (no torchvision), best first and --max-det in post()
                out.append(self.post(boxes[k], scores[k], labels[k]))
        return out

    def post(self, boxes, scores, labels):
        """--score, NMS (class-wise, where this side does it), --max-det:
        NumPy arrays in and out, best score first."""
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
