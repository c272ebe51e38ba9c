#!/usr/bin/env python3
"""Are two files of a duplicate set the same picture? A pixel test for the
pairs that `ferry dupes` groups but the set's ground truth keeps apart.

    python3 bench/dupes_same_picture.py SET_DIR [--ferry build/ferry]
        [--modes fast,compatible] [--write PAIRS.csv]

Ground truths made by hand or by a generator can hold the same photo twice
under two labels (corpus/dupes' "distinct" pictures include mirrored and
re-cropped copies of other groups). Before a grouping is called wrong, this
registers the two pictures: one is scaled (0.5x to 2x, 71 steps), turned or
mirrored (the eight ways), placed on the other by phase correlation, and
the grey levels of the overlap (the smaller picture at 320 pixels wide,
fine detail kept) correlated. Different shots of one scene, or different
pictures that look alike, stay well below 0.9 (star fields: 0.1, two shots
of a launch pad from one tripod: 0.7); a copy scales, crops, recolours and
recompresses to 0.95 and more.

For every pair of files that ferry's default settings put in one group
against the truth, prints the best correlation, the orientation and scale,
and the verdict (same >= 0.95). --write saves the same pairs as CSV
(file_a,file_b,turn,scale,ncc), which bench/dupes_quality.py --same takes to
score against the truth with those pictures joined.

Claims it proves (bench/CLAIMS.md): C64.
"""
import argparse
import csv
import itertools
import os
import sys

import numpy
from PIL import Image, ImageOps

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dupes_quality as dq  # noqa: E402

SAME = 0.95
WIDTH = 320
TURNS = [None, Image.Transpose.FLIP_LEFT_RIGHT, Image.Transpose.ROTATE_90,
         Image.Transpose.ROTATE_180, Image.Transpose.ROTATE_270, Image.Transpose.FLIP_TOP_BOTTOM,
         Image.Transpose.TRANSPOSE, Image.Transpose.TRANSVERSE]


def grey(path, turn=None):
    im = ImageOps.exif_transpose(Image.open(path)).convert("L")
    return im.transpose(turn) if turn is not None else im


def place(a_img, b_img):
    """Best (correlation, scale) of picture b found inside picture a."""
    bw0, bh0 = b_img.size
    B = numpy.asarray(b_img.resize((WIDTH, max(8, round(WIDTH * bh0 / bw0))), Image.LANCZOS),
                      float)
    bh, bw = B.shape
    best = (-1.0, None)
    for s in numpy.geomspace(0.5, 2.0, 71):
        aw, ah = round(a_img.size[0] * WIDTH / bw0 * s), round(a_img.size[1] * WIDTH / bw0 * s)
        if min(aw, ah) < 40:
            continue
        A = numpy.asarray(a_img.resize((aw, ah), Image.LANCZOS), float)
        H, W = max(ah, bh), max(aw, bw)
        R = numpy.fft.fft2(A - A.mean(), (2 * H, 2 * W)) * numpy.conj(
            numpy.fft.fft2(B - B.mean(), (2 * H, 2 * W)))
        r = numpy.real(numpy.fft.ifft2(R / (numpy.abs(R) + 1e-9)))
        dy, dx = numpy.unravel_index(numpy.argmax(r), r.shape)
        dy, dx = (dy - 2 * H if dy > H else dy), (dx - 2 * W if dx > W else dx)
        y0, x0 = max(0, -dy), max(0, -dx)
        y1, x1 = min(bh, ah - dy), min(bw, aw - dx)
        if y1 - y0 < bh // 2 or x1 - x0 < bw // 2:  # at least a quarter of b overlaps
            continue
        b = B[y0:y1, x0:x1] - B[y0:y1, x0:x1].mean()
        a = A[y0 + dy:y1 + dy, x0 + dx:x1 + dx]
        a = a - a.mean()
        den = numpy.sqrt((a * a).sum() * (b * b).sum())
        c = float((a * b).sum() / den) if den > 0 else 0.0
        if c > best[0]:
            best = (c, round(float(s), 3))
    return best


def same_picture(path_a, path_b):
    """(correlation, turn index, scale) of the best registration."""
    a = grey(path_a)
    out = (-1.0, 0, None)
    for t, turn in enumerate(TURNS):
        b = grey(path_b, turn)
        for c, s in (place(a, b), place(b, a)):
            if c > out[0]:
                out = (c, t, s)
        if out[0] >= SAME:  # enough to say so
            break
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("set_dir")
    ap.add_argument("--ferry", default="build/ferry")
    ap.add_argument("--modes", default="fast,compatible",
                    help="hash modes whose default groupings are checked (their union)")
    ap.add_argument("--write", help="CSV of the pairs found the same picture")
    a = ap.parse_args()
    group, _ = dq.truth(a.set_dir)
    import tempfile
    wrong = set()
    with tempfile.TemporaryDirectory() as tmp:
        for mode in a.modes.split(","):
            cat = os.path.join(tmp, mode + ".fidx")
            dq.hash_set(a.ferry, a.set_dir, cat, mode, 16)
            doc, _ = dq.run_dupes(a.ferry, cat)
            wrong |= {(x, y) for g in doc["names"] for x, y in itertools.combinations(sorted(g), 2)
                      if group[x] != group[y]}
    wrong = sorted(wrong)
    # one representative pair per pair of true groups
    seen, rows = set(), []
    for x, y in wrong:
        key = tuple(sorted((group[x], group[y])))
        if key in seen:
            continue
        seen.add(key)
        c, t, s = same_picture(os.path.join(a.set_dir, x), os.path.join(a.set_dir, y))
        verdict = "same picture" if c >= SAME else "different"
        print(f"{x} {y}: correlation {c:.3f} (turn {t}, scale {s}): {verdict}")
        if c >= SAME:
            rows.append((x, y, t, s, round(c, 4)))
    print(f"{len(seen)} pairs of groups joined against the truth, {len(rows)} of them the same "
          f"picture (correlation >= {SAME})")
    if a.write:
        with open(a.write, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["file_a", "file_b", "turn", "scale", "ncc"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
