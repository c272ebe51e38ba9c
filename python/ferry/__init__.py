"""ferry: images from storage into PyTorch and NumPy, fast.

A thin layer over the C extension ferry._ferry, which drives the ferry C
library: JPEG/PNG/WebP decoded on every core (JPEG with DCT-domain
downscaling), cropped, resized, flipped, normalised and batched into a ring of
preallocated buffers that reach torch and NumPy through DLPack without a copy.

    import ferry
    loader = ferry.Loader("/data/imagenet/train", batch_size=256, size=224,
                          crop="random", flip=True, dtype="float16",
                          mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
    for epoch in range(90):
        loader.set_epoch(epoch)
        for images, labels in loader:      # torch tensors (NumPy without torch)
            ...

Lifetime of a batch: the arrays you get are views of the loader's buffers.
A batch's buffer is handed back to the loader's workers when the last array
or tensor that refers to it is freed, never before, so its data never
changes under you. The ring has `prefetch + 1` buffers (by default 4, or 6 on
a GPU with the JPEG engine; `Loader.ring`): if you keep more
batches than that alive, the next batch raises StateError (pass copy=True to
get arrays of your own). See docs/PYTHON.md.

ferry.VideoReader reads a video file's frames in batches (libavcodec, or
NVDEC on a GPU); its batches are DLPack views valid until the next batch.
"""
from __future__ import annotations

import math
import numbers
import operator
import os
import re
import sys
import threading
import warnings
from typing import (Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple,
                    Union)

from . import _ferry
from ._ferry import (  # noqa: F401  (re-exported)
    CorruptError,
    EmptySourceError,
    Error,
    InternalError,
    StallError,
    InvalidArgument,
    OutOfMemoryError,
    ReadError,
    StateError,
    Tensor,
    TooLargeError,
    UnsupportedError,
    VideoBatch,
)

__version__ = _ferry.version

__all__ = [
    "Loader", "Batch", "Tensor", "decode", "probe", "SkippedFileWarning",
    "VideoReader", "VideoBatch",
    "Error", "ReadError", "UnsupportedError", "CorruptError", "TooLargeError",
    "InvalidArgument", "OutOfMemoryError", "EmptySourceError", "StateError", "InternalError",
    "StallError",
    "__version__",
]


class SkippedFileWarning(UserWarning):
    """A file the loader could not use and left out of its batch (on_error="skip").
    Each bad file is reported once; Loader.skipped lists them all."""


IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

_DTYPES = {"uint8": _ferry.U8, "u8": _ferry.U8, "float16": _ferry.F16, "f16": _ferry.F16,
           "half": _ferry.F16, "float32": _ferry.F32, "f32": _ferry.F32, "float": _ferry.F32}
_DTYPE_NAMES = {_ferry.U8: "uint8", _ferry.F16: "float16", _ferry.F32: "float32"}
_LAYOUTS = {"chw": _ferry.CHW, "nchw": _ferry.CHW, "hwc": _ferry.HWC, "nhwc": _ferry.HWC}
_CROPS = {"center": _ferry.CROP_CENTER, "centre": _ferry.CROP_CENTER,
          "random": _ferry.CROP_RANDOM, "none": _ferry.CROP_NONE}
_FILTERS = {"bilinear": _ferry.FILTER_BILINEAR, "triangle": _ferry.FILTER_TRIANGLE,
            "area": _ferry.FILTER_AREA, "box": _ferry.FILTER_AREA,
            "bicubic": _ferry.FILTER_BICUBIC, "lanczos": _ferry.FILTER_LANCZOS,
            "nearest": _ferry.FILTER_NEAREST}
_ON_ERROR = {"skip": _ferry.ON_ERROR_SKIP, "fail": _ferry.ON_ERROR_FAIL}
_OUTPUTS = ("auto", "torch", "numpy", "tensor")


def _choice(table: dict, value: Any, what: str) -> int:
    key = str(value).lower()
    if key not in table:
        raise InvalidArgument(f"{what} must be one of {', '.join(sorted(table))}, not {value!r}")
    return table[key]


def _dtype_code(dtype: Any) -> int:
    if isinstance(dtype, str):
        name = dtype
    elif type(dtype).__module__.split(".")[0] == "torch":
        name = str(dtype).replace("torch.", "")
    else:
        try:
            import numpy
            name = numpy.dtype(dtype).name
        except TypeError:
            name = str(dtype)
    return _choice(_DTYPES, name, "dtype")


def _env_int(name: str, default: Optional[int]) -> Optional[int]:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidArgument(f"environment variable {name}={value!r} is not an integer") from None


def _dist_defaults(rank: Optional[int], world_size: Optional[int]) -> Tuple[int, int]:
    """rank/world_size not given: torch.distributed when initialised, else
    the torchrun environment (RANK, WORLD_SIZE), else 0 of 1."""
    if rank is None or world_size is None:
        dist = sys.modules.get("torch.distributed")
        if dist is not None and dist.is_available() and dist.is_initialized():
            rank = dist.get_rank() if rank is None else rank
            world_size = dist.get_world_size() if world_size is None else world_size
    if world_size is None:
        world_size = _env_int("WORLD_SIZE", 1)
    if rank is None:
        rank = _env_int("RANK", 0)
    return int(rank), int(world_size)


def _device_index(device: Any) -> int:
    """-1 for host memory, N for CUDA device N."""
    if device is None:
        return -1
    if isinstance(device, int) and not isinstance(device, bool):
        if device < 0:
            raise InvalidArgument(f"device index must be >= 0, not {device}")
        return device
    text = str(device).strip().lower()
    if text == "cpu":
        return -1
    if text == "cuda":
        # torch's "cuda" is the current device; under torchrun that is
        # usually LOCAL_RANK (torch.cuda.set_device(local_rank)).
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            return int(torch.cuda.current_device())
        return _env_int("LOCAL_RANK", 0)
    m = re.fullmatch(r"cuda:(\d+)", text)
    if not m:
        raise InvalidArgument(f'device must be "cpu", "cuda" or "cuda:N", not {device!r}')
    return int(m.group(1))


