#!/usr/bin/env python3
"""A hard near-duplicate set for ferry's duplicate finder, from real photos.

    python3 tests/gen/gen_hardset.py SRC_DIR OUT_DIR [--groups 40] [--seed 7]

Picks GROUPS photos of SRC_DIR (JPEGs; by default the corpus' photos/),
each the original of a group, and writes it and its edited copies into
OUT_DIR, with OUT_DIR/GROUND_TRUTH.csv (file,group,edit). Every file of a
group shows the same picture; files of different groups are different
photos. The groups' originals are chosen so that the set holds hard
negatives: half of them are the photos of SRC_DIR closest to another
chosen photo by pHash (different pictures that look alike), the rest at
random (seeded).

The edits (Pillow; each copy made from the original's pixels):

  orig          the original file, byte for byte
  crop10        10 % of the width cut from the left and 10 % of the height
                from the top
  crop10c       a centred crop keeping 90 % of each side
  cropr         a crop keeping 85-95 % of each side at a random place (seeded:
                the same set every run), not where ferry's signature parts lie
  rot3          turned 3 degrees (corners filled black, size kept)
  q15           re-saved as JPEG at quality 15
  half          half the width and height (a quarter of the pixels)
  gray          greyscale
  gamma06       gamma 0.6 (brighter)
  gamma16       gamma 1.6 (darker)
  letterbox     padded with black bars to 16:9 (or 9:16 for portrait)
  rot90, rot180, rot270   turned by a right angle (pixels)
  mirror        mirrored left to right
  exif6         pixels stored turned a quarter clockwise with EXIF
                orientation 6, so that a viewer shows the original
  png           the original's pixels as PNG

Ground truth: two files are duplicates when they are in the same group.
Pairs of different groups are non-duplicates, however alike they look.
"""
import argparse
import csv
import glob
import os
import random
import shutil
import sys

try:
    from PIL import Image, ImageOps
except ImportError:
    sys.exit("gen_hardset: needs Pillow (pip install pillow)")

EDITS = ["orig", "crop10", "crop10c", "cropr", "rot3", "q15", "half", "gray", "gamma06", "gamma16",
         "letterbox", "rot90", "rot180", "rot270", "mirror", "exif6", "png"]


def _gamma(im, g):
    lut = [min(255, round(255 * (i / 255) ** g)) for i in range(256)]
    return im.point(lut * len(im.getbands()))


