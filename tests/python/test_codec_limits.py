"""The decoders under hostile input (issue 52), from the outside: every crafted
file ends in a clear error naming it, at once. BMPs shorter than their header
says (they decoded to black rows: their hashes were a black picture's), a 54-byte
BMP declaring 13000 x 13000 pixels, progressive JPEGs whose scans go over the
image thousands of times (the 1 MB file of 5,001 scans took 17 s), a garbled
HEIC (it decoded, 376 of 696 rows wrong), libtiff's "scanline 4294967295", and
devices named as images (`ferry info /dev/zero`). The ferry binary (FERRY_BIN)
and the Python package are run; the files are made here."""
import os
import struct
import subprocess
import time

import pytest

import ferry
from ferrylib import FERRY_BIN, ROOT

if os.sep in FERRY_BIN:
    FERRY_BIN = os.path.abspath(FERRY_BIN)

FIX = ROOT / "tests" / "fixtures" / "codecs"
SAMPLE = ROOT / "data" / "sample"
BOUND_S = 2.0  # the bound for a hostile file (the release build takes milliseconds)


def ferry_cli(*args, timeout=60):
    t0 = time.monotonic()
    r = subprocess.run([FERRY_BIN, *map(str, args)], capture_output=True, text=True,
                       timeout=timeout)
    return r, time.monotonic() - t0


# ----------------------------------------------------------------- BMP

def bmp_header(w, h, bpp=24, offset=54, size=54):
    return (b"BM" + struct.pack("<IHHI", size, 0, 0, offset) +
            struct.pack("<IiiHHIIiiII", 40, w, h, 1, bpp, 0, 0, 2835, 2835, 0, 0))


def test_truncated_bmp_is_damaged_not_black(tmp_path):
    """Every row the header declares must be in the file: a cut BMP is
    FERRY_ECORRUPT naming it, in the library, `ferry decode` and `ferry
    hash` (whose hashes of the black rows grouped it with black pictures)."""
    whole = (FIX / "rgb24.bmp").read_bytes()
    cut = tmp_path / "cut.bmp"
    cut.write_bytes(whole[:len(whole) * 2 // 3])
    with pytest.raises(ferry.CorruptError, match=r"cut\.bmp: BMP: truncated"):
        ferry.decode(cut)
    r, _ = ferry_cli("decode", cut, "-o", tmp_path / "out.png")
    assert r.returncode != 0 and "cut.bmp" in r.stderr and "truncated" in r.stderr, r.stderr
    assert not (tmp_path / "out.png").exists()
    pics = tmp_path / "pics"
    pics.mkdir()
    (pics / "cut.bmp").write_bytes(cut.read_bytes())
    (pics / "whole.bmp").write_bytes(whole)
    for mode in ("fast", "compatible"):
        r, _ = ferry_cli("hash", pics, "--mode", mode)
        assert "whole.bmp" in r.stdout and "cut.bmp" not in r.stdout, (mode, r.stdout)
        assert "cut.bmp" in r.stderr and "truncated" in r.stderr, (mode, r.stderr)
        assert r.returncode != 0, mode
    assert ferry.decode(FIX / "rgb24.bmp").shape == (23, 37, 3)  # whole: decoded as before


def test_bmp_header_declaring_13000_squared_refused_at_once(tmp_path):
    """54 bytes of header declaring 13000 x 13000 pixels (under the pixel
    limit) took 14.6 s and 1 GB: now refused before anything is allocated."""
    bomb = tmp_path / "bomb.bmp"
    bomb.write_bytes(bmp_header(13000, 13000))
    r, dt = ferry_cli("decode", bomb, "-o", tmp_path / "out.ppm")
    assert r.returncode != 0 and "bomb.bmp" in r.stderr and "truncated" in r.stderr, r.stderr
    assert dt < BOUND_S, dt
    t0 = time.monotonic()
    with pytest.raises(ferry.CorruptError, match="bomb.bmp"):
        ferry.decode(bomb)
    assert time.monotonic() - t0 < BOUND_S
