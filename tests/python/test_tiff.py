"""TIFF through libtiff (src/codec/tiff.c): pixels as Pillow's for 8-bit
grey, RGB and palette files (so compatible-mode hashes are imagehash's),
the orientation tag applied as EXIF is, the first page of several, files
Pillow reads differently said to be inexact, damaged files failing with
their name, and folders of .tif/.tiff files found by the CLI.
(tests/unit/test_codecs.c compares the decodes with Pillow's goldens.)"""
import numpy as np
import pytest

import ferry
from ferrylib import ROOT
from format_checks import cli_hashes_a_folder, compatible_hashes_are_pillows

PIL = pytest.importorskip("PIL", reason="Pillow is the reference for TIFF pixels")
from PIL import Image, ImageOps  # noqa: E402

FIX = ROOT / "tests" / "fixtures" / "codecs"
EXACT = ["rgb_lzw.tiff", "rgb_deflate.tiff", "gray8.tiff", "palette.tiff", "two_pages.tiff",
         "orient3.tiff"]


@pytest.mark.parametrize("name", EXACT)
def test_decode_is_pillows(name):
    """Pillow's TIFF reader gives a picture with its orientation tag
    applied; so does ferry's, whether orientation is asked for or not."""
    path = FIX / name
    with Image.open(path) as im:
        stored = np.asarray(im.convert("RGB"))
        want = np.asarray(ImageOps.exif_transpose(im).convert("RGB"))
    assert np.array_equal(stored, want)
    for ignore in (False, True):
        got = ferry.decode(path, ignore_orientation=ignore)
        assert got.shape == want.shape and np.array_equal(got, want), (name, ignore)
    info = ferry.probe(path)
    assert info["format"] == "TIFF"


@pytest.mark.parametrize("name", EXACT)
def test_compatible_hashes_are_imagehashs(name):
    compatible_hashes_are_pillows(FIX / name)


def test_inexact_tiffs_are_said(tmp_path):
    ramp = (np.arange(40 * 30, dtype=np.uint16).reshape(30, 40) * 50).astype(np.uint16)
    deep = tmp_path / "deep.tiff"
    Image.frombytes("I;16", (40, 30), ramp.tobytes()).save(deep)
    rgba = tmp_path / "rgba.tiff"
    Image.new("RGBA", (20, 10), (200, 100, 50, 128)).save(rgba)
    for p in (deep, rgba):
        assert ferry.decode(p).shape[:2] == Image.open(p).size[::-1]
        with pytest.warns(RuntimeWarning, match=f"{p.name}: not bit-exact with imagehash"):
            ferry.hash(str(p), "phash", mode="compatible")


def test_damaged_tiff_names_the_file(tmp_path):
    data = (FIX / "rgb_lzw.tiff").read_bytes()
    cut = tmp_path / "cut.tiff"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ferry.Error) as e:
        ferry.decode(cut)
    assert "cut.tiff" in str(e.value)
    junk = tmp_path / "junk.tif"
    junk.write_bytes(b"II*\0" + b"\xff" * 60)
    with pytest.raises(ferry.Error) as e:
        ferry.decode(junk)
    assert "junk.tif" in str(e.value) and "TIFF" in str(e.value)


def test_cli_hashes_a_folder_of_tiffs(tmp_path):
    cli_hashes_a_folder(tmp_path, [FIX / n for n in EXACT[:3]], ".tif")
