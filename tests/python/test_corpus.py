"""ferry against Pillow on the shared corpus: identical pixels, upright
EXIF orientations, clear errors for every bad file, the bomb refused before
allocating. Skipped, saying so, when ../shared/corpus is absent."""
import csv
import resource
import subprocess

import numpy as np
import pytest
from PIL import Image, ImageOps

from ferrylib import CORPUS, FERRY_BIN, FerryError, decode

needs_corpus = pytest.mark.skipif(not (CORPUS / "photos").is_dir(),
                                  reason=f"shared corpus not found at {CORPUS}")


def photos():
    if not (CORPUS / "photos").is_dir():
        return []
    return sorted(p.name for p in (CORPUS / "photos").glob("*.jpg"))


def pillow_rgb(path, transpose=True):
    im = Image.open(path)
    if transpose:
        im = ImageOps.exif_transpose(im)
    return np.asarray(im.convert("RGB"))


@needs_corpus
def test_every_photo_identical_to_pillow():
    names = photos()
    assert len(names) > 400
    mismatched = []
    for name in names:
        path = CORPUS / "photos" / name
        ours = decode(path)
        ref = pillow_rgb(path)
        if ours.shape != ref.shape or np.abs(ours.astype(int) - ref).max() != 0:
            diff = None if ours.shape != ref.shape else int(np.abs(ours.astype(int) - ref).max())
            mismatched.append((name, ours.shape, ref.shape, diff))
    assert not mismatched, f"{len(mismatched)} differ from Pillow, e.g. {mismatched[:5]}"


@needs_corpus
def test_gray_output_matches_pillow_convert_L():
    for name in photos()[:40]:
        path = CORPUS / "photos" / name
        ours = decode(path, channels=1)[:, :, 0]
        ref = np.asarray(ImageOps.exif_transpose(Image.open(path)).convert("L"))
        assert ours.shape == ref.shape and np.array_equal(ours, ref), name


UPRIGHT = {
    1: lambda a: a,
    2: lambda a: a[:, ::-1],
    3: lambda a: a[::-1, ::-1],
    4: lambda a: a[::-1],
    5: lambda a: a.transpose(1, 0, 2),
    6: lambda a: np.rot90(a, -1),
    7: lambda a: np.rot90(a.transpose(1, 0, 2), 2),
    8: lambda a: np.rot90(a, 1),
}


@needs_corpus
def test_exif_orientations_come_out_upright():
    for o in range(1, 9):
        path = CORPUS / "photos" / f"exif_orient{o}.jpg"
        with Image.open(path) as im:
            assert im.getexif().get(0x0112, 1) == o
        up = decode(path)
        raw = decode(path, ignore_orientation=True)
        # stored pixels are Pillow's; upright is the EXIF transform of them,
        # and what Pillow's exif_transpose gives
        assert np.array_equal(raw, pillow_rgb(path, transpose=False)), o
        assert np.array_equal(up, UPRIGHT[o](raw)), o
        assert np.array_equal(up, pillow_rgb(path)), o


@needs_corpus
def test_formats_match_pillow():
    for name in ["gray.png", "rgb.png", "rgba.png", "palette.png", "gray16.png",
                 "lossless.webp", "lossy.webp", "png_named.jpg", "jpeg_named.png"]:
        path = CORPUS / "formats" / name
        ours = decode(path)
        if name == "gray16.png":
            # Pillow's convert() clips 16-bit values at 255; ferry scales
            # them to 8 bits with rounding, as a training pipeline wants.
            v = np.asarray(Image.open(path)).astype(np.int64)
            assert v.max() > 255
            ref = np.repeat(((v * 255 + 32895) >> 16).astype(np.uint8)[:, :, None], 3, 2)
        else:
            ref = np.asarray(Image.open(path).convert("RGB"))
        assert ours.shape == ref.shape, name
        assert np.array_equal(ours, ref), name


@needs_corpus
def test_bmp_is_pillows():
    """corpus/formats/image.bmp (read since 2026-11-25, stb_image) as Pillow
    decodes it."""
    path = CORPUS / "formats" / "image.bmp"
    ref = np.asarray(Image.open(path).convert("RGB"))
    assert np.array_equal(decode(path), ref)


@needs_corpus
def test_every_bad_file_gives_a_clear_error():
    bad = sorted((CORPUS / "bad").iterdir())
    assert len(bad) >= 10
    for path in bad:
        with pytest.raises(FerryError) as e:
            decode(path)
        msg = str(e.value)
        assert path.name in msg and ":" in msg, msg
        # and the command line says the same, exit code 1, in bounded time
        r = subprocess.run([FERRY_BIN, "info", str(path)], capture_output=True, text=True,
                           timeout=30)
        r2 = subprocess.run([FERRY_BIN, "decode", str(path), "-o", "/dev/null"],
                            capture_output=True, text=True, timeout=30)
        assert r2.returncode == 1 and path.name in r2.stderr, (path.name, r2.stderr)


def _limit_memory():
    # 512 MiB of address space: a 65500x65500 RGB buffer (12 GiB) cannot even
    # be attempted, so success means the limit was checked before allocating.
    resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))


@needs_corpus
def test_bomb_refused_before_allocation():
    bomb = CORPUS / "bad" / "bomb_65500x65500.jpg"
    r = subprocess.run([FERRY_BIN, "decode", str(bomb), "-o", "/tmp/ferry_bomb.png"],
                       capture_output=True, text=True, timeout=30, preexec_fn=_limit_memory)
    assert r.returncode == 1
    assert "65500x65500" in r.stderr and "limit" in r.stderr, r.stderr
    with pytest.raises(FerryError) as e:
        decode(bomb)
    assert e.value.status == -5  # FERRY_ETOO_LARGE


@needs_corpus
def test_manifest_features_reported_by_info():
    rows = list(csv.DictReader(open(CORPUS / "photos" / "MANIFEST.csv")))
    want = {"progressive": "progressive", "arithmetic coding": "arithmetic coding",
            "grayscale": "Gray", "4:2:2": "4:2:2", "4:4:4": "4:4:4"}
    checked = 0
    for row in rows:
        key = row["what"]
        if key not in want:
            continue
        r = subprocess.run([FERRY_BIN, "info", str(CORPUS / "photos" / row["file"])],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and want[key] in r.stdout, (row, r.stdout, r.stderr)
        checked += 1
    assert checked > 50
