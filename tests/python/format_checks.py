"""Checks the tests of each image format share (test_tiff.py, test_gif.py,
test_bmp.py): decodes equal Pillow's, compatible-mode hashes of a file
equal those of Pillow's decode of it, and
`ferry hash` finds and hashes a folder of such files without a word about
exactness."""
import subprocess
import warnings

from ferrylib import FERRY_BIN


def decode_is_pillows(path, fmt):
    """ferry's RGB and grey decodes of `path` are Pillow's convert("RGB")
    and convert("L"), and the probe names the format."""
    import numpy as np
    import ferry
    from PIL import Image
    with Image.open(path) as im:
        want = np.asarray(im.convert("RGB"))
        gray = np.asarray(im.convert("L"))
    assert np.array_equal(ferry.decode(path), want), path.name
    assert np.array_equal(ferry.decode(path, channels=1)[..., 0], gray), path.name
    assert ferry.probe(path)["format"] == fmt


def compatible_hashes_are_pillows(path):
    """ferry's decode of `path` against Pillow's, through the hashes: every
    kind of ferry.imagehash on the path (ferry decodes) and on the PIL image
    (Pillow decodes); no inexactness warning from ferry.hash."""
    import ferry
    from ferry import imagehash as ih
    from PIL import Image
    with Image.open(path) as im:
        im.load()
        for fn in (ih.average_hash, ih.dhash, ih.phash, ih.whash):
            assert fn(path) == fn(im), (path.name, fn.__name__)
        assert ih.colorhash(path) == ih.colorhash(im.convert("RGB")), path.name
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ferry.hash(str(path), "phash", mode="compatible")


def cli_hashes_a_folder(folder, files, suffix):
    """`ferry hash FOLDER --mode compatible` over `files` copied there with
    `suffix`: one row each, no word about exactness."""
    for f in files:
        (folder / (f.stem + suffix)).write_bytes(f.read_bytes())
    r = subprocess.run([FERRY_BIN, "hash", str(folder), "--mode", "compatible"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = r.stdout.strip().splitlines()
    assert len(rows) == len(files) + 1 and all(suffix in x for x in rows[1:]), r.stdout
    assert "bit-exact" not in r.stderr
