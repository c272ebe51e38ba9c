"""ctypes access to libferry.so for the Python-side tests (the real Python
package is a C extension; these tests need only a few calls)."""
import ctypes
import os
import pathlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("FERRY_BUILD", ROOT / "build"))
CORPUS = pathlib.Path(os.environ.get("FERRY_CORPUS", ROOT.parent / "shared" / "corpus"))
FERRY_BIN = os.environ.get("FERRY_BIN", str(BUILD / "ferry"))


class Image(ctypes.Structure):
    _fields_ = [("data", ctypes.POINTER(ctypes.c_uint8)), ("width", ctypes.c_int),
                ("height", ctypes.c_int), ("channels", ctypes.c_int), ("stride", ctypes.c_size_t)]


class Rect(ctypes.Structure):
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int), ("width", ctypes.c_int),
                ("height", ctypes.c_int)]


class DecodeOptions(ctypes.Structure):
    _fields_ = [("channels", ctypes.c_int), ("ignore_orientation", ctypes.c_int),
                ("max_pixels", ctypes.c_uint64), ("max_bytes", ctypes.c_uint64),
                ("min_width", ctypes.c_int), ("min_height", ctypes.c_int),
                ("allow_dct_scaling", ctypes.c_int), ("crop", Rect),
                ("fast_upsampling", ctypes.c_int)]


_lib = None


def lib():
    global _lib
    if _lib is None:
        _lib = ctypes.CDLL(str(BUILD / "libferry.so"))
        _lib.ferry_last_error.restype = ctypes.c_char_p
        _lib.ferry_strerror.restype = ctypes.c_char_p
    return _lib


class FerryError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def decode(path, channels=3, ignore_orientation=False, **kw):
    """Decodes a file with ferry; returns an HxWxC uint8 array."""
    L = lib()
    opts = DecodeOptions()
    L.ferry_decode_options_default(ctypes.byref(opts))
    opts.channels = channels
    opts.ignore_orientation = int(ignore_orientation)
    for k, v in kw.items():
        setattr(opts, k, v)
    im = Image()
    rc = L.ferry_decode_file(str(path).encode(), ctypes.byref(opts), ctypes.byref(im))
    if rc != 0:
        raise FerryError(rc, L.ferry_last_error().decode(errors="replace"))
    try:
        arr = np.ctypeslib.as_array(im.data, shape=(im.height, im.stride))
        arr = arr[:, : im.width * im.channels].reshape(im.height, im.width, im.channels).copy()
    finally:
        L.ferry_image_free(ctypes.byref(im))
    return arr
