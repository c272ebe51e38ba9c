#!/usr/bin/env python3
"""Writes tests/fixtures/hash/: small images and imagehash's hashes of them,
so that ferry's tests check bit-identity without imagehash installed.

Run by hand from the repository root (needs Pillow, numpy, scipy, PyWavelets
and imagehash 4.3; the outputs are committed):

    python3 tests/gen/gen_hash_golden.py            # fixtures + their goldens
    python3 tests/gen/gen_hash_golden.py --corpus   # also ../shared/corpus

Outputs (all deterministic: fixed seeds, no timestamps):
  *.jpg *.png *.webp   crafted images: every colour type and JPEG flavour that
                       Pillow decodes differently (gray, 4:4:4, 4:2:2, 4:2:0,
                       progressive, restart markers, CMYK, EXIF orientation that
                       imagehash ignores, palette, RGBA, gray+alpha, lossy and
                       lossless WebP) and degenerate sizes (1x1, 7x3, 1x50)
  golden.csv           file,hash_size,kind,hex: imagehash's str() of average_hash,
                       dhash, dhash_vertical, phash, whash (hash sizes 8 and 16)
                       and colorhash (binbits 3 and 5) of every fixture
  corpus_golden.csv    the same (hash size 8 and 16, binbits 3) for every JPEG,
                       PNG and WebP in corpus photos/, hires/ and dupes/
                       (paths relative to the corpus)
  dct_golden.txt       scipy.fftpack's 2-D DCT-II of LCG-made 32x32 and 64x64
                       images (low 8x8 / 16x16 block, doubles as hex): the DCT
                       must match bit for bit
  hsv_golden.txt       a checksum of colorhash's category for all 2^24 colours
                       through Pillow's convert("HSV") and convert("L")
"""
import argparse
import csv
import io
import os
import sys

import numpy as np
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "hash")
CORPUS = os.environ.get("FERRY_CORPUS", os.path.join(os.path.dirname(ROOT), "shared", "corpus"))


def imagehash_all(im, hash_size, binbits):
    import imagehash

    return {
        "ahash": str(imagehash.average_hash(im, hash_size)),
        "dhash": str(imagehash.dhash(im, hash_size)),
        "dhash_v": str(imagehash.dhash_vertical(im, hash_size)),
        "phash": str(imagehash.phash(im, hash_size)),
        "whash": str(imagehash.whash(im, hash_size)),
        "colorhash": str(imagehash.colorhash(im, binbits)),
    }


