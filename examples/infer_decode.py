"""The decoding side of examples/video_infer.py: where the model's input
comes from in a frame (Geometry), the baselines' frame sampling (Sampler, the
rules of src/video/sample.c), batches from ferry.VideoReader (CPU or NVDEC,
through DLPack) or from PyAV / OpenCV frames resized the same way, and the
order in which files' batches reach the model (one file after another, the
next batch decoded ahead, or several files at once). Run video_infer.py; this
module is imported by it."""
import math
import os
import queue
import sys
import threading

import numpy as np

import ferry
from infer_model import UsageError

PROG = "video_infer"


def say(msg):
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


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
    # fetched. With prefetching (Streams: one thread, or one per stream),
    # k+1 is fetched while the model works on k:
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


def file_batches(path, args, feed, resizer):
    """One file's batches from the decoder asked for."""
    if args.decoder == "ferry":
        return ferry_batches(path, args, feed)
    return baseline_batches(path, args, feed, resizer)


def events(files, args, feed, resizer):
    """("batch", path, (input, frame numbers, timestamps, Geometry)) for each
    batch of each file, then ("done", path, None) or ("error", path,
    message): a file that fails ends in its error and the next one starts.
    path is (its place in the list, the path): a file listed twice is read
    twice."""
    for job in enumerate(files):
        try:
            for item in file_batches(job[1], args, feed, resizer):
                yield "batch", job, item
        except (UsageError, BrokenPipeError):
            raise
        except Exception as e:  # ferry.Error (names the file), PyAV's and OpenCV's errors
            yield "error", job, str(e) or type(e).__name__
            continue
        yield "done", job, None


class Streams:
    """Files decoded ahead of the model (prefetching; with --streams N,
    several files at once): N threads (1 by default) each take the
    next file of the list and decode its batches, and the model takes the
    batches in the order they are ready, as the events() of one file after
    another do: a file's batches in frame order, then its "done" or
    "error". Each thread may hand over a batch and decode the next one, but
    not the one after before the model is done with the first (it is done
    when it asks for another batch): a ferry GPU batch is valid until the
    one after the next is fetched. drop(path) stops decoding
    a file whose batches are no longer wanted (its model failed)."""

    JOIN_S = 30.0

    def __init__(self, files, args, feed, resizer, n):
        self.args, self.feed, self.resizer = args, feed, resizer
        self.files = list(enumerate(files))  # as events(): (place, path)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.dropped = set()
        self.q = queue.Queue()  # at most one batch per thread waits in it
        self.held = None  # the permit of the batch the model has now
        self.threads = []
        for i in range(max(1, min(n, len(self.files)))):
            permit = threading.Semaphore(1)
            t = threading.Thread(target=self.work, args=(permit,), name=f"decode-{i}",
                                 daemon=True)
            self.threads.append((t, permit))
        self.running = len(self.threads)
        for t, _ in self.threads:
            t.start()

    def next_file(self):
        with self.lock:
            return self.files.pop(0) if self.files and not self.stop.is_set() else None

    def drop(self, path):
        with self.lock:
            self.dropped.add(path)

    def wanted(self, path):
        with self.lock:
            return path not in self.dropped and not self.stop.is_set()

    def work(self, permit):
        try:
            while True:
                path = self.next_file()
                if path is None:
                    break
                batches = None
                try:
                    batches = file_batches(path[1], self.args, self.feed, self.resizer)
                    for item in batches:
                        permit.acquire()  # the model is done with this thread's last batch
                        if not self.wanted(path):
                            break
                        self.q.put(("batch", path, item, permit))
                except (UsageError, BrokenPipeError):
                    raise
                except Exception as e:  # the file's error; the thread takes the next file
                    self.q.put(("error", path, str(e) or type(e).__name__, None))
                    continue
                finally:
                    if batches is not None:
                        batches.close()  # the reader closed in this thread
                self.q.put(("done", path, None, None))
        except BaseException as e:  # a usage error or a broken pipe: the run stops
            self.q.put(("fatal", None, e, None))
        finally:
            self.q.put(("exit", None, None, None))

    def __iter__(self):
        return self

    def __next__(self):
        if self.held is not None:  # the model is done with the batch it had
            self.held.release()
            self.held = None
        while True:
            kind, path, item, permit = self.q.get()
            if kind == "exit":
                self.running -= 1
                if self.running == 0:
                    raise StopIteration
                continue
            if kind == "fatal":
                raise item
            self.held = permit
            return kind, path, item

    def close(self):
        self.stop.set()
        for _, permit in self.threads:
            permit.release()  # wakes a thread waiting to hand over a batch
        for t, _ in self.threads:
            t.join(self.JOIN_S)
            if t.is_alive():
                say(f"a decoder thread ({t.name}) did not stop within {self.JOIN_S:.0f} s; "
                    "left behind")
