"""Per-sample random augmentations on ferry's batches (on the batch's device:
torch tensors on a GPU, or NumPy arrays), each sample's parameters drawn from
(seed, epoch, sample index) so they depend neither on batch composition nor
on threads. Loader(..., augment=ferry.ColorJitter(...)) applies one to every
batch; any callable f(images, indices, epoch) -> images works the same way."""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ._ferry import InvalidArgument

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, vectorised: well-spread 64-bit values."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def sample_uniform(seed: int, epoch: int, indices: Any, stream: int) -> np.ndarray:
    """Uniform floats in [0, 1), one per sample index, from (seed, epoch,
    index, stream) only."""
    idx = np.asarray(indices.cpu() if hasattr(indices, "cpu") else indices).astype(np.uint64)
    with np.errstate(over="ignore"):
        key = _mix(np.uint64(seed & (2**64 - 1)) + _GOLDEN * np.uint64(epoch * 16 + stream + 1))
        v = _mix(idx * _GOLDEN + key)
    return (v >> np.uint64(11)).astype(np.float64) / float(1 << 53)


class ColorJitter:
    """Per-sample brightness, contrast and saturation jitter, as
    torchvision's ColorJitter draws them (factors uniform in [1 - x, 1 + x])
    but a factor per sample, applied in that order: brightness scales the
    pixels, contrast moves them away from the image's mean grey, saturation
    away from each pixel's grey (ITU-R 601 weights), clamped to the pixel
    range. Floats in 0..1 (or normalised: give the loader's mean and std) or
    uint8 (returned as float32 in 0..1). layout: "chw" or "hwc", as the
    loader's."""

    def __init__(self, brightness: float = 0.0, contrast: float = 0.0, saturation: float = 0.0,
                 *, seed: int = 0, mean: Optional[Sequence[float]] = None,
                 std: Optional[Sequence[float]] = None, layout: str = "chw"):
        for name, v in (("brightness", brightness), ("contrast", contrast),
                        ("saturation", saturation)):
            if not 0 <= v < 1:
                raise InvalidArgument(f"ColorJitter: {name} must be in [0, 1), not {v!r}")
        if layout not in ("chw", "hwc"):
            raise InvalidArgument(f"ColorJitter: layout must be 'chw' or 'hwc', not {layout!r}")
        if (mean is None) != (std is None):
            raise InvalidArgument("ColorJitter: give mean and std together (the loader's)")
        self.b, self.c, self.s = brightness, contrast, saturation
        self.seed, self.mean, self.std, self.layout = seed, mean, std, layout

    def factors(self, indices: Any, epoch: int) -> np.ndarray:
        """[n, 3] factors (brightness, contrast, saturation) of the samples."""
        cols = [1 - x + 2 * x * sample_uniform(self.seed, epoch, indices, k)
                for k, x in enumerate((self.b, self.c, self.s))]
        return np.stack(cols, axis=1)

    def __call__(self, images: Any, indices: Any, epoch: int) -> Any:
        f = self.factors(indices, epoch)
        torch_in = type(images).__module__.split(".")[0] == "torch"
        if torch_in:
            import torch
            xp_f = torch.as_tensor(f, dtype=torch.float32, device=images.device)
            x = images.float() / 255 if images.dtype == torch.uint8 else images.float()
        else:
            xp_f = f.astype(np.float32)
            x = (images.astype(np.float32) / 255 if images.dtype == np.uint8
                 else images.astype(np.float32))
        cdim = 1 if self.layout == "chw" else x.ndim - 1
        shape = [1] * x.ndim
        shape[cdim] = 3

        def per_channel(v: Sequence[float]) -> Any:
            a = np.asarray(v, np.float32).reshape(shape)
            return torch.as_tensor(a, device=images.device) if torch_in else a

        if self.mean is not None:
            x = x * per_channel(self.std) + per_channel(self.mean)
        bshape = [x.shape[0]] + [1] * (x.ndim - 1)
        w = per_channel((0.299, 0.587, 0.114))

        def grey(t: Any) -> Any:
            return (t * w).sum(cdim, keepdim=True) if torch_in else \
                (t * w).sum(axis=cdim, keepdims=True)

        x = x * xp_f[:, 0].reshape(bshape)
        x = x.clip(0, 1) if not torch_in else x.clamp(0, 1)
        g = grey(x)
        m = g.mean(dim=tuple(range(1, x.ndim)), keepdim=True) if torch_in else \
            g.mean(axis=tuple(range(1, x.ndim)), keepdims=True)
        x = (x - m) * xp_f[:, 1].reshape(bshape) + m
        x = x.clamp(0, 1) if torch_in else x.clip(0, 1)
        g = grey(x)
        x = (x - g) * xp_f[:, 2].reshape(bshape) + g
        x = x.clamp(0, 1) if torch_in else x.clip(0, 1)
        if self.mean is not None:
            x = (x - per_channel(self.mean)) / per_channel(self.std)
        if torch_in and images.dtype != torch.uint8:
            return x.to(images.dtype)
        if not torch_in and images.dtype != np.uint8:
            return x.astype(images.dtype)
        return x
