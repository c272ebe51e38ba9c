"""Compatible mode against imagehash 4.3: bit-identical hashes.

Offline, the golden hashes that imagehash produced (tests/gen/
gen_hash_golden.py) are checked for the fixtures and every JPEG/PNG/WebP of
the shared corpus. With imagehash importable, imagehash is also run live:
on a sample of the corpus (all of it with FERRY_FULL_ORACLE=1) and on
random pixel arrays through ferry_hash_pixels."""
import csv
import ctypes
import importlib.util
import os
import pathlib

import numpy as np
import pytest

from ferrylib import CORPUS, ROOT, lib
from hashlib_ferry import (COMPATIBLE, KINDS, Hasher, HashResult, SearchOptions, hex_of,
                           imagehash_all)

FIX = ROOT / "tests" / "fixtures" / "hash"
HAVE_ORACLE = all(importlib.util.find_spec(m) for m in ("imagehash", "scipy", "pywt"))
needs_corpus = pytest.mark.skipif(not (CORPUS / "photos").is_dir(),
                                  reason=f"shared corpus not found at {CORPUS}")
needs_oracle = pytest.mark.skipif(not HAVE_ORACLE,
                                  reason="imagehash/scipy/PyWavelets not installed: live "
                                         "oracle skipped (the golden tests still ran)")


def goldens(path):
    """{(file, size, is_colorhash): {kind: hex}}"""
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            key = (r["file"], int(r["size"]), r["kind"] == "colorhash")
            out.setdefault(key, {})[r["kind"]] = r["hex"]
    return out


def hasher_for(cache, size, color):
    key = (size, color)
    if key not in cache:
        if color:
            cache[key] = Hasher(COMPATIBLE, kinds=["colorhash"], colorhash_bits=size)
        else:
            cache[key] = Hasher(COMPATIBLE, hash_size=size, kinds=KINDS[:5])
    return cache[key]


def check_goldens(path, base):
    cache, bad = {}, []
    for (name, size, color), want in goldens(path).items():
        got = hasher_for(cache, size, color).hash(base / name)
        for kind, hexs in want.items():
            if got[kind] != hexs:
                bad.append((name, size, kind, got[kind], hexs))
    return bad


def test_search_options_layout():
    """The ctypes mirror of ferry_search_options has every field (one was
    missing once: bench_hash.py let C write past the buffer)."""
    o = SearchOptions.default()
    assert ctypes.sizeof(o) >= 32 and o.device == -1


def test_fixture_goldens():
    bad = check_goldens(FIX / "golden.csv", FIX)
    assert not bad, f"{len(bad)} hashes differ from imagehash: {bad[:5]}"


@needs_corpus
def test_corpus_goldens_all_bit_identical():
    path = FIX / "corpus_golden.csv"
    if not path.exists():
        pytest.skip("corpus_golden.csv not generated (tests/gen/gen_hash_golden.py --corpus)")
    files = {k[0] for k in goldens(path)}
    assert len(files) > 700  # photos, hires, dupes: every JPEG, PNG, WebP
    bad = check_goldens(path, CORPUS)
    assert not bad, f"{len(bad)} hashes differ from imagehash: {bad[:5]}"


def corpus_images():
    out = []
    for sub in ("photos", "hires", "dupes"):
        d = CORPUS / sub
        out += sorted(p for p in d.iterdir() if p.suffix.lower() in (".jpg", ".png", ".webp"))
    return out


@needs_corpus
@needs_oracle
def test_corpus_live_imagehash():
    files = corpus_images()
    if not os.environ.get("FERRY_FULL_ORACLE"):
        special = [p for p in files if not p.name.startswith(("p0", "x0", "x1"))]
        files = sorted(set(files[::15]) | set(special[::4]) | set(CORPUS.glob("hires/*")))
    cache, bad = {}, []
    for p in files:
        for size in (8, 16):
            ours = hasher_for(cache, size, False).hash(p)
            ref = imagehash_all(p, size)
            bad += [(p.name, size, k, ours[k], ref[k]) for k in KINDS[:5] if ours[k] != ref[k]]
        c = hasher_for(cache, 3, True).hash(p)["colorhash"]
        if c != imagehash_all(p, 8)["colorhash"]:
            bad.append((p.name, "colorhash"))
    print(f"live imagehash: {len(files)} files, {len(bad)} differences")
    assert not bad, bad[:5]


@needs_oracle
def test_pixels_api_matches_imagehash():
    """ferry_hash_pixels on arrays = imagehash on Image.fromarray: random
    noise, flat images, one-pixel-wide ones (ties everywhere)."""
    import imagehash
    from PIL import Image

    L = lib()
    rng = np.random.default_rng(7)
    h = Hasher(COMPATIBLE)

    class Img(ctypes.Structure):
        _fields_ = [("data", ctypes.POINTER(ctypes.c_uint8)), ("width", ctypes.c_int),
                    ("height", ctypes.c_int), ("channels", ctypes.c_int),
                    ("stride", ctypes.c_size_t)]

    cases = [rng.integers(0, 256, (37, 53, 3)), rng.integers(0, 256, (64, 64)),
             np.full((20, 30, 3), 90), np.full((1, 40), 200), rng.integers(0, 256, (40, 1, 3)),
             rng.integers(100, 103, (70, 90, 3))]
    for a in cases:
        a = np.ascontiguousarray(a.astype(np.uint8))
        im = Img(a.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8)), a.shape[1], a.shape[0],
                 1 if a.ndim == 2 else 3, a.shape[1] * (1 if a.ndim == 2 else 3))
        r = HashResult()
        assert L.ferry_hash_pixels(h.h, ctypes.byref(im), ctypes.byref(r)) == 0
        pil = Image.fromarray(a, "L" if a.ndim == 2 else "RGB")
        want = {"ahash": imagehash.average_hash(pil), "dhash": imagehash.dhash(pil),
                "dhash_v": imagehash.dhash_vertical(pil), "phash": imagehash.phash(pil),
                "whash": imagehash.whash(pil), "colorhash": imagehash.colorhash(pil)}
        for i, k in enumerate(KINDS):
            assert hex_of(r.hash[i]) == str(want[k]), (a.shape, k)


def test_ignores_exif_orientation_as_imagehash_does():
    """orient6.jpg carries EXIF orientation 6: the hashes are those of the
    stored pixels (imagehash does not transpose), width/height as stored."""
    r = Hasher(COMPATIBLE).result(FIX / "orient6.jpg")
    assert (r.width, r.height) == (120, 80)


def test_16bit_png_is_flagged_exact(tmp_path):
    """16-bit PNG: compatible mode decodes samples as Pillow does (gray
    clipped, colour high byte: test_hash_png16.py), so the result is exact."""
    src = ROOT / "tests" / "fixtures" / "codecs" / "gray16.png"
    if not src.exists():
        pytest.skip("codec fixture gray16.png missing")
    r = Hasher(COMPATIBLE).result(src)
    assert r.exact == 1
    assert Hasher(COMPATIBLE).result(FIX / "rgb.png").exact == 1
