"""ferry.load_tensor: a whole dataset into one preallocated tensor, in one call."""
from __future__ import annotations

import os
import sys
import time
import warnings
from typing import Any, Optional, Sequence, Tuple, Union

from ._ferry import InvalidArgument, TooLargeError
from ._common import _device_index
from ._loader import Loader

_ITEM = {"uint8": 1, "float16": 2, "float32": 4}
# Below this many images per CPU worker, load_tensor(device="cuda") decodes on
# the cores: a GPU loader's start (~1.2 s on an H100: nvJPEG states growing)
# costs more than the cores need for the whole set (~750 images/s per core).
_CPU_IMAGES_PER_CORE = 1100


def _host_available() -> Optional[int]:
    """MemAvailable of /proc/meminfo in bytes (None where there is none)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB"


class _Progress:
    """A line on stderr, at most every `every` seconds, then the last one."""

    def __init__(self, total: int, on: bool, every: float = 1.0):
        self.total, self.on, self.every = total, on, every
        self.t0 = self.last = time.perf_counter()

    def __call__(self, done: int, final: bool = False) -> None:
        now = time.perf_counter()
        if not self.on or (not final and now - self.last < self.every):
            return
        self.last = now
        rate = done / max(now - self.t0, 1e-9)
        eta = "" if final or not rate else f", {max(self.total - done, 0) / rate:.0f} s left"
        end = "\n" if final else ""
        sys.stderr.write(f"\rload_tensor: {done:,}/{self.total:,} images, {rate:,.0f} images/s"
                         f"{eta}{' ' * 8}{end}")
        sys.stderr.flush()


def load_tensor(source: Any, size: Union[int, Sequence[int]] = 224, *, device: Any = "cpu",
                dtype: Any = "uint8", batch_size: int = 256, progress: Optional[bool] = None,
                output: str = "auto", reserve: Optional[int] = None,
                gpu_decode: Optional[bool] = None, **options: Any) -> Tuple[Any, Any]:
    """Loads every sample of `source` into one tensor [N, C, H, W] (or
    [N, H, W, C] with layout="hwc") and its labels [N], in the source's order.

    source, size, device, dtype and every other keyword are Loader's (crop,
    mean/std, on_error, workers, ...); shuffling is off. The output is
    allocated once, after checking that it fits in the device's free memory
    (or the host's available memory) with `reserve` bytes to spare (default:
    the loader's own buffers plus 1 GiB), and batches are copied into it as
    they come (on a GPU, device to device). Bad files are left out as the
    loader leaves them out (on_error="skip", with a SkippedFileWarning each):
    the result then holds fewer than the source's samples, in order.
    progress: a line on stderr every second (default: when stderr is a
    terminal). gpu_decode (device="cuda" only): True makes the batches on
    the GPU (its JPEG engine beside the cores), False on the cores (pinned
    batches copied to the GPU), None (default) picks by size: a GPU loader
    takes about a second to start (nvJPEG's states), so sets the cores
    decode in under ~1.5 s (about 1,100 images per core) stay on the
    cores (measured on an H100 with 16 cores: 2,000 images 1.85 s on the
    GPU path, far less on the cores). Returns torch tensors (NumPy arrays
    with output="numpy", or without torch on the CPU)."""
    if "shuffle" in options and options["shuffle"]:
        raise InvalidArgument("load_tensor keeps the source's order: shuffle=True is not taken")
    options["shuffle"] = False
    if output not in ("auto", "torch", "numpy"):
        raise InvalidArgument(f"output must be 'auto', 'torch' or 'numpy', not {output!r}")
    target = _device_index(device)
    if target >= 0 and output != "numpy":
        try:
            import torch  # noqa: F401
        except ImportError:
            raise ImportError(f"load_tensor(device={device!r}) gives a torch tensor on the GPU: "
                              "install PyTorch (pip install torch, or pip install "
                              "'ferry[torch]')") from None
    if target >= 0 and gpu_decode is not True:
        if output == "numpy":
            raise InvalidArgument('output="numpy" needs device="cpu"')
        cpu = Loader(source, batch_size, size, device="cpu", dtype=dtype, output="torch",
                     pin_memory=True, **options)
        small = cpu.num_samples < _CPU_IMAGES_PER_CORE * max(1, cpu.workers)
        if gpu_decode is False or small:
            try:
                return _fill(cpu, progress, reserve, to_device=target)
            finally:
                cpu.close()
        cpu.close()
    loader = Loader(source, batch_size, size, device=device, dtype=dtype, output=output,
                    **options)
    try:
        return _fill(loader, progress, reserve)
    finally:
        loader.close()


def _fill(loader: Loader, progress: Optional[bool], reserve: Optional[int],
          to_device: int = -1) -> Tuple[Any, Any]:
    """Copies every batch of `loader` into one tensor: on the loader's
    device, or on CUDA device `to_device` from a CPU loader's pinned
    batches."""
    o = loader._options
    n = loader.num_samples
    h, w = o["height"], o["width"]
    shape = (n, 3, h, w) if str(o.get("layout", "chw")).lower() == "chw" else (n, h, w, 3)
    dt = loader.dtype
    need = n * 3 * h * w * _ITEM[dt] + n * 8
    ring = loader.ring * o["batch_size"] * 3 * h * w * _ITEM[dt]
    spare = reserve if reserve is not None else ring + (1 << 30)
    on_gpu = loader.device != "cpu" or to_device >= 0
    torch_out = loader.output == "torch"
    if on_gpu:
        import torch
        dev = loader._torch_device if to_device < 0 else torch.device("cuda", to_device)
        free, _ = torch.cuda.mem_get_info(dev)
        where, have = str(dev), free
    else:
        where, have = "the host", _host_available()
    if have is not None and need + spare > have:
        raise TooLargeError(
            f"load_tensor: {n:,} images of {'x'.join(map(str, shape[1:]))} {dt} need "
            f"{_gb(need)} (+ {_gb(spare)} for the loader); {where} has {_gb(have)} free: "
            f"choose a smaller size or dtype, a subset, or another device")
    if torch_out:
        import torch
        tdt = {"uint8": torch.uint8, "float16": torch.float16, "float32": torch.float32}[dt]
        dev = (loader._torch_device if to_device < 0 else torch.device("cuda", to_device)) \
            if on_gpu else "cpu"
        images = torch.empty(shape, dtype=tdt, device=dev)
        labels = torch.empty((n,), dtype=torch.int64, device=dev)
    else:
        import numpy
        images = numpy.empty(shape, dtype=dt)
        labels = numpy.empty((n,), dtype=numpy.int64)
    show = _Progress(n, sys.stderr.isatty() if progress is None else bool(progress))
    at = 0
    for x, y in loader:
        k = len(y)
        if torch_out:
            images[at:at + k].copy_(x, non_blocking=True)
            labels[at:at + k].copy_(y, non_blocking=True)
            if to_device >= 0:  # the pinned batch goes back to the loader once copied
                torch.cuda.current_stream(dev).synchronize()
        else:
            images[at:at + k] = x
            labels[at:at + k] = y
        at += k
        show(at)
    if torch_out and on_gpu:
        import torch
        torch.cuda.current_stream(dev).synchronize()
    show(at, final=True)
    if at < n:
        warnings.warn(f"load_tensor: {n - at} of {n} samples were left out (bad files: "
                      "SkippedFileWarning above); the result holds the other "
                      f"{at}, in order", stacklevel=3)
        images, labels = images[:at], labels[:at]
    return images, labels
