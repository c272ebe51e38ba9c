"""The C pipeline itself, through ctypes on libferry.so (the library `make`
builds in build/): the reference the Python package must match byte for
byte. The structs follow include/ferry.h; check_layout() catches a header
that moved on."""
import ctypes
import os
import pathlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
LIBFERRY = pathlib.Path(os.environ.get("FERRY_BUILD", ROOT / "build")) / "libferry.so"

SKIP_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p)


class Options(ctypes.Structure):
    _fields_ = [
        ("source", ctypes.c_char_p), ("batch_size", ctypes.c_int), ("width", ctypes.c_int),
        ("height", ctypes.c_int), ("workers", ctypes.c_int), ("prefetch", ctypes.c_int),
        ("crop", ctypes.c_int), ("crop_ratio", ctypes.c_float), ("scale_min", ctypes.c_float),
        ("scale_max", ctypes.c_float), ("ratio_min", ctypes.c_float),
        ("ratio_max", ctypes.c_float), ("filter", ctypes.c_int), ("flip_prob", ctypes.c_float),
        ("normalize", ctypes.c_int), ("mean", ctypes.c_float * 3), ("std", ctypes.c_float * 3),
        ("layout", ctypes.c_int), ("dtype", ctypes.c_int), ("shuffle", ctypes.c_int),
        ("seed", ctypes.c_uint64), ("rank", ctypes.c_int), ("world_size", ctypes.c_int),
        ("drop_last", ctypes.c_int), ("on_error", ctypes.c_int),
        ("ignore_orientation", ctypes.c_int), ("max_pixels", ctypes.c_uint64),
        ("allow_dct_scaling", ctypes.c_int), ("device", ctypes.c_int),
        ("hw_decode", ctypes.c_int), ("device_memory", ctypes.c_uint64),
        ("cache_bytes", ctypes.c_uint64),
        ("on_skip", SKIP_CB), ("on_skip_user", ctypes.c_void_p),
        ("_reserve", ctypes.c_char * 512),  # room for fields added later
    ]


class Batch(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("labels", ctypes.POINTER(ctypes.c_int32)),
        ("indices", ctypes.POINTER(ctypes.c_int64)), ("count", ctypes.c_int),
        ("index", ctypes.c_int), ("epoch", ctypes.c_int), ("channels", ctypes.c_int),
        ("height", ctypes.c_int), ("width", ctypes.c_int), ("layout", ctypes.c_int),
        ("dtype", ctypes.c_int), ("nbytes", ctypes.c_size_t), ("device", ctypes.c_int),
    ]


_lib = None


def lib():
    global _lib
    if _lib is None:
        L = ctypes.CDLL(str(LIBFERRY))
        L.ferry_last_error.restype = ctypes.c_char_p
        L.ferry_loader_open.argtypes = [ctypes.POINTER(Options), ctypes.POINTER(ctypes.c_void_p)]
        L.ferry_loader_next.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.POINTER(Batch))]
        L.ferry_loader_release.argtypes = [ctypes.c_void_p, ctypes.POINTER(Batch)]
        L.ferry_loader_start_epoch.argtypes = [ctypes.c_void_p, ctypes.c_int]
        L.ferry_loader_close.argtypes = [ctypes.c_void_p]
        _lib = L
    return _lib


def unusable():
    """Why libferry.so cannot serve as the reference, or None."""
    if not LIBFERRY.exists():
        return f"{LIBFERRY} not built (make build, or FERRY_BUILD=dir)"
    header = ROOT / "include" / "ferry.h"
    if LIBFERRY.resolve().stat().st_mtime < header.stat().st_mtime:
        return f"{LIBFERRY} is older than include/ferry.h (make build, or FERRY_BUILD=dir)"
    return None


def check_layout():
    o = Options()
    lib().ferry_loader_options_default(ctypes.byref(o))
    got = (o.batch_size, o.width, o.height, o.prefetch, round(o.crop_ratio, 3), o.max_pixels,
           o.allow_dct_scaling, o.device, o.world_size)
    want = (256, 224, 224, 0, 0.875, 178956970, 1, -1, 1)
    assert got == want, f"tests/python/cref.py Options is out of date with include/ferry.h: {got}"


DTYPES = {0: np.uint8, 1: np.float16, 2: np.float32}


def run_epochs(source, epochs, **fields):
    """[(images, labels, indices)] per batch per epoch, straight from the C
    loader (copies)."""
    L = lib()
    o = Options()
    L.ferry_loader_options_default(ctypes.byref(o))
    o.source = str(source).encode()
    o.on_skip = SKIP_CB(lambda *a: None)
    keep = o.on_skip  # noqa: F841 (the callback must outlive the loader)
    for k, v in fields.items():
        if k in ("mean", "std"):
            getattr(o, k)[:] = v
        else:
            setattr(o, k, v)
    h = ctypes.c_void_p()
    rc = L.ferry_loader_open(ctypes.byref(o), ctypes.byref(h))
    assert rc == 0, L.ferry_last_error()
    out = []
    try:
        for epoch in epochs:
            assert L.ferry_loader_start_epoch(h, epoch) == 0
            batches = []
            while True:
                b = ctypes.POINTER(Batch)()
                rc = L.ferry_loader_next(h, ctypes.byref(b))
                if rc == 1:
                    break
                assert rc == 0, L.ferry_last_error()
                bt = b.contents
                shape = ((bt.count, bt.channels, bt.height, bt.width) if bt.layout == 1
                         else (bt.count, bt.height, bt.width, bt.channels))
                dt = DTYPES[bt.dtype]
                raw = ctypes.string_at(bt.data, bt.nbytes)
                images = np.frombuffer(raw, dtype=dt).reshape(shape).copy()
                labels = np.ctypeslib.as_array(bt.labels, (bt.count,)).astype(np.int64) \
                    if bt.count else np.zeros(0, np.int64)
                indices = np.ctypeslib.as_array(bt.indices, (bt.count,)).copy() \
                    if bt.count else np.zeros(0, np.int64)
                batches.append((images, labels, indices))
                L.ferry_loader_release(h, b)
            out.append(batches)
    finally:
        L.ferry_loader_close(h)
    return out
