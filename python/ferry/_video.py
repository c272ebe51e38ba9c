"""ferry.VideoReader: a video file's frames in batches (libavcodec, or
NVDEC on a GPU); its batches are DLPack views valid until the next batch."""

from __future__ import annotations

import math
import numbers
import operator
import os
from typing import Any, Optional, Sequence, Tuple, Union

from . import _ferry
from ._ferry import InvalidArgument, StateError, VideoBatch
from ._common import user_path
from ._log import emit_notices
from ._common import (
    _Closable, _FILTERS, _LAYOUTS, _choice, _device_index, _dtype_code, _normalization, _size)



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
      path: the video file (container and codec found from its bytes): a
        regular file (a FIFO, device or folder raises InvalidArgument at
        once); a still image, whatever its name, raises UnsupportedError, as
        `ferry video` refuses it; an animation (GIF, APNG) over the limits
        checked before decoding (a frame over 178,956,970 pixels, frames x
        canvas over 2**25 pixels + 4096 a byte of the file) TooLargeError.
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
      nvdec_keep: device="cuda": when the reader closes, at most this many
        idle NVDEC decoders (its own among them) stay in the process for the
        next file of the same size and codec (0..64, default 8; 0: none):
        making one costs more than decoding a short 1080p file.

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
                 copy: bool = False, strict: bool = False, nvdec_keep: int = 8):
        self._core = None  # so that close() and __del__ work after a failed __init__
        try:
            self._path = user_path(path, "VideoReader")
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
            ignore_rotation=bool(ignore_rotation), copy=bool(copy), strict=bool(strict),
            nvdec_keep=_int_arg(nvdec_keep, "nvdec_keep", 0, 64))
        # The C library's errors, each naming the file: ReadError (cannot
        # open), InvalidArgument (not a regular file), CorruptError (no
        # readable stream), UnsupportedError (a still image, no decoder, no
        # GPU/NVDEC, or a library built without libavcodec), TooLargeError
        # (an animation over the limits).
        self._core = _ferry.VideoReader(self._path, **self._options)
        emit_notices()

    def __iter__(self) -> "VideoReader":
        return self

    def __next__(self) -> VideoBatch:
        b = self._live_core().next()
        if b is None:
            raise StopIteration
        return b

    def frame(self, k: int, *, timestamp: bool = False) -> Any:
        """Frame k (presentation order from 0, as frame_indices number
        them) by random access: a uint8 NumPy array [H, W, 3], upright RGB at
        full size (not resized or normalised; the sampling options do not
        apply), a copy of its own, as ferry.decode gives images; with
        timestamp=True the pair (array, seconds). Cost: a seek to the
        keyframe at or before k through the container's index, then decoding
        forward to k (non-reference frames skipped); no seek when k is just
        ahead of the last frame asked for. Any k in any order; afterwards
        the reader gives no more batches (iterate another reader).
        InvalidArgument for k out of range (naming the file and its frame
        count); UnsupportedError for a stream without a constant frame
        rate. A GPU reader decodes k on NVDEC and gives it in host memory all
        the same."""
        import numpy
        k = _int_arg(k, "k", 0)
        t, ts = self._live_core().frame_at(k)
        return (numpy.asarray(t), ts) if timestamp else numpy.asarray(t)

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
