"""Perceptual hashes and duplicate finding: ferry.hash, hash_distance and
find_duplicates over the C library's src/hash and src/search."""

from __future__ import annotations

import os
import stat
import threading
import warnings
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from . import _ferry
from ._ferry import Error, InvalidArgument
from ._common import _choice, _compute_device, _default_workers, _device_index, user_path
from ._log import emit_notices


IMAGE_SUFFIXES = (".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".webp", ".tif", ".tiff",
                  ".gif", ".heic", ".heif", ".hif", ".avif", ".bmp", ".dng", ".cr2", ".cr3",
                  ".nef", ".arw", ".orf", ".rw2", ".raf", ".pef")  # io/walk.c's list
_MODES = {"fast": 0, "compatible": 1}
_SIGNATURE = 1 << 16  # FERRY_HASH_SIGNATURE: the signature robust matching uses
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
         progress: Optional[Callable[[int, int], Any]] = None, engine_min_s: float = 2.5) -> Any:
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
      same bits; "opencl" / "opencl:N" does the same on an OpenCL device,
      compatible mode only, see docs/DEDUP.md); in fast mode the GPU's JPEG engine decodes part of the
      JPEGs beside the cores (hashes within a few bits of the CPU's, see
      docs/DEDUP.md). Without a usable GPU, compatible mode raises and fast
      mode runs on the cores with a warning.
    engine_min_s: fast mode on a GPU: the JPEG engine starts only when the
      cores, half a second in, would take longer than this for the rest
      (0..3600 seconds, default 2.5; 0: at once).
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

    compatible = _choice(_MODES, mode, "mode") == _MODES["compatible"]
    inexact: List[str] = []

    def pick(result: Any, name: Any = "<image>") -> Any:
        if compatible and not result[3]:
            inexact.append(os.fspath(name) if isinstance(name, (str, os.PathLike)) else name)
        hexes = result[4]
        return hexes[kinds[0]] if single else {k: hexes[k] for k in kinds}

    def told(out: Any) -> Any:
        """Compatible mode promises imagehash's bits: a warning where it
        cannot keep that promise (HEIF, some TIFF and BMP)."""
        if inexact:
            more = f" (and {len(inexact) - 1} more)" if len(inexact) > 1 else ""
            warnings.warn(f"ferry.hash: {inexact[0]}{more}: not bit-exact with imagehash (a "
                          "HEIF, a camera raw, a 16-bit or compressed BMP, a TIFF other than "
                          "8-bit grey, RGB or palette, or a GIF whose first image does not cover "
                          "the picture: ferry's 8-bit samples are not Pillow's)", RuntimeWarning,
                          stacklevel=3)
        emit_notices(4)
        return out

    def one(item: Any) -> Any:
        h = hashers.get()
        try:
            if isinstance(item, (bytes, bytearray)):
                return pick(h.hash_bytes(bytes(item)))
            if _is_pixels(item):
                import numpy
                return pick(h.hash_pixels(numpy.ascontiguousarray(item, dtype=numpy.uint8)))
            return pick(h.hash_file(user_path(item, "ferry.hash")), item)
        except Error:
            if on_error == "skip":
                return None
            raise

    dev = _compute_device(device)
    all_paths = isinstance(source, (list, tuple)) and all(
        isinstance(x, (str, os.PathLike)) for x in source)
    if dev >= 0 and not all_paths:
        raise InvalidArgument("device: hashing on a GPU takes a list of file paths")
    if all_paths and source:
        # one C call: the files are spread over the cores (and the GPU) with
        # the GIL released
        threads = _default_workers() if workers is None else max(1, int(workers))
        items, _engine, note = _ferry.hash_files(
            [user_path(x, "ferry.hash", must_exist=False) for x in source], mode=_choice(_MODES, mode, "mode"), kinds=mask,
            hash_size=int(hash_size), colorhash_bits=int(colorhash_bits), max_pixels=max_pixels,
            max_bytes=max_bytes, threads=threads, device=dev, progress=progress,
            engine_min_s=float(engine_min_s))
        if note:
            warnings.warn(f"ferry.hash: {note}: hashing on the CPU", RuntimeWarning, stacklevel=2)
        out = []
        for item, path in zip(items, source):
            if isinstance(item, Error):
                if on_error == "raise":
                    raise item
                out.append(None)
            else:
                out.append(pick(item, path))
        return told(out)
    if isinstance(source, (list, tuple)):
        n = len(source)
        threads = _default_workers() if workers is None else max(1, int(workers))
        if threads == 1 or n < 2:
            return told([one(x) for x in source])
        import concurrent.futures
        with concurrent.futures.ThreadPoolExecutor(min(threads, n)) as pool:
            return told(list(pool.map(one, source)))
    return told(one(source))