def _default_workers() -> int:
    """Every core this process may run on, shared between the processes of
    this node under torchrun (LOCAL_WORLD_SIZE)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    per_node = _env_int("LOCAL_WORLD_SIZE", 1) or 1
    return max(1, cores // per_node)


def _three(values: Sequence[float], what: str) -> Tuple[float, float, float]:
    try:
        v = tuple(float(x) for x in values)
    except TypeError:
        v = (float(values),) * 3  # type: ignore[arg-type]
    if len(v) == 1:
        v = v * 3
    if len(v) != 3:
        raise InvalidArgument(f"{what} needs 3 values (R, G, B), not {len(v)}")
    return v  # type: ignore[return-value]


def _pair(values: Sequence[float], what: str) -> Tuple[float, float]:
    v = tuple(float(x) for x in values)
    if len(v) != 2:
        raise InvalidArgument(f"{what} needs 2 values (min, max), not {len(v)}")
    return v  # type: ignore[return-value]


def _stall_ms(seconds: Optional[float]) -> int:
    if seconds is None or seconds == 0:
        return -1  # never
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise InvalidArgument(f"stall_timeout must be a number of seconds > 0, 0 or None, "
                              f"not {seconds!r}")
    return max(1, min(int(round(seconds * 1e3)), 2**31 - 1))


def _size(size: Union[int, Sequence[int]]) -> Tuple[int, int]:
    """(height, width) from an int or an (h, w) pair, as torchvision."""
    if isinstance(size, int):
        return size, size
    v = tuple(int(x) for x in size)
    if len(v) == 1:
        return v[0], v[0]
    if len(v) != 2:
        raise InvalidArgument(f"size must be N or (height, width), not {size!r}")
    return v  # type: ignore[return-value]


def _normalization(normalize: Optional[bool], mean: Optional[Sequence[float]],
                   std: Optional[Sequence[float]]) -> Tuple[bool, Tuple[float, float, float],
                                                            Tuple[float, float, float]]:
    """(normalize, mean, std): mean or std given switches normalisation on
    (the other defaults to ImageNet's); values in 0..1 units."""
    if normalize is None:
        normalize = mean is not None or std is not None
    mean3 = _three(IMAGENET_MEAN if mean is None else mean, "mean")
    std3 = _three(IMAGENET_STD if std is None else std, "std")
    if normalize and (max(abs(m) for m in mean3) > 1.0 or max(std3) > 1.0):
        raise InvalidArgument(f"mean {mean3} / std {std3} look like 0..255 units: ferry "
                              "normalises x/255, so give them in 0..1 units "
                              "(e.g. ImageNet: mean=(0.485, 0.456, 0.406))")
    return bool(normalize), mean3, std3


class Batch(NamedTuple):
    """A batch with its bookkeeping (Loader.batches()). images and labels are
    as Loader yields them; indices are the samples' indices into the source
    (Loader.path(i)); index is the batch number within the epoch."""
    images: Any
    labels: Any
    indices: Any
    epoch: int
    index: int


class _Converter:
    """Turns the extension's Tensors into what the user asked for."""

    def __init__(self, output: str, copy: bool, on_gpu: bool):
        self.kind = output
        self.copy = copy
        if output == "torch":
            import torch
            self.torch = torch
        elif output == "numpy":
            import numpy
            self.np = numpy
            self.from_dlpack = getattr(numpy, "from_dlpack", numpy.asarray)
        self.on_gpu = on_gpu

    def images(self, t: Tensor) -> Any:
        if self.kind == "torch":
            x = self.torch.from_dlpack(t)
            return x.clone() if self.copy else x
        if self.kind == "numpy":
            x = self.from_dlpack(t)
            return x.copy() if self.copy else x
        if self.copy:
            raise InvalidArgument('copy=True needs output="torch" or "numpy"')
        return t

    def small(self, t: Tensor, device: Any = None) -> Any:
        """Labels and indices: small host arrays of their own."""
        if self.kind == "torch":
            x = self.torch.from_dlpack(t)
            if t.owner is not None:
                x = x.clone()
            if device is not None and device.type != "cpu":
                x = x.to(device, non_blocking=True)
            return x
        if self.kind == "numpy":
            x = self.from_dlpack(t)
            return x.copy() if t.owner is not None else x
        return t


class _EpochIterator:
    """Iterates one epoch. Holds no batch between calls: the batch you hold
    is the only reference that keeps its buffer."""

    __slots__ = ("_loader", "_core", "_generation", "_records", "_done", "epoch")

    def __init__(self, loader: "Loader", core: Any, epoch: int, records: bool):
        self._loader = loader
        self._core = core
        self._generation = loader._generation
        self._records = records
        self._done = False
        self.epoch = epoch

    def __iter__(self) -> "_EpochIterator":
        return self

    def __len__(self) -> int:
        return self._loader.__len__()

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        loader = self._loader
        if loader._generation != self._generation:
            self._done = True
            raise StateError(f"this iterator was for epoch {self.epoch}; the loader has started "
                             "another epoch since (iterate one epoch at a time)")
        b = loader._next_batch(self._core)
        if b is None:
            self._done = True
            raise StopIteration
        return loader._convert(b, self._records)


class _Closable:
    """close() and the context manager of the objects that own a C handle
    (Loader: its worker threads and ring; VideoReader: its decoder). The
    memory is freed at close(), or when the last batch still viewing it is
    freed; using the object afterwards raises StateError."""

    _core: Any
    _options: Dict[str, Any]

    @property
    def batch_size(self) -> int:
        return self._options["batch_size"]

    @property
    def device(self) -> str:
        d = self._options["device"]
        return "cpu" if d < 0 else f"cuda:{d}"

    @property
    def dtype(self) -> str:
        return _DTYPE_NAMES[self._options["dtype"]]

    def close(self) -> None:
        if self._core is not None:
            self._core.close()

    def __enter__(self: Any) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Loader(_Closable):
    """Loads batches of images from an ImageFolder directory or a list file.

    Args:
      source: a directory whose sorted sub-folders are the classes (labels
        0..K-1), or a text file of `path[,label]` lines.
      batch_size: images per batch (the last batch of an epoch may be
        smaller unless drop_last; a batch also loses the files it skips).
      size: output size, N or (height, width).
      device: "cpu" (default), "cuda" (the current device, or LOCAL_RANK) or
        "cuda:N": where the batches are made. On a GPU the images are
        decoded by the GPU's JPEG engine where it can, resized and
        normalised on the device, and yielded as CUDA tensors.
      dtype: "uint8" (default), "float16" or "float32" (also torch/NumPy
        dtypes). Floats are x/255, normalised when mean/std are given.
      layout: "chw" (default, [N, C, H, W]) or "hwc" ([N, H, W, C]).
      mean, std: per channel, in 0..1 units (torchvision's): pixels become
        (x/255 - mean) / std. Either one switches normalisation on (the
        other defaults to ImageNet's); normalize=True alone uses ImageNet's.
      crop: "center" (Resize + CenterCrop, crop_ratio 0.875), "random"
        (RandomResizedCrop with scale and ratio) or "none" (resize the
        whole image).
      flip: horizontal flip: True (probability 0.5) or a probability.
      shuffle, seed: the epoch's order is a permutation that depends only
        on (seed, epoch); crops and flips on (seed, epoch, sample).
      drop_last: every rank gets the same number of full batches.
      rank, world_size: sharding: rank r takes every world_size-th sample
        of the epoch's permutation. Default: torch.distributed when
        initialised, else $RANK / $WORLD_SIZE (torchrun), else 0 / 1.
      workers: decoding threads; default every core this process may use,
        divided by $LOCAL_WORLD_SIZE.
      prefetch: batches prepared ahead of the one you hold (the ring has
        prefetch + 1 buffers). Default None: a ring of 4, or 6 on a GPU with
        the JPEG engine (Loader.ring says which).
      cache: "memory" (up to a quarter of RAM) or a number of bytes: transformed samples are
          kept after they are first made and later epochs are served from RAM; needs a
          deterministic pipeline (crop="center" or "none", no flip).
      output: "auto" (torch tensors when torch can be imported, else NumPy
        arrays), "torch", "numpy", or "tensor" (ferry.Tensor objects that
        any DLPack consumer takes).
      copy: False (default): arrays are views of the loader's buffers (see
        the lifetime note in the module docstring). True: arrays of your own,
        and the buffer goes back at once.
      on_error: "skip" (default: a bad file is left out of its batch, with a
        SkippedFileWarning, once) or "fail" (the iteration raises the error).
      ignore_orientation, max_pixels, dct_scaling, filter, crop_ratio,
      scale, ratio, hw_decode, device_memory: as the C library's options.
      exact_decode: Pillow's JPEG decoder settings and the exact 22-bit resampler even where the
          image is downscaled afterwards (default: box chroma upsampling and the 16-bit
          resampler there, 55-58 dB from the exact result).
      max_batch_bytes: bound on the batch ring (prefetch x batch bytes; default 4 GiB),
          checked before anything is allocated.
      read_timeout_ms: give up on a FIFO or device file after this long (0: 30 s; < 0: wait).
      stall_timeout: seconds (default 60) the iteration waits without any image finishing
          before it raises StallError (a TimeoutError), naming what each loader thread was
          doing and for how long; the loader then stays failed. 0 or None: wait for ever.
    """

    def __init__(self, source: Union[str, "os.PathLike[str]"], batch_size: int = 256,
                 size: Union[int, Sequence[int]] = 224, *, device: Any = "cpu",
                 dtype: Any = "uint8", layout: str = "chw",
                 mean: Optional[Sequence[float]] = None, std: Optional[Sequence[float]] = None,
                 normalize: Optional[bool] = None, crop: str = "center",
                 crop_ratio: float = 0.875, scale: Sequence[float] = (0.08, 1.0),
                 ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0), filter: str = "triangle",
                 flip: Union[bool, float] = False, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False, rank: Optional[int] = None,
                 world_size: Optional[int] = None, workers: Optional[int] = None,
                 prefetch: Optional[int] = None, cache: Any = None, output: str = "auto", copy: bool = False,
                 on_error: str = "skip", ignore_orientation: bool = False,
                 max_pixels: Optional[int] = None, dct_scaling: bool = True,
                 hw_decode: bool = True, device_memory: Optional[int] = None,
                 exact_decode: bool = False, max_batch_bytes: Optional[int] = None,
                 read_timeout_ms: int = 0, stall_timeout: Optional[float] = 60.0):
        self._core = None  # so that close() and __del__ work after a failed __init__
        cache_bytes = None
        if cache not in (None, False):
            # "memory": up to a quarter of the machine's RAM; an int: that many bytes
            if cache == "memory":
                cache_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
            elif isinstance(cache, int) and not isinstance(cache, bool) and cache > 0:
                cache_bytes = cache
            else:
                raise InvalidArgument(f"cache must be None, 'memory' or a number of bytes, "
                                      f"not {cache!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgument(f"batch_size must be a positive int, not {batch_size!r}")
        if prefetch is not None and (not isinstance(prefetch, int) or isinstance(prefetch, bool)
                                     or not 1 <= prefetch <= 63):
            raise InvalidArgument(f"prefetch must be None or an int in 1..63, not {prefetch!r}")
        height, width = _size(size)
        dev = _device_index(device)
        if output not in _OUTPUTS:
            raise InvalidArgument(f"output must be one of {', '.join(_OUTPUTS)}, not {output!r}")
        if output == "auto":
            try:
                import torch  # noqa: F401
                output = "torch"
            except ImportError:
                output = "numpy"
        if output == "numpy" and dev >= 0:
            raise InvalidArgument('output="numpy" needs device="cpu": a NumPy array cannot live '
                                  'on a GPU (use output="torch" or "tensor")')
        normalize, mean3, std3 = _normalization(normalize, mean, std)
        if flip is True:
            flip_prob = 0.5
        elif flip is False or flip is None:
            flip_prob = 0.0
        else:
            flip_prob = float(flip)
        rank, world_size = _dist_defaults(rank, world_size)
        scale_min, scale_max = _pair(scale, "scale")
        ratio_min, ratio_max = _pair(ratio, "ratio")
        options = dict(
            batch_size=batch_size, width=width, height=height,
            workers=_default_workers() if workers is None else int(workers),
            prefetch=0 if prefetch is None else prefetch + 1, crop=_choice(_CROPS, crop, "crop"),
            crop_ratio=float(crop_ratio), scale_min=scale_min, scale_max=scale_max,
            ratio_min=ratio_min, ratio_max=ratio_max, filter=_choice(_FILTERS, filter, "filter"),
            flip_prob=flip_prob, normalize=bool(normalize), mean=mean3, std=std3,
            layout=_choice(_LAYOUTS, layout, "layout"), dtype=_dtype_code(dtype),
            shuffle=bool(shuffle), seed=int(seed), rank=rank, world_size=world_size,
            drop_last=bool(drop_last), on_error=_choice(_ON_ERROR, on_error, "on_error"),
            ignore_orientation=bool(ignore_orientation), max_pixels=max_pixels,
            dct_scaling=bool(dct_scaling), device=dev, hw_decode=bool(hw_decode),
            device_memory=device_memory, cache_bytes=cache_bytes,
            exact_decode=bool(exact_decode), max_batch_bytes=max_batch_bytes,
            read_timeout_ms=int(read_timeout_ms),
            stall_timeout_ms=_stall_ms(stall_timeout))
        self._source = os.fspath(source)
        self._options = {k: v for k, v in options.items() if v is not None}
        self._output = output
        self._convert_to = _Converter(output, bool(copy), dev >= 0)
        self._torch_device = None
        self._generation = 0
        self._epoch_next = 0
        self._skipped: List[Tuple[str, str]] = []
        self._reported: set = set()
        self._core = self._open()
        if dev >= 0 and output == "torch":
            self._torch_device = self._convert_to.torch.device("cuda", dev)

    def _open(self) -> Any:
        # Without CUDA in the C library, device >= 0 fails here with
        # UnsupportedError("... built without CUDA").
        return _ferry.Loader(self._source, **self._options)

    # ---------------------------------------------------------- iteration

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration runs (its shuffle, crops and flips).
        Without set_epoch, iterations run epochs 0, 1, 2, ..."""
        if not isinstance(epoch, int) or epoch < 0:
            raise InvalidArgument(f"epoch must be an int >= 0, not {epoch!r}")
        self._epoch_next = epoch

    def __iter__(self) -> Iterator[Tuple[Any, Any]]:
        """Runs the next epoch: yields (images, labels)."""
        return self._start(None, records=False)

    def batches(self, epoch: Optional[int] = None) -> Iterator[Batch]:
        """Runs an epoch (the next one by default): yields Batch records with
        the samples' indices and the batch numbers."""
        return self._start(epoch, records=True)

    def __len__(self) -> int:
        """Batches per epoch for this rank."""
        return self._live_core().num_batches

    def _live_core(self) -> Any:
        if self._core is None or self._core.closed:
            raise StateError("the loader is closed")
        return self._core

    def _start(self, epoch: Optional[int], records: bool) -> _EpochIterator:
        core = self._live_core()
        if epoch is None:
            epoch = self._epoch_next
        if core.live_batches and not _ferry.HELD_ACROSS_EPOCHS:
            # Batches of the previous epoch are still referenced (the loop
            # variable holds the last one), and this C library reuses every
            # slot when an epoch starts: open a fresh loader; the old one is
            # freed with its last batch.
            self._report_skips(core)
            core.close()
            core = self._core = self._open()
        core.start_epoch(epoch)
        self._epoch_next = epoch + 1
        self._generation += 1
        return _EpochIterator(self, core, epoch, records)

    def _next_batch(self, core: Any) -> Any:
        try:
            try:
                return core.next()
            except StateError as e:
                if getattr(e, "status", None) != _ferry.ESTATE:
                    raise
                # Every slot is held. Batches caught in reference cycles
                # (tracebacks, closures) are freed by a collection.
                import gc
                gc.collect()
                try:
                    return core.next()
                except StateError as e2:
                    if getattr(e2, "status", None) != _ferry.ESTATE:
                        raise
                    raise StateError(
                        f"{e2}. {core.live_batches} batches are still referenced and the ring "
                        f"has {core.ring} buffers: drop references to old "
                        "batches, copy what you keep (tensor.clone(), array.copy()), or "
                        "create the Loader with copy=True or a larger prefetch") from None
        finally:
            self._report_skips(core)

    def _convert(self, b: Any, records: bool) -> Any:
        c = self._convert_to
        images = c.images(b.images)
        labels = c.small(b.labels, self._torch_device)
        if not records:
            return images, labels
        return Batch(images, labels, c.small(b.indices), b.epoch, b.index)

    def _report_skips(self, core: Any) -> None:
        for path, status, message in core.take_skipped():
            if path in self._reported:
                continue
            self._reported.add(path)
            self._skipped.append((path, message))
            warnings.warn(f"ferry: skipped {message}", SkippedFileWarning, stacklevel=4)

    # ------------------------------------------------------------- info

    @property
    def skipped(self) -> List[Tuple[str, str]]:
        """(path, message) of every file skipped so far, once each."""
        if self._core is not None and not self._core.freed:
            self._report_skips(self._core)
        return list(self._skipped)

    @property
    def source_size(self) -> int:
        """Samples in the source (all ranks)."""
        return self._live_core().source_size

    @property
    def num_samples(self) -> int:
        """Samples in this rank's epoch."""
        return self._live_core().epoch_size

    @property
    def num_classes(self) -> int:
        return self._live_core().num_classes

    @property
    def ring(self) -> int:
        """Batch buffers in the ring: prefetch + 1, or ferry's choice for prefetch=None."""
        return self._live_core().ring

    @property
    def classes(self) -> List[str]:
        """Class names (the ImageFolder's sub-folders), index = label."""
        core = self._live_core()
        return [core.class_name(i) for i in range(core.num_classes)]

    def path(self, index: int) -> str:
        """Path of sample `index` of the source (see Batch.indices)."""
        return self._live_core().path(index)

    def label(self, index: int) -> int:
        return self._live_core().label(index)

    @property
    def rank(self) -> int:
        return self._options["rank"]

    @property
    def world_size(self) -> int:
        return self._options["world_size"]

    @property
    def output(self) -> str:
        return self._output

    def stats(self) -> dict:
        """Seconds per stage summed over workers (read_s, decode_s,
        transform_s), the consumer's wait_s, the workers' idle_s (nothing to
        claim: the ring full or between epochs), and counters."""
        return self._live_core().stats()

    # ------------------------------------------------------------ closing

    def __reduce__(self) -> Any:
        raise TypeError("a ferry.Loader cannot be pickled (it owns threads and buffers): create "
                        "one in each process")

    def __repr__(self) -> str:
        o = self._options
        state = "closed" if self._core is None or self._core.closed else (
            f"{self._core.source_size} samples, {self._core.num_batches} batches/epoch")
        return (f"ferry.Loader({self._source!r}, batch_size={o['batch_size']}, "
                f"size=({o['height']}, {o['width']}), device={self.device!r}, "
                f"dtype={self.dtype!r}, rank={o['rank']}/{o['world_size']}, {state})")


# ------------------------------------------------------------------- video

_VIDEO_CROPS = {"none": _ferry.CROP_NONE, "center": _ferry.CROP_CENTER,
                "centre": _ferry.CROP_CENTER}


def _int_arg(value: Any, what: str, lo: int, hi: Optional[int] = None) -> int:
    """An int argument in lo..hi: TypeError for another type, InvalidArgument
    (a ValueError) out of range, both naming the argument."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an int, not {value!r}")
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, not {type(value).__name__} {value!r}") from None
    if v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in {lo}..{hi}"
        raise InvalidArgument(f"{what} must be {rng}, not {v}")
    return v


def _seconds_arg(value: Any, what: str) -> float:
    """A finite float >= 0 (seconds, or frames per second)."""
    if isinstance(value, (bool, str, bytes)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a number, not {type(value).__name__} {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise InvalidArgument(f"{what} must be a finite number >= 0, not {value!r}")
    return v


def _video_size(size: Any) -> Tuple[int, int]:
    """(height, width) of the output, (0, 0) for the upright frame size."""
    if size is None:
        return 0, 0
    if isinstance(size, (bool, str, bytes)):
        raise TypeError(f"size must be None, N or (height, width), not {size!r}")
    try:
        h, w = _size(size)
    except InvalidArgument:
        raise
    except (TypeError, ValueError):
        raise TypeError(f"size must be None, N or (height, width), not {size!r}") from None
    if not (1 <= h <= 16384 and 1 <= w <= 16384):
        raise InvalidArgument(f"size must be 1..16384 pixels a side, not {size!r}")
    return h, w


class VideoReader(_Closable):
    """Reads a video file's frames in batches: decoded by libavcodec on
    `threads` cores (or by the GPU's NVDEC with device="cuda"), sampled,
    resized, turned upright, and stored as [count, C, H, W] (or HWC) RGB.

        with ferry.VideoReader("clip.mp4", size=224, crop="center", stride=2,
                               dtype="float16", normalize=True) as reader:
            for batch in reader:
                x = torch.from_dlpack(batch)     # [<=8, 3, 224, 224], no copy
                t = batch.timestamps             # seconds, a tuple

    Args:
      path: the video file (container and codec found from its bytes).
      size: N or (height, width) of the output (Loader's convention); None
        (default): the upright frame size.
      crop: "none" (default: the whole frame, stretched to size) or
        "center" (short side to size, the centre kept).
      filter: resampling filter, as Loader's ("triangle" default).
      stride: keep every stride-th frame (the first included).
      rate: or keep one frame per 1/rate seconds (stride and rate exclude
        each other).
      start, end: seconds of stream time: frames with start <= t < end
        (end 0: to the end of the file; start > 0 seeks).
      batch_size: frames per batch (the last one may be short).
      dtype, layout, normalize, mean, std: as Loader's.
      threads: decoder threads, 0 (default): one per core.
      ignore_rotation: keep frames as stored (no display-matrix rotation).
      device: "cpu" (default), "cuda" or "cuda:N": NVDEC decodes and the
        batches are made in that GPU's memory (kDLCUDA DLPack tensors).
      copy: False (default): batches are views of the reader's buffer (see
        below). True: each batch owns a copy of its frames (host only).
      strict: False (default): frames decoded with errors (damaged data the
        decoder concealed: libavcodec's flags, NVDEC's decode status for H.264
        and HEVC) are returned and counted in stats()["damaged"] (on the CPU
        with several threads a lower bound). True: the first such frame
        raises CorruptError naming the file, frame and time; the CPU decodes
        with one thread so that every such frame is caught, and on a GPU a
        VP9 or AV1 stream (no NVDEC status) is decoded on the CPU.

    Lifetime: a batch's frames are the reader's buffer, which the reader
    overwrites with the next batch. A batch (and any array or tensor made
    from it) is valid until the reader fetches its next batch (GPU: the one
    after, and work on streams other than the default one must be finished
    by then); afterwards the batch's frames, __dlpack__ and buffer raise
    StateError (batch.valid says False), but arrays already made show the
    new frames: copy what you keep (batch.copy(), array.copy(),
    tensor.clone()) or pass copy=True. timestamps and frame_indices are
    tuples of their own. The reader's memory is freed when it is closed and
    no batch viewing it is left, never under a view.

    A damaged or truncated file yields every frame that decodes, then the
    iteration raises (CorruptError, naming the file). Decoding runs without
    the GIL: readers in several threads decode several files at once (one
    thread at a time per reader).
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"],
                 size: Union[None, int, Sequence[int]] = None, *, crop: str = "none",
                 filter: str = "triangle", stride: int = 1, rate: float = 0.0,
                 start: float = 0.0, end: float = 0.0, batch_size: int = 8,
                 dtype: Any = "uint8", layout: str = "chw", normalize: Optional[bool] = None,
                 mean: Optional[Sequence[float]] = None, std: Optional[Sequence[float]] = None,
                 threads: int = 0, ignore_rotation: bool = False, device: Any = "cpu",
                 copy: bool = False, strict: bool = False):
        self._core = None  # so that close() and __del__ work after a failed __init__
        try:
            self._path = os.fspath(path)
        except TypeError:
            raise TypeError(f"path must be a str or os.PathLike, not {type(path).__name__}") \
                from None
        height, width = _video_size(size)
        if str(crop).lower() not in _VIDEO_CROPS:
            raise InvalidArgument(f'crop must be "none" or "center" for video, not {crop!r}')
        stride = _int_arg(stride, "stride", 1)
        rate = _seconds_arg(rate, "rate")
        if stride > 1 and rate > 0:
            raise InvalidArgument(f"stride ({stride}) and rate ({rate}) exclude each other: "
                                  "give one")
        start = _seconds_arg(start, "start")
        end = _seconds_arg(end, "end")
        if end > 0 and end <= start:
            raise InvalidArgument(f"end ({end}) must be after start ({start}), or 0 for the "
                                  "end of the file")
        normalize, mean3, std3 = _normalization(normalize, mean, std)
        dev = _device_index(device)
        if copy and dev >= 0:
            raise InvalidArgument('copy=True needs device="cpu": copy GPU frames with '
                                  "torch.from_dlpack(batch).clone()")
        self._options = dict(
            width=width, height=height, crop=_VIDEO_CROPS[str(crop).lower()],
            filter=_choice(_FILTERS, filter, "filter"), stride=stride, rate=rate, start=start,
            end=end, batch_size=_int_arg(batch_size, "batch_size", 1, 65536),
            layout=_choice(_LAYOUTS, layout, "layout"), dtype=_dtype_code(dtype),
            normalize=normalize, mean=mean3, std=std3,
            threads=_int_arg(threads, "threads", 0, 4096), device=dev,
            ignore_rotation=bool(ignore_rotation), copy=bool(copy), strict=bool(strict))
        # The C library's errors: ReadError (cannot open), CorruptError (no
        # readable stream), UnsupportedError (no decoder, no GPU/NVDEC, or a
        # library built without libavcodec), each naming the file.
        self._core = _ferry.VideoReader(self._path, **self._options)

    def __iter__(self) -> "VideoReader":
        return self

    def __next__(self) -> VideoBatch:
        b = self._live_core().next()
        if b is None:
            raise StopIteration
        return b

    def _live_core(self) -> Any:
        if self._core is None or self._core.closed:
            raise StateError(f"{self._path}: the video reader is closed")
        return self._core

    @property
    def info(self) -> dict:
        """The video stream: codec, width, height (stored), rotation
        (clockwise degrees that make it upright), upright_width,
        upright_height, bit_depth, fps, start and duration (seconds, 0 when
        unknown), frames (declared, 0 when unknown), nvdec (decoded by the
        GPU's video engine)."""
        if self._core is None:
            raise StateError(f"{self._path}: the video reader is not open")
        return self._core.info

    def stats(self) -> dict:
        """Frames decoded and kept, seconds per stage (decode_s, convert_s,
        resize_s, open_s), batches fetched."""
        if self._core is None or self._core.freed:
            raise StateError(f"{self._path}: the video reader is closed")
        return self._core.stats()

    @property
    def path(self) -> str:
        return self._path

    @property
    def closed(self) -> bool:
        return self._core is None or self._core.closed

    def __reduce__(self) -> Any:
        raise TypeError("a ferry.VideoReader cannot be pickled (it owns a decoder): open one in "
                        "each process")

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return (f"ferry.VideoReader({self._path!r}, batch_size={self.batch_size}, "
                f"device={self.device!r}, dtype={self.dtype!r}, {state})")


# ------------------------------------------------------------ single images

def decode(path: Union[str, "os.PathLike[str]"], *, channels: int = 3,
           ignore_orientation: bool = False, max_pixels: Optional[int] = None,
           max_bytes: Optional[int] = None) -> Any:
    """Decodes an image file (JPEG, PNG, WebP; sniffed from the bytes) into
    a uint8 NumPy array [H, W, channels] (channels 3: RGB, 1: gray), EXIF
    orientation applied unless ignore_orientation. No copy: the array owns
    the decoder's buffer."""
    import numpy
    kw = {}
    if max_pixels is not None:
        kw["max_pixels"] = max_pixels
    if max_bytes is not None:
        kw["max_bytes"] = max_bytes
    t = _ferry.decode(os.fspath(path), channels=channels,
                      ignore_orientation=ignore_orientation, **kw)
    return numpy.asarray(t)


def probe(path: Union[str, "os.PathLike[str]"]) -> dict:
    """What an image file's header says (format, width, height, channels,
    bit_depth, orientation, progressive, subsampling, ...) without decoding."""
    return _ferry.probe(os.fspath(path))


# ------------------------------------------------------------------ hashing

# the extensions the C library's walks take (src/io/source.c, src/catalog/scan.c)
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".webp")
_MODES = {"fast": 0, "compatible": 1}
PathLike = Union[str, "os.PathLike[str]"]


