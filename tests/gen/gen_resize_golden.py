#!/usr/bin/env python3
"""Writes tests/fixtures/resize/: Pillow's Image.resize outputs that
tests/unit/test_resize.c must reproduce byte for byte.

The input images are not stored: both this script and the test draw them
from the same integer hash (pattern() below), so only the outputs go into
the fixtures. Everything is deterministic; rerun it only to add cases:

    python3 tests/gen/gen_resize_golden.py [--out tests/fixtures/resize]

Files:
  cases.txt   one case a line:
              name filter channels sw sh seed x0 y0 x1 y1 dw dh kind value
              (box "- - - -" = whole image; kind "pixels" with the byte offset
              into golden.bin, or "fnv" with the FNV-1a 64 digest of the
              output for the larger cases)
  golden.bin  the "pixels" outputs, tightly packed HWC, one after another

4-channel images use Pillow mode CMYK, which Pillow resizes channel by
channel; RGBA would be premultiplied first (ferry does not do that).
"""
import argparse
import os
import sys

import numpy as np
from PIL import Image

FILTERS = {
    "triangle": Image.Resampling.BILINEAR,
    "area": Image.Resampling.BOX,
    "bicubic": Image.Resampling.BICUBIC,
    "lanczos": Image.Resampling.LANCZOS,
    "nearest": Image.Resampling.NEAREST,
}
MODES = {1: "L", 3: "RGB", 4: "CMYK"}


def mix32(x):
    """lowbias32 (C. Wellons) on uint32 arrays, wrapping like C."""
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def pattern(w, h, c, seed):
    """8x8 blocks of noise, wrapping ramps, 0/255 extremes and a gentle
    gradient, so that rounding, clamping and edges all get exercised.
    Mirrors make_pattern() in tests/unit/test_resize.c."""
    y, x, ch = np.meshgrid(np.arange(h, dtype=np.uint32), np.arange(w, dtype=np.uint32),
                           np.arange(c, dtype=np.uint32), indexing="ij")
    s = np.uint32((seed * 0x9E3779B1) & 0xFFFFFFFF)
    with np.errstate(over="ignore"):
        r = mix32(s + (y * np.uint32(w) + x) * np.uint32(4) + ch)
        block = ((x >> np.uint32(3)) + (y >> np.uint32(3)) + np.uint32(seed)) & np.uint32(3)
        noise = r & np.uint32(255)
        ramp = (x * np.uint32(5) + y * np.uint32(3) + ch * np.uint32(70)) & np.uint32(255)
        extreme = np.where((r >> np.uint32(9)) & np.uint32(1), np.uint32(255), np.uint32(0))
        smooth = (x + y * np.uint32(2) + ch * np.uint32(60)) & np.uint32(255)
    v = np.select([block == 0, block == 1, block == 2], [noise, ramp, extreme], smooth)
    return v.astype(np.uint8)


