"""Issue 52, catalogs: a merge takes from each part only the entries of its
share (a crafted part is refused, naming it and the entry); missing ranks
are summarised in runs, whatever the world size; --shard-from-env says what
is wrong with which variable; devices named as parts or lying under a
catalog entry are refused at once (bounded time and memory); `ferry index
export`, `ferry index merge` and `ferry hash -o` never write over one of
their inputs (the same file through links, or inside a walked folder)."""
import json
import os
import re
import shutil
import struct
import subprocess
import time
import warnings
import zlib

import pytest

import ferry
from ferrylib import FERRY_BIN, ROOT

FIX = ROOT / "tests" / "fixtures" / "hash"
PICS = ["rgb444.jpg", "rgb420.jpg", "gray.jpg", "progressive.jpg", "rgb.png", "palette.png",
        "restart.jpg", "orient6.jpg"]
SHARD_ENV = ("RANK", "WORLD_SIZE", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN",
             "SLURM_ARRAY_TASK_COUNT")


def run(*args, env=None, timeout=120):
    e = {k: v for k, v in os.environ.items() if k not in SHARD_ENV}
    e.update(env or {})
    return subprocess.run([FERRY_BIN, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=e)


# Runs argv and prints, last on stderr, the peak resident KiB of it: started
# from this small process, not from pytest's (a child's peak counts what it
# had before exec).
PEAK = ("import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
        "sys.exit(r.returncode)\n")


def run_bounded(*args, timeout=60):
    """The command, bounded: (returncode, stderr, seconds, peak resident MiB)."""
    t0 = time.monotonic()
    r = subprocess.run(["python3", "-c", PEAK, FERRY_BIN, *map(str, args)], capture_output=True,
                       text=True, timeout=timeout)
    secs = time.monotonic() - t0
    err, _, peak = r.stderr.rstrip("\n").rpartition("\n")
    return r.returncode, err, secs, int(peak) / 1024


def library(tmp_path, name="lib", n=len(PICS)):
    d = tmp_path / name
    d.mkdir()
    for p in PICS[:n]:
        shutil.copy(FIX / p, d / p)
    return d


def entries(fidx):
    r = run("index", "export", fidx, "--format", "json")
    assert r.returncode == 0, r.stderr
    return {e["path"]: e for e in json.loads(r.stdout)["entries"]}


def with_share(data, rank, world, roots):
    """A .fidx's bytes with a SHRD block (rank of world over roots) added to
    its header and the checksum made right: a part crafted by hand."""
    blk = struct.pack("<III", rank, world, len(roots))
    for r in roots:
        blk += struct.pack("<I", len(r)) + r
    blk = b"SHRD" + struct.pack("<I", len(blk)) + blk
    hl = struct.unpack_from("<I", data, 12)[0]
    body = bytearray(data[:hl] + blk + data[hl:-4])
    struct.pack_into("<I", body, 12, hl + len(blk))
    return bytes(body) + struct.pack("<I", zlib.crc32(body))


def two_ranks(lib, tmp_path):
    parts = [tmp_path / f"part{r}.fidx" for r in range(2)]
    for r, p in enumerate(parts):
        got = run("hash", lib, "-o", p, "--rank", r, "--world-size", 2, "-q")
        assert got.returncode == 0, got.stderr
    return parts


# ---------------------------------------------------------------- item 15


def test_merge_refuses_a_part_holding_another_ranks_files(tmp_path):
    """A rank-1 part crafted with rank 0's files, mtimes 30 years ahead: it
    would win them all; it is refused, named with the first foreign entry."""
    lib = library(tmp_path)
    canon = os.path.realpath(lib)
    ranks = {p: zlib.crc32(p.encode()) % 2 for p in PICS}
    assert 0 in ranks.values() and 1 in ranks.values()
    parts = two_ranks(lib, tmp_path)
    # the crafted part: every file, hashed when it was 30 years newer
    ahead = time.time_ns() + 30 * 365 * 86400 * 10**9
    saved = {p: os.stat(lib / p).st_mtime_ns for p in PICS}
    for p in PICS:
        os.utime(lib / p, ns=(ahead, ahead))
    whole = tmp_path / "whole.fidx"
    assert run("hash", lib, "-o", whole, "-q").returncode == 0
    for p, ns in saved.items():
        os.utime(lib / p, ns=(ns, ns))
    evil = tmp_path / "evil1.fidx"
    evil.write_bytes(with_share(whole.read_bytes(), 1, 2, [canon.encode()]))
    assert "partial catalog: rank 1 of 2" in run("index", "info", evil).stdout

    out = tmp_path / "merged.fidx"
    r = run("index", "merge", out, parts[0], evil)
    assert r.returncode == 1, r.stderr
    foreign = sorted(os.path.join(canon, p) for p, k in ranks.items() if k == 0)
    assert str(evil) in r.stderr and foreign[0] in r.stderr, r.stderr
    assert "falls to rank 0" in r.stderr and f"{len(foreign)} entries" in r.stderr
    assert not out.exists()
    # the true parts still merge, each file from its own rank
    r = run("index", "merge", out, *parts)
    assert r.returncode == 0, r.stderr
    assert all(e["mtime_ns"] < ahead for e in entries(out).values())
    # from Python: the same refusal
    with pytest.raises(ferry.InvalidArgument, match="falls to rank 0"):
        ferry.index_merge(tmp_path / "py.fidx", [parts[0], evil])
    assert not (tmp_path / "py.fidx").exists()


def test_merge_refuses_a_part_listing_files_outside_its_roots(tmp_path):
    """/etc/passwd in a part over another root: refused, nothing written."""
    lib = library(tmp_path)
    canon = os.path.realpath(lib)
    parts = two_ranks(lib, tmp_path)
    if not os.path.isfile("/etc/passwd"):
        pytest.skip("no /etc/passwd to hash on this machine")
    passwd = tmp_path / "passwd.fidx"
    r = run("hash", "/etc/passwd", "--all-files", "-o", passwd, "-q")
    assert r.returncode == 3 and "/etc/passwd" in entries(passwd), r.stderr  # a failed entry
    rank = zlib.crc32(b"passwd") % 2
    evil = tmp_path / "evil.fidx"
    evil.write_bytes(with_share(passwd.read_bytes(), rank, 2, [canon.encode()]))
    out = tmp_path / "m.fidx"
    r = run("index", "merge", out, parts[1 - rank], evil)
    assert r.returncode == 1 and str(evil) in r.stderr and "/etc/passwd" in r.stderr, r.stderr
    assert "under none of its roots" in r.stderr and not out.exists()


def test_merge_refuses_an_entry_with_dot_dot_under_a_root(tmp_path):
    """An entry 'ROOT/../elsewhere/x' is under ROOT by its letters only: a
    path ferry never writes (entries are canonical): refused."""
    lib = library(tmp_path, "L")
    canon = os.path.realpath(lib)
    parts = two_ranks(lib, tmp_path)
    # a folder whose canonical path has the length of 'L/../M' spelt out
    real = tmp_path / "MMMMMM"  # len("L/../M") == len("MMMMMM")
    real.mkdir()
    shutil.copy(FIX / "rgb444.jpg", real / "z.jpg")
    src = tmp_path / "src.fidx"
    assert run("hash", real, "-o", src, "-q").returncode == 0
    realname = os.path.realpath(real / "z.jpg").encode()
    fakename = os.path.join(canon, "..", "M", "z.jpg").encode()
    assert len(realname) == len(fakename), (realname, fakename)
    data = src.read_bytes()
    assert data.count(realname) == 1
    body = data[:-4].replace(realname, fakename)
    data = body + struct.pack("<I", zlib.crc32(body))
    key = b"../M/z.jpg"
    rank = zlib.crc32(key) % 2
    evil = tmp_path / "dots.fidx"
    evil.write_bytes(with_share(data, rank, 2, [canon.encode()]))
    assert list(entries(evil)) == [fakename.decode()]
    r = run("index", "merge", tmp_path / "m.fidx", parts[1 - rank], evil)
    assert r.returncode == 1 and fakename.decode() in r.stderr and str(evil) in r.stderr, r.stderr
    assert "not a canonical path" in r.stderr
    assert not (tmp_path / "m.fidx").exists()


# ---------------------------------------------------------------- item 24


def test_missing_ranks_are_summarised(tmp_path):
    """One part of a world of 2^20 merged alone: two lines for the missing
    ranks, not 1,048,575; Python's warnings and missing ranks alike."""
    lib = library(tmp_path, n=2)
    world, rank = 1 << 20, 12345
    part = tmp_path / "p.fidx"
    r = run("hash", lib, "-o", part, "--rank", rank, "--world-size", world, "-q")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "m.fidx"
    t0 = time.monotonic()
    r = run("index", "merge", out, part)
    assert r.returncode == 3, r.stderr[:2000]
    assert len(r.stderr) < 4000, f"{len(r.stderr)} bytes of messages: {r.stderr[:500]}"
    assert time.monotonic() - t0 < 20
    assert f"ranks 0..{rank - 1} of {world} missing ({rank} ranks)" in r.stderr, r.stderr
    assert f"ranks {rank + 1}..{world - 1} of {world} missing ({world - rank - 1} ranks)" \
        in r.stderr, r.stderr
    assert f"1 of {world} ranks" in r.stderr

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        st = ferry.index_merge(tmp_path / "py.fidx", [part])
    got = [w for w in got if issubclass(w.category, ferry.MissingRanksWarning)]
    assert len(got) == 2, [str(w.message) for w in got][:5]
    assert f"ranks 0..{rank - 1} of {world} missing" in str(got[0].message)
    m = st["missing"]
    assert len(m) == world - 1 and m[0] == 0 and m[-1] == world - 1 and m[rank] == rank + 1
    assert rank not in m and rank - 1 in m and list(m[rank - 2:rank + 1]) == \
        [rank - 2, rank - 1, rank + 1]
    assert m.ranges == [(0, rank - 1), (rank + 1, world - 1)]


def test_many_runs_of_missing_ranks_are_bounded(tmp_path):
    """Parts 0, 2, 4 ... of 40: 20 runs of one missing rank; the command
    names a few and counts the rest."""
    lib = library(tmp_path, n=1)
    empty = next(r for r in range(0, 40, 2) if r != zlib.crc32(PICS[0].encode()) % 40)
    first = tmp_path / "first.fidx"
    r = run("hash", lib, "-o", first, "--rank", empty, "--world-size", 40, "-q")
    assert r.returncode == 0 and not entries(first), r.stderr
    data = first.read_bytes()
    assert data[40:44] == b"SHRD" and struct.unpack_from("<I", data, 48)[0] == empty
    parts = []
    for rank in range(0, 40, 2):  # the same empty part as each even rank
        body = bytearray(data[:-4])
        struct.pack_into("<I", body, 48, rank)
        parts.append(tmp_path / f"p{rank}.fidx")
        parts[-1].write_bytes(bytes(body) + struct.pack("<I", zlib.crc32(body)))
    r = run("index", "merge", tmp_path / "m.fidx", *parts)
    assert r.returncode == 3, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "missing" in ln]
    assert len(lines) <= 10, r.stderr
    assert "rank 1 of 40 missing" in r.stderr
    assert "and 12 more runs of missing ranks (12 ranks)" in r.stderr, r.stderr
    assert "20 of 40 ranks" in r.stderr


