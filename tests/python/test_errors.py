"""C errors become ferry.Error subclasses carrying the C message, which
names the file and the reason."""
import os
import time
import warnings

import pytest

import ferry
from ferry import _ferry


def test_hierarchy():
    pairs = [(ferry.ReadError, OSError, _ferry.EIO), (ferry.CorruptError, None, _ferry.ECORRUPT),
             (ferry.UnsupportedError, None, _ferry.EUNSUPPORTED),
             (ferry.TooLargeError, None, _ferry.ETOO_LARGE),
             (ferry.InvalidArgument, ValueError, _ferry.EINVAL),
             (ferry.OutOfMemoryError, MemoryError, _ferry.ENOMEM),
             (ferry.EmptySourceError, None, _ferry.EEMPTY),
             (ferry.StateError, RuntimeError, _ferry.ESTATE),
             (ferry.InternalError, None, _ferry.EINTERNAL),
             (ferry.StallError, TimeoutError, _ferry.ETIMEOUT)]
    for cls, builtin, status in pairs:
        assert issubclass(cls, ferry.Error) and issubclass(cls, Exception)
        if builtin:
            assert issubclass(cls, builtin)
        assert cls.status == status and cls.reason == _ferry.strerror(status)
        assert _ferry.error_class(status) is cls
        assert cls.__module__ == "ferry"
    assert ferry.Error.status is None


