"""ctypes access to ferry's hashing, search and catalog calls for the
tests/python/test_hash_*.py tests (the library is libferry.so of the build
directory, FERRY_BUILD, default build/)."""
import ctypes

from ferrylib import BUILD, lib

KINDS = ["ahash", "dhash", "dhash_v", "phash", "whash", "colorhash"]
FAST, COMPATIBLE = 0, 1


class Hash(ctypes.Structure):
    _fields_ = [("w", ctypes.c_uint64 * 4), ("bits", ctypes.c_int)]


class HashOptions(ctypes.Structure):
    _fields_ = [("mode", ctypes.c_int), ("kinds", ctypes.c_uint), ("hash_size", ctypes.c_int),
                ("colorhash_bits", ctypes.c_int), ("max_pixels", ctypes.c_uint64),
                ("max_bytes", ctypes.c_uint64)]


class Signature(ctypes.Structure):
    """ferry_signature: six 256-bit codes and a 24 x 24 thumbnail."""
    _fields_ = [("code", ctypes.c_uint64 * 24), ("thumb", ctypes.c_uint8 * 576)]


class HashResult(ctypes.Structure):
    _fields_ = [("format", ctypes.c_int), ("width", ctypes.c_int), ("height", ctypes.c_int),
                ("kinds", ctypes.c_uint), ("exact", ctypes.c_int),
                ("hash", Hash * len(KINDS)), ("signature", Signature)]


class Pair(ctypes.Structure):
    _fields_ = [("i", ctypes.c_uint32), ("j", ctypes.c_uint32), ("distance", ctypes.c_uint32)]


class SearchOptions(ctypes.Structure):
    """ferry_search_options, field for field (include/ferry.h): the C side
    writes the whole struct, so a missing field is a write past this one."""
    _fields_ = [("threshold", ctypes.c_int), ("threads", ctypes.c_int), ("method", ctypes.c_int),
                ("max_pairs", ctypes.c_size_t), ("device", ctypes.c_int),
                ("robust", ctypes.c_int), ("ndevices", ctypes.c_int),
                ("devices", ctypes.c_int * 8)]  # FERRY_MAX_SEARCH_DEVICES

    @classmethod
    def default(cls):
        # filled in a larger buffer whose tail must stay untouched: a field
        # the header gained and this mirror lacks is caught, not written
        # over whatever follows
        size = ctypes.sizeof(cls)
        buf = (ctypes.c_uint8 * (size + 256))()
        ctypes.memset(buf, 0xA5, ctypes.sizeof(buf))
        lib().ferry_search_options_default(buf)
        assert bytes(buf[size:]) == b"\xa5" * 256, \
            "ferry_search_options grew past tests/python/hashlib_ferry.py's SearchOptions"
        o = cls.from_buffer_copy(bytes(buf[:size]))
        assert (o.threshold, o.max_pairs, o.device, o.ndevices) == (8, 0, -1, 0), \
            "tests/python/hashlib_ferry.py SearchOptions is out of date with include/ferry.h"
        return o


def hex_of(h):
    buf = ctypes.create_string_buffer(80)
    n = lib().ferry_hash_to_hex(ctypes.byref(h), buf, 80)
    assert n > 0
    return buf.value.decode()


class Hasher:
    """A ferry_hasher; hash(path) gives {kind: hex} (or raises OSError)."""

    def __init__(self, mode=COMPATIBLE, hash_size=8, kinds=None, colorhash_bits=3):
        L = lib()
        o = HashOptions()
        L.ferry_hash_options_default(ctypes.byref(o))
        o.mode = mode
        o.hash_size = hash_size
        o.colorhash_bits = colorhash_bits
        if kinds is not None:
            o.kinds = sum(1 << KINDS.index(k) for k in kinds)
        self.h = ctypes.c_void_p()
        rc = L.ferry_hasher_new(ctypes.byref(o), ctypes.byref(self.h))
        if rc:
            raise ValueError(L.ferry_last_error().decode())

    def result(self, path):
        L = lib()
        r = HashResult()
        rc = L.ferry_hash_file(self.h, str(path).encode(), ctypes.byref(r))
        if rc:
            raise OSError(rc, L.ferry_last_error().decode(errors="replace"))
        return r

    def hash(self, path):
        r = self.result(path)
        return {k: hex_of(r.hash[i]) for i, k in enumerate(KINDS) if r.kinds & (1 << i)}

    def __del__(self):
        if getattr(self, "h", None):
            lib().ferry_hasher_free(self.h)
            self.h = None


def write_bmp16(path, w=24, h=16):
    """A 16-bit (X1R5G5B5) BMP, a file compatible mode cannot make bit-exact
    with imagehash (ferry's 5-to-8-bit expansion is not Pillow's)."""
    import struct
    row = (w * 2 + 3) & ~3
    px = b"".join(b"".join(struct.pack("<H", ((x * 31 // w) << 10) | ((y * 31 // h) << 5) | 9)
                           for x in range(w)).ljust(row, b"\0") for y in range(h))
    head = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 16, 0, len(px), 2835, 2835, 0, 0)
    path.write_bytes(b"BM" + struct.pack("<IHHI", 14 + 40 + len(px), 0, 0, 54) + head + px)
    return path


def imagehash_all(path, hash_size=8, colorhash_bits=3):
    """imagehash 4.3's hex strings of one file (the test oracle)."""
    import imagehash
    from PIL import Image

    with Image.open(path) as im:
        im.load()
        return {
            "ahash": str(imagehash.average_hash(im, hash_size)),
            "dhash": str(imagehash.dhash(im, hash_size)),
            "dhash_v": str(imagehash.dhash_vertical(im, hash_size)),
            "phash": str(imagehash.phash(im, hash_size)),
            "whash": str(imagehash.whash(im, hash_size)),
            "colorhash": str(imagehash.colorhash(im, colorhash_bits)),
        }


__all__ = ["BUILD", "Hasher", "imagehash_all", "write_bmp16", "KINDS", "FAST", "COMPATIBLE", "Pair",
           "SearchOptions", "hex_of"]
