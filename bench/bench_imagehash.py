#!/usr/bin/env python3
"""ferry.imagehash against imagehash 4.3 on the same PIL images, side by
side in one process: each hash function over every image (opened and
loaded beforehand), one untimed call of each first, rounds interleaved, the best round of each; and the
bits compared (they must be equal: a difference is printed and the exit
code is 1). imagehash (with SciPy and PyWavelets) must be importable; it
is a peer here, never a dependency of ferry.

    python3 bench/bench_imagehash.py [--rounds 3] [--sizes 8,16] IMAGE_OR_DIR...

Claims it proves (bench/CLAIMS.md): C53.
"""
import argparse
import glob
import os
import sys
import time

import imagehash
from PIL import Image

from ferry import imagehash as fih


def images(args):
    files = []
    for a in args:
        if os.path.isdir(a):
            files += sorted(f for f in glob.glob(os.path.join(a, "**", "*"), recursive=True)
                            if os.path.isfile(f))
        else:
            files.append(a)
    out = []
    for f in files:
        try:
            im = Image.open(f)
            im.load()
            out.append(im)
        except Exception:
            pass
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="8,16")
    a = ap.parse_args()
    ims = images(a.paths)
    if not ims:
        sys.exit("bench_imagehash: no images")
    px = sum(im.size[0] * im.size[1] for im in ims) / len(ims) / 1e6
    print(f"{len(ims)} images, {px:.1f} MP on average; imagehash {imagehash.__version__}, "
          f"rounds {a.rounds}, best round each")
    funcs = ["average_hash", "dhash", "phash", "whash"]
    bad = 0

    def race(label, theirs, ours):
        """Both over every image, rounds interleaved; a row of best rounds."""
        nonlocal bad
        best = {"i": 1e9, "f": 1e9}
        for fn in (theirs, ours):  # a round untimed: imports, allocator's first growth
            fn(ims[0])
        for _ in range(a.rounds):
            for key, fn in (("i", theirs), ("f", ours)):
                t = time.perf_counter()
                got = [str(fn(im)) for im in ims]
                best[key] = min(best[key], time.perf_counter() - t)
                if key == "i":
                    ref = got
                else:
                    bad += sum(x != y for x, y in zip(got, ref))
        n = len(ims)
        print(f"{label:<24} {best['i'] / n * 1e3:>13.2f} {best['f'] / n * 1e3:>9.2f} "
              f"{best['i'] / best['f']:>5.2f}x")

    print(f"{'hash':<24} {'imagehash ms':>13} {'ferry ms':>9} {'ratio':>6}")
    for size in [int(s) for s in a.sizes.split(",")]:
        for name in funcs:
            theirs, ours = getattr(imagehash, name), getattr(fih, name)
            race(f"{name} {size}", lambda im, f=theirs, s=size: f(im, s),
                 lambda im, f=ours, s=size: f(im, s))
    for name in ("colorhash", "crop_resistant_hash"):
        race(name, lambda im, f=getattr(imagehash, name): f(im.convert("RGB")),
             lambda im, f=getattr(fih, name): f(im.convert("RGB")))
    print(f"hashes different from imagehash's: {bad}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
