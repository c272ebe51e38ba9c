"""ferry: images from storage into PyTorch and NumPy, fast.

A thin layer over the C extension ferry._ferry, which drives the ferry C
library: JPEG/PNG/WebP/TIFF/GIF/HEIF/BMP/raw decoded on every core (JPEG with DCT-domain
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
changes under you. The ring has `prefetch` buffers (by default 4, or 6 on
a GPU with the JPEG engine; `Loader.ring`): if you keep more
batches than that alive, the next batch raises StateError (pass copy=True to
get arrays of your own). See docs/PYTHON.md.

ferry.VideoReader reads a video file's frames in batches (libavcodec, or
NVDEC on a GPU); its batches are DLPack views valid until the next batch.
"""
from __future__ import annotations

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

# The package by job; every name the one-file package had stays here.
from ._common import (  # noqa: F401
    IMAGENET_MEAN, IMAGENET_STD, _choice, _Closable, _default_workers, _device_index,
    _dist_defaults, _dtype_code, _dtype_name, _DTYPE_NAMES, _DTYPES, _env_int, _FILTERS,
    _LAYOUTS, _normalization, _OUTPUTS, _size, _stall_ms, _three)
from ._loader import (  # noqa: F401
    Batch, FieldsBatch, decode, Loader, probe, SkippedFileWarning, _Converter, _EpochIterator)
from ._tensor import load_tensor  # noqa: F401
from ._augment import ColorJitter  # noqa: F401
from ._video import (  # noqa: F401
    VideoReader, _int_arg, _seconds_arg, _VIDEO_CROPS, _video_size)
from ._dedup import (  # noqa: F401
    find_duplicates, hash, hash_distance, IMAGE_SUFFIXES, PathLike, _hash_kinds, _Hashers,
    _image_files, _is_pixels, _MODES)
from ._search import hamming_pairs, hamming_topk  # noqa: F401
from ._info import build_info  # noqa: F401
from ._log import FerryWarning, get_log_level, set_log_level  # noqa: F401
from ._catalog import (  # noqa: F401
    index_merge, index_rank_of, index_update, MissingRanksWarning)

__version__ = _ferry.version

__all__ = [
    "Loader", "Batch", "FieldsBatch", "Tensor", "decode", "probe", "SkippedFileWarning",
    "VideoReader", "VideoBatch",
    "Error", "ReadError", "UnsupportedError", "CorruptError", "TooLargeError",
    "InvalidArgument", "OutOfMemoryError", "EmptySourceError", "StateError", "InternalError",
    "StallError",
    "__version__",
]
__all__ += ["hash_distance", "hash", "find_duplicates", "hamming_pairs", "hamming_topk"]
__all__ += ["build_info", "set_log_level", "get_log_level", "FerryWarning"]
__all__ += ["index_update", "index_merge", "index_rank_of", "MissingRanksWarning"]

# The public objects are ferry's (their repr, pickling and help name the
# package, as when they were defined in this file).
for _obj in (SkippedFileWarning, Batch, Loader, decode, probe, VideoReader, hash, hash_distance,
             find_duplicates, build_info, index_update, index_merge, index_rank_of,
             MissingRanksWarning, set_log_level, get_log_level, FerryWarning):
    _obj.__module__ = __name__
del _obj
