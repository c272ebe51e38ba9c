"""HEIF through libheif (src/codec/heif.c): HEIC (colour, grey, alpha dropped,
an odd size that the file crops back to) and AVIF decode to the pixels
pillow-heif gives (the stored goldens, within a few levels: the two may run
different libheif versions and AV1 decoders); probe, loader, hashing and
catalogs take them; compatible mode says HEIF is not bit-exact with
imagehash; damaged or oversized files fail with their name and the reason.
(tests/unit/test_codecs.c compares the decodes with the goldens too.)"""
import shutil
import subprocess

import numpy as np
import pytest

import ferry
from ferrylib import FERRY_BIN, ROOT

FIX = ROOT / "tests" / "fixtures" / "codecs"
FILES = {"rgb.heic": 4, "gray.heic": 4, "alpha.heic": 4, "rgb.avif": 8}  # name: tolerance


def golden(name, channels):
    w, h = 37, 23
    raw = (FIX / f"{name}.{'rgb' if channels == 3 else 'gray'}").read_bytes()
    return np.frombuffer(raw, np.uint8).reshape(h, w, channels)


@pytest.mark.parametrize("name", sorted(FILES))
def test_decode_is_pillow_heifs(name):
    for c in (3, 1):
        px = ferry.decode(FIX / name, channels=c)
        assert px.shape == (23, 37, c), name
        d = np.abs(px.astype(int) - golden(name, c).astype(int))
        assert d.max() <= FILES[name], (name, c, d.max())
    info = ferry.probe(FIX / name)
    assert info["format"] == "HEIF" and (info["width"], info["height"]) == (37, 23)


def test_hash_loader_and_catalog(tmp_path):
    pics = tmp_path / "pics"
    pics.mkdir()
    for n in FILES:
        shutil.copy(FIX / n, pics / (n.replace(".", "_") + "." + n.split(".")[1]))
    # fast and compatible hashes; compatible says it is not imagehash's
    h = ferry.hash(str(pics / "rgb_heic.heic"), "phash")
    assert len(h) == 16
    with pytest.warns(RuntimeWarning, match="rgb_heic.heic: not bit-exact with imagehash"):
        ferry.hash(str(pics / "rgb_heic.heic"), "phash", mode="compatible")
    # the loader reads them (a list file of the four, and a class folder)
    listing = tmp_path / "list.txt"
    listing.write_text("".join(f"{p},0\n" for p in sorted(pics.iterdir())))
    n = sum(len(images) for images, labels in ferry.Loader(str(listing), 4, 32, output="numpy"))
    assert n == 4
    # a catalog of the folder hashes all four
    cat = tmp_path / "c.fidx"
    r = subprocess.run([FERRY_BIN, "hash", str(pics), "-o", str(cat)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert "4 files (4 hashed" in r.stderr, r.stderr
    r = subprocess.run([FERRY_BIN, "index", "export", str(cat)], capture_output=True, text=True)
    assert r.stdout.count(",HEIF,") == 4, r.stdout


def test_damaged_and_oversized_heif_name_the_file(tmp_path):
    data = (FIX / "rgb.heic").read_bytes()
    cut = tmp_path / "cut.heic"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ferry.Error) as e:
        ferry.decode(cut)
    assert "cut.heic" in str(e.value) and "HEIF" in str(e.value)
    with pytest.raises(ferry.Error) as e:
        ferry.decode(FIX / "rgb.heic", max_pixels=100)
    assert "rgb.heic" in str(e.value)
    r = subprocess.run([FERRY_BIN, "hash", str(cut)], capture_output=True, text=True)
    assert r.returncode == 3 and "cut.heic" in r.stderr
