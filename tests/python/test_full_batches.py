"""Fixed-shape batches (issue 53): a skipped file's place in its batch takes
the next sample of the epoch's tail, so every batch but an epoch's last is
full (with drop_last, every one); deterministic whatever the workers; the
skipped files named and counted; labels and indices stay with the pixels."""
import shutil

import numpy as np
import pytest

import ferry


def broken_copies(sample, root, n, name="q"):
    """data/sample plus n truncated copies of one photo in class1 (in a row
    in the unshuffled order): n + 1 bad files of 49 + n."""
    dst = root / "holes"
    shutil.copytree(sample, dst)
    good = (sample / "class1" / "p0001.jpg").read_bytes()
    for i in range(n):
        (dst / "class1" / f"{name}{i}.jpg").write_bytes(good[:3000])
    return dst


@pytest.fixture
def holes(sample, tmp_path):
    return broken_copies(sample, tmp_path, 8)  # 57 files, 9 bad, 48 good


def epoch(loader, e=0):
    out = []
    for b in loader.batches(e):
        out.append((b.indices.copy(), b.labels.copy(), b.images.copy()))
    return out


def loader(src, batch, **kw):
    kw.setdefault("output", "numpy")
    kw.setdefault("workers", 2)
    return ferry.Loader(src, batch, 24, **kw)


@pytest.mark.parametrize("shuffle", [False, True])
def test_every_batch_full_but_the_last(holes, shuffle):
    L = loader(holes, 10, shuffle=shuffle, epoch_ahead=False)  # stats of this epoch alone
    got = epoch(L)
    sizes = [len(i) for i, _, _ in got]
    assert sizes == [10, 10, 10, 10, 8], sizes  # 48 good files
    assert len(L) == 6  # the planned count: an upper bound
    idx = np.concatenate([i for i, _, _ in got])
    assert len(set(idx.tolist())) == 48  # none twice
    assert L.stats()["skipped"] == 9 and L.stats()["images"] == 48
    bad = {p.split("/")[-1] for p, _ in L.skipped}
    assert bad == {f"q{i}.jpg" for i in range(8)} | {"truncated.jpg"}
    for i, lab, img in got:  # labels and indices with the pixels
        assert img.shape == (len(i), 3, 24, 24)
        assert [L.label(int(k)) for k in i] == lab.tolist()


def test_drop_last_all_full(holes):
    L = loader(holes, 10, drop_last=True)
    for e in range(2):
        sizes = [len(i) for i, _, _ in epoch(L, e)]
        assert sizes and all(s == 10 for s in sizes), sizes
        assert len(sizes) <= len(L)


def test_all_bad_batch_still_full(sample, tmp_path):
    # 16 bad files in a row: two whole batches of 8 in the unshuffled order
    src = broken_copies(sample, tmp_path, 16)
    L = loader(src, 8, shuffle=False)
    sizes = [len(i) for i, _, _ in epoch(L)]
    assert sizes == [8] * 6, sizes  # 65 files, 17 bad, 48 good
    Ld = loader(src, 8, shuffle=False, drop_last=True)
    assert [len(i) for i, _, _ in epoch(Ld)] == [8] * 6


def test_same_batches_whatever_the_workers(holes):
    ref = None
    for w in (1, 2, 4):
        L = loader(holes, 8, workers=w, seed=3)
        got = [(e, [i.tolist() for i, _, _ in epoch(L, e)]) for e in range(2)]
        if ref is None:
            ref = got
        assert got == ref, f"workers={w}"
        first = epoch(loader(holes, 8, workers=w, seed=3))
        for (i, lab, img), (j, lab2, img2) in zip(first, epoch(loader(holes, 8, workers=1,
                                                                        seed=3))):
            assert np.array_equal(i, j) and np.array_equal(lab, lab2)
            assert np.array_equal(img, img2)


def test_ranks_fill_from_their_own_share(holes):
    seen = []
    for r in range(2):
        L = loader(holes, 8, rank=r, world_size=2, seed=5)
        got = epoch(L)
        assert all(len(i) == 8 for i, _, _ in got[:-1])
        seen += np.concatenate([i for i, _, _ in got]).tolist()
    assert len(seen) == len(set(seen)) == 48


def test_on_error_fail_unchanged(holes):
    L = loader(holes, 8, on_error="fail", shuffle=False)
    with pytest.raises(ferry.Error):
        epoch(L)
