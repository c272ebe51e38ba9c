"""ferry.imagehash: imagehash 4.3's API, computed by ferry.

    from ferry import imagehash          # instead of: import imagehash
    h = imagehash.phash(Image.open("a.jpg"))
    h - imagehash.hex_to_hash("ba8c84536bd3c366")   # Hamming distance

The same names, arguments, objects (ImageHash, ImageMultiHash) and hex
strings as imagehash, and the same bits. Where each hash is computed:

- average_hash, dhash, dhash_vertical, phash and whash (Haar, default
  image_scale) of hash size 8 or 16, and colorhash, run in ferry's C
  library from the image's Pillow "L" (or "RGB") pixels: ferry's resampler,
  DCT and Haar transforms reproduce Pillow's, SciPy's and PyWavelets'
  arithmetic bit for bit. A file path (str or os.PathLike) is decoded by
  ferry itself (compatible mode: the same bits as Pillow's decode).
- Every other hash size and option (mean=, highfreq_factor=, image_scale=,
  remove_max_haar_ll=False, phash_simple) is computed here with Pillow's
  resize and NumPy, in imagehash's order of operations: the same bits.
  phash / phash_simple of those sizes use SciPy's DCT when SciPy is
  installed; without it a NumPy DCT whose last bits may differ where a
  coefficient ties the median (a RuntimeWarning says so, once).
  whash(mode="db4") needs PyWavelets.
- crop_resistant_hash segments the image as imagehash does (Pillow's blur
  and median filters, then bright and dark regions) and hashes each
  region's bounding box with hash_func.

Pillow is needed for images given as PIL images (as imagehash's callers
have); ferry's other modules do not need it.
"""

from __future__ import annotations

import os
import threading
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy

from . import _ferry

__all__ = [
    "ImageHash", "ImageMultiHash", "average_hash", "phash", "phash_simple", "dhash",
    "dhash_vertical", "whash", "colorhash", "crop_resistant_hash", "hex_to_hash",
    "hex_to_flathash", "hex_to_multihash", "old_hex_to_hash",
]

_COMPATIBLE = 1  # ferry's compatible mode (imagehash's bits)
_C_SIZES = (8, 16)


# --------------------------------------------------------------- objects