def _hash_kinds(kind: Union[str, Sequence[str]]) -> Tuple[List[str], bool]:
    """(canonical kind names, whether one kind was asked as a string)."""
    names = _ferry.hash_kinds()
    if isinstance(kind, str) and kind == "all":
        return names, False
    single = isinstance(kind, str)
    kinds = [kind] if single else list(kind)
    if not kinds:
        raise InvalidArgument("kind: ask for at least one hash kind")
    return [names[_ferry.hash_kind_parse(str(k))] for k in kinds], single


class _Hashers(threading.local):
    """One C Hasher per thread (a ferry_hasher is not thread-safe)."""

    def __init__(self, **options: Any):
        self.options = options

    def get(self) -> Any:
        h = getattr(self, "h", None)
        if h is None:
            h = self.h = _ferry.Hasher(**self.options)
        return h


def _is_pixels(obj: Any) -> bool:
    return not isinstance(obj, (str, bytes, os.PathLike)) and (
        hasattr(obj, "__array_interface__") or hasattr(obj, "__array__") or
        isinstance(obj, memoryview))


def hash(source: Any, kind: Union[str, Sequence[str]] = "phash", *, mode: str = "fast",
         hash_size: int = 8, colorhash_bits: int = 3, workers: Optional[int] = None,
         on_error: str = "raise", max_pixels: Optional[int] = None,
         max_bytes: Optional[int] = None, device: Any = None,
         progress: Optional[Callable[[int, int], Any]] = None) -> Any:
    """Perceptual hashes of images, as imagehash 4.3 computes them.

    source: an image file path, image bytes, uint8 pixels ([H, W] or
      [H, W, 3]: a NumPy array, or a PIL image through numpy.asarray), or a
      list of paths (hashed on `workers` threads, default every core).
    kind: "ahash", "dhash", "dhash_v", "phash", "whash", "colorhash" (or
      imagehash's names, "average_hash", ...): the result is that hash's hex
      string, imagehash's str(hash). A list of kinds, or "all", gives a dict
      {kind: hex}.
    mode: "fast" (DCT-domain reduced decode, default) or "compatible" (a full
      decode: imagehash's exact bits on the same file). Pixels always use
      the compatible arithmetic.
    on_error: "raise" (a ferry.Error naming the file) or "skip" (None in the
      list for a file that cannot be hashed).
    device: None or "cpu" (default), or "cuda" / "cuda:N" / N for a list of
      paths: in compatible mode the GPU hashes what the cores decode (the
      same bits); in fast mode the GPU's JPEG engine decodes part of the
      JPEGs beside the cores (hashes within a few bits of the CPU's, see
      docs/DEDUP.md). Without a usable GPU, compatible mode raises and fast
      mode runs on the cores with a warning.
    progress: for a list of paths, called as progress(done, total) about ten
      times a second from a hashing thread, and once at the end.
    """
    kinds, single = _hash_kinds(kind)
    mask = 0
    for k in kinds:
        mask |= 1 << _ferry.hash_kind_parse(k)
    hashers = _Hashers(mode=_choice(_MODES, mode, "mode"), kinds=mask, hash_size=int(hash_size),
                       colorhash_bits=int(colorhash_bits), max_pixels=max_pixels,
                       max_bytes=max_bytes)
    if on_error not in ("raise", "skip"):
        raise InvalidArgument(f'on_error must be "raise" or "skip", not {on_error!r}')

    def pick(result: Any) -> Any:
        hexes = result[4]
        return hexes[kinds[0]] if single else {k: hexes[k] for k in kinds}

    def one(item: Any) -> Any:
        h = hashers.get()
        try:
            if isinstance(item, (bytes, bytearray)):
                return pick(h.hash_bytes(bytes(item)))
            if _is_pixels(item):
                import numpy
                return pick(h.hash_pixels(numpy.ascontiguousarray(item, dtype=numpy.uint8)))
            return pick(h.hash_file(os.fspath(item)))
        except Error:
            if on_error == "skip":
                return None
            raise

    dev = _device_index(device)
    all_paths = isinstance(source, (list, tuple)) and all(
        isinstance(x, (str, os.PathLike)) for x in source)
    if dev >= 0 and not all_paths:
        raise InvalidArgument("device: hashing on a GPU takes a list of file paths")
    if all_paths and source:
        # one C call: the files are spread over the cores (and the GPU) with
        # the GIL released
        threads = _default_workers() if workers is None else max(1, int(workers))
        items, _engine, note = _ferry.hash_files(
            [os.fspath(x) for x in source], mode=_choice(_MODES, mode, "mode"), kinds=mask,
            hash_size=int(hash_size), colorhash_bits=int(colorhash_bits), max_pixels=max_pixels,
            max_bytes=max_bytes, threads=threads, device=dev, progress=progress)
        if note:
            import warnings
            warnings.warn(f"ferry.hash: {note}: hashing on the CPU", RuntimeWarning, stacklevel=2)
        out = []
        for item in items:
            if isinstance(item, Error):
                if on_error == "raise":
                    raise item
                out.append(None)
            else:
                out.append(pick(item))
        return out
    if isinstance(source, (list, tuple)):
        n = len(source)
        threads = _default_workers() if workers is None else max(1, int(workers))
        if threads == 1 or n < 2:
            return [one(x) for x in source]
        import concurrent.futures
        with concurrent.futures.ThreadPoolExecutor(min(threads, n)) as pool:
            return list(pool.map(one, source))
    return one(source)


