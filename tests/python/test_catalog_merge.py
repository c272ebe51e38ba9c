"""Issue 21, catalogs past one machine: `ferry hash --rank R --world-size W`
hashes a deterministic share of the files into a partial catalog, `ferry
index merge` combines the parts. Three ranks run concurrently and their
merge equals the catalog of one run, byte for byte (signatures too); a
missing rank is named; the newer mtime wins a conflict; parts of other runs
(world size, roots, settings) are refused; the header block that records a
share is skipped by readers that do not know it."""
import json
import os
import pathlib
import shutil
import struct
import subprocess
import zlib

import pytest

from ferrylib import CORPUS, FERRY_BIN, ROOT

SAMPLE = ROOT / "data" / "sample"
PHOTOS = CORPUS / "photos"
FIX = ROOT / "tests" / "fixtures" / "hash"


def ferry(*args, env=None, timeout=300):
    e = dict(os.environ)
    for k in ("RANK", "WORLD_SIZE", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN",
              "SLURM_ARRAY_TASK_COUNT"):
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run([FERRY_BIN, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=e)


def entries(fidx):
    r = ferry("index", "export", fidx, "--format", "json")
    assert r.returncode == 0, r.stderr
    return {e["path"]: e for e in json.loads(r.stdout)["entries"]}


def hash_ranks(root, tmp, world=3, extra=()):
    """`ferry hash --rank r --world-size W` for every rank at once."""
    procs = [subprocess.Popen([FERRY_BIN, "hash", str(root), "-o", str(tmp / f"part{r}.fidx"),
                               "--rank", str(r), "--world-size", str(world), "-q", *extra],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in range(world)]
    outs = [p.communicate(timeout=600) for p in procs]
    for r, (p, (_, err)) in enumerate(zip(procs, outs)):
        assert p.returncode in (0, 3), err  # 3: the sample's broken files
        assert f"rank {r} of {world}" in err
    return [tmp / f"part{r}.fidx" for r in range(world)], [err for _, err in outs]


FOLDERS = [pytest.param(SAMPLE, id="sample"),
           pytest.param(PHOTOS, id="corpus-photos", marks=pytest.mark.skipif(
               not PHOTOS.is_dir(), reason=f"shared corpus photos not found at {PHOTOS}"))]


@pytest.mark.parametrize("folder", FOLDERS)
def test_three_ranks_merge_equals_one_run(folder, tmp_path):
    parts, errs = hash_ranks(folder, tmp_path)
    one = tmp_path / "one.fidx"
    r = ferry("hash", folder, "-o", one, "-q")
    assert r.returncode in (0, 3), r.stderr
    whole = entries(one)
    assert len(whole) > 10

    # each file in exactly one part, the one its relative path's CRC-32 names
    canon = pathlib.Path(os.path.realpath(folder))
    seen = {}
    for rank, part in enumerate(parts):
        info = ferry("index", "info", part).stdout
        assert f"partial catalog: rank {rank} of 3 over {canon}" in info
        for p in entries(part):
            assert p not in seen, f"{p} in parts {seen[p]} and {rank}"
            seen[p] = rank
            rel = os.path.relpath(p, canon).encode()
            assert zlib.crc32(rel) % 3 == rank, p
    assert set(seen) == set(whole)
    assert all(f"files left to the other 2 ranks" in e for e in errs)

    merged = tmp_path / "merged.fidx"
    r = ferry("index", "merge", merged, *parts)
    assert r.returncode == 0, r.stderr
    assert f"{len(whole)} files from 3 parts" in r.stderr and "3 of 3 ranks" in r.stderr
    assert entries(merged) == whole
    # the same entries, hashes, sizes, mtimes and signatures, in the same order
    assert merged.read_bytes() == one.read_bytes()
    assert "partial" not in ferry("index", "info", merged).stdout
    # the parts in any order make the same catalog
    r = ferry("index", "merge", tmp_path / "rev.fidx", *reversed(parts))
    assert r.returncode == 0 and (tmp_path / "rev.fidx").read_bytes() == one.read_bytes()


def test_share_depends_on_the_relative_path_only(tmp_path):
    """The same folder at two places (two machines' mounts): the same files
    fall to the same ranks."""
    a, b = tmp_path / "a" / "lib", tmp_path / "elsewhere" / "deeper" / "lib"
    shutil.copytree(SAMPLE, a)
    shutil.copytree(SAMPLE, b)
    ranks = []
    for root, out in ((a, tmp_path / "pa"), (b, tmp_path / "pb")):
        out.mkdir()
        parts, _ = hash_ranks(root, out)
        ranks.append({os.path.relpath(p, os.path.realpath(root)): r
                      for r, part in enumerate(parts) for p in entries(part)})
    assert ranks[0] == ranks[1] and len(ranks[0]) > 10


def test_missing_part_is_named_and_the_rest_kept(tmp_path):
    parts, _ = hash_ranks(SAMPLE, tmp_path)
    out = tmp_path / "merged.fidx"
    r = ferry("index", "merge", out, parts[0], parts[2])
    assert r.returncode == 3, r.stderr
    assert f"rank 1 of 3 missing: its files are not in {out}" in r.stderr
    assert "2 of 3 ranks" in r.stderr
    got = entries(out)
    assert set(got) == set(entries(parts[0])) | set(entries(parts[2]))

    r = ferry("index", "merge", "--strict", tmp_path / "strict.fidx", parts[0], parts[2])
    assert r.returncode == 1 and "rank 1 of 3 missing" in r.stderr
    assert not (tmp_path / "strict.fidx").exists()

    # the merged catalog is a whole one: hashing the folder into it fills the gap
    one = tmp_path / "one.fidx"
    assert ferry("hash", SAMPLE, "-o", one, "-q").returncode in (0, 3)
    r = ferry("hash", SAMPLE, "-o", out, "--json", "-q")
    assert r.returncode in (0, 3), r.stderr
    assert json.loads(r.stdout)["hashed"] == len(entries(parts[1]))
    assert out.read_bytes() == one.read_bytes()


def test_conflicts_keep_the_newer_mtime(tmp_path):
    d = tmp_path / "pics"
    d.mkdir()
    imgs = sorted(p for p in FIX.glob("*") if p.suffix in (".jpg", ".png"))[:4]
    for p in imgs:
        shutil.copy(p, d / p.name)
    target = d / imgs[0].name
    old_ns = 1_600_000_000_000_000_000
    os.utime(target, ns=(old_ns, old_ns))
    a, b = tmp_path / "a.fidx", tmp_path / "b.fidx"
    assert ferry("hash", d, "-o", a, "-q").returncode == 0
    shutil.copy(imgs[1], target)  # another picture, a newer mtime
    new_ns = old_ns + 5_000_000_000
    os.utime(target, ns=(new_ns, new_ns))
    assert ferry("hash", d, "-o", b, "-q").returncode == 0
    path = str(target.resolve())
    assert entries(a)[path]["hashes"] != entries(b)[path]["hashes"]
    for order in ((a, b), (b, a)):
        out = tmp_path / "m.fidx"
        r = ferry("index", "merge", out, *order)
        assert r.returncode == 0, r.stderr
        assert f"({len(imgs)} paths in more than one" in r.stderr
        got = entries(out)[path]
        assert got["mtime_ns"] == new_ns and got["hashes"] == entries(b)[path]["hashes"]
    # equal mtimes: the later part
    os.utime(target, ns=(old_ns, old_ns))
    c = tmp_path / "c.fidx"
    assert ferry("hash", d, "-o", c, "-q").returncode == 0
    assert ferry("index", "merge", tmp_path / "m2.fidx", a, c).returncode == 0
    assert entries(tmp_path / "m2.fidx")[path]["hashes"] == entries(c)[path]["hashes"]
    assert ferry("index", "merge", tmp_path / "m3.fidx", c, a).returncode == 0
    assert entries(tmp_path / "m3.fidx")[path]["hashes"] == entries(a)[path]["hashes"]


def test_parts_of_other_runs_are_refused(tmp_path):
    for sub in ("w3", "w2", "wo", "w8"):
        (tmp_path / sub).mkdir()
    p3, _ = hash_ranks(SAMPLE, tmp_path / "w3")
    p2, _ = hash_ranks(SAMPLE, tmp_path / "w2", world=2)
    out = tmp_path / "m.fidx"
    r = ferry("index", "merge", out, p3[0], p2[1])
    assert r.returncode == 1 and "different world sizes" in r.stderr
    assert str(p3[0]) in r.stderr and str(p2[1]) in r.stderr and "rank 1 of 2" in r.stderr
    other = tmp_path / "other"
    shutil.copytree(SAMPLE, other)
    po, _ = hash_ranks(other, tmp_path / "wo")
    r = ferry("index", "merge", out, p3[0], po[1], p3[2])
    assert r.returncode == 1 and "different roots" in r.stderr and str(po[1]) in r.stderr
    r = ferry("index", "merge", out, p3[0], p3[1], p3[1])
    assert r.returncode == 1 and "are both rank 1 of 3" in r.stderr
    p8, _ = hash_ranks(SAMPLE, tmp_path / "w8", extra=("--hash-size", "8"))
    r = ferry("index", "merge", out, p3[0], p8[1], p3[2])
    assert r.returncode == 1 and "other settings" in r.stderr
    assert not out.exists()
    # a partial catalog as OUT (the parts shifted by one) is never overwritten
    before = p3[0].read_bytes()
    r = ferry("index", "merge", p3[0], p3[1], p3[2])
    assert r.returncode == 1 and "is a partial catalog" in r.stderr
    assert p3[0].read_bytes() == before
    (tmp_path / "junk.fidx").write_text("not a catalog")
    r = ferry("index", "merge", tmp_path / "junk.fidx", *p3)
    assert r.returncode == 1 and "not a catalog to replace" in r.stderr
    # a part can be OUT when it is among the parts
    r = ferry("index", "merge", p3[0], *p3)
    assert r.returncode == 0 and "partial" not in ferry("index", "info", p3[0]).stdout
    # a partial catalog is updated only by its own share
    r = ferry("hash", SAMPLE, "-o", p3[1], "--rank", 2, "--world-size", 3)
    assert r.returncode == 1 and "rank 1 of 3" in r.stderr and "rank 2 of 3" in r.stderr
    assert "catalog of its own" in r.stderr
    r = ferry("hash", SAMPLE, "-o", p3[1])
    assert r.returncode == 1 and "a whole catalog" in r.stderr
    r = ferry("hash", SAMPLE, "-o", p3[1], "--rank", 1, "--world-size", 3, "--json")
    assert r.returncode in (0, 3) and json.loads(r.stdout)["unchanged"] > 0


def test_usage_and_environment(tmp_path):
    out = tmp_path / "p.fidx"
    for args, msg in ((("--rank", 1), "go together"),
                      (("--world-size", 3), "go together"),
                      (("--rank", 3, "--world-size", 3), "a rank is 0..2"),
                      (("--shard-from-env",), "neither RANK"),
                      (("--shard-from-env", "--rank", 0, "--world-size", 2), "not both")):
        r = ferry("hash", SAMPLE, "-o", out, *args)
        assert r.returncode == 2 and msg in r.stderr, (args, r.stderr)
    r = ferry("hash", SAMPLE, "--rank", 0, "--world-size", 2)
    assert r.returncode == 2 and "give -o PART.fidx" in r.stderr
    r = ferry("index", "merge", out)
    assert r.returncode == 2 and "at least one PART" in r.stderr
    r = ferry("index", "merge", out, "--frob")
    assert r.returncode == 2 and "unknown option '--frob'" in r.stderr
    assert "merge OUT.fidx PART.fidx" in ferry("index", "--help").stdout
    assert "--world-size" in ferry("hash", "--help").stdout

    # torchrun's RANK/WORLD_SIZE, a Slurm array's task id, min and count
    r = ferry("hash", SAMPLE, "-o", out, "--shard-from-env", "-q",
              env={"RANK": "2", "WORLD_SIZE": "4"})
    assert r.returncode in (0, 3) and "rank 2 of 4 (from RANK and WORLD_SIZE)" in r.stderr
    assert "rank 2 of 4" in ferry("index", "info", out).stdout
    out2 = tmp_path / "s.fidx"
    r = ferry("hash", SAMPLE, "-o", out2, "--shard-from-env", "-q",
              env={"SLURM_ARRAY_TASK_ID": "6", "SLURM_ARRAY_TASK_MIN": "5",
                   "SLURM_ARRAY_TASK_COUNT": "3"})
    assert r.returncode in (0, 3) and "rank 1 of 3 (from SLURM_ARRAY_TASK_ID" in r.stderr
    r = ferry("hash", SAMPLE, "-o", out2, "--shard-from-env", env={"RANK": "x", "WORLD_SIZE": "2"})
    assert r.returncode == 2 and "RANK='x'" in r.stderr
    # without the flag the environment is never read: a whole catalog
    out3 = tmp_path / "w.fidx"
    r = ferry("hash", SAMPLE, "-o", out3, "-q", env={"RANK": "1", "WORLD_SIZE": "3"})
    assert r.returncode in (0, 3) and "partial" not in ferry("index", "info", out3).stdout
    # a rank that gets no file is no error
    (tmp_path / "one").mkdir()
    shutil.copy(sorted(FIX.glob("*.jpg"))[0], tmp_path / "one" / "x.jpg")
    codes = [ferry("hash", tmp_path / "one", "-o", tmp_path / f"o{r}.fidx", "--rank", r,
                   "--world-size", 2, "-q").returncode for r in range(2)]
    assert codes == [0, 0]


def _blocks(data, extra):
    """`data` (a .fidx) with `extra` bytes added to its header and the CRC fixed."""
    hl = struct.unpack_from("<I", data, 12)[0]
    body = bytearray(data[:hl] + extra + data[hl:-4])
    struct.pack_into("<I", body, 12, hl + len(extra))
    return bytes(body) + struct.pack("<I", zlib.crc32(body))


def test_header_blocks(tmp_path):
    whole = tmp_path / "w.fidx"
    assert ferry("hash", FIX, "-o", whole, "-q").returncode == 0
    data = whole.read_bytes()
    assert struct.unpack_from("<II", data, 8) == (1, 40)  # version 1, 40-byte header: as before
    # a block a later ferry might add is skipped
    odd = tmp_path / "odd.fidx"
    odd.write_bytes(_blocks(data, b"XTRA" + struct.pack("<I", 4) + b"abcd"))
    r = ferry("index", "export", odd, "--format", "json")
    assert r.returncode == 0 and entries(odd) == entries(whole)
    # a share read back from a hand-made block; a damaged one is refused
    root = b"/some/root"
    blk = b"SHRD" + struct.pack("<I", 12 + 4 + len(root)) + struct.pack("<III", 2, 5, 1) + \
        struct.pack("<I", len(root)) + root
    made = tmp_path / "made.fidx"
    made.write_bytes(_blocks(data, blk))
    assert "partial catalog: rank 2 of 5 over /some/root" in ferry("index", "info", made).stdout
    for bad in (b"SHRD" + struct.pack("<I", 12) + struct.pack("<III", 5, 5, 0),   # rank >= world
                b"SHRD" + struct.pack("<I", 12) + struct.pack("<III", 0, 2, 1),   # a root short
                b"SHRD" + struct.pack("<I", 40) + struct.pack("<III", 0, 2, 0)):  # past the end
        broken = tmp_path / "bad.fidx"
        broken.write_bytes(_blocks(data, bad))
        r = ferry("index", "info", broken)
        assert r.returncode == 1 and "damaged" in r.stderr, bad