def hash_distance(a: str, b: str) -> int:
    """Hamming distance of two hex hashes of the same size (imagehash's
    h1 - h2)."""
    if len(a) != len(b):
        raise InvalidArgument(f"hashes of different sizes: {len(a)} and {len(b)} hex digits")
    return bin(int(a, 16) ^ int(b, 16)).count("1")


def _image_name(name: str) -> bool:
    """The C walks' rule (src/io/walk.c): an image extension, not a dot file."""
    return not name.startswith(".") and name.lower().endswith(IMAGE_SUFFIXES)


_THUMBS_MARK = "ferry-thumbnails.txt"  # src/catalog/catalog.h's FY_THUMBS_MARK


def _image_files(roots: Sequence[PathLike], recursive: bool) -> List[str]:
    files: List[str] = []
    walked: set = set()
    for root in roots:
        root = user_path(root, "find_duplicates")
        if os.path.isdir(root):
            if recursive:
                for d, subdirs, names in os.walk(root):
                    if d != root and _THUMBS_MARK in names:  # a review page's thumbnails
                        subdirs[:] = []
                        continue
                    subdirs[:] = sorted(s for s in subdirs if not s.startswith("."))
                    found = [os.path.join(d, n) for n in sorted(names) if _image_name(n)]
                    files += found
                    walked.update(found)
            else:
                found = [os.path.join(root, n) for n in sorted(os.listdir(root)) if _image_name(n)]
                files += found
                walked.update(found)
        else:
            files.append(root)
    return _one_name_per_file(files, set(files) - walked)


def _one_name_per_file(files: List[str], named: set) -> List[str]:
    """The C walk's rule (src/catalog/scan.c): symbolic links to files met
    in a walk left out, and of the hard links of one file the first path in
    sorted order only."""
    first: dict = {}
    for f in sorted(files):
        try:
            st = os.stat(f) if f in named else os.lstat(f)
        except OSError:
            first.setdefault(("?", f), f)  # said when it is read
            continue
        if stat.S_ISLNK(st.st_mode):
            continue
        first.setdefault((st.st_dev, st.st_ino), f)
    keep = set(first.values())
    return [f for f in files if f in keep]


def _search_devices(device: Any) -> Optional[List[int]]:
    """The devices of a search: None for the CPU, else their numbers
    (CUDA device numbers, ferry_search_options.devices, at most 8; or one
    OpenCL device as DEVICE_OPENCL + N)."""
    if device is None or (isinstance(device, str) and device.strip().lower() == "cpu"):
        return None
    if isinstance(device, str) and device.strip().lower().startswith("opencl"):
        if "," in device:
            raise InvalidArgument(f"search_device {device!r}: one OpenCL device at a time")
        return [_compute_device(device, "search_device")]
    if isinstance(device, str) and "," in device:
        text = device.strip().lower()
        if not text.startswith("cuda:"):
            raise InvalidArgument(f'search_device: a list is "cuda:0,1", not {device!r}')
        parts = text[5:].split(",")
        bad = [p for p in parts if not p.strip().isdigit() or int(p) > 255]
        if bad:
            raise InvalidArgument(f"search_device {device!r}: {bad[0]!r} is not a device "
                                  "number (0..255)")
        devices = [int(p) for p in parts]
    elif isinstance(device, (list, tuple)):
        devices = [_device_index(d) for d in device]
        if not devices or min(devices) < 0:
            raise InvalidArgument(f"search_device: {device!r} names no CUDA device")
    else:
        devices = [_device_index(device)]
        if devices[0] < 0:
            return None
    if len(devices) > 8:
        raise InvalidArgument(f"search_device: at most 8 devices, not {len(devices)}")
    return devices