# ---------------------------------------------------------------- item 27


def test_shard_from_env_names_what_is_wrong(tmp_path):
    lib = library(tmp_path, n=1)
    out = tmp_path / "p.fidx"
    for env, want in (
            ({"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "5",
              "SLURM_ARRAY_TASK_COUNT": "3"},
             "SLURM_ARRAY_TASK_ID=3 is below SLURM_ARRAY_TASK_MIN=5"),
            ({"SLURM_ARRAY_TASK_ID": "3"},
             "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not"),
            ({"SLURM_ARRAY_TASK_COUNT": "3"},
             "SLURM_ARRAY_TASK_COUNT is set but SLURM_ARRAY_TASK_ID is not"),
            ({"RANK": "1"}, "RANK is set but WORLD_SIZE is not"),
            ({"WORLD_SIZE": "4"}, "WORLD_SIZE is set but RANK is not"),
            ({}, "neither RANK and WORLD_SIZE")):
        r = run("hash", lib, "-o", out, "--shard-from-env", env=env)
        assert r.returncode == 2 and want in r.stderr, (env, r.stderr)
        if env:
            assert "neither" not in r.stderr, (env, r.stderr)
    assert not out.exists()


# ---------------------------------------------------------------- item 21


def test_a_device_as_a_part_is_refused_at_once(tmp_path):
    rc, err, secs, mib = run_bounded("index", "merge", tmp_path / "o.fidx", "/dev/zero")
    assert rc == 1 and "/dev/zero" in err and "character device" in err, err
    assert secs < 2 and mib < 512, (secs, mib)
    assert not (tmp_path / "o.fidx").exists()
    os.mkfifo(tmp_path / "fifo.fidx")
    rc, err, secs, mib = run_bounded("index", "merge", tmp_path / "o.fidx", tmp_path / "fifo.fidx")
    assert rc == 1 and "fifo.fidx" in err and "FIFO" in err and secs < 2, (err, secs)
    rc, err, secs, mib = run_bounded("index", "export", "/dev/zero")
    assert rc == 1 and "character device" in err and secs < 2 and mib < 512, (err, secs, mib)


