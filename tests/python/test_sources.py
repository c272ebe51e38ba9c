"""The forms a source takes from Python beside a folder or a list file: a
sequence of paths (with labels), images as bytes for decode/probe; and
DataLoader's keywords answered with ferry's equivalent."""
import io

import numpy as np
import pytest

import ferry


def sample_files(sample):
    return sorted(str(p) for p in sample.rglob("p*.jpg"))[:12]


def test_sequence_of_paths_equals_a_list_file(sample, tmp_path):
    files = sample_files(sample)
    labels = [i % 3 for i in range(len(files))]
    listfile = tmp_path / "list.txt"
    listfile.write_text("".join(f"{f},{lab}\n" for f, lab in zip(files, labels)))
    kw = dict(batch_size=5, size=32, shuffle=False, output="numpy", workers=2)
    with ferry.Loader(str(listfile), **kw) as a:
        want = [(x.copy(), y.copy()) for x, y in a]
    for src, extra in (((files), dict(labels=labels)),
                       (list(zip(files, labels)), {}),
                       (tuple(__import__("pathlib").Path(f) for f in files), dict(labels=labels))):
        with ferry.Loader(src, **kw, **extra) as b:
            got = [(x.copy(), y.copy()) for x, y in b]
            assert b.source_size == len(files)
            assert b.path(0) == files[0]
        assert len(got) == len(want)
        for (xa, ya), (xb, yb) in zip(want, got):
            np.testing.assert_array_equal(xa, xb)
            np.testing.assert_array_equal(ya, yb)


def test_sequence_without_labels_is_unlabelled(sample):
    files = sample_files(sample)
    with ferry.Loader(files, batch_size=20, size=16, shuffle=False, output="numpy") as L:
        _, y = next(iter(L))
        assert list(y) == [-1] * len(files)


def test_sequence_errors(sample):
    files = sample_files(sample)
    with pytest.raises(ferry.InvalidArgument, match="3 labels for 12 paths"):
        ferry.Loader(files, labels=[0, 1, 2], size=16)
    with pytest.raises(TypeError, match=r"source\[1\] must be a path, not int"):
        ferry.Loader([files[0], 7], size=16)
    with pytest.raises(ferry.InvalidArgument, match="label -5"):
        ferry.Loader(files, labels=[-5] * len(files), size=16)
    with pytest.raises(ferry.EmptySourceError, match="no paths given"):
        ferry.Loader([], size=16)
    with pytest.raises(TypeError, match="labels= goes with a sequence"):
        ferry.Loader(str(sample), labels=[1], size=16)
    with pytest.raises(TypeError, match="source must be a path"):
        ferry.Loader(42, size=16)


def test_a_missing_file_in_a_sequence_is_skipped(sample, tmp_path):
    files = sample_files(sample)[:3] + [str(tmp_path / "gone.jpg")]
    with ferry.Loader(files, batch_size=8, size=16, shuffle=False, output="numpy") as L:
        with pytest.warns(ferry.SkippedFileWarning, match="gone.jpg"):
            x, _ = next(iter(L))
    assert x.shape[0] == 3


def test_decode_bytes_buffers_and_files(sample):
    path = sample_files(sample)[0]
    want = ferry.decode(path)
    data = open(path, "rb").read()
    for src in (data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8),
                io.BytesIO(data), open(path, "rb")):
        np.testing.assert_array_equal(ferry.decode(src), want)
    assert ferry.probe(data)["width"] == want.shape[1]
    with pytest.raises(ferry.UnsupportedError, match="<bytes>"):
        ferry.decode(b"not an image at all")
    with pytest.raises(ferry.TooLargeError, match="over the 100-byte limit"):
        ferry.decode(data, max_bytes=100)
    with pytest.raises(TypeError, match="binary mode"):
        ferry.decode(io.StringIO("text"))
    with pytest.raises(TypeError, match="not int"):
        ferry.decode(5)


@pytest.mark.parametrize("name,hint", [("num_workers", "workers="), ("transform", "size=, crop="),
                                       ("collate_fn", "already stacked"),
                                       ("sampler", "set_epoch"), ("prefetch_factor", "prefetch=")])
def test_dataloader_keywords_name_the_equivalent(sample, name, hint):
    with pytest.raises(TypeError, match="torch DataLoader keyword") as e:
        ferry.Loader(str(sample), size=16, **{name: 1})
    assert hint in str(e.value)