def find_duplicates(source: Union[PathLike, Sequence[PathLike]], kind: str = "phash",
                    threshold: Optional[int] = None, *, mode: str = "fast",
                    hash_size: int = 16,
                    workers: Optional[int] = None, recursive: bool = True,
                    details: bool = False, device: Any = None,
                    progress: Optional[Callable[[int, int], Any]] = None,
                    keep: Optional[str] = None,
                    reference: Optional[Sequence[PathLike]] = None,
                    exclude: Optional[Sequence[str]] = None,
                    robust: bool = True, search_device: Any = None,
                    engine_min_s: float = 2.5,
                    decisions: Optional[PathLike] = None) -> List[Any]:
    """Groups of near-duplicate images: files whose `kind` hashes are within
    `threshold` bits of each other, transitively (union-find over the pairs).
    The defaults are `ferry hash` and `ferry dupes`'s: 256-bit hashes
    (hash_size=16; 8: imagehash's 64 bits) and threshold=None, the command's
    default for the kind and size (72 of 256 bits for phash).

    source: a directory (its JPEG, PNG, WebP, TIFF, GIF, HEIC, AVIF, BMP and camera raw files by
      extension, recursively), a
      file, or a list of either (a file named twice counts once). Files that
      cannot be hashed are left out.
    Returns a list of groups, each a list of paths with the keeper first
    and the others in path order, groups in the order of their first path.
    keep: who keeps, criteria comma-separated, the first that differs
      decides (None: "original,pixels,size,oldest"): original (a JPEG whose
      EXIF names the camera, before PNGs or re-saved copies of it), pixels,
      size (larger first), oldest, newest (file time), path (first path).
    reference: folders whose files keep before all others (as `ferry dupes
      --reference`; their files are never moved there).
    exclude: shell patterns on the absolute path, or folders, whose files
      are left out before hashing (as `ferry dupes --exclude`: a pattern
      matches the whole path, "*" crosses "/"; "*.png" takes every PNG). With
    details=True each group is a list of (path, width, height, distance to
    the keeper) instead. The groups and keepers are those of `ferry hash DIR
    -o X.fidx && ferry dupes X.fidx` with the same settings: the rules are
    the C library's (ferry_dupes_find), applied here to an in-memory catalog.
    robust: also group copies that the hash misses, turned by a right angle,
      mirrored, cropped (about 10 %) or letterboxed, found from each file's
      signature and verified (docs/DEDUP.md, as `ferry dupes`); False: the
      hash alone.
    device: where the files are hashed, as for ferry.hash (None: the cores);
      engine_min_s as there.
    search_device: where the pairs are searched for (as `ferry dupes --device`): None or
      "cpu" (the cores), "cuda" / "cuda:N" / N (a CUDA GPU), "cuda:0,1" or [0, 1] (the
      search shared among those GPUs; one listed twice runs two threads on it), or
      "opencl" / "opencl:N" (an OpenCL device). The groups are the same wherever it runs.
    decisions: a decisions file, as the review page (`ferry dupes --format
      html`) saves it and `ferry dupes --decisions` reads it: groups cut
      where files were marked not duplicates, the keepers chosen there
      first; a malformed or stale file (a file changed since) raises
      InvalidArgument naming it and the decision (docs/DEDUP.md).
    progress: called as progress(done, total) while the files are hashed.
    """
    if decisions is not None:
        decisions = user_path(decisions, "find_duplicates: decisions")
    devices = _search_devices(search_device)
    refs = []
    for r in reference or []:
        r = user_path(r, "find_duplicates: reference")
        if not os.path.isdir(r):
            raise InvalidArgument(f"find_duplicates: reference {os.fspath(r)!r} is not a folder")
        refs.append(os.path.realpath(r))
    roots = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    files = list(dict.fromkeys(_image_files(roots, recursive)))  # each path once
    if exclude:
        if isinstance(exclude, (str, bytes, os.PathLike)):
            exclude = [exclude]
        patterns = [os.fspath(x) for x in exclude]
        if not all(patterns):
            raise InvalidArgument("find_duplicates: an empty exclude pattern")
        absolute = {os.path.abspath(f): f for f in files}
        files = [absolute[a] for a in _ferry.drop_matching(list(absolute), patterns)]
    kind_name = _hash_kinds(kind)[0][0]
    mask = 1 << _ferry.hash_kind_parse(kind_name)
    if robust:
        mask |= _SIGNATURE
    threads = _default_workers() if workers is None else max(1, int(workers))
    items: List[Any] = []
    if files:  # one C call: every core (and the GPU with device), the GIL released
        items, _engine, note = _ferry.hash_files(
            files, mode=_choice(_MODES, mode, "mode"), kinds=mask, hash_size=int(hash_size),
            threads=threads, device=_compute_device(device), progress=progress,
            engine_min_s=float(engine_min_s))
        if note:
            warnings.warn(f"ferry.find_duplicates: {note}: hashing on the CPU", RuntimeWarning,
                          stacklevel=2)
    # grouping and keepers in C: an in-memory catalog through ferry_dupes_find
    groups = _ferry.find_groups(files, items, kind_name,
                                -1 if threshold is None else int(threshold),
                                mode=_choice(_MODES, mode, "mode"), hash_size=int(hash_size),
                                threads=0 if workers is None else int(workers), keep=keep,
                                reference=refs, robust=bool(robust), devices=devices,
                                **({} if decisions is None else {"decisions": decisions}))
    emit_notices()
    return groups if details else [[row[0] for row in g] for g in groups]