def scene(w, h, seed):
    """A photo-like picture: smooth colour fields, edges, a little noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.zeros((h, w, 3))
    for c in range(3):
        for _ in range(4):
            fx, fy, ph = rng.uniform(0.5, 4, 2).tolist() + [rng.uniform(0, 6.3)]
            img[..., c] += np.sin(x / w * fx * 3.1 + ph) * np.cos(y / h * fy * 3.1)
    img = (img - img.min()) / (np.ptp(img) + 1e-9) * 200 + 20
    for _ in range(3):  # rectangles: hard edges
        x0, y0 = rng.integers(0, w), rng.integers(0, h)
        img[y0:y0 + h // 4, x0:x0 + w // 5] = rng.uniform(0, 255, 3)
    img += rng.normal(0, 4, img.shape)
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB")


def exif_orientation(o):
    exif = Image.Exif()
    exif[0x0112] = o
    return exif.tobytes()


def make_fixtures():
    os.makedirs(OUT, exist_ok=True)
    files = {}
    base = scene(160, 120, 1)
    jpeg = lambda im, **kw: ("jpg", lambda f: im.save(f, "JPEG", quality=85, **kw))
    files["rgb420.jpg"] = jpeg(base)
    files["rgb444.jpg"] = jpeg(base, subsampling=0)
    files["rgb422.jpg"] = jpeg(scene(150, 101, 2), subsampling=1)
    files["progressive.jpg"] = jpeg(scene(130, 97, 3), progressive=True)
    files["gray.jpg"] = jpeg(scene(120, 90, 4).convert("L"))
    files["cmyk.jpg"] = jpeg(scene(96, 80, 5).convert("CMYK"))
    files["orient6.jpg"] = jpeg(scene(120, 80, 6), exif=exif_orientation(6))
    files["tiny_1x1.jpg"] = jpeg(Image.new("RGB", (1, 1), (200, 30, 90)))
    files["tiny_7x3.jpg"] = jpeg(scene(7, 3, 7))
    files["tall_1x50.jpg"] = jpeg(scene(1, 50, 8))
    files["flat.jpg"] = jpeg(Image.new("RGB", (64, 48), (120, 120, 120)))
    png = lambda im, **kw: ("png", lambda f: im.save(f, "PNG", **kw))
    files["rgb.png"] = png(scene(140, 100, 9))
    files["rgba.png"] = png(scene(100, 100, 10).convert("RGBA"))
    files["gray.png"] = png(scene(90, 70, 11).convert("L"))
    files["gray_alpha.png"] = png(scene(80, 60, 12).convert("LA"))
    files["palette.png"] = png(scene(120, 90, 13).convert("P", palette=Image.ADAPTIVE))
    files["flat.png"] = png(Image.new("L", (33, 17), 77))
    webp = lambda im, **kw: ("webp", lambda f: im.save(f, "WEBP", **kw))
    files["lossy.webp"] = webp(scene(128, 96, 14), quality=80)
    files["lossless.webp"] = webp(scene(100, 75, 15), lossless=True)
    # restart markers: Pillow cannot write them; build with restart via a
    # DRI-less trick is impossible, so re-save through PIL's libjpeg with
    # the "restart_marker_blocks" option when available
    try:
        buf = io.BytesIO()
        scene(120, 90, 16).save(buf, "JPEG", quality=80, restart_marker_blocks=2)
        files["restart.jpg"] = ("jpg", lambda f, b=buf.getvalue(): f.write(b))
    except (TypeError, ValueError, OSError):
        pass
    for name, (_, save) in files.items():
        with open(os.path.join(OUT, name), "wb") as f:
            save(f)
    return sorted(files)


def write_golden(names, path, base_dir, sizes=(8, 16), binbits=(3, 5)):
    rows = []
    for name in names:
        with Image.open(os.path.join(base_dir, name)) as im:
            im.load()
            for hs in sizes:
                for bb in binbits:
                    h = imagehash_all(im, hs, bb)
                    for kind, hexs in h.items():
                        if kind == "colorhash":
                            if hs == sizes[0]:
                                rows.append((name, bb, kind, hexs))
                        elif bb == binbits[0]:
                            rows.append((name, hs, kind, hexs))
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["file", "size", "kind", "hex"])  # size: hash size, or binbits
        for r in sorted(set(rows), key=lambda r: (r[0], r[2], r[1])):
            w.writerow(r)
    print(f"wrote {path}: {len(rows)} hashes of {len(names)} files")


def lcg_images(n, count, seed):
    """The C test regenerates these: x = x * 6364136223846793005 + 1442695040888963407
    (mod 2^64), pixel = x >> 56, with one flat and one constant-row image."""
    x, out = seed, []
    for k in range(count):
        a = np.zeros((n, n), np.uint8)
        for i in range(n * n):
            x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            a.flat[i] = x >> 56
        if k == 1:
            a[:] = a[0, 0]
        if k == 2:
            a[:] = a[0]
        out.append(a)
    return out


def write_dct_golden():
    import scipy.fftpack

    lines = ["# n keep: low keep x keep block of dct(dct(img, axis=0), axis=1), row-major"]
    for n, keep in ((32, 8), (64, 16)):
        for k, a in enumerate(lcg_images(n, 6, 12345 + n)):
            d = scipy.fftpack.dct(scipy.fftpack.dct(a, axis=0), axis=1)[:keep, :keep]
            lines.append(f"{n} {keep} {k} " + " ".join(float(v).hex() for v in d.flat))
    with open(os.path.join(OUT, "dct_golden.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote dct_golden.txt")


def write_hsv_golden():
    """Category of each colour as colorhash sees it: 0 black, 1 gray, 2..7
    faint hue bins, 8..13 bright hue bins, 14 coloured but neither (s = 170).
    Checksum: sum over colours c of code(c) * (c * 2654435761 mod 2^32), mod
    2^64, and the count of each category."""
    c = np.arange(1 << 24, dtype=np.uint32)
    rgb = np.stack([(c >> 16) & 255, (c >> 8) & 255, c & 255], -1).astype(np.uint8)
    im = Image.fromarray(rgb.reshape(4096, 4096, 3), "RGB")
    L = np.asarray(im.convert("L")).reshape(-1)
    hsv = np.asarray(im.convert("HSV")).reshape(-1, 3)
    h, s = hsv[:, 0], hsv[:, 1]
    edges = np.linspace(0, 255, 7)
    hb = np.clip(np.searchsorted(edges, h, side="right") - 1, 0, 5)
    code = np.full(c.shape, 14, np.uint64)
    black = L < 256 // 8
    gray = ~black & (s < 256 // 3)
    faint = ~black & ~gray & (s < 256 * 2 // 3)
    bright = ~black & ~gray & (s > 256 * 2 // 3)
    code[faint] = 2 + hb[faint]
    code[bright] = 8 + hb[bright]
    code[gray] = 1
    code[black] = 0
    weight = (c.astype(np.uint64) * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)
    checksum = int(np.sum(code * weight, dtype=np.uint64))
    counts = np.bincount(code.astype(np.int64), minlength=15)
    with open(os.path.join(OUT, "hsv_golden.txt"), "w") as f:
        f.write(f"{checksum}\n" + " ".join(str(int(v)) for v in counts) + "\n")
    print("wrote hsv_golden.txt")


def corpus_files():
    names = []
    for sub in ("photos", "hires", "dupes"):
        d = os.path.join(CORPUS, sub)
        for n in sorted(os.listdir(d)):
            if n.lower().endswith((".jpg", ".jpeg", ".png", ".webp")):
                names.append(f"{sub}/{n}")
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", action="store_true", help="also hash ../shared/corpus")
    args = ap.parse_args()
    names = make_fixtures()
    write_golden(names, os.path.join(OUT, "golden.csv"), OUT)
    write_dct_golden()
    write_hsv_golden()
    if args.corpus:
        write_golden(corpus_files(), os.path.join(OUT, "corpus_golden.csv"), CORPUS, binbits=(3,))


if __name__ == "__main__":
    sys.exit(main())