def fnv1a64(data):
    hsh = 0xCBF29CE484222325
    for b in data:
        hsh = ((hsh ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return hsh


def run_pillow(filt, c, sw, sh, seed, box, dw, dh):
    arr = pattern(sw, sh, c, seed)
    img = Image.frombytes(MODES[c], (sw, sh), arr.tobytes())
    out = img.resize((dw, dh), FILTERS[filt], box=box)
    return out.tobytes()


# (name, channels, sw, sh, box or None, dw, dh, big) -- run with every
# antialiased filter; `big` cases store a digest instead of the pixels.
SCENARIOS = [
    ("down_odd", 3, 97, 73, None, 31, 23, False),
    ("up", 3, 13, 11, None, 41, 37, False),
    ("down_90x", 3, 1000, 700, None, 11, 8, False),
    ("down_big_gray", 1, 1603, 911, None, 7, 5, False),
    ("gray_mixed", 1, 64, 48, None, 17, 29, False),
    ("cmyk_mixed", 4, 50, 40, None, 23, 57, False),
    ("box_eighths", 3, 120, 90, (10.25, 7.5, 97.75, 80.125), 33, 27, False),
    ("box_inexact", 3, 60, 45, (3.3, 4.7, 55.1, 41.9), 64, 48, False),
    ("box_corner_up", 3, 60, 40, (0.0, 0.0, 7.5, 5.5), 30, 20, False),
    ("box_edge_down", 4, 90, 70, (61.7, 50.2, 90.0, 70.0), 9, 7, False),
    ("vertical_first", 3, 40, 300, None, 36, 20, False),
    ("vertical_first_box", 1, 70, 500, (5.5, 20.25, 66.0, 480.75), 61, 31, False),
    ("only_horizontal", 3, 80, 30, None, 50, 30, False),
    ("only_vertical", 3, 30, 80, None, 30, 33, False),
    ("only_vertical_box", 4, 30, 80, (0.0, 10.5, 30.0, 70.5), 30, 45, False),
    ("tiny_up", 3, 1, 1, None, 5, 3, False),
    ("row_to_pixel", 1, 37, 1, None, 1, 1, False),
    ("column_up", 3, 1, 9, None, 4, 20, False),
    ("empty_box", 3, 20, 20, (5.0, 3.0, 5.0, 9.0), 4, 4, False),
    ("empty_box_edge", 1, 20, 20, (20.0, 0.0, 20.0, 20.0), 3, 5, False),
    ("crop", 3, 40, 30, (3.0, 4.0, 23.0, 14.0), 20, 10, False),
    ("same_size_shift", 3, 40, 30, (0.5, 0.25, 40.0, 30.0), 40, 30, False),
    ("imagenet", 3, 500, 375, None, 224, 224, True),
    ("imagenet_center", 3, 500, 375, (31.25, 0.0, 468.75, 375.0), 224, 224, True),
    ("imagenet_tall", 3, 333, 500, (12.5, 71.25, 320.5, 420.0), 224, 224, True),
    ("imagenet_gray", 1, 640, 480, None, 224, 224, True),
    ("imagenet_cmyk", 4, 375, 500, None, 256, 341, True),
]

NEAREST_SCENARIOS = [
    ("down_odd", 3, 97, 73, None, 31, 23, False),
    ("up", 1, 13, 11, None, 41, 37, False),
    ("box_inexact", 4, 60, 45, (3.3, 4.7, 55.1, 41.9), 64, 48, False),
    ("box_eighths", 3, 120, 90, (10.25, 7.5, 97.75, 80.125), 33, 27, False),
    ("empty_box_edge", 3, 20, 20, (20.0, 0.0, 20.0, 20.0), 3, 5, False),
    ("imagenet", 3, 500, 375, None, 224, 224, True),
]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(here, "..", "fixtures", "resize")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=default_out)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    cases = []
    for filt in ("triangle", "area", "bicubic", "lanczos"):
        cases += [(filt,) + s for s in SCENARIOS]
    cases += [("nearest",) + s for s in NEAREST_SCENARIOS]

    blob = bytearray()
    lines = ["# generated by tests/gen/gen_resize_golden.py with Pillow %s; do not edit"
             % Image.__version__]
    for i, (filt, name, c, sw, sh, box, dw, dh, big) in enumerate(cases):
        seed = i + 1
        out = run_pillow(filt, c, sw, sh, seed, box, dw, dh)
        assert len(out) == dw * dh * c
        boxs = "- - - -" if box is None else " ".join(repr(float(v)) for v in box)
        if big:
            kind, value = "fnv", "%016x" % fnv1a64(out)
        else:
            kind, value = "pixels", str(len(blob))
            blob += out
        lines.append("%s_%s %s %d %d %d %d %s %d %d %s %s"
                     % (filt, name, filt, c, sw, sh, seed, boxs, dw, dh, kind, value))

    with open(os.path.join(args.out, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out, "golden.bin"), "wb") as f:
        f.write(blob)
    print("%d cases, %d bytes of pixels" % (len(cases), len(blob)), file=sys.stderr)


if __name__ == "__main__":
    main()