def test_report_over_an_entry_now_on_a_device(tmp_path):
    """An HTML report whose group holds a file that is now /dev/zero (a
    link to it): no preview for it, said by name, at once."""
    lib = tmp_path / "lib"
    lib.mkdir()
    for n in ("a.jpg", "b.jpg"):
        shutil.copy(FIX / "rgb444.jpg", lib / n)
    cat = tmp_path / "c.fidx"
    assert run("hash", lib, "-o", cat, "-q").returncode == 0
    (lib / "b.jpg").unlink()
    os.symlink("/dev/zero", lib / "b.jpg")
    html = tmp_path / "r.html"
    rc, err, secs, mib = run_bounded("dupes", cat, "--format", "html", "-o", html)
    assert rc == 0, err
    assert secs < 2 and mib < 512, (secs, mib)
    page = html.read_text()
    data = json.loads(re.search(r'id="ferry-data">(.*?)</script>', page, re.S).group(1))
    flags = [f[7] for f in data["files"]]  # 8: no preview (the page draws "no preview")
    assert data["groups"] == [2] and sorted(f & 8 for f in flags) == [0, 8], data["files"]
    b = os.path.join(os.path.realpath(lib), "b.jpg")
    assert f"{b}: a character device" in err, err
    assert "a character device, not a regular file" in page


