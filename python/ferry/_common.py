"""What the loader, the video reader and the hashing share: the Python
forms of some arguments (sizes, devices, dtypes, normalisation, seconds),
the video reader's option tables (the loader's options are the C library's
registry's: ferry._ferry.loader_options()), _Closable (close() and the context manager
of the objects that own a C handle), and user_path: the one reading of a path
a user gives any entry point (~ expanded; nothing there is FileNotFoundError)."""

from __future__ import annotations

import errno
import os
import re
import sys
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from . import _ferry
from ._ferry import InvalidArgument, ReadError


class MissingPathError(FileNotFoundError, ReadError):
    """A path given to ferry names nothing: a FileNotFoundError, and a
    ferry.ReadError (status EIO) as the C library's own read errors are."""

    status = _ferry.EIO


_PATTERN = re.compile(r"[*?\[{]")


def user_path(path: Any, what: str, *, must_exist: bool = True, pattern: bool = False) -> Any:
    """A path a user gave (str, bytes or os.PathLike) as ferry's entry points
    read it: "~" and "~user" expanded, as a shell does; with must_exist, a
    path that names nothing raises FileNotFoundError naming `what` and the
    path. pattern: the path may be a shard pattern or glob ({000..009},
    *, ?, [...]), left to the C library whenever it has one of those."""
    raw = os.fspath(path)
    text = os.fsdecode(raw)
    if pattern and (text.startswith("pipe:") or "://" in text):
        return raw  # a stream (pipe:CMD, http(s)://, s3://): the C library opens or refuses it
    p = os.path.expanduser(raw)
    if must_exist and not os.path.lexists(p):
        text = os.fsdecode(p)
        if not (pattern and _PATTERN.search(text)):
            raise MissingPathError(errno.ENOENT, f"{text}: cannot open ({what}): no such file or "
                                   "folder", text)
    return p


IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

_DTYPES = {"uint8": _ferry.U8, "u8": _ferry.U8, "float16": _ferry.F16, "f16": _ferry.F16,
           "half": _ferry.F16, "float32": _ferry.F32, "f32": _ferry.F32, "float": _ferry.F32}
_DTYPE_NAMES = {_ferry.U8: "uint8", _ferry.F16: "float16", _ferry.F32: "float32"}
_LAYOUTS = {"chw": _ferry.CHW, "nchw": _ferry.CHW, "hwc": _ferry.HWC, "nhwc": _ferry.HWC}
_FILTERS = {"bilinear": _ferry.FILTER_BILINEAR, "triangle": _ferry.FILTER_TRIANGLE,
            "area": _ferry.FILTER_AREA, "box": _ferry.FILTER_AREA,
            "bicubic": _ferry.FILTER_BICUBIC, "lanczos": _ferry.FILTER_LANCZOS,
            "nearest": _ferry.FILTER_NEAREST}
_OUTPUTS = ("auto", "torch", "numpy", "tensor")


def _choice(table: dict, value: Any, what: str) -> int:
    key = str(value).lower()
    if key not in table:
        raise InvalidArgument(f"{what} must be one of {', '.join(sorted(table))}, not {value!r}")
    return table[key]


def _dtype_name(dtype: Any) -> str:
    """A dtype given as a name, a torch dtype or a NumPy dtype, as a name
    ("float16"); whether ferry has it is for the C library to say."""
    if isinstance(dtype, str):
        return dtype
    if type(dtype).__module__.split(".")[0] == "torch":
        return str(dtype).replace("torch.", "")
    try:
        import numpy
        return numpy.dtype(dtype).name
    except TypeError:
        return str(dtype)


def _dtype_code(dtype: Any) -> int:
    return _choice(_DTYPES, _dtype_name(dtype), "dtype")


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


def _compute_device(device: Any, what: str = "device") -> int:
    """Where hashes or a search run: -1 the CPU, N CUDA device N, or OpenCL
    device N as DEVICE_OPENCL + N ("opencl" alone: DEVICE_OPENCL_ANY, the
    first GPU of any platform, else device 0), as include/ferry.h numbers
    them."""
    text = device.strip().lower() if isinstance(device, str) else None
    if text is not None and (text == "opencl" or text.startswith("opencl:")):
        if text == "opencl":
            return _ferry.DEVICE_OPENCL_ANY
        m = re.fullmatch(r"opencl:(\d+)", text)
        if not m or int(m.group(1)) > 65534:
            raise InvalidArgument(f'{what}: "opencl:N" takes a device number 0..65534 '
                                  f"(ferry doctor lists them), not {device!r}")
        return _ferry.DEVICE_OPENCL + int(m.group(1))
    try:
        return _device_index(device)
    except InvalidArgument:
        raise InvalidArgument(f'{what} must be "cpu", "cuda", "cuda:N", "opencl" or '
                              f'"opencl:N", not {device!r}') from None


def _default_workers() -> int:
    """Every core this process may use, shared between the processes of
    this node under torchrun (LOCAL_WORLD_SIZE): the C library's rule,
    ferry_default_threads()."""
    return _ferry.default_threads()


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
