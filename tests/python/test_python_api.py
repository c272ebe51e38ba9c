"""Python as Python users expect (issue 53, item 5): "~" expanded and a
missing path a FileNotFoundError at every entry point that takes paths;
find_duplicates' defaults those of `ferry dupes`; size=None and dtype=None
the defaults; a yes/no keyword refuses a string; an unknown keyword names
the nearest; the C library's notices are ferry.FerryWarning;
load_tensor(device="cuda") without torch says what to install."""
import io
import shutil
import sys
import tarfile
import warnings

import numpy as np
import pytest

import ferry


@pytest.fixture
def home(tmp_path, monkeypatch, sample):
    """$HOME with a folder of images: pics/ (a class of the sample, and a
    copy of one of its files)."""
    pics = tmp_path / "pics"
    shutil.copytree(sample / "class0", pics / "class0")
    first = sorted((pics / "class0").iterdir())[0]
    shutil.copy(first, pics / "class0" / ("copy_" + first.name))
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_tilde_is_expanded(home):
    groups = ferry.find_duplicates("~/pics")
    assert groups and all(str(home) in p for g in groups for p in g)
    one = sorted((home / "pics" / "class0").iterdir())[0]
    assert ferry.hash(f"~/pics/class0/{one.name}") == ferry.hash(one)
    loader = ferry.Loader("~/pics", 4, 16, output="numpy")
    assert loader.num_samples == len(list((home / "pics" / "class0").iterdir()))
    loader.close()
    stats = ferry.index_update("~/c.fidx", "~/pics")
    assert (home / "c.fidx").exists() and stats["errors"] == []


def test_missing_paths_raise_file_not_found(home):
    missing = "~/no-such-folder"
    calls = [lambda: ferry.find_duplicates(missing),
             lambda: ferry.find_duplicates(home / "pics", reference=[missing]),
             lambda: ferry.hash(missing + "/a.jpg"),
             lambda: ferry.Loader(missing, 4, 16),
             lambda: ferry.index_update(home / "c.fidx", missing),
             lambda: ferry.VideoReader(missing + "/clip.mp4")]
    for call in calls:
        with pytest.raises(FileNotFoundError) as e:
            call()
        assert str(home / "no-such-folder") in str(e.value)
        assert isinstance(e.value, ferry.ReadError)  # as the C library's read errors


def test_find_duplicates_defaults_are_the_commands(home):
    import inspect
    params = inspect.signature(ferry.find_duplicates).parameters
    assert params["hash_size"].default == 16 and params["threshold"].default is None
    # threshold=None is `ferry dupes`' default for the kind and size: 72 of 256 bits for phash
    pics = home / "pics"
    assert ferry.find_duplicates(pics) == ferry.find_duplicates(pics, "phash", 72, hash_size=16)


def test_none_means_the_default(sample):
    loader = ferry.Loader(sample, 4, None, dtype=None, output="numpy", shuffle=False)
    images, _ = next(iter(loader))
    assert images.shape == (4, 3, 224, 224) and images.dtype == np.uint8
    loader.close()


def test_yes_no_keywords_refuse_strings(sample):
    for value in ("no", "False", "0"):
        with pytest.raises(TypeError, match="shuffle= takes True or False"):
            ferry.Loader(sample, 4, 16, shuffle=value)


def test_unknown_keyword_suggests_the_nearest(sample):
    with pytest.raises(TypeError, match="did you mean 'batch_size'"):
        ferry.Loader(sample, btach_size=4)
    with pytest.raises(TypeError, match="did you mean 'drop_last'"):
        ferry.Loader(sample, 4, 16, drop_lst=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'zzzz'$"):
        ferry.Loader(sample, 4, 16, zzzz=1)


def _shards_with_a_sample_without_image(tmp_path, sample):
    path = tmp_path / "s-000.tar"
    jpg = sorted((sample / "class0").glob("*.jpg"))[0].read_bytes()
    with tarfile.open(path, "w") as tar:
        for name, data in (("a.jpg", jpg), ("a.cls", b"0"), ("b.cls", b"1"),
                           ("c.jpg", jpg), ("c.cls", b"1")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_notices_are_ferry_warnings(tmp_path, sample):
    assert issubclass(ferry.FerryWarning, UserWarning)
    shards = _shards_with_a_sample_without_image(tmp_path, sample)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = ferry.Loader(str(shards), 2, 16, output="numpy")
        loader.close()
    notices = [w for w in caught if issubclass(w.category, ferry.FerryWarning)]
    assert any("without an image" in str(w.message) for w in notices), \
        [str(w.message) for w in caught]
    assert all(w.filename == __file__ for w in notices)  # the user's line
    with warnings.catch_warnings():
        warnings.simplefilter("error", ferry.FerryWarning)
        with pytest.raises(ferry.FerryWarning, match="without an image"):
            ferry.Loader(str(shards), 2, 16, output="numpy")


def test_load_tensor_cuda_without_torch_says_what_to_install(sample, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch: ImportError
    with pytest.raises(ImportError, match="pip install torch"):
        ferry.load_tensor(sample, 16, device="cuda")