def hash_distance(a: str, b: str) -> int:
    """Hamming distance of two hex hashes of the same size (imagehash's
    h1 - h2)."""
    if len(a) != len(b):
        raise InvalidArgument(f"hashes of different sizes: {len(a)} and {len(b)} hex digits")
    return bin(int(a, 16) ^ int(b, 16)).count("1")


def _image_files(roots: Sequence[PathLike], recursive: bool) -> List[str]:
    files: List[str] = []
    for root in roots:
        root = os.fspath(root)
        if os.path.isdir(root):
            if recursive:
                for d, subdirs, names in os.walk(root):
                    subdirs.sort()
                    files += [os.path.join(d, n) for n in sorted(names)
                              if n.lower().endswith(IMAGE_SUFFIXES)]
            else:
                files += [os.path.join(root, n) for n in sorted(os.listdir(root))
                          if n.lower().endswith(IMAGE_SUFFIXES)]
        else:
            files.append(root)
    return files


def find_duplicates(source: Union[PathLike, Sequence[PathLike]], kind: str = "phash",
                    threshold: int = 8, *, mode: str = "fast", hash_size: int = 8,
                    workers: Optional[int] = None, recursive: bool = True,
                    details: bool = False, device: Any = None,
                    progress: Optional[Callable[[int, int], Any]] = None) -> List[Any]:
    """Groups of near-duplicate images: files whose `kind` hashes are within
    `threshold` bits of each other, transitively (union-find over the pairs).

    source: a directory (its *.jpg, *.jpeg, *.png, *.webp, recursively), a
      file, or a list of either. Files that cannot be hashed are left out.
    Returns a list of groups, each a list of paths with the keeper first
    (largest resolution, then largest file, then first path), groups in the
    order of their first path. With details=True each group is a list of
    (path, width, height, distance to the keeper) instead.
    device: where the files are hashed, as for ferry.hash (None: the cores).
    progress: called as progress(done, total) while the files are hashed.
    """
    import numpy
    roots = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    files = _image_files(roots, recursive)
    kind_name = _hash_kinds(kind)[0][0]
    mask = 1 << _ferry.hash_kind_parse(kind_name)
    threads = _default_workers() if workers is None else max(1, int(workers))
    items: List[Any] = []
    if files:  # one C call: every core (and the GPU with device), the GIL released
        items, _engine, note = _ferry.hash_files(
            files, mode=_choice(_MODES, mode, "mode"), kinds=mask, hash_size=int(hash_size),
            threads=threads, device=_device_index(device), progress=progress)
        if note:
            import warnings
            warnings.warn(f"ferry.find_duplicates: {note}: hashing on the CPU", RuntimeWarning,
                          stacklevel=2)
    results = [None if isinstance(r, Error) else (r[1], r[2], r[4][kind_name]) for r in items]
    good = [(f, r) for f, r in zip(files, results) if r is not None]
    if len(good) < 2:
        return []
    bits = max(len(r[2]) for _, r in good) * 4
    words = max(1, (bits + 63) // 64)
    codes = numpy.zeros((len(good), words), dtype=numpy.uint64)
    for i, (_, (_, _, hexstr)) in enumerate(good):
        v = int(hexstr, 16)
        for w in range(words):
            codes[i, w] = (v >> (64 * w)) & 0xFFFFFFFFFFFFFFFF
    pairs = _ferry.hamming_pairs(codes.tobytes(), words, int(threshold),
                                 threads=0 if workers is None else int(workers))
    group_of, ngroups = _ferry.group_pairs(len(good), pairs)
    group_of = numpy.asarray(group_of)
    members: List[List[int]] = [[] for _ in range(ngroups)]
    for i, g in enumerate(group_of.tolist()):
        if g != 0xFFFFFFFF:
            members[g].append(i)

    def keeper_order(i: int) -> Any:
        path, (w, h, _) = good[i]
        try:
            size = os.path.getsize(path)
        except OSError:
            size = 0
        return (-(w * h), -size, path)

    groups: List[Any] = []
    for m in members:
        m.sort(key=keeper_order)
        if details:
            k = good[m[0]][1][2]
            groups.append([(good[i][0], good[i][1][0], good[i][1][1],
                            hash_distance(k, good[i][1][2])) for i in m])
        else:
            groups.append([good[i][0] for i in m])
    groups.sort(key=lambda g: min(x[0] if details else x for x in g))
    return groups


__all__ += ["hash_distance", "hash", "find_duplicates"]
