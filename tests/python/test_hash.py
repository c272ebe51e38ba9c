"""ferry.hash and ferry.find_duplicates over the C library's hashes and
Hamming search: imagehash's bits in compatible mode, groups of edited
copies found."""
import glob
import os
import shutil

import numpy as np
import pytest

import ferry
from ferry import _ferry
from hashlib_ferry import write_bmp16

KINDS = ["ahash", "dhash", "dhash_v", "phash", "whash", "colorhash"]


@pytest.fixture(scope="module")
def photos(sample):
    return sorted(p for p in glob.glob(str(sample / "*" / "*.jpg")) if "truncated" not in p)


def imagehash_of(path_or_image, kind):
    imagehash = pytest.importorskip("imagehash", reason="imagehash not installed: no reference")
    from PIL import Image
    im = path_or_image if isinstance(path_or_image, Image.Image) else Image.open(path_or_image)
    fn = {"ahash": imagehash.average_hash, "dhash": imagehash.dhash,
          "dhash_v": imagehash.dhash_vertical, "phash": imagehash.phash,
          "whash": imagehash.whash, "colorhash": imagehash.colorhash}[kind]
    return str(fn(im))


def test_compatible_mode_is_imagehash(photos):
    got = ferry.hash(photos[:12], "all", mode="compatible", workers=2)
    for path, hashes in zip(photos[:12], got):
        assert set(hashes) == set(KINDS)
        for kind in KINDS:
            assert hashes[kind] == imagehash_of(path, kind), (path, kind)


def test_pixels_are_imagehash(photos):
    from PIL import Image
    im = Image.open(photos[0]).convert("RGB")
    arr = np.asarray(im)
    assert ferry.hash(arr, "phash") == imagehash_of(Image.fromarray(arr), "phash")
    gray = np.asarray(im.convert("L"))
    assert ferry.hash(gray, "dhash") == imagehash_of(Image.fromarray(gray), "dhash")
    with pytest.raises(ferry.InvalidArgument, match="uint8"):
        ferry._Hashers(kinds=1).get().hash_pixels(np.zeros((4, 4), np.float32))


def test_single_path_bytes_and_kind_names(photos):
    p = photos[1]
    h = ferry.hash(p)
    assert isinstance(h, str) and len(h) == 16
    with open(p, "rb") as f:
        assert ferry.hash(f.read()) == h
    assert ferry.hash(p, "average_hash") == ferry.hash(p, "ahash")
    assert set(ferry.hash(p, ["phash", "whash"])) == {"phash", "whash"}
    assert len(ferry.hash(p, "phash", hash_size=16)) == 64
    with pytest.raises(ferry.InvalidArgument):
        ferry.hash(p, "nohash")


def test_errors_name_the_file(sample):
    bad = str(sample / "class3" / "truncated.jpg")
    with pytest.raises(ferry.CorruptError, match="truncated.jpg"):
        ferry.hash(bad, mode="compatible")
    good = str(sample / "class0" / "p0000.jpg")
    out = ferry.hash([good, bad, good], on_error="skip", workers=2)
    assert out[1] is None and out[0] == out[2] is not None
    with pytest.raises(ferry.Error, match="truncated.jpg"):
        ferry.hash([good, bad], mode="compatible")


def _gpu_reason(photo):
    """Why ferry cannot hash on GPU 0 here, or None when it can."""
    try:
        ferry.hash([photo], mode="compatible", device="cuda:0")
    except ferry.UnsupportedError as e:
        return str(e)
    return None


