"""ferry.hamming_pairs and ferry.hamming_topk: the Hamming searches of the C
library (ferry_hamming_pairs, ferry_hamming_topk) over codes a user already
has (hashes kept in a database, a catalog exported to NumPy, ...), on the
cores, on one or several CUDA GPUs, or on an OpenCL device."""
from typing import Any, Tuple

from . import _ferry
from ._ferry import InvalidArgument
from ._dedup import _search_devices

_METHODS = {"auto": 0, "brute": 1, "mih": 2}


def _codes(codes: Any, what: str) -> Tuple[bytes, int]:
    """(the codes' bytes, words per code) of a uint64 array [n] (64-bit
    codes) or [n, 1] / [n, 4] (64- or 256-bit), C-contiguous: a NumPy
    array, anything with the buffer protocol, or a CPU torch tensor."""
    if hasattr(codes, "__dlpack__") and not hasattr(codes, "__array_interface__"):
        try:  # a torch tensor: through NumPy, without a copy on the CPU
            codes = codes.numpy()
        except Exception as e:
            raise InvalidArgument(f"{what}: codes must be on the CPU ({e})") from None
    try:
        view = memoryview(codes)
    except TypeError:
        raise InvalidArgument(f"{what}: codes must be a uint64 array [n] or [n, words], not "
                              f"{type(codes).__name__}") from None
    if view.itemsize != 8 or view.format.lstrip("<=@") not in ("Q", "L", "K"):
        raise InvalidArgument(f"{what}: codes must be uint64, not format {view.format!r}")
    if view.ndim not in (1, 2):
        raise InvalidArgument(f"{what}: codes must be [n] or [n, words], not {view.ndim}-D")
    if not view.c_contiguous:
        raise InvalidArgument(f"{what}: codes must be C-contiguous (numpy.ascontiguousarray)")
    words = 1 if view.ndim == 1 else view.shape[1]
    if words not in (1, 4):
        raise InvalidArgument(f"{what}: a code is 1 or 4 64-bit words (64- or 256-bit hashes), "
                              f"not {words}")
    return view.cast("B"), words


def _method(method: str, what: str) -> int:
    if method not in _METHODS:
        raise InvalidArgument(f"{what}: method must be one of {', '.join(_METHODS)}, "
                              f"not {method!r}")
    return _METHODS[method]


def hamming_pairs(codes: Any, threshold: int, *, device: Any = None, threads: int = 0,
                  method: str = "auto") -> Any:
    """Every pair of codes within `threshold` bits: a uint32 Tensor
    [npairs, 3] of (i, j, distance), i < j, sorted by (i, j); the same
    pairs on every device and method.

    codes: uint64 [n] (64-bit codes) or [n, 4] (256-bit), C-contiguous
    (NumPy, the buffer protocol, or a CPU torch tensor). device: None or
    "cpu" (every core, or `threads`), "cuda", "cuda:1", "cuda:0,1" or a
    list of CUDA device numbers (the work shared among them), "opencl" or
    "opencl:N". method (CPU): "auto", "brute" or "mih". numpy.asarray()
    of the result is a view, no copy."""
    buf, words = _codes(codes, "hamming_pairs")
    return _ferry.hamming_pairs(buf, words, int(threshold), int(threads),
                                _method(method, "hamming_pairs"),
                                _search_devices(device))


def hamming_topk(codes: Any, k: int, *, device: Any = None, threads: int = 0,
                 method: str = "auto") -> Any:
    """The k nearest other codes of every code: a uint32 Tensor [n, k, 2]
    of (index, distance), nearest first, ties by lower index; index
    2**32 - 1 (distance 2**32 - 1) where there are fewer than k others.

    codes, device, threads and method as hamming_pairs'. On a GPU (CUDA
    or OpenCL) k is at most 32; on several CUDA GPUs the queries are
    handed out in blocks as the GPUs finish them, with the same result
    as one device."""
    buf, words = _codes(codes, "hamming_topk")
    return _ferry.hamming_topk(buf, words, int(k), int(threads), _method(method, "hamming_topk"),
                               _search_devices(device))
