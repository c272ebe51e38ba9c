#!/usr/bin/env python3
"""A prototype of robust near-duplicate matching (issue 19), in NumPy, to
measure what a matcher built this way finds before it is written in C:

  1. trim: borders of one flat colour (letterboxing) are cut off;
  2. parts: the whole picture and five 90 % crops (centre, four corners),
     each a 64x64 grey thumbnail (Pillow, LANCZOS) and the 16x16 lowest
     frequencies of its DCT;
  3. turned and mirrored: the DCT block of each of the eight ways a
     picture can be turned or mirrored is the block itself with rows
     and/or columns of odd frequency negated, transposed or not, so all
     eight pHashes (bits: coefficient > the block's median) come from one
     DCT;
  4. candidates: a pair whose closest (part of one, part of the other
     turned any way) pHashes are within T1 bits of 256;
  5. verification: a dHash (16x16 block means of the two thumbnails so
     aligned, each against its right neighbour) within T2 bits, else the
     pair is dropped;
  6. groups: pairs joined transitively, as `ferry dupes` does.

    python3 bench/dupes_robust_proto.py SET_DIR [--t1 48,56] [--t2 40,48,56]

SET_DIR holds GROUND_TRUTH.csv (file,group[,edit]); pair precision,
recall and F1 are printed per setting, with the recall of the worst
edits. Quadratic in the number of files: for sets of a few thousand.
"""
import argparse
import os
import sys

import numpy
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dupes_quality as dq  # noqa: E402

PARTS = [(0, 0, 1, 1), (0.05, 0.05, 0.95, 0.95), (0.1, 0.1, 1, 1), (0, 0, 0.9, 0.9),
         (0.1, 0, 1, 0.9), (0, 0.1, 0.9, 1)]
POP = numpy.array([bin(i).count("1") for i in range(256)], numpy.uint8)
ODD = numpy.array([(-1.0) ** k for k in range(16)])
LANCZOS = Image.Resampling.LANCZOS
N64 = 64
_K = numpy.arange(N64).reshape(-1, 1)
DCT = 2.0 * numpy.cos(numpy.pi * _K * (2 * numpy.arange(N64) + 1) / (2 * N64))


def trim(im, spread=24):
    """Cuts rows and columns of one flat colour (max - min <= spread in
    grey) off the edges, keeping at least 8 pixels."""
    g = numpy.asarray(im.convert("L")).astype(int)
    t, b, lft, r = 0, g.shape[0], 0, g.shape[1]

    def flat(v):
        return v.max() - v.min() <= spread

    while t < b - 8 and flat(g[t, lft:r]):
        t += 1
    while b - 1 > t + 8 and flat(g[b - 1, lft:r]):
        b -= 1
    while lft < r - 8 and flat(g[t:b, lft]):
        lft += 1
    while r - 1 > lft + 8 and flat(g[t:b, r - 1]):
        r -= 1
    return im.crop((lft, t, r, b))


def thumbs(path):
    im = trim(Image.open(path).convert("RGB"))
    w, h = im.size
    out = []
    for x0, y0, x1, y1 in PARTS:
        part = im.crop((round(x0 * w), round(y0 * h), round(x1 * w), round(y1 * h)))
        out.append(numpy.asarray(part.convert("L").resize((N64, N64), LANCZOS), float))
    return out


def variants(p):
    """Packed pHashes of the eight turns/mirrors of thumbnail p; index
    v = 4 * transposed + 2 * mirrored + flipped."""
    B = (DCT @ p @ DCT.T)[:16, :16]
    out = []
    for T in (B, B.T):
        for mirror in (0, 1):
            for flip in (0, 1):
                X = T * (ODD[None, :] if mirror else 1) * (ODD[:, None] if flip else 1)
                out.append(numpy.packbits(X > numpy.median(X)))
    return out


def turn(p, v):
    """Thumbnail p turned as variant v of variants()."""
    q = p.T if v // 4 else p
    if (v // 2) % 2:
        q = q[:, ::-1]
    if v % 2:
        q = q[::-1, :]
    return q


def dhash(p):
    s = p.reshape(16, 4, 16, 4).mean(axis=(1, 3))
    return (s[:, 1:] > s[:, :-1]).ravel()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("set_dir")
    ap.add_argument("--t1", default="48,56")
    ap.add_argument("--t2", default="40,48,56")
    a = ap.parse_args()
    group, edit = dq.truth(a.set_dir)
    files = sorted(group)
    th = {f: thumbs(os.path.join(a.set_dir, f)) for f in files}
    C = numpy.array([[variants(p) for p in th[f]] for f in files])  # (N, R, 8, 32)
    n, nr = C.shape[:2]
    anchors, allc = C[:, :, 0, :], C.reshape(n, nr * 8, 32)
    D = numpy.zeros((n, n), numpy.int32)
    arg = numpy.zeros((n, n), numpy.int32)
    for i in range(n):
        x = POP[anchors[i][None, :, None, :] ^ allc[:, None, :, :]].sum(-1, dtype=numpy.int32)
        flat = x.reshape(n, -1)
        arg[i] = flat.argmin(1)
        D[i] = flat[numpy.arange(n), arg[i]]
    print(f"set {a.set_dir}: {n} files, {len(set(group.values()))} groups; parts {nr}, "
          f"8 turns each")
    for t1 in [int(x) for x in a.t1.split(",")]:
        for t2 in [int(x) for x in a.t2.split(",")] + [None]:
            parent = list(range(n))

            def find(x):
                while parent[x] != x:
                    parent[x] = parent[parent[x]]
                    x = parent[x]
                return x

            for i in range(n):
                for j in numpy.nonzero(D[i] <= t1)[0]:
                    if j == i:
                        continue
                    if t2 is not None:
                        k = int(arg[i, j])
                        ra, rb, v = k // (nr * 8), (k % (nr * 8)) // 8, k % 8
                        pa, pb = th[files[i]][ra], turn(th[files[j]][rb], v)
                        if int((dhash(pa) != dhash(pb)).sum()) > t2:
                            continue
                    parent[find(i)] = find(int(j))
            comps = {}
            for k in range(n):
                comps.setdefault(find(k), []).append(files[k])
            pairs = dq.pairs_of([c for c in comps.values() if len(c) > 1])
            p, r, f1, _ = dq.score(pairs, group)
            orig = {group[f]: f for f in files if edit[f] in ("orig", "original")}
            per = {}
            for f in files:
                if f in orig.values() or group[f] not in orig:
                    continue
                per.setdefault(edit[f], []).append(tuple(sorted((orig[group[f]], f))) in pairs)
            weak = {e: round(sum(v) / len(v), 2) for e, v in per.items() if sum(v) / len(v) < 0.9}
            name = f"T1 {t1}, " + (f"verify dHash <= {t2}" if t2 is not None else "no verification")
            print(f"{name:<34} pairs {len(pairs):>6}  P {p:.3f}  R {r:.3f}  F1 {f1:.3f}  "
                  f"edits under 0.9: {weak}")


if __name__ == "__main__":
    main()