def _binary_array_to_hex(arr: Any) -> str:
    """The hex string of a boolean array, its bits read in row-major order
    as one big-endian number, padded to a digit per 4 bits."""
    bits = numpy.asarray(arr, dtype=bool).ravel()
    if bits.size == 0:
        raise ValueError("an empty hash has no hex string")
    value = int("".join("1" if b else "0" for b in bits), 2)
    return format(value, "0{}x".format(-(-bits.size // 4)))


class ImageHash:
    """A hash: `hash` is its boolean array. `a - b` is the Hamming distance;
    str() the hex string; usable as a dict key."""

    def __init__(self, binary_array: Any) -> None:
        self.hash = binary_array

    def __str__(self) -> str:
        return _binary_array_to_hex(self.hash)

    def __repr__(self) -> str:
        return repr(self.hash)

    def __sub__(self, other: "ImageHash") -> int:
        if other is None:
            raise TypeError("Other hash must not be None.")
        if self.hash.size != other.hash.size:
            raise TypeError("ImageHashes must be of the same shape.", self.hash.shape,
                            other.hash.shape)
        return int(numpy.count_nonzero(self.hash.ravel() != other.hash.ravel()))

    def __eq__(self, other: object) -> bool:
        if other is None or not hasattr(other, "hash"):
            return False
        return bool(numpy.array_equal(self.hash.ravel(), other.hash.ravel()))  # type: ignore

    def __ne__(self, other: object) -> bool:
        if other is None or not hasattr(other, "hash"):
            return False  # imagehash's answer for None
        return not self.__eq__(other)

    def __hash__(self) -> int:
        # imagehash's value: the set bits folded into 8 bits' weights
        idx = numpy.flatnonzero(self.hash.ravel())
        return int(sum(1 << (int(i) % 8) for i in idx))

    def __len__(self) -> int:
        return int(self.hash.size)


def _bits_of_hex(hexstr: str, nbits: int) -> numpy.ndarray:
    value = int(hexstr, 16)
    return numpy.array([(value >> (nbits - 1 - i)) & 1 for i in range(nbits)], dtype=bool)


def hex_to_hash(hexstr: str) -> ImageHash:
    """A square hash back from its hex string (str(ImageHash)): its side is
    the integer square root of the string's bits."""
    side = int(numpy.sqrt(len(hexstr) * 4))
    return ImageHash(_bits_of_hex(hexstr, side * side).reshape(side, side))


def hex_to_flathash(hexstr: str, hashsize: int) -> ImageHash:
    """A one-row hash (colorhash's) back from its hex string; hashsize is
    the bits of one row unit (binbits * 14 for a colorhash)."""
    units = int(len(hexstr) * 4 / hashsize)
    n = units * hashsize
    return ImageHash(_bits_of_hex(hexstr, n).reshape(1, n))


def hex_to_multihash(hexstr: str) -> "ImageMultiHash":
    """An ImageMultiHash back from str(ImageMultiHash): hashes joined by
    commas."""
    return ImageMultiHash([hex_to_hash(x) for x in hexstr.split(",")])


def old_hex_to_hash(hexstr: str, hash_size: int = 8) -> ImageHash:
    """A hash from the hex strings of imagehash before 4.0: each byte's bits
    least significant first."""
    count = hash_size * (hash_size // 4)
    if len(hexstr) != count:
        raise ValueError("Expected hex string size of {}.".format(count))
    rows = []
    for i in range(count // 2):
        v = int(hexstr[2 * i:2 * i + 2], 16)
        rows.append([bool(v & (1 << b)) for b in range(8)])
    return ImageHash(numpy.array(rows))


class ImageMultiHash:
    """A crop-resistant hash: one ImageHash per image segment. Two match
    when enough segments have a close counterpart (Efficient
    Cropping-Resistant Robust Image Hashing, DOI 10.1109/ARES.2014.85)."""

    def __init__(self, hashes: List[ImageHash]) -> None:
        self.segment_hashes = hashes

    def __eq__(self, other: object) -> bool:
        if other is None:
            return False
        return self.matches(other)  # type: ignore

    def __ne__(self, other: object) -> bool:
        return not self.matches(other)  # type: ignore

    def __sub__(self, other: "ImageMultiHash", hamming_cutoff: Optional[float] = None,
                bit_error_rate: Optional[float] = None) -> float:
        matches, total = self.hash_diff(other, hamming_cutoff, bit_error_rate)
        most = len(self.segment_hashes)
        if matches == 0:
            return most
        # more matching segments is better; among equals, closer ones
        return most - (matches - float(total) / (matches * len(self.segment_hashes[0])))

    def __hash__(self) -> int:
        return hash(tuple(hash(s) for s in self.segment_hashes))

    def __str__(self) -> str:
        return ",".join(str(s) for s in self.segment_hashes)

    def __repr__(self) -> str:
        return repr(self.segment_hashes)

    def hash_diff(self, other_hash: "ImageMultiHash", hamming_cutoff: Optional[float] = None,
                  bit_error_rate: Optional[float] = None) -> Tuple[int, int]:
        """(segments with a counterpart within the cutoff, the sum of their
        distances). The cutoff defaults to a quarter of a segment hash's
        bits (bit_error_rate 0.25)."""
        if hamming_cutoff is None:
            rate = 0.25 if bit_error_rate is None else bit_error_rate
            hamming_cutoff = len(self.segment_hashes[0]) * rate
        close = []
        for mine in self.segment_hashes:
            best = min(mine - theirs for theirs in other_hash.segment_hashes)
            if best <= hamming_cutoff:
                close.append(best)
        return len(close), sum(close)

    def matches(self, other_hash: "ImageMultiHash", region_cutoff: int = 1,
                hamming_cutoff: Optional[float] = None,
                bit_error_rate: Optional[float] = None) -> bool:
        """At least region_cutoff segments have a counterpart."""
        return self.hash_diff(other_hash, hamming_cutoff, bit_error_rate)[0] >= region_cutoff

    def best_match(self, other_hashes: Sequence["ImageMultiHash"],
                   hamming_cutoff: Optional[float] = None,
                   bit_error_rate: Optional[float] = None) -> "ImageMultiHash":
        """The hash of other_hashes closest to this one."""
        return min(other_hashes,
                   key=lambda o: self.__sub__(o, hamming_cutoff, bit_error_rate))


# ------------------------------------------------------- the C library

class _Hashers(threading.local):
    """ferry Hashers by (kind, hash size, colorhash bits), one set per
    thread (a C hasher is not thread-safe)."""

    def get(self, kind: str, size: int, bits: int) -> Any:
        cache: Dict[Tuple[str, int, int], Any] = self.__dict__.setdefault("cache", {})
        key = (kind, size, bits)
        h = cache.get(key)
        if h is None:
            mask = 1 << _ferry.hash_kind_parse(kind)
            h = cache[key] = _ferry.Hasher(mode=_COMPATIBLE, kinds=mask, hash_size=size,
                                          colorhash_bits=bits)
        return h


_hashers = _Hashers()


def _is_path(image: Any) -> bool:
    return isinstance(image, (str, os.PathLike))


def _c_hex(kind: str, image: Any, size: int = 8, bits: int = 3, mode: str = "L") -> str:
    """One hash by ferry's C library: of a file (decoded by ferry), or of a
    PIL image's pixels converted by Pillow to `mode` ("L" or "RGB")."""
    h = _hashers.get(kind, size, bits)
    if _is_path(image):
        result = h.hash_file(os.fspath(image))
    else:
        px = numpy.ascontiguousarray(numpy.asarray(image.convert(mode)), dtype=numpy.uint8)
        result = h.hash_pixels(px)
    return result[4][kind]


def _square(kind: str, image: Any, size: int) -> ImageHash:
    return ImageHash(_bits_of_hex(_c_hex(kind, image, size), size * size).reshape(size, size))


def _pil(image: Any) -> Any:
    """A PIL image for the paths computed here (files opened by Pillow)."""
    if _is_path(image):
        from PIL import Image
        return Image.open(os.fspath(image))
    return image


def _gray(image: Any, width: int, height: int) -> numpy.ndarray:
    """Pillow's "L" of the image resized to width x height with LANCZOS
    (imagehash's ANTIALIAS)."""
    from PIL import Image
    lanczos = getattr(getattr(Image, "Resampling", Image), "LANCZOS")
    return numpy.asarray(_pil(image).convert("L").resize((width, height), lanczos))


def _check_size(hash_size: int) -> None:
    if hash_size < 2:
        raise ValueError("Hash size must be greater than or equal to 2")


# --------------------------------------------------------------- hashes

def average_hash(image: Any, hash_size: int = 8, mean: Callable[..., Any] = numpy.mean
                 ) -> ImageHash:
    """aHash: the hash_size x hash_size grey thumbnail against its mean (or
    `mean`, e.g. numpy.median)."""
    _check_size(hash_size)
    if hash_size in _C_SIZES and mean is numpy.mean:
        return _square("ahash", image, hash_size)
    pixels = _gray(image, hash_size, hash_size)
    return ImageHash(pixels > mean(pixels))


def dhash(image: Any, hash_size: int = 8) -> ImageHash:
    """dHash: each pixel of a (hash_size + 1) x hash_size grey thumbnail
    against its left neighbour."""
    _check_size(hash_size)
    if hash_size in _C_SIZES:
        return _square("dhash", image, hash_size)
    pixels = _gray(image, hash_size + 1, hash_size)
    return ImageHash(pixels[:, 1:] > pixels[:, :-1])


def dhash_vertical(image: Any, hash_size: int = 8) -> ImageHash:
    """dHash by rows: each pixel against the one above."""
    if hash_size in _C_SIZES:
        return _square("dhash_v", image, hash_size)
    pixels = _gray(image, hash_size, hash_size + 1)
    return ImageHash(pixels[1:, :] > pixels[:-1, :])


_numpy_dct_warned = False


def _dct(x: numpy.ndarray, axis: int) -> numpy.ndarray:
    """DCT-II without normalisation along `axis` (scipy.fftpack.dct)."""
    try:
        import scipy.fftpack
        return scipy.fftpack.dct(x, axis=axis)
    except ImportError:
        pass
    global _numpy_dct_warned
    if not _numpy_dct_warned:
        _numpy_dct_warned = True
        warnings.warn("ferry.imagehash: phash of this size without SciPy uses NumPy's DCT, whose "
                      "last bits can differ from SciPy's where a coefficient ties the median "
                      "(sizes 8 and 16 are exact; pip install scipy for the others)",
                      RuntimeWarning, stacklevel=3)
    n = x.shape[axis]
    k = numpy.arange(n).reshape(-1, 1)
    basis = 2.0 * numpy.cos(numpy.pi * k * (2 * numpy.arange(n) + 1) / (2 * n))
    moved = numpy.moveaxis(numpy.asarray(x, dtype=numpy.float64), axis, -1)
    return numpy.moveaxis(moved @ basis.T, -1, axis)


def phash(image: Any, hash_size: int = 8, highfreq_factor: int = 4) -> ImageHash:
    """pHash: the lowest hash_size x hash_size frequencies of the DCT of a
    (hash_size * highfreq_factor)-pixel grey square against their median."""
    _check_size(hash_size)
    if hash_size in _C_SIZES and highfreq_factor == 4:
        return _square("phash", image, hash_size)
    side = hash_size * highfreq_factor
    pixels = _gray(image, side, side)
    low = _dct(_dct(pixels, 0), 1)[:hash_size, :hash_size]
    return ImageHash(low > numpy.median(low))


def phash_simple(image: Any, hash_size: int = 8, highfreq_factor: int = 4) -> ImageHash:
    """imagehash's simpler pHash: a DCT of the rows only, frequencies 1 to
    hash_size against their mean."""
    side = hash_size * highfreq_factor
    pixels = _gray(image, side, side)
    low = _dct(pixels, -1)[:hash_size, 1:hash_size + 1]
    return ImageHash(low > low.mean())


_HAAR = 0.7071067811865476  # PyWavelets' Haar filter taps


def _haar_down(x: numpy.ndarray) -> Tuple[numpy.ndarray, Tuple[Any, Any, Any]]:
    """One level of PyWavelets' wavedec2 with 'haar' on an even square:
    along rows of the array first, then along columns, c * odd + c * even
    (dec_lo) and -c * odd + c * even (dec_hi), products then sums, as
    pywt's C does (every double the same)."""
    e, o = x[0::2, :], x[1::2, :]
    lo, hi = _HAAR * o + _HAAR * e, -_HAAR * o + _HAAR * e
    aa = _HAAR * lo[:, 1::2] + _HAAR * lo[:, 0::2]
    ad = -_HAAR * lo[:, 1::2] + _HAAR * lo[:, 0::2]
    da = _HAAR * hi[:, 1::2] + _HAAR * hi[:, 0::2]
    dd = -_HAAR * hi[:, 1::2] + _HAAR * hi[:, 0::2]
    return aa, (ad, da, dd)


def _haar_up(a: numpy.ndarray, bands: Tuple[Any, Any, Any]) -> numpy.ndarray:
    """The inverse of _haar_down (waverec2's step): columns, then rows;
    even samples c * a + c * d, odd c * a + -c * d."""
    ad, da, dd = bands

    def cols(p: numpy.ndarray, q: numpy.ndarray) -> numpy.ndarray:
        out = numpy.empty((p.shape[0], 2 * p.shape[1]))
        out[:, 0::2] = _HAAR * p + _HAAR * q
        out[:, 1::2] = _HAAR * p + -_HAAR * q
        return out

    lo, hi = cols(a, ad), cols(da, dd)
    out = numpy.empty((2 * lo.shape[0], lo.shape[1]))
    out[0::2, :] = _HAAR * lo + _HAAR * hi
    out[1::2, :] = _HAAR * lo + -_HAAR * hi
    return out


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def whash(image: Any, hash_size: int = 8, image_scale: Optional[int] = None, mode: str = "haar",
          remove_max_haar_ll: bool = True) -> ImageHash:
    """wHash: the low band of a wavelet transform of an image_scale grey
    square (by default the largest power of two within the image's shorter
    side, at least hash_size) against its median; with remove_max_haar_ll
    the coarsest Haar average is removed first."""
    if image_scale is not None:
        assert _power_of_two(image_scale), "image_scale is not power of 2"
    elif hash_size in _C_SIZES and mode == "haar" and remove_max_haar_ll:
        # ferry's C picks the same default scale from the image's size (a
        # file is read once, by ferry)
        return _square("whash", image, hash_size)
    pil = _pil(image)
    if image_scale is None:
        image_scale = max(2 ** int(numpy.log2(min(pil.size))), hash_size)
    top = int(numpy.log2(image_scale))
    level = int(numpy.log2(hash_size))
    assert _power_of_two(hash_size), "hash_size is not power of 2"
    assert level <= top, "hash_size in a wrong range"
    pixels = _gray(pil, image_scale, image_scale) / 255.
    if remove_max_haar_ll:
        bands = []
        for _ in range(top):
            pixels, b = _haar_down(pixels)
            bands.append(b)
        pixels = pixels * 0
        for b in reversed(bands):
            pixels = _haar_up(pixels, b)
    steps = top - level
    if mode == "haar":
        for _ in range(steps):
            pixels, _b = _haar_down(pixels)
        low = pixels
    else:
        try:
            import pywt
        except ImportError:
            raise ImportError(f"ferry.imagehash.whash(mode={mode!r}) needs PyWavelets "
                              "(pip install PyWavelets); mode='haar' does not") from None
        low = pywt.wavedec2(pixels, mode, level=steps)[0]
    return ImageHash(low > numpy.median(low))


def colorhash(image: Any, binbits: int = 3) -> ImageHash:
    """Colour hash: the fractions of black, grey and 6 hues of faint and of
    bright colour (Pillow's HSV), binbits bits each (14 * binbits bits)."""
    if binbits < 1:
        raise ValueError("binbits must be at least 1")
    if _is_path(image) or getattr(image, "mode", None) == "RGB":
        n = 14 * binbits
        return ImageHash(_bits_of_hex(_c_hex("colorhash", image, 8, binbits, "RGB"), n)
                         .reshape(-1, binbits))
    intensity = numpy.asarray(image.convert("L")).ravel()
    h, s, _v = [numpy.asarray(c).ravel() for c in image.convert("HSV").split()]
    black = intensity < 256 // 8
    gray = s < 256 // 3
    colors = ~black & ~gray
    faint = colors & (s < 256 * 2 // 3)
    bright = colors & (s > 256 * 2 // 3)
    c = max(1, int(colors.sum()))
    edges = numpy.linspace(0, 255, 7)

    def hues(mask: numpy.ndarray) -> numpy.ndarray:
        return numpy.histogram(h[mask], bins=edges)[0] if mask.any() else numpy.zeros(6)

    top = 2 ** binbits
    values = [min(top - 1, int(black.mean() * top)), min(top - 1, int((~black & gray).mean() * top))]
    values += [min(top - 1, int(k / c * top)) for k in list(hues(faint)) + list(hues(bright))]
    bits = [v // (2 ** (binbits - i - 1)) % 2 ** (binbits - i) > 0
            for v in values for i in range(binbits)]
    return ImageHash(numpy.asarray(bits).reshape((-1, binbits)))


# -------------------------------------------------------- crop-resistant

def _segments(pixels: numpy.ndarray, threshold: float, min_size: int) -> List[numpy.ndarray]:
    """imagehash's regions of a grey square: the 4-connected regions of
    pixels brighter than `threshold` ("hills"), then of the others
    ("valleys"), each in the order of its first pixel row by row, kept when
    larger than min_size. As imagehash counts, a region of one pixel is not
    marked as taken and the 4 (w + h) positions around the border count as
    taken, so the search for valleys stops once that count reaches the
    image's area: the last valleys (row order) may never be looked at.
    Regions are arrays of (row, col) indices."""
    rows, cols = pixels.shape
    bright = pixels > threshold
    label = numpy.zeros(rows * cols, dtype=numpy.int64)  # 0: not yet in a region
    flat_bright = bright.ravel()
    out: List[numpy.ndarray] = []
    taken = 2 * rows + 2 * cols  # imagehash's border entries (a square or not)
    area = rows * cols
    next_label = 1
    for phase in (True, False):
        todo = numpy.flatnonzero(flat_bright == phase)
        for start in todo:
            if label[start]:
                continue
            if not phase and taken >= area:
                return out
            region = [int(start)]
            label[start] = next_label
            head = 0
            while head < len(region):
                p = region[head]
                head += 1
                r, c = divmod(p, cols)
                for q, ok in ((p - cols, r > 0), (p + cols, r < rows - 1), (p - 1, c > 0),
                              (p + 1, c < cols - 1)):
                    if ok and not label[q] and flat_bright[q] == phase:
                        label[q] = next_label
                        region.append(q)
            next_label += 1
            if len(region) > 1:
                taken += len(region)
            if len(region) > min_size:
                idx = numpy.array(region)
                out.append(numpy.stack(divmod(idx, cols), axis=1))
    return out


# imagehash's name for it (its tests call it)
_find_all_segments = _segments


def __getattr__(name: str) -> Any:
    """imagehash.ANTIALIAS: Pillow's LANCZOS filter, the resampling every
    hash uses (Pillow is imported only when asked)."""
    if name == "ANTIALIAS":
        from PIL import Image
        return getattr(getattr(Image, "Resampling", Image), "LANCZOS")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def crop_resistant_hash(image: Any, hash_func: Callable[[Any], ImageHash] = dhash,
                        limit_segments: Optional[int] = None, segment_threshold: int = 128,
                        min_segment_size: int = 500, segmentation_image_size: int = 300
                        ) -> ImageMultiHash:
    """Crop-resistant hash: the image's bright and dark regions (found on a
    blurred grey square of segmentation_image_size), each region's
    bounding box in the original hashed by hash_func (dhash by default);
    limit_segments keeps the largest. Two such hashes are compared segment
    by segment (ImageMultiHash)."""
    from PIL import Image, ImageFilter
    lanczos = getattr(getattr(Image, "Resampling", Image), "LANCZOS")
    original = _pil(image).copy()
    n = segmentation_image_size
    small = original.convert("L").resize((n, n), lanczos)
    small = small.filter(ImageFilter.GaussianBlur()).filter(ImageFilter.MedianFilter())
    pixels = numpy.array(small).astype(numpy.float32)
    segments = _segments(pixels, segment_threshold, min_segment_size)
    if not segments:
        segments = [numpy.array([[0, 0], [n - 1, n - 1]])]
    if limit_segments:
        segments = sorted(segments, key=len, reverse=True)[:limit_segments]
    width, height = original.size
    sx, sy = float(width) / n, float(height) / n
    hashes = []
    for seg in segments:
        top, left = seg[:, 0].min() * sy, seg[:, 1].min() * sx
        bottom, right = (seg[:, 0].max() + 1) * sy, (seg[:, 1].max() + 1) * sx
        hashes.append(hash_func(original.crop((left, top, right, bottom))))
    return ImageMultiHash(hashes)
