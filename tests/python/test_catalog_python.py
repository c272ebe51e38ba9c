"""Issue 21 from Python: ferry.index_update(rank=, world_size=) hashes a
share of a folder into a partial catalog, ferry.index_merge combines the
parts, ferry.index_rank_of is the share rule. Three ranks (at once, in
threads) merge into the catalog of one run, byte for byte, and into the same
bytes as `ferry hash` makes; a missing part is named (a warning, or
StateError with strict); a conflict keeps the newer mtime."""
import json
import os
import pathlib
import shutil
import subprocess
import threading
import warnings
import zlib

import pytest

import ferry
from ferrylib import FERRY_BIN, ROOT

SAMPLE = ROOT / "data" / "sample"
FIX = ROOT / "tests" / "fixtures" / "hash"


def entries(fidx):
    """The catalog's entries by path (`ferry index export`)."""
    r = subprocess.run([FERRY_BIN, "index", "export", str(fidx), "--format", "json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return {e["path"]: e for e in json.loads(r.stdout)["entries"]}


def three_ranks(root, tmp, world=3):
    """index_update for every rank at once (the GIL is released while each
    hashes): the parts and each rank's stats."""
    parts = [tmp / f"part{r}.fidx" for r in range(world)]
    stats, errors = [None] * world, []

    def run(r):
        try:
            stats[r] = ferry.index_update(parts[r], root, rank=r, world_size=world, threads=1)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return parts, stats


def test_three_ranks_merge_equals_one_run(tmp_path):
    parts, stats = three_ranks(SAMPLE, tmp_path)
    one = tmp_path / "one.fidx"
    whole = ferry.index_update(one, [SAMPLE])
    assert whole["files"] > 10 and whole["other_ranks"] == 0
    assert sum(s["files"] for s in stats) == whole["files"]
    for s in stats:
        assert s["other_ranks"] == whole["files"] - s["files"]
    # the bad files of the sample, named with their error, as in one run
    assert sorted(p for s in stats for p, _ in s["errors"]) == \
        sorted(p for p, _ in whole["errors"])
    assert whole["failed"] == len(whole["errors"]) >= 1
    assert all(isinstance(m, str) and m for _, m in whole["errors"])

    # every file in exactly one part: the one index_rank_of names
    canon = os.path.realpath(SAMPLE)
    seen = {}
    for rank, part in enumerate(parts):
        for p in entries(part):
            assert p not in seen
            seen[p] = rank
            rel = os.path.relpath(p, canon)
            assert ferry.index_rank_of(rel, 3) == rank == zlib.crc32(rel.encode()) % 3
    assert set(seen) == set(entries(one))

    merged = tmp_path / "merged.fidx"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no rank missing: no warning
        st = ferry.index_merge(merged, parts)
    assert st == {"entries": whole["files"], "conflicts": 0, "world_size": 3, "missing": []}
    assert merged.read_bytes() == one.read_bytes()
    # in any order; and the same bytes as the command's one run
    st = ferry.index_merge(tmp_path / "rev.fidx", [str(p) for p in reversed(parts)])
    assert (tmp_path / "rev.fidx").read_bytes() == one.read_bytes()
    cli = tmp_path / "cli.fidx"
    r = subprocess.run([FERRY_BIN, "hash", str(SAMPLE), "-o", str(cli), "-q"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 3), r.stderr
    assert cli.read_bytes() == one.read_bytes()
    # the command merges the parts Python made into the same catalog
    r = subprocess.run([FERRY_BIN, "index", "merge", str(tmp_path / "m.fidx"), *map(str, parts)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and (tmp_path / "m.fidx").read_bytes() == one.read_bytes()


def test_missing_part_is_named(tmp_path):
    parts, _ = three_ranks(SAMPLE, tmp_path)
    out = tmp_path / "merged.fidx"
    with pytest.warns(ferry.MissingRanksWarning) as got:
        st = ferry.index_merge(out, [parts[0], parts[2]])
    assert [str(w.message) for w in got] == [f"rank 1 of 3 missing: its files are not in {out}"]
    assert st["missing"] == [1] and st["world_size"] == 3
    assert set(entries(out)) == set(entries(parts[0])) | set(entries(parts[2]))
    assert st["entries"] == len(entries(out))

    strict = tmp_path / "strict.fidx"
    with pytest.raises(ferry.StateError, match="rank 1 of 3 missing"):
        ferry.index_merge(strict, [parts[0], parts[2]], strict=True)
    assert not strict.exists()
    # two ranks missing: each named
    with pytest.warns(ferry.MissingRanksWarning) as got:
        st = ferry.index_merge(tmp_path / "m1.fidx", [parts[1]])
    assert st["missing"] == [0, 2] and len(got) == 2
    assert "rank 0 of 3 missing" in str(got[0].message)
    assert "rank 2 of 3 missing" in str(got[1].message)

    # the merged catalog is a whole one: hashing the folder into it fills the gap
    one = tmp_path / "one.fidx"
    ferry.index_update(one, SAMPLE)
    again = ferry.index_update(out, SAMPLE)
    assert again["hashed"] == len(entries(parts[1]))
    assert out.read_bytes() == one.read_bytes()


def test_conflict_keeps_the_newer_mtime(tmp_path):
    d = tmp_path / "pics"
    d.mkdir()
    imgs = sorted(p for p in FIX.glob("*") if p.suffix in (".jpg", ".png"))[:4]
    for p in imgs:
        shutil.copy(p, d / p.name)
    target = d / imgs[0].name
    old_ns = 1_600_000_000_000_000_000
    os.utime(target, ns=(old_ns, old_ns))
    a, b = tmp_path / "a.fidx", tmp_path / "b.fidx"
    assert ferry.index_update(a, d)["hashed"] == len(imgs)
    shutil.copy(imgs[1], target)  # another picture, a newer mtime
    new_ns = old_ns + 5_000_000_000
    os.utime(target, ns=(new_ns, new_ns))
    ferry.index_update(b, d)
    path = str(target.resolve())
    assert entries(a)[path]["hashes"] != entries(b)[path]["hashes"]
    for order in ((a, b), (b, a)):
        out = tmp_path / "m.fidx"
        st = ferry.index_merge(out, order)
        assert st["conflicts"] == len(imgs) and st["world_size"] == 1 and st["missing"] == []
        got = entries(out)[path]
        assert got["mtime_ns"] == new_ns and got["hashes"] == entries(b)[path]["hashes"]
    # equal mtimes: the later part
    os.utime(target, ns=(old_ns, old_ns))
    c = tmp_path / "c.fidx"
    ferry.index_update(c, d)
    ferry.index_merge(tmp_path / "m2.fidx", [a, c])
    assert entries(tmp_path / "m2.fidx")[path]["hashes"] == entries(c)[path]["hashes"]
    ferry.index_merge(tmp_path / "m3.fidx", [c, a])
    assert entries(tmp_path / "m3.fidx")[path]["hashes"] == entries(a)[path]["hashes"]


def test_refusals(tmp_path):
    out = tmp_path / "p.fidx"
    with pytest.raises(ferry.InvalidArgument, match="go together"):
        ferry.index_update(out, SAMPLE, rank=1)
    with pytest.raises(ferry.InvalidArgument, match="go together"):
        ferry.index_update(out, SAMPLE, world_size=2)
    with pytest.raises(ferry.InvalidArgument):
        ferry.index_update(out, SAMPLE, rank=3, world_size=3)
    with pytest.raises(ferry.InvalidArgument, match="integer"):
        ferry.index_update(out, SAMPLE, rank=0.5, world_size=2)
    with pytest.raises(ferry.InvalidArgument, match="mode"):
        ferry.index_update(out, SAMPLE, mode="quick")
    assert not out.exists()
    with pytest.raises(ferry.InvalidArgument, match="at least one"):
        ferry.index_merge(out, [])
    # parts of other runs: named
    (tmp_path / "w3").mkdir()
    (tmp_path / "w2").mkdir()
    p3, _ = three_ranks(SAMPLE, tmp_path / "w3")
    p2, _ = three_ranks(SAMPLE, tmp_path / "w2", world=2)
    with pytest.raises(ferry.InvalidArgument, match="different world sizes") as e:
        ferry.index_merge(out, [p3[0], p2[1]])
    assert str(p3[0]) in str(e.value) and str(p2[1]) in str(e.value)
    assert not out.exists()
    # a partial catalog is updated only by its own share
    with pytest.raises(ferry.InvalidArgument, match="catalog of its own"):
        ferry.index_update(p3[1], SAMPLE, rank=2, world_size=3)
    st = ferry.index_update(p3[1], SAMPLE, rank=1, world_size=3)
    assert st["hashed"] == 0 and st["files"] == len(entries(p3[1]))
    with pytest.raises(ferry.ReadError):
        ferry.index_merge(out, [tmp_path / "none.fidx"])


def test_rank_of():
    rel = "class_a/img 01.jpg"
    want = zlib.crc32(rel.encode()) % 7
    assert ferry.index_rank_of(rel, 7) == want
    assert ferry.index_rank_of(rel.encode(), 7) == want
    assert ferry.index_rank_of(pathlib.PurePosixPath(rel), 7) == want
    assert ferry.index_rank_of(rel, 1) == 0
    assert {ferry.index_rank_of(f"{i}.jpg", 4) for i in range(100)} == {0, 1, 2, 3}
    for bad in (0, -1, 2.0, True, "3"):
        with pytest.raises(ferry.InvalidArgument):
            ferry.index_rank_of(rel, bad)
