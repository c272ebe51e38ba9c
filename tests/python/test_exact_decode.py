"""exact_decode=True alone gives Pillow's pixels: with crop="none" the
loader's uint8 HWC samples equal
ImageOps.exif_transpose(Image.open(p)).convert("RGB").resize((W, H),
BILINEAR) exactly (max abs diff 0), for JPEGs of odd sizes, 4:2:0, 4:4:4,
4:2:2, progressive, EXIF-rotated, and a PNG; with crop="center" they equal
torchvision's eval transform (Resize(floor(size / ratio)) + CenterCrop(size))
on Pillow. The default (DCT scaling, fast
chroma upsampling, 14-bit passes) is close to it, not equal."""
import numpy as np
import pytest
from PIL import Image, ImageOps

import ferry

W, H = 224, 160
SPECS = [  # name, width, height, save keywords
    ("s420_odd.jpg", 641, 479, dict(subsampling=2)),
    ("s444.jpg", 1001, 777, dict(subsampling=0)),
    ("progressive.jpg", 1280, 853, dict(progressive=True)),
    ("s422_tall.jpg", 517, 1203, dict(subsampling=1)),
    ("rot6.jpg", 900, 601, dict()),
    ("photo.png", 777, 555, dict()),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("exact")
    rng = np.random.default_rng(1)
    out = []
    for name, w, h, kw in SPECS:
        y, x = np.mgrid[0:h, 0:w]
        a = np.stack([x * 255 // w, y * 255 // h, ((x + y) * 3) % 256], -1).astype(np.float64)
        a = np.clip(a + rng.normal(0, 20, a.shape), 0, 255).astype(np.uint8)
        if name.startswith("rot"):
            ex = Image.Exif()
            ex[0x0112] = 6
            kw = dict(kw, exif=ex)
        if name.endswith(".jpg"):
            kw = dict(kw, quality=90)
        Image.fromarray(a).save(d / name, **kw)
        out.append(d / name)
    return out


def pillow(path):
    with Image.open(path) as im:
        im = ImageOps.exif_transpose(im).convert("RGB")
        return np.asarray(im.resize((W, H), Image.BILINEAR)).astype(np.int16)


def samples(files, **kw):
    loader = ferry.Loader([str(f) for f in files], batch_size=len(files), size=(H, W),
                          crop="none", shuffle=False, output="numpy", layout="hwc", workers=1,
                          **kw)
    return next(iter(loader.batches(0))).images.astype(np.int16)


def test_exact_decode_alone_gives_pillows_pixels(files):
    got = samples(files, exact_decode=True)
    for f, img in zip(files, got):
        assert np.abs(img - pillow(f)).max() == 0, f.name


def test_default_is_close_to_pillow_not_equal(files):
    got = samples(files)
    psnr = []
    for f, img in zip(files, got):
        mse = ((img - pillow(f)).astype(np.float64) ** 2).mean()
        psnr.append(99.0 if mse == 0 else 10 * np.log10(255**2 / mse))
    assert min(psnr) > 20, psnr   # an approximation, not another picture
    assert min(psnr) < 99, psnr   # DCT scaling does change the JPEGs' pixels


def center_reference(path, size, ratio):
    """torchvision's Resize(floor(size / ratio)) + CenterCrop(size) on a PIL
    image, written out (torchvision is not a test dependency): the short
    side to the target, the long one truncated; the crop's corner rounded
    as Python's round()."""
    target = int(size / ratio + 1e-9)
    with Image.open(path) as im:
        im = ImageOps.exif_transpose(im).convert("RGB")
        w, h = im.size
        tw, th = (target, int(target * h / w)) if w <= h else (int(target * w / h), target)
        im = im.resize((tw, th), Image.BILINEAR)
        left, top = int(round((tw - size) / 2.0)), int(round((th - size) / 2.0))
        return np.asarray(im.crop((left, top, left + size, top + size))).astype(np.int16)


@pytest.mark.parametrize("ratio", [0.875, 0.9])
def test_exact_center_crop_is_torchvisions_eval_transform(files, ratio):
    loader = ferry.Loader([str(f) for f in files], batch_size=len(files), size=224, crop="center",
                          crop_ratio=ratio, exact_decode=True, shuffle=False, output="numpy",
                          layout="hwc", workers=1)
    got = next(iter(loader.batches(0))).images.astype(np.int16)
    for f, img in zip(files, got):
        d = np.abs(img - center_reference(f, 224, ratio))
        assert d.max() == 0, (f.name, ratio, int(d.max()))
