"""ferry.imagehash, imagehash's API: its two ways of computing a hash agree
bit for bit (ferry's C library for sizes 8 and 16, Pillow + NumPy for the
rest), a file path gives what its PIL image gives, and the objects, hex
helpers and errors behave as imagehash's. imagehash's own test suite runs in
test_imagehash_suite.py."""
import glob
import warnings

import numpy
import pytest

PIL = pytest.importorskip("PIL", reason="ferry.imagehash takes PIL images (Pillow)")
from PIL import Image  # noqa: E402

from ferry import imagehash as ih  # noqa: E402
import ferry.imagehash as impl  # noqa: E402
from ferrylib import CORPUS, ROOT  # noqa: E402


def _images():
    files = sorted(glob.glob(str(ROOT / "data" / "sample" / "*" / "*")))[:16]
    photos = sorted(glob.glob(str(CORPUS / "photos" / "*")))[:8]
    if not photos:
        print(f"SKIPPED part: {CORPUS}/photos absent: data/sample only")
    out = []
    for f in files + photos:
        try:
            im = Image.open(f)
            im.load()
        except Exception:  # the sample's deliberately bad file
            continue
        out.append((f, im))
    assert len(out) >= 10
    return out


IMAGES = _images()


def _gray(im, w, h):
    return impl._gray(im, w, h)


@pytest.mark.parametrize("size", [8, 16])
def test_c_library_equals_numpy_path(size):
    """Sizes 8 and 16 go to the C library; the NumPy path (what every other
    size takes) gives the same bits on the same images."""
    n = 0
    for name, im in IMAGES:
        p = _gray(im, size, size)
        assert ih.average_hash(im, size) == ih.ImageHash(p > numpy.mean(p)), name
        p = _gray(im, size + 1, size)
        assert ih.dhash(im, size) == ih.ImageHash(p[:, 1:] > p[:, :-1]), name
        p = _gray(im, size, size + 1)
        assert ih.dhash_vertical(im, size) == ih.ImageHash(p[1:, :] > p[:-1, :]), name
        scale = max(2 ** int(numpy.log2(min(im.size))), size)
        # an explicit image_scale takes the NumPy Haar transforms
        assert ih.whash(im, size) == ih.whash(im, size, image_scale=scale), name
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            p = _gray(im, 4 * size, 4 * size)
            low = impl._dct(impl._dct(p, 0), 1)[:size, :size]
        assert ih.phash(im, size) == ih.ImageHash(low > numpy.median(low)), name
        n += 5
    print(f"{n} hashes of {len(IMAGES)} images: the C library's equal the NumPy path's")


def test_colorhash_c_equals_pillow_hsv():
    """An RGB image's colorhash is computed in C; other modes through
    Pillow's HSV: the same bits for the same picture."""
    for name, im in IMAGES:
        rgb = im.convert("RGB")
        for bits in (2, 3, 4):
            assert ih.colorhash(rgb, bits) == ih.colorhash(rgb.convert("RGBA"), bits), name
            assert ih.colorhash(rgb, bits).hash.shape == (14, bits)


def test_path_equals_pil_image():
    for name, im in IMAGES[:8]:
        if im.mode not in ("RGB", "L"):
            continue
        for fn in (ih.average_hash, ih.dhash, ih.phash, ih.whash, ih.dhash_vertical):
            assert fn(name) == fn(im), (name, fn.__name__)
        if im.mode == "RGB":
            assert ih.colorhash(name) == ih.colorhash(im), name


def test_other_sizes_and_hex_round_trip():
    im = IMAGES[0][1]
    for size in (2, 3, 5, 12, 20):
        for fn in (ih.average_hash, ih.dhash, ih.dhash_vertical):
            h = fn(im, size)
            assert h.hash.shape == (size, size)
            assert ih.hex_to_hash(str(h)) == h
    for size in (2, 4, 32):
        assert ih.whash(im, size).hash.shape == (size, size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert ih.phash(im, 6).hash.shape == (6, 6)
        assert ih.phash_simple(im).hash.shape == (8, 8)
    c = ih.colorhash(im.convert("RGB"), 3)
    assert ih.hex_to_flathash(str(c), 3 * 14) == c
    assert ih.old_hex_to_hash("ffeb89818193ffff").hash[1].tolist() == [
        True, True, False, True, False, True, True, True]


def test_hash_objects():
    a = ih.hex_to_hash("ffd7918181c9ffff")
    b = ih.hex_to_hash("ffd7918181c9fffe")
    assert a - b == 1 and a != b and a == ih.hex_to_hash(str(a)) and len(a) == 64
    assert {a: 1}[ih.hex_to_hash("ffd7918181c9ffff")] == 1
    assert (a == None) is False  # noqa: E711 (imagehash's answer)
    with pytest.raises(TypeError):
        a - None
    with pytest.raises(TypeError):
        a - ih.hex_to_hash("0" * 64)


def test_errors():
    im = IMAGES[0][1]
    for fn in (ih.average_hash, ih.dhash, ih.phash):
        for size in (-1, 0, 1):
            with pytest.raises(ValueError):
                fn(im, size)
    with pytest.raises(ValueError):
        ih.colorhash(im, 0)
    with pytest.raises(AssertionError, match="hash_size is not power of 2"):
        ih.whash(im, 12)
    with pytest.raises(AssertionError, match="image_scale is not power of 2"):
        ih.whash(im, image_scale=17)
    try:
        import pywt  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="PyWavelets"):
            ih.whash(im, mode="db4")


def test_crop_resistant_matches_a_crop():
    """A crop of about 10 % on each side still matches its original; an
    unrelated picture does not."""
    photos = [im for _, im in IMAGES if min(im.size) >= 200]
    if len(photos) < 2:
        pytest.skip("fewer than two images of 200 px or more")
    a, other = photos[0].convert("RGB"), photos[-1].convert("RGB")
    w, h = a.size
    crop = a.crop((w // 10, h // 10, w - w // 10, h - h // 10))
    ha, hc, ho = (ih.crop_resistant_hash(x) for x in (a, crop, other))
    assert ha.matches(hc), (ha, hc)
    assert ha - hc < ha - ho
    assert ha.best_match([ho, hc]) is hc
    assert ih.hex_to_multihash(str(ha)) == ha
    one = ih.crop_resistant_hash(a, limit_segments=1)
    assert len(one.segment_hashes) == 1
