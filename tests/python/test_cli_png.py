"""The CLI's PNGs of batches (ferry load --save-grid, ferry video
--save-frames) undo layout, dtype and normalisation in one place
(tools/cli_image.c): every form of the same batch gives the same picture."""
import subprocess

import pytest

from ferrylib import FERRY_BIN, ROOT

np = pytest.importorskip("numpy", reason="numpy not importable: PNG comparison skipped")
Image = pytest.importorskip("PIL.Image", reason="Pillow not importable: PNG comparison skipped")

SAMPLE = ROOT / "data" / "sample"


def grid(tmp_path, name, *args):
    out = tmp_path / f"{name}.png"
    r = subprocess.run([FERRY_BIN, "load", str(SAMPLE), "--size", "48", "--batch", "16",
                        "--epochs", "1", "--no-shuffle", "--save-grid", str(out), *args],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 3), r.stderr
    return np.asarray(Image.open(out).convert("RGB"), dtype=np.int16)


def test_grid_is_the_same_picture_in_every_form(tmp_path):
    if not SAMPLE.is_dir():
        pytest.skip(f"{SAMPLE} absent: the bundled sample is needed")
    ref = grid(tmp_path, "u8")
    assert ref.std() > 10  # a picture, not a blank sheet
    for name, args in [("hwc", ["--layout", "hwc"]),
                       ("f32", ["--dtype", "f32"]),
                       ("f16n", ["--dtype", "f16", "--normalize"]),
                       ("f32n", ["--dtype", "f32", "--normalize", "--mean", "0.2,0.3,0.4",
                                 "--std", "0.5,0.6,0.7"])]:
        got = grid(tmp_path, name, *args)
        assert got.shape == ref.shape, name
        assert np.abs(got - ref).max() <= 1, name
