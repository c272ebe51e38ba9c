"""Camera raw through LibRaw (src/codec/raw.c): a DNG without a preview (a
64x48 RGGB mosaic: a gradient and a bright rectangle, tests/gen) developed at
half size, upright, its gradient and rectangle where they were; probe,
hashing, catalogs take it; compatible mode says it is not imagehash's; a
plain TIFF stays a TIFF; damaged raws fail with their name. The embedded
preview path (most cameras' files) has no fixture here: no camera raw with
a preview could be made or found on this machine (docs/DEDUP.md)."""
import shutil
import subprocess

import numpy as np
import pytest

import ferry
from ferrylib import FERRY_BIN, ROOT

FIX = ROOT / "tests" / "fixtures" / "codecs"
DNG = FIX / "sensor.dng"


def test_dng_developed_at_half_size():
    px = ferry.decode(DNG).astype(int)
    assert px.shape == (24, 32, 3)
    g = px[..., 1]
    # the gradient grows to the right and down; the rectangle (rows 10-30,
    # columns 20-44 of the mosaic: 5-15, 10-22 here) is brighter than its
    # neighbours on the same rows
    assert g[:, -4:].mean() > g[:, :4].mean() and g[-3:].mean() > g[:3].mean()
    assert g[6:14, 11:21].mean() > g[6:14, 23:28].mean() + 20
    gray = ferry.decode(DNG, channels=1)
    assert gray.shape == (24, 32, 1)
    info = ferry.probe(DNG)
    assert info["format"] == "camera raw" and (info["width"], info["height"]) == (32, 24)


def test_raw_hashed_and_catalogued(tmp_path):
    pics = tmp_path / "pics"
    pics.mkdir()
    shutil.copy(DNG, pics / "IMG_0001.DNG")
    shutil.copy(FIX / "rgb_lzw.tiff", pics / "plain.tiff")
    assert len(ferry.hash(str(pics / "IMG_0001.DNG"), "phash")) == 16
    with pytest.warns(RuntimeWarning, match="IMG_0001.DNG: not bit-exact with imagehash"):
        ferry.hash(str(pics / "IMG_0001.DNG"), "phash", mode="compatible")
    assert ferry.probe(pics / "plain.tiff")["format"] == "TIFF"
    cat = tmp_path / "c.fidx"
    r = subprocess.run([FERRY_BIN, "hash", str(pics), "-o", str(cat)], capture_output=True,
                       text=True)
    assert r.returncode == 0 and "2 files (2 hashed" in r.stderr, r.stderr
    out = subprocess.run([FERRY_BIN, "index", "export", str(cat)], capture_output=True,
                         text=True).stdout
    assert ",camera raw," in out and ",TIFF," in out


def test_damaged_raw_names_the_file(tmp_path):
    cut = tmp_path / "cut.dng"
    cut.write_bytes(DNG.read_bytes()[:600])
    with pytest.raises(ferry.Error) as e:
        ferry.decode(cut)
    assert "cut.dng" in str(e.value)
    with pytest.raises(ferry.Error) as e:
        ferry.decode(DNG, max_pixels=100)
    assert "sensor.dng" in str(e.value)


def test_raw_whose_tiff_structure_lies_is_refused_before_libraw(tmp_path):
    """A 331-byte DNG (found by fuzz_probe) whose IFD entries point past its
    end crashed the process inside LibRaw 0.20 (SEGV in parse_tiff_ifd);
    raw_check.c refuses it with the reason, and one such file among good
    ones is skipped, named, while the rest of a run goes on."""
    bad = FIX / "libraw_crash.dng"
    for call in (ferry.probe, ferry.decode):
        with pytest.raises(ferry.Error, match=r"libraw_crash\.dng: camera raw: damaged TIFF "
                           r"structure: tag 271's data \(6 bytes at byte 326\) runs past the end"):
            call(bad)
    pics = tmp_path / "pics"
    pics.mkdir()
    shutil.copy(bad, pics / "IMG_0002.DNG")
    shutil.copy(DNG, pics / "IMG_0001.DNG")
    r = subprocess.run([FERRY_BIN, "info", str(pics / "IMG_0002.DNG"), str(pics / "IMG_0001.DNG")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "damaged TIFF structure" in r.stderr, (r.returncode, r.stderr)
    assert "IMG_0001.DNG: camera raw 32x24" in r.stdout
    cat = tmp_path / "c.fidx"
    r = subprocess.run([FERRY_BIN, "hash", str(pics), "-o", str(cat)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 3 and "IMG_0002.DNG" in r.stderr, (r.returncode, r.stderr)


def test_raf_and_cr3_containers_are_checked_too(tmp_path):
    """LibRaw reads TIFFs inside a Fujifilm RAF (at the raw data's offset)
    and a Canon CR3 (its CMT1-4 boxes): the DNG that crashed it, wrapped in
    either (tests/gen/gen_raw_containers.py), crashed the process the same
    way. Both are refused with the block named; the same containers around
    the sound DNG pass the check (the RAF is developed; LibRaw finds no
    image track in the CR3 and says so)."""
    for name, where in (("libraw_crash.raf", r"RAF's raw data block at byte 256"),
                        ("libraw_crash.cr3", r"CR3's CMT1 box at byte 56")):
        for call in (ferry.probe, ferry.decode):
            with pytest.raises(ferry.Error, match=rf"{name}: camera raw: damaged TIFF structure "
                               rf"\({where}\): tag 271's data"):
                call(FIX / name)
    assert ferry.decode(FIX / "sensor.raf").shape == (24, 32, 3)
    with pytest.raises(ferry.Error, match=r"sensor\.cr3: camera raw: cannot read the file"):
        ferry.decode(FIX / "sensor.cr3")
    pics = tmp_path / "pics"
    pics.mkdir()
    for name in ("libraw_crash.raf", "libraw_crash.cr3", "sensor.raf", "sensor.dng"):
        shutil.copy(FIX / name, pics / name)
    cat = tmp_path / "c.fidx"
    r = subprocess.run([FERRY_BIN, "hash", str(pics), "-o", str(cat)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert "libraw_crash.raf" in r.stderr and "libraw_crash.cr3" in r.stderr, r.stderr
    assert "4 files (" in r.stderr and ", 2 failed," in r.stderr, r.stderr


def test_cr3_box_sizes_that_hang_libraw_are_refused(tmp_path):
    """A CR3 whose box has a 64-bit size of 0 made LibRaw 0.20's parseCR3
    walk the same box without end: `ferry info` on a 104-byte file never
    returned. raw_cr3.c walks the boxes as LibRaw does first and refuses
    it, naming the box; the rest of a folder goes on."""
    hang = ROOT / "tests" / "fixtures" / "fuzz-regressions" / "probe" / \
        "libraw-cr3-zero-largesize-hang"
    bad = tmp_path / "IMG_0003.CR3"
    shutil.copy(hang, bad)
    shutil.copy(DNG, tmp_path / "IMG_0001.DNG")
    r = subprocess.run([FERRY_BIN, "info", str(bad), str(tmp_path / "IMG_0001.DNG")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert ("IMG_0003.CR3: camera raw: damaged CR3 box structure: the 'free' box at byte 24 "
            "has a 64-bit size of 0") in r.stderr, r.stderr
    assert "IMG_0001.DNG: camera raw 32x24" in r.stdout