def test_missing_source(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(ferry.ReadError) as e:
        ferry.Loader(missing, 4, 16)
    assert str(missing) in str(e.value) and e.value.status == _ferry.EIO
    assert isinstance(e.value, OSError)


def test_empty_source(tmp_path):
    (tmp_path / "a").mkdir()
    with pytest.raises(ferry.Error) as e:
        ferry.Loader(tmp_path, 4, 16)
    assert str(tmp_path) in str(e.value)


def test_bad_list_file_line(tmp_path, sample):
    lst = tmp_path / "list.txt"
    lst.write_text(f"{sample}/class0/p0000.jpg,0\n{sample}/class0/p0004.jpg,notanumber\n")
    with pytest.raises(ferry.Error) as e:
        ferry.Loader(lst, 4, 16)
    assert "list.txt" in str(e.value)


def test_device_as_list_file_refused_at_once():
    """/dev/zero as a source: refused before a byte is read (it used to grow
    until the kernel killed the process)."""
    with pytest.raises(ferry.InvalidArgument, match="a character device, not a folder or a list file"):
        ferry.Loader("/dev/zero", 4, 16)


@pytest.mark.parametrize("name,cls,words", [
    ("rle8.bmp", ferry.UnsupportedError, "run-length"),
    ("bomb_65500x65500.png", ferry.TooLargeError, "bomb_65500x65500.png"),
])
def test_decode_errors(fixtures, name, cls, words):
    with pytest.raises(cls) as e:
        ferry.decode(fixtures / name)
    assert words in str(e.value) and name in str(e.value)


def test_corrupt_file(sample):
    path = sample / "class3" / "truncated.jpg"
    with pytest.raises(ferry.CorruptError, match="truncated.jpg: truncated JPEG data") as e:
        ferry.decode(path)
    assert e.value.status == _ferry.ECORRUPT and e.value.reason == "corrupt or truncated data"


def test_unreadable_file(tmp_path):
    with pytest.raises(ferry.ReadError, match="missing.jpg"):
        ferry.decode(tmp_path / "missing.jpg")


def test_limits(sample):
    with pytest.raises(ferry.TooLargeError, match="p0000.jpg"):
        ferry.decode(sample / "class0" / "p0000.jpg", max_pixels=1000)


def test_on_error_fail_raises_during_iteration(sample):
    loader = ferry.Loader(sample, 8, 16, output="numpy", workers=2, on_error="fail",
                          shuffle=False)
    with pytest.raises(ferry.CorruptError, match="truncated.jpg: truncated JPEG data"):
        for _ in loader:
            pass
    # a new epoch starts clean, and fails again at the same file
    with pytest.raises(ferry.CorruptError):
        for _ in loader:
            pass


def test_on_error_skip_warns_once(sample):
    loader = ferry.Loader(sample, 8, 16, output="numpy", workers=2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for epoch in range(3):
            n = sum(len(y) for _, y in loader)
            assert n == 48
    skipped = [x for x in w if issubclass(x.category, ferry.SkippedFileWarning)]
    assert len(skipped) == 1
    assert "ferry: skipped" in str(skipped[0].message)
    assert "truncated.jpg: truncated JPEG data" in str(skipped[0].message)
    assert [p for p, _ in loader.skipped] == [str(sample / "class3" / "truncated.jpg")]


def test_bad_types():
    with pytest.raises(TypeError):
        _ferry.Loader(123)
    with pytest.raises(TypeError):
        _ferry.Loader("x", nonsense=1)
    with pytest.raises(ferry.InvalidArgument, match="seed"):
        _ferry.Loader("x", seed=-1)


def test_limits_and_exact_decode(sample, tmp_path):
    # the batch ring is checked against max_batch_bytes before anything is allocated
    with pytest.raises(ferry.TooLargeError, match="max_batch_bytes"):
        ferry.Loader(sample, batch_size=64, size=224, max_batch_bytes=1 << 20, output="numpy")
    with pytest.raises((ValueError, OverflowError)):
        ferry.Loader(sample, batch_size=8, size=32, max_batch_bytes=-1, output="numpy")
    # a FIFO nobody writes: refused at once as not a regular file, the run goes on
    fifo = tmp_path / "hung.jpg"
    os.mkfifo(fifo)
    lst = tmp_path / "list.txt"
    lst.write_text(f"{fifo},0\n{sample / 'class0' / 'p0000.jpg'},1\n")
    loader = ferry.Loader(str(lst), batch_size=2, size=16, shuffle=False, output="numpy")
    t0 = time.monotonic()
    with pytest.warns(UserWarning, match="a FIFO, not a regular file"):  # reported once
        got = [x for x, _ in loader]
    assert time.monotonic() - t0 < 10
    assert sum(len(x) for x in got) == 1
    assert loader.skipped and "a FIFO, not a regular file" in loader.skipped[0][1], loader.skipped
    # exact_decode: the same shapes, values close to the default path's (which
    # DCT-scales these small noisy fixtures: mean difference about 4 levels); the
    # whole image, as an exact centre crop also moves the window to torchvision's
    # integer geometry (test_exact_decode.py)
    a = next(iter(ferry.Loader(sample, batch_size=4, size=64, shuffle=False, output="numpy",
                               crop="none")))[0]
    b = next(iter(ferry.Loader(sample, batch_size=4, size=64, shuffle=False, output="numpy",
                               crop="none", exact_decode=True)))[0]
    assert a.shape == b.shape and abs(a.astype(int) - b.astype(int)).mean() < 6.0


@pytest.mark.parametrize("kw,words", [
    (dict(mean=(float("nan"),) * 3, std=(0.2,) * 3), "mean must be finite"),
    (dict(mean=(0.5,) * 3, std=(1e-30,) * 3), "std finite and >= 1e-6"),
    (dict(mean=(0.5,) * 3, std=(float("inf"),) * 3), "std"),
    (dict(flip=float("nan")), "flip probability"),
    (dict(crop="random", ratio=(float("inf"), float("inf"))), "ratio"),
])
def test_non_finite_options_refused(sample, kw, words):
    """Options that would make every value NaN or inf (or a random crop of
    infinite ratio) are refused where the C library checks options."""
    with pytest.raises(ferry.InvalidArgument, match=words):
        ferry.Loader(sample, 4, 16, **kw)


def _scan_bomb(side, repeats):
    """A progressive JPEG of a flat grey image whose first AC scan, rewritten
    to Ah = Al = 0 (legal to repeat: no progression warning), is repeated:
    each repeat makes the decoder go over the whole image again."""
    import io
    import struct
    from PIL import Image
    b = io.BytesIO()
    Image.new("L", (side, side), 128).save(b, "JPEG", progressive=True, quality=90)
    d = b.getvalue()
    i, scans = 2, []
    while d[i + 1] != 0xD9:
        j = i + 2 + struct.unpack(">H", d[i + 2:i + 4])[0]
        if d[i + 1] == 0xDA:
            while not (d[j] == 0xFF and d[j + 1] != 0 and not 0xD0 <= d[j + 1] <= 0xD7):
                j += 1
            scans.append((i, j))
        i = j
    a, z = scans[1]  # the first AC scan: every AC coefficient of a flat image is 0
    scan = bytearray(d[a:z])
    scan[9] = 0x00
    return d[:a] + bytes(scan) * repeats + b"\xff\xd9"


def test_progressive_scan_bomb_refused(tmp_path):
    bomb = tmp_path / "bomb.jpg"
    bomb.write_bytes(_scan_bomb(256, 1500))
    with pytest.raises(ferry.TooLargeError, match="more than 1000 scans"):
        ferry.decode(bomb)
    ok = tmp_path / "many_scans.jpg"  # under the limit: decoded as before
    ok.write_bytes(_scan_bomb(64, 900))
    assert ferry.decode(ok).shape[:2] == (64, 64)


def test_lossless_jpeg_is_unsupported_not_corrupt(tmp_path, sample):
    """A JPEG process libjpeg-turbo 2 does not decode (lossless, SOF3) is
    reported as unsupported, not as damaged."""
    d = (sample / "class0" / "p0000.jpg").read_bytes()
    i = d.index(b"\xff\xc0")
    f = tmp_path / "sof3.jpg"
    f.write_bytes(d[:i] + b"\xff\xc3" + d[i + 2:])
    with pytest.raises(ferry.UnsupportedError, match="JPEG process ferry does not decode"):
        ferry.decode(f)