# ----------------------------------------------------------- outputs rule


def test_export_output_is_never_an_input(tmp_path):
    lib = library(tmp_path, n=2)
    cat = tmp_path / "c.fidx"
    assert run("hash", lib, "-o", cat, "-q").returncode == 0
    before = cat.read_bytes()
    os.link(cat, tmp_path / "hard.csv")
    os.symlink(cat, tmp_path / "soft.csv")
    for out in (cat, tmp_path / "hard.csv", tmp_path / "soft.csv"):
        r = run("index", "export", cat, "-o", out)
        assert r.returncode == 2 and f"{out}: is the input {cat}" in r.stderr, (out, r.stderr)
    assert cat.read_bytes() == before
    assert run("index", "export", cat, "-o", tmp_path / "fine.csv").returncode == 0


def test_merge_output_through_a_link_to_a_part_is_refused(tmp_path):
    lib = library(tmp_path)
    parts = two_ranks(lib, tmp_path)
    before = parts[0].read_bytes()
    os.link(parts[0], tmp_path / "hard.fidx")
    os.symlink(parts[0], tmp_path / "soft.fidx")
    for out in (tmp_path / "hard.fidx", tmp_path / "soft.fidx"):
        r = run("index", "merge", out, *parts)
        assert r.returncode == 1 and f"{out}: is the input {parts[0]}" in r.stderr, r.stderr
    assert parts[0].read_bytes() == before and os.path.islink(tmp_path / "soft.fidx")
    # OUT named among the parts is the in-place update (all read first)
    r = run("index", "merge", parts[0], *parts)
    assert r.returncode == 0, r.stderr


def test_hash_output_never_inside_a_walked_folder(tmp_path):
    lib = library(tmp_path, n=3)
    listing = sorted(os.listdir(lib))
    for out in (lib / "out.csv", lib / "sub" / "c.fidx"):
        r = run("hash", lib, "-o", out)
        assert r.returncode == 1 and f"inside the input folder {lib}" in r.stderr, r.stderr
    assert sorted(os.listdir(lib)) == listing
    # a catalog hashed as one of its own inputs: refused, kept
    cat = tmp_path / "c.fidx"
    assert run("hash", lib, "-o", cat, "-q").returncode == 0
    before = cat.read_bytes()
    os.link(cat, tmp_path / "also.fidx")
    for out in (cat, tmp_path / "also.fidx"):
        r = run("hash", cat, "--all-files", "-o", out)
        assert r.returncode == 1 and f"is the input {cat}" in r.stderr, r.stderr
    assert cat.read_bytes() == before
    assert not os.path.exists(str(cat) + ".journal")
    # from Python alike
    with pytest.raises(ferry.InvalidArgument, match="inside the input folder"):
        ferry.index_update(lib / "py.fidx", lib)
    assert sorted(os.listdir(lib)) == listing
    # files named one by one, the catalog beside them: fine
    r = run("hash", *(lib / p for p in listing), "-o", lib / ".." / "beside.fidx", "-q")
    assert r.returncode == 0, r.stderr


def test_a_journal_that_is_a_link_is_never_written_through(tmp_path):
    """CATALOG.journal is ferry's own file: a symbolic link in its place
    (to a user's file) is refused, never truncated through."""
    lib = library(tmp_path, n=2)
    victim = tmp_path / "notes.txt"
    victim.write_text("a user's file\n" * 100)
    whole = tmp_path / "w.fidx"
    assert run("hash", lib, "-o", whole, "-q").returncode == 0
    cat = tmp_path / "c.fidx"
    os.symlink(victim, str(cat) + ".journal")
    for args in (("hash", lib, "-o", cat), ("index", "merge", cat, whole)):
        r = run(*args)
        assert r.returncode == 1 and "c.fidx.journal" in r.stderr, (args, r.stderr)
        assert "symbolic link" in r.stderr, (args, r.stderr)
        assert victim.read_text() == "a user's file\n" * 100
    assert not cat.exists() and os.path.islink(str(cat) + ".journal")
    os.link(whole, cat)  # prune takes the same lock
    r = run("index", "prune", cat)
    assert r.returncode == 1 and "symbolic link" in r.stderr, r.stderr
    assert victim.read_text() == "a user's file\n" * 100
