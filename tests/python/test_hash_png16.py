"""Compatible mode on 16-bit PNGs: hashes equal imagehash's bit for bit.

Pillow makes 16-bit gray "I;16", which convert("L"/"RGB") clips to
min(v, 255), and keeps the high byte of 16-bit RGB(A)/LA samples; ferry's
compatible decode copies both (loading still rounds, v / 257). The PNGs
are generated here: gradients over 0..65535 and over 0..300 (values on
both sides of 255), noise, with tRNS, alpha and interlacing."""
import importlib.util
import struct
import zlib

import numpy as np
import pytest

from hashlib_ferry import COMPATIBLE, KINDS, Hasher, imagehash_all

HAVE_ORACLE = all(importlib.util.find_spec(m) for m in ("imagehash", "scipy", "pywt"))
needs_oracle = pytest.mark.skipif(not HAVE_ORACLE,
                                  reason="SKIPPED: imagehash 16-bit PNG oracle: imagehash/"
                                         "scipy/PyWavelets not installed")


def chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(
        ">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def png16(samples, color_type, trns=None, interlace=0):
    """A 16-bit PNG of an (h, w, c) uint16 array (Adam7 when interlace)."""
    h, w = samples.shape[:2]
    be = samples.astype(">u2")

    def rows(a):
        return b"".join(b"\0" + a[y].tobytes() for y in range(a.shape[0]))

    if interlace:
        passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4),
                  (1, 0, 2, 2), (0, 1, 1, 2)]
        raw = b"".join(rows(be[y0::dy, x0::dx]) for x0, y0, dx, dy in passes
                       if be[y0::dy, x0::dx].size)
    else:
        raw = rows(be)
    ihdr = struct.pack(">IIBBBBB", w, h, 16, color_type, 0, 0, interlace)
    extra = chunk(b"tRNS", trns) if trns is not None else b""
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + extra +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def gradient(h, w, c, top, seed):
    y, x = np.mgrid[0:h, 0:w]
    base = (x * 3 + y * 5) / (3 * (w - 1) + 5 * (h - 1))
    rng = np.random.default_rng(seed)
    chans = [(base * top + rng.integers(0, top // 16 + 2, (h, w))) % (top + 1)
             for _ in range(c)]
    return np.stack(chans, axis=-1).astype(np.uint16)


CASES = [  # name, color type, channels, top value, tRNS, interlace
    ("gray16_full", 0, 1, 65535, None, 0),
    ("gray16_low", 0, 1, 300, None, 0),
    ("gray16_trns", 0, 1, 400, struct.pack(">H", 7), 0),
    ("gray16_adam7", 0, 1, 511, None, 1),
    ("la16", 4, 2, 65535, None, 0),
    ("rgb16", 2, 3, 65535, None, 0),
    ("rgb16_low", 2, 3, 700, None, 1),
    ("rgba16", 6, 4, 65535, None, 0),
]


@needs_oracle
@pytest.mark.parametrize("name,ct,c,top,trns,il", CASES, ids=[c[0] for c in CASES])
def test_16bit_png_hashes_equal_imagehash(tmp_path, name, ct, c, top, trns, il):
    path = tmp_path / f"{name}.png"
    path.write_bytes(png16(gradient(37, 53, c, top, len(name)), ct, trns, il))
    want = imagehash_all(path)
    got = Hasher(COMPATIBLE, kinds=KINDS[:5]).hash(path)
    got.update(Hasher(COMPATIBLE, kinds=["colorhash"], colorhash_bits=3).hash(path))
    assert got == want
    assert Hasher(COMPATIBLE).result(path).exact == 1
