"""BMP through stb_image (src/codec/bmp.c): 24-bit at an odd width, palettes,
1-bit, grey and 32-bit with alpha decode to Pillow's pixels, so compatible
hashes are imagehash's; run-length compressed BMPs are refused with the
reason; damaged files fail with their name; .bmp files are found by the CLI.
(tests/unit/test_codecs.c compares the decodes with Pillow's goldens.)"""
import pytest

import ferry
from ferrylib import ROOT
from format_checks import cli_hashes_a_folder, compatible_hashes_are_pillows, decode_is_pillows

pytest.importorskip("PIL", reason="Pillow is the reference for BMP pixels")

FIX = ROOT / "tests" / "fixtures" / "codecs"
EXACT = ["rgb24.bmp", "palette8.bmp", "palette16.bmp", "mono1.bmp", "gray8.bmp", "rgba32.bmp"]


@pytest.mark.parametrize("name", EXACT)
def test_decode_is_pillows(name):
    decode_is_pillows(FIX / name, "BMP")


@pytest.mark.parametrize("name", EXACT)
def test_compatible_hashes_are_imagehashs(name):
    compatible_hashes_are_pillows(FIX / name)


def test_run_length_and_damaged_bmp(tmp_path):
    data = bytearray((FIX / "palette8.bmp").read_bytes())
    data[30:34] = (1).to_bytes(4, "little")  # BI_RLE8
    rle = tmp_path / "rle.bmp"
    rle.write_bytes(bytes(data))
    with pytest.raises(ferry.UnsupportedError) as e:
        ferry.decode(rle)
    assert "rle.bmp" in str(e.value) and "run-length" in str(e.value)
    cut = tmp_path / "cut.bmp"
    cut.write_bytes((FIX / "rgb24.bmp").read_bytes()[:40])
    with pytest.raises(ferry.Error) as e:
        ferry.decode(cut)
    assert "cut.bmp" in str(e.value) and "BMP" in str(e.value)
    with pytest.raises(ferry.Error) as e:
        ferry.decode(FIX / "rgb24.bmp", max_pixels=100)
    assert "rgb24.bmp" in str(e.value)


def test_cli_hashes_a_folder_of_bmps(tmp_path):
    cli_hashes_a_folder(tmp_path, [FIX / n for n in EXACT[:3]], ".bmp")