def test_path_lists_take_one_c_call(photos, sample):
    """A list of paths goes through ferry_hash_files: the same hashes as one
    file at a time, the order kept, errors in place."""
    one = [ferry.hash(p, "all") for p in photos[:10]]
    assert ferry.hash(photos[:10], "all", workers=3) == one
    assert ferry.hash([os.fspath(p) for p in photos[:3]], "phash", workers=1) == [
        o["phash"] for o in one[:3]]
    import pathlib
    assert ferry.hash([pathlib.Path(p) for p in photos[:2]], "dhash") == [
        o["dhash"] for o in one[:2]]
    assert ferry.hash([], "phash") == []
    seen = []
    assert ferry.hash(photos[:10], "phash", workers=2,
                      progress=lambda done, total: seen.append((done, total))) == [
        o["phash"] for o in one]
    assert seen and seen[-1] == (10, 10) and all(t == 10 for _, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    with pytest.raises(ferry.InvalidArgument, match="progress"):
        ferry.hash(photos[:2], progress=3)
    with pytest.raises(ferry.InvalidArgument, match="list of file paths"):
        ferry.hash(b"\xff\xd8", device="cuda")


def test_device_without_a_gpu(photos):
    why = _gpu_reason(photos[0])
    if why is None:
        pytest.skip("a GPU answers here: test_hash_on_the_gpu covers it")
    with pytest.raises(ferry.UnsupportedError, match="cuda:0"):
        ferry.hash(photos[:3], mode="compatible", device="cuda")
    with pytest.warns(RuntimeWarning, match="JPEG engine of cuda:0 is not used"):
        got = ferry.hash(photos[:6], "all", device="cuda:0")
    assert got == ferry.hash(photos[:6], "all")


def test_hash_on_the_gpu(photos):
    why = _gpu_reason(photos[0])
    if why is not None:
        pytest.skip(f"no GPU for ferry here: {why}")
    cpu = ferry.hash(photos, "all", mode="compatible")
    assert ferry.hash(photos, "all", mode="compatible", device="cuda") == cpu
    root = os.path.dirname(os.path.dirname(photos[0]))
    assert ferry.find_duplicates(root, mode="compatible", device="cuda") == \
        ferry.find_duplicates(root, mode="compatible")
    fast = ferry.hash(photos, "all", device="cuda")  # the JPEG engine beside the cores
    assert len(fast) == len(photos) and all(f is not None for f in fast)
    for f, c in zip(fast, cpu):
        for kind in KINDS:
            assert ferry.hash_distance(f[kind], c[kind]) <= 16, kind


def test_compatible_mode_says_where_it_is_not_imagehash(photos, tmp_path):
    """A 16-bit BMP is not bit-exact with imagehash (ferry widens 5-bit
    samples its own way): compatible mode says so, for a path, a list and bytes; an
    8-bit file, a 16-bit PNG (decoded as Pillow does) and fast mode say
    nothing."""
    import warnings
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    png16 = str(write_bmp16(tmp_path / "rle8.bmp"))
    with pytest.warns(RuntimeWarning,
                      match="rle8.bmp: not bit-exact with imagehash \\(a HEIF"):
        ferry.hash(png16, "phash", mode="compatible")
    with pytest.warns(RuntimeWarning, match=r"rle8.bmp \(and 1 more\): not bit-exact"):
        ferry.hash([png16, photos[0], png16], "phash", mode="compatible")
    with open(png16, "rb") as f:
        data = f.read()
    with pytest.warns(RuntimeWarning, match="<image>: not bit-exact"):
        ferry.hash(data, "phash", mode="compatible")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ferry.hash([photos[0], photos[1]], "phash", mode="compatible")
        ferry.hash(os.path.join(root, "tests", "fixtures", "codecs", "gray16.png"), "phash",
                   mode="compatible")
        ferry.hash(png16, "phash")  # fast mode promises no imagehash bits


def test_distance(photos):
    a, b = ferry.hash(photos[0]), ferry.hash(photos[1])
    assert ferry.hash_distance(a, a) == 0
    assert ferry.hash_distance(a, b) == bin(int(a, 16) ^ int(b, 16)).count("1")
    with pytest.raises(ferry.InvalidArgument):
        ferry.hash_distance(a, a + "0")


def test_find_duplicates_groups_edited_copies(photos, tmp_path):
    from PIL import Image
    for i, src in enumerate(photos[:4]):
        im = Image.open(src).convert("RGB")
        im.save(tmp_path / f"g{i}_orig.png")
        im.resize((im.width // 2, im.height // 2)).save(tmp_path / f"g{i}_half.jpg", quality=90)
        im.save(tmp_path / f"g{i}_q40.jpg", quality=40)
    for src in photos[4:8]:  # singletons
        Image.open(src).save(tmp_path / f"single_{os.path.basename(src)}")
    groups = ferry.find_duplicates(tmp_path, threshold=8, workers=2)
    names = [[os.path.basename(p) for p in g] for g in groups]
    assert len(names) == 4
    for i, g in enumerate(names):
        assert sorted(g) == sorted([f"g{i}_orig.png", f"g{i}_half.jpg", f"g{i}_q40.jpg"])
        # keeper: at one size a JPEG before a PNG (which the default takes for a
        # conversion of the photo); by resolution and file size, the PNG
        assert g[0] == f"g{i}_q40.jpg"
    by_size = ferry.find_duplicates(tmp_path, threshold=8, workers=2, keep="pixels,size")
    assert [os.path.basename(g[0]) for g in by_size] == [f"g{i}_orig.png" for i in range(4)]
    detailed = ferry.find_duplicates([tmp_path], threshold=8, details=True)
    assert detailed[0][0][3] == 0 and all(len(row) == 4 for row in detailed[0])
    assert ferry.find_duplicates(tmp_path / "g0_orig.png") == []
    # .jfif and .jpe are JPEG names too, as for the CLI's walks
    shutil.copy(tmp_path / "g0_q40.jpg", tmp_path / "g0_copy.jfif")
    shutil.copy(tmp_path / "g0_q40.jpg", tmp_path / "g0_copy.jpe")
    names = [sorted(os.path.basename(p) for p in g)
             for g in ferry.find_duplicates(tmp_path, threshold=8, workers=2)]
    assert "g0_copy.jfif" in names[0] and "g0_copy.jpe" in names[0]
    # dot files and dot folders are left out, as by the CLI's walks (io/walk.c)
    (tmp_path / ".thumbnails").mkdir()
    shutil.copy(tmp_path / "g0_q40.jpg", tmp_path / ".thumbnails" / "g0_thumb.jpg")
    shutil.copy(tmp_path / "g0_q40.jpg", tmp_path / "._g0_q40.jpg")
    names = [sorted(os.path.basename(p) for p in g)
             for g in ferry.find_duplicates(tmp_path, threshold=8, workers=2)]
    assert "g0_thumb.jpg" not in names[0] and "._g0_q40.jpg" not in names[0], names[0]


def _cli_groups(root, tmp_path, mode, hash_size, kind, threshold):
    """`ferry hash ROOT -o X.fidx && ferry dupes X.fidx` as find_duplicates'
    details: [[(path, width, height, distance to the keeper), ...], ...]."""
    import json
    import subprocess
    from ferrylib import FERRY_BIN
    cat = tmp_path / f"cli_{mode}_{hash_size}.fidx"
    # the kind and the signatures, as find_duplicates (robust=True) hashes
    r = subprocess.run([FERRY_BIN, "hash", str(root), "-o", str(cat), "--mode", mode,
                        "--hash-size", str(hash_size), "--hashes", kind + ",signature",
                        "--threads", "2", "-q"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode in (0, 3), r.stderr  # 3: some files failed, as meant
    r = subprocess.run([FERRY_BIN, "dupes", str(cat), "--hash", kind, "--threshold",
                        str(threshold), "--format", "json", "-q"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return [[(m["path"], m["width"], m["height"], m["distance"]) for m in g["members"]]
            for g in json.loads(r.stdout)["groups"]]


def _same_as_cli(root, tmp_path, mode="fast", hash_size=8, kind="phash", threshold=None):
    if threshold is None:
        threshold = 10 if hash_size == 8 else 72  # the CLI's default for pHash
    cli = _cli_groups(root, tmp_path, mode, hash_size, kind, threshold)
    py = ferry.find_duplicates(root, kind, threshold, mode=mode, hash_size=hash_size,
                               workers=2, details=True)
    assert [[tuple(m) for m in g] for g in py] == cli  # members, keepers, order, distances
    assert ferry.find_duplicates(root, kind, threshold, mode=mode, hash_size=hash_size,
                                 workers=2) == [[m[0] for m in g] for g in cli]
    return py


def test_find_duplicates_is_the_cli(photos, tmp_path):
    """find_duplicates and `ferry dupes` are one rule (ferry_dupes_find): the
    same groups, keepers and order on copies that tie in resolution (then
    the larger file, then the first path keeps), resized and recompressed
    copies, a subfolder and a broken file."""
    from PIL import Image
    root = (tmp_path / "set").resolve()
    (root / "sub").mkdir(parents=True)
    for i, src in enumerate(photos[:5]):
        im = Image.open(src).convert("RGB")
        im.save(root / f"p{i}_q95.jpg", quality=95)
        im.save(root / "sub" / f"p{i}_q40.jpg", quality=40)  # same size, smaller file
        im.resize((im.width // 2, im.height // 2)).save(root / f"p{i}_half.png")
        shutil.copy(root / f"p{i}_q95.jpg", root / "sub" / f"a_p{i}_copy.jpg")  # a tie
    for src in photos[5:9]:
        shutil.copy(src, root / f"single_{os.path.basename(src)}")
    (root / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a JPEG")
    groups = _same_as_cli(root, tmp_path)
    assert len(groups) >= 5
    for i in range(5):
        g = next(g for g in groups if any(f"p{i}_" in m[0] for m in g))
        # the tie of q95 and its copy: the first path keeps (bytewise: "p0_q95.jpg" < "sub/")
        assert g[0][0] == str(root / f"p{i}_q95.jpg")
        assert [m[0] for m in g[1:]] == sorted(m[0] for m in g[1:])  # the others in path order
        assert g[0][3] == 0
    _same_as_cli(root, tmp_path, hash_size=16)
    _same_as_cli(root, tmp_path, kind="dhash", threshold=12)


@pytest.mark.parametrize("mode", ["fast", "compatible"])
def test_find_duplicates_is_the_cli_on_the_corpus(tmp_path, mode):
    from ferrylib import CORPUS
    root = CORPUS / "dupes"
    if not root.is_dir():
        print(f"SKIPPED: shared corpus not found at {root}")
        pytest.skip(f"shared corpus not found at {root}")
    groups = _same_as_cli(root.resolve(), tmp_path, mode=mode, hash_size=16)
    assert len(groups) > 10
    _same_as_cli(root.resolve(), tmp_path, mode=mode, hash_size=8, threshold=10)


def test_find_groups_arguments(photos):
    files = photos[:3] + [photos[0]]
    items, _, _ = _ferry.hash_files(files, kinds=1 << _ferry.hash_kind_parse("phash"))
    with pytest.raises(ferry.InvalidArgument, match="already in the catalog"):
        _ferry.find_groups(files, items, "phash", 64)
    with pytest.raises(ferry.InvalidArgument, match="one item per path"):
        _ferry.find_groups(files, items[:2], "phash", 8)
    with pytest.raises(ferry.InvalidArgument, match="no dhash"):
        _ferry.find_groups(files[:3], items[:3], "dhash", 8)
    with pytest.raises(ferry.InvalidArgument):
        _ferry.find_groups(files[:3], items[:3], "nohash", 8)
    with pytest.raises(ferry.InvalidArgument, match="hash size"):
        _ferry.find_groups(files[:3], items[:3], "phash", 8, hash_size=7)
    # a path named twice counts once in find_duplicates
    assert ferry.find_duplicates([photos[0], photos[0]], threshold=64) == []

def test_hamming_primitives():
    codes = np.array([0b0000, 0b0001, 0b0111, 0xFFFF], dtype=np.uint64)
    pairs = np.asarray(_ferry.hamming_pairs(codes.tobytes(), 1, 2))
    assert pairs.tolist() == [[0, 1, 1], [1, 2, 2]]
    group_of, n = _ferry.group_pairs(4, pairs)
    assert n == 1 and np.asarray(group_of).tolist() == [0, 0, 0, 0xFFFFFFFF]
    with pytest.raises(ferry.InvalidArgument):
        _ferry.hamming_pairs(b"123", 1, 2)


def test_search_device(photos, tmp_path):
    """find_duplicates(search_device=...) and hamming_pairs(devices=...): the
    search on a CUDA GPU, or shared among several (device 0 listed twice:
    two threads on it), gives the CPU's pairs and groups; without a GPU the
    refusal names the device; bad lists are refused naming the bad part."""
    from ferry._dedup import _search_devices
    assert _search_devices(None) is None and _search_devices("cpu") is None
    assert _search_devices("cuda:0,1") == [0, 1] and _search_devices([0, 0]) == [0, 0]
    assert _search_devices("cuda:2") == [2] and _search_devices(3) == [3]
    assert _search_devices("opencl:1") == [_ferry.DEVICE_OPENCL + 1]
    for bad, why in [("cuda:0,x", "'x' is not a device number"), ("opencl:0,1", "one OpenCL device at a time"),
                     ([], "names no CUDA device"), ("cuda:" + ",".join("0" * 9), "at most 8")]:
        with pytest.raises(ferry.InvalidArgument, match=why):
            ferry.find_duplicates(photos[:2], search_device=bad)
    with pytest.raises(ferry.InvalidArgument, match="at most 8"):
        _ferry.hamming_pairs(b"\0" * 16, 1, 2, devices=[0] * 9)
    with pytest.raises(ferry.InvalidArgument, match="-1 is not a CUDA device"):
        _ferry.hamming_pairs(b"\0" * 16, 1, 2, devices=[0, -1])
    rng = np.random.default_rng(7)
    base = rng.integers(0, 2**63, 200, dtype=np.uint64)
    codes = base[rng.integers(0, 200, 20000)] ^ (np.uint64(1) << rng.integers(0, 64, 20000,
                                                                                 dtype=np.uint64))
    cpu = np.asarray(_ferry.hamming_pairs(codes.tobytes(), 1, 4))
    try:
        gpu = np.asarray(_ferry.hamming_pairs(codes.tobytes(), 1, 4, devices=[0, 0]))
    except ferry.UnsupportedError as e:
        assert str(e).startswith("cuda:0: "), e
        return  # no GPU here: the rest needs one
    assert gpu.tolist() == cpu.tolist() and len(cpu) > 10000
    for i, src in enumerate(photos[:3]):
        shutil.copy(src, tmp_path / f"a{i}.jpg")
        shutil.copy(src, tmp_path / f"b{i}.jpg")
    want = ferry.find_duplicates(tmp_path, threshold=8, workers=2)
    assert len(want) == 3
    for dev in ("cuda:0", "cuda:0,0", [0, 0, 0]):
        assert ferry.find_duplicates(tmp_path, threshold=8, workers=2, search_device=dev) == want
