"""GIF through giflib (src/codec/gif.c): the first image as Pillow gives it
(palette, grey, interlaced, transparent index ignored as convert("RGB")
does, the first frame of an animation), so compatible-mode hashes are
imagehash's; a first image smaller than the picture said to be inexact;
damaged files failing with their name; .gif files found by the CLI.
(tests/unit/test_codecs.c compares the decodes with Pillow's goldens.)"""
import pytest

import ferry
from ferrylib import ROOT
from format_checks import cli_hashes_a_folder, compatible_hashes_are_pillows, decode_is_pillows

PIL = pytest.importorskip("PIL", reason="Pillow is the reference for GIF pixels")
from PIL import Image  # noqa: E402

FIX = ROOT / "tests" / "fixtures" / "codecs"
EXACT = ["palette.gif", "interlaced.gif", "gray.gif", "transparent.gif", "two_frames.gif"]


@pytest.mark.parametrize("name", EXACT)
def test_decode_is_pillows(name):
    decode_is_pillows(FIX / name, "GIF")


@pytest.mark.parametrize("name", EXACT)
def test_compatible_hashes_are_imagehashs(name):
    compatible_hashes_are_pillows(FIX / name)


def _small_first_frame(path):
    """A GIF whose first image covers only part of its 20x10 picture."""
    pal = bytes([0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255])  # 4 colours
    data = b"GIF89a" + (20).to_bytes(2, "little") + (10).to_bytes(2, "little")
    data += bytes([0x81, 0, 0]) + pal  # global table of 4, background 0
    data += b"," + (5).to_bytes(2, "little") + (2).to_bytes(2, "little")
    data += (4).to_bytes(2, "little") + (3).to_bytes(2, "little") + b"\x00"
    im = Image.new("P", (4, 3), 1)
    im.putpalette(list(pal) + [0] * (768 - len(pal)))
    import io
    b = io.BytesIO()
    im.save(b, "GIF", optimize=False)
    raw = b.getvalue()
    # take Pillow's image data block (after its image descriptor) as ours
    at = raw.index(b",")
    block = raw[at + 10:]
    path.write_bytes(data + block)


def test_inexact_gif_is_said(tmp_path):
    p = tmp_path / "part.gif"
    _small_first_frame(p)
    px = ferry.decode(p)
    assert px.shape == (10, 20, 3)
    assert (px[3, 6] == [255, 0, 0]).all() and (px[0, 0] == [0, 0, 0]).all()
    with pytest.warns(RuntimeWarning, match="part.gif: not bit-exact with imagehash"):
        ferry.hash(str(p), "phash", mode="compatible")


def test_damaged_gif_names_the_file(tmp_path):
    data = (FIX / "palette.gif").read_bytes()
    cut = tmp_path / "cut.gif"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ferry.Error) as e:
        ferry.decode(cut)
    assert "cut.gif" in str(e.value) and "GIF" in str(e.value)
    empty = tmp_path / "noimage.gif"
    empty.write_bytes(data[:13 + 3 * 64] + b";")
    with pytest.raises(ferry.Error) as e:
        ferry.decode(empty)
    assert "noimage.gif" in str(e.value)


def test_cli_hashes_a_folder_of_gifs(tmp_path):
    cli_hashes_a_folder(tmp_path, [FIX / n for n in EXACT[:3]], ".gif")