def _letterbox(im):
    w, h = im.size
    if w >= h:
        W, H = max(w, round(h * 16 / 9)), max(h, round(w * 9 / 16))
    else:
        W, H = max(w, round(h * 9 / 16)), max(h, round(w * 16 / 9))
    out = Image.new("RGB", (W, H), (0, 0, 0))
    out.paste(im, ((W - w) // 2, (H - h) // 2))
    return out


def _random_crop(im, rng):
    w, h = im.size
    kw, kh = rng.uniform(0.85, 0.95), rng.uniform(0.85, 0.95)
    cw, ch = round(w * kw), round(h * kh)
    x0, y0 = rng.randint(0, w - cw), rng.randint(0, h - ch)
    return im.crop((x0, y0, x0 + cw, y0 + ch))


def edit(src, im, name, out_base, rng):
    """Writes one edited copy; returns its file name."""
    w, h = im.size
    if name == "orig":
        dst = out_base + os.path.splitext(src)[1].lower()
        shutil.copyfile(src, dst)
        return dst
    if name == "png":
        dst = out_base + ".png"
        im.save(dst)
        return dst
    dst = out_base + ".jpg"
    if name == "exif6":
        exif = Image.Exif()
        exif[0x0112] = 6  # the viewer turns it a quarter clockwise back
        im.transpose(Image.Transpose.ROTATE_90).save(dst, quality=92, exif=exif)
        return dst
    ops = {
        "crop10": lambda: im.crop((w // 10, h // 10, w, h)),
        "crop10c": lambda: im.crop((w // 20, h // 20, w - w // 20, h - h // 20)),
        "cropr": lambda: _random_crop(im, rng),
        "rot3": lambda: im.rotate(-3, resample=Image.Resampling.BICUBIC),
        "q15": lambda: im,
        "half": lambda: im.resize((max(1, w // 2), max(1, h // 2)), Image.Resampling.LANCZOS),
        "gray": lambda: ImageOps.grayscale(im),
        "gamma06": lambda: _gamma(im, 0.6),
        "gamma16": lambda: _gamma(im, 1.6),
        "letterbox": lambda: _letterbox(im),
        "rot90": lambda: im.transpose(Image.Transpose.ROTATE_270),
        "rot180": lambda: im.transpose(Image.Transpose.ROTATE_180),
        "rot270": lambda: im.transpose(Image.Transpose.ROTATE_90),
        "mirror": lambda: im.transpose(Image.Transpose.FLIP_LEFT_RIGHT),
    }
    ops[name]().save(dst, quality=15 if name == "q15" else 92)
    return dst


# Sources closer than this (of 256 pHash bits; the closest of any 90 %
# part of one, turned or mirrored any way, to the other) are taken for the
# same picture and never both chosen: the corpus holds some pictures more than once
# (re-encoded, resized, cropped, mirrored), seen up to ~90 bits apart;
# distinct photos are mostly 104-150 bits apart.
SAME_PICTURE_BITS = 100


_D4 = [None, Image.Transpose.FLIP_LEFT_RIGHT, Image.Transpose.FLIP_TOP_BOTTOM,
       Image.Transpose.ROTATE_90, Image.Transpose.ROTATE_180, Image.Transpose.ROTATE_270,
       Image.Transpose.TRANSPOSE, Image.Transpose.TRANSVERSE]


# parts of a photo compared when telling pictures apart: the whole, and
# 90 % crops at the centre and the corners (the corpus holds cropped copies)
_PARTS = [(0, 0, 1, 1), (0.05, 0.05, 0.95, 0.95), (0.1, 0.1, 1, 1), (0, 0, 0.9, 0.9),
          (0.1, 0, 1, 0.9), (0, 0.1, 0.9, 1)]


def _hash256(im):
    """A 256-bit pHash (ferry's, from the package when importable; else a
    mean hash with Pillow)."""
    try:
        import numpy
        import ferry
        return int(ferry.hash(numpy.asarray(im), "phash", hash_size=16), 16)
    except Exception:
        g = im.convert("L").resize((16, 16), Image.Resampling.LANCZOS)
        px = list(g.getdata())
        mean = sum(px) / 256
        return sum(1 << i for i, v in enumerate(px) if v > mean)


def _phash_bits(path):
    """Hashes of the photo's parts turned and mirrored every way (the
    corpus holds mirrored and cropped copies of some pictures): entry 0 is
    the whole photo as it is."""
    with Image.open(path) as im0:
        base = im0.convert("RGB")
    w, h = base.size
    out = []
    for x0, y0, x1, y1 in _PARTS:
        part = base.crop((round(x0 * w), round(y0 * h), round(x1 * w), round(y1 * h)))
        for t in _D4:
            out.append(_hash256(part.transpose(t) if t is not None else part))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--groups", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    files = sorted(f for f in glob.glob(os.path.join(a.src, "*"))
                   if f.lower().endswith((".jpg", ".jpeg")))
    usable = []
    for f in files:
        try:
            with Image.open(f) as im:
                if im.mode in ("RGB", "L") and min(im.size) >= 64 and \
                        (im.getexif().get(0x0112, 1) in (0, 1)):
                    usable.append(f)
        except Exception:
            pass
    if len(usable) < a.groups:
        sys.exit(f"gen_hardset: {a.src}: {len(usable)} usable JPEGs, {a.groups} asked")
    rng = random.Random(a.seed)
    # look-alikes: the closest pairs of distinct photos by pHash
    bits = {f: _phash_bits(f) for f in usable}

    def dist(x, y):
        """the closest any part of x, turned any way, comes to y (whole) or
        the whole of x to any part of y"""
        return min(min(bin(v ^ bits[y][0]).count("1") for v in bits[x]),
                   min(bin(bits[x][0] ^ v).count("1") for v in bits[y]))

    pairs = sorted((dist(x, y), x, y) for i, x in enumerate(usable) for y in usable[i + 1:])

    chosen = []

    def take(f):
        if f not in chosen and all(dist(f, c) >= SAME_PICTURE_BITS for c in chosen):
            chosen.append(f)

    for d, x, y in pairs:
        if d < SAME_PICTURE_BITS:
            continue
        if len(chosen) < a.groups // 2:
            take(x)
        if len(chosen) < a.groups // 2:
            take(y)
        if len(chosen) >= a.groups // 2:
            break
    rest = [f for f in usable if f not in chosen]
    rng.shuffle(rest)
    for f in rest:
        if len(chosen) >= a.groups:
            break
        take(f)
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for g, src in enumerate(chosen):
        with Image.open(src) as im0:
            im = im0.convert("RGB")
        for name in EDITS:
            dst = edit(src, im, name, os.path.join(a.out, f"g{g:03d}_{name}"),
                       random.Random(a.seed * 1000 + g))
            rows.append((os.path.basename(dst), g, name))
    with open(os.path.join(a.out, "GROUND_TRUTH.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["file", "group", "edit"])
        w.writerows(rows)
    print(f"gen_hardset: {len(rows)} files, {a.groups} groups of {len(EDITS)} "
          f"({a.groups // 2} look-alike originals) in {a.out}")


if __name__ == "__main__":
    main()
