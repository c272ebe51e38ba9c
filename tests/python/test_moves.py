"""The safety of `ferry dupes` moves (issue 52): -o never over the undo log or
the move list, one apply at a time (the destination's log and the catalog
locked), a keeper never inside the destination, copies across file systems
that a kill -9 cannot leave half-written under their final name, move lists
whose text and base64 columns must agree (a UTF-8 BOM read), no symbolic
link inside the destination followed, a destination inside the library that
hides only what ferry moved there, a FIFO in the catalog never waited on,
and `ferry dupes --undo DIR`."""
import base64
import csv
import fcntl
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from ferrylib import FERRY_BIN, ROOT

FIX = ROOT / "tests" / "fixtures" / "hash"
LOG = "ferry-moves.csv"


def ferry(*args, **kw):
    return subprocess.run([FERRY_BIN, *map(str, args)], capture_output=True, text=True,
                          errors="replace", timeout=kw.pop("timeout", 60), **kw)


def three_copies(pics):
    """big.jpg keeps (the largest file); copy0.jpg and copy1.jpg are its copies."""
    pics.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIX / "rgb444.jpg", pics / "big.jpg")
    for i in range(2):
        shutil.copy(FIX / "rgb420.jpg", pics / f"copy{i}.jpg")


def hashed(tmp_path, *roots):
    cat = tmp_path / "c.fidx"
    r = ferry("hash", *roots, "-o", cat, "-q")
    assert r.returncode == 0, r.stderr
    return cat


def apply(cat, dest, *extra, **kw):
    return ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", dest, "--apply", "-q",
                 *extra, **kw)


def log_rows(dest):
    with open(dest / LOG, newline="") as f:
        return list(csv.DictReader(f))


def b64(p):
    return base64.b64encode(os.fsencode(p)).decode()


def second_file_system(tmp_path):
    """A folder on another file system than tmp_path (/dev/shm), or a skip saying why."""
    other = pathlib.Path("/dev/shm")
    if not other.is_dir() or os.stat(other).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system here (/dev/shm absent or on the same device as "
                    f"{tmp_path}): the copy across file systems is not exercised")
    return pathlib.Path(tempfile.mkdtemp(dir=other, prefix="ferry-moves-"))


# ------------------------------------------------------------ item 4: -o


def test_output_never_over_the_undo_log_or_the_move_list(tmp_path):
    pics, aside = tmp_path / "pics", tmp_path / "aside"
    three_copies(pics)
    cat = hashed(tmp_path, pics)
    assert apply(cat, aside).returncode == 0
    before = (aside / LOG).read_bytes()
    # the report over the undo log: refused, with or without --move-dupes-to
    for extra in ((), ("--move-dupes-to", aside)):
        r = ferry("dupes", cat, "--threshold", "40", "-o", aside / LOG, *extra)
        assert r.returncode == 2 and str(aside / LOG) in r.stderr, r.stderr
        assert (aside / LOG).read_bytes() == before
    # a log not made yet: the report is not written where the log goes
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    three_copies(pics)
    cat = hashed(tmp_path, pics)
    r = apply(cat, fresh, "-o", fresh / LOG)
    assert r.returncode == 2 and "undo log" in r.stderr, r.stderr
    assert not (fresh / LOG).exists() and (pics / "copy0.jpg").exists()
    # the report over the move list it reads: refused before the list is truncated
    lst = tmp_path / "list.csv"
    a, k = pics / "copy0.jpg", pics / "big.jpg"
    lst.write_text(f"path,keeper\n{a},{k}\n")
    text = lst.read_bytes()
    r = ferry("dupes", cat, "--threshold", "40", "--apply-list", lst, "--move-dupes-to", aside,
              "-o", lst, "-q")
    assert r.returncode == 2 and str(lst) in r.stderr, r.stderr
    assert lst.read_bytes() == text
    # the catalog, through another name (a hard link)
    os.link(cat, tmp_path / "same.fidx")
    r = ferry("dupes", cat, "-o", tmp_path / "same.fidx")
    assert r.returncode == 2 and cat.stat().st_size > 100, r.stderr


# ------------------------------------------------------------ item 5: locks


def test_apply_refused_while_the_destination_is_locked(tmp_path):
    """Another apply holds DIR's log (here this test, through fcntl, as an
    apply does): the second names the holder's pid and moves nothing."""
    pics, aside = tmp_path / "pics", tmp_path / "aside"
    three_copies(pics)
    cat = hashed(tmp_path, pics)
    aside.mkdir()
    (aside / LOG).write_text("from,to,run\n")
    with open(aside / LOG, "r+") as held:
        fcntl.lockf(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        r = apply(cat, aside)
        assert r.returncode == 1, r.stderr
        assert f"another apply is running (pid {os.getpid()})" in r.stderr, r.stderr
        assert sorted(p.name for p in pics.iterdir()) == ["big.jpg", "copy0.jpg", "copy1.jpg"]
        r = ferry("dupes", "--undo", aside, "--apply")
        assert r.returncode == 1 and "another apply is running" in r.stderr, r.stderr
    assert (aside / LOG).read_text() == "from,to,run\n"
    assert apply(cat, aside).returncode == 0
    assert sorted(p.name for p in pics.iterdir()) == ["big.jpg"]


def test_apply_refused_while_the_catalog_is_locked(tmp_path):
    """`ferry hash` (or another apply into another folder) holds the catalog's
    lock: the apply is refused and moves nothing; a dry run still lists."""
    pics, aside = tmp_path / "pics", tmp_path / "aside"
    three_copies(pics)
    cat = hashed(tmp_path, pics)
    with open(str(cat) + ".journal", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        r = apply(cat, aside)
        assert r.returncode == 1 and "another ferry is updating this catalog" in r.stderr, \
            r.stderr
        assert len(list(pics.iterdir())) == 3
        r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", aside)
        assert r.returncode == 0 and r.stderr.count("would move /") == 2, r.stderr


def test_two_applies_with_opposite_keepers_keep_a_copy(tmp_path):
    """Issue 52 item 5 as found: two applies at once into one folder, the
    second keeping what the first moves. The first stalls inside its copy
    (another file system; FERRY_STALL_AT stalls the copy's second block):
    the second is refused, naming the first's pid; the library keeps a copy
    of the picture."""
    other = second_file_system(tmp_path)
    try:
        pics = tmp_path / "pics"
        pics.mkdir()
        jpg = (FIX / "rgb420.jpg").read_bytes()
        (pics / "a.jpg").write_bytes(jpg + b"\0" * 300_000)
        (pics / "b.jpg").write_bytes(jpg + b"\0" * 200_000)
        cat = hashed(tmp_path, pics)
        env = dict(os.environ, FERRY_STALL_AT="2:3000")
        first = subprocess.Popen([FERRY_BIN, "dupes", cat, "--threshold", "40", "--keep",
                                  "size", "--move-dupes-to", other, "--apply", "-q"], env=env,
                                 stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.time() + 20
            while time.time() < deadline and not any(p.is_file() for p in other.rglob("*")
                                                     if p.name != LOG):
                time.sleep(0.02)
            assert first.poll() is None, "the first apply did not stall in its copy"
            # from a copy of the catalog: DIR's lock refuses it
            shutil.copy(cat, tmp_path / "copy.fidx")
            r = ferry("dupes", tmp_path / "copy.fidx", "--threshold", "40", "--keep", "path",
                      "--move-dupes-to", other, "--apply", "-q")
            assert r.returncode == 1, r.stderr
            assert f"another apply is running (pid {first.pid})" in r.stderr, r.stderr
            # from the same catalog into another folder: the catalog's lock refuses it
            r = ferry("dupes", cat, "--threshold", "40", "--keep", "path", "--move-dupes-to",
                      tmp_path / "elsewhere", "--apply", "-q")
            assert r.returncode == 1 and "another ferry is updating this catalog" in r.stderr, \
                r.stderr
        finally:
            first.wait(timeout=60)
        assert first.returncode == 0, first.stderr.read()
        assert sorted(p.name for p in pics.iterdir()) == ["a.jpg"]
    finally:
        shutil.rmtree(other, ignore_errors=True)


# ------------------------------------------------------------ item 6


def test_apply_list_keeper_inside_the_destination_refused(tmp_path):
    """A move list whose keeper lies inside the move destination: refused
    (the plain mover never keeps there either), so the library's last copy
    stays."""
    pics, aside = tmp_path / "pics", tmp_path / "aside"
    pics.mkdir()
    aside.mkdir()
    shutil.copy(FIX / "rgb420.jpg", pics / "a.jpg")
    shutil.copy(FIX / "rgb444.jpg", aside / "x.jpg")
    cat = hashed(tmp_path, pics, aside)
    lst = tmp_path / "list.csv"
    a, x = pics / "a.jpg", aside / "x.jpg"
    lst.write_text(f"path,keeper,path_b64,keeper_b64\n{a},{x},{b64(a)},{b64(x)}\n")
    r = ferry("dupes", cat, "--threshold", "40", "--apply-list", lst, "--move-dupes-to", aside,
              "--apply", "-q")
    assert r.returncode == 3 and "line 2" in r.stderr and "inside the move destination" in \
        r.stderr, r.stderr
    assert a.exists() and x.exists()


# ------------------------------------------------------------ item 7


def test_kill_during_a_copy_leaves_no_partial_file(tmp_path):
    """kill -9 in the middle of a copy to another file system: nothing under
    the final name, the source whole; the next run removes the temporary
    (its exact name) and moves the file; the copy is whole, with its times."""
    other = second_file_system(tmp_path)
    try:
        pics = tmp_path / "pics"
        pics.mkdir()
        jpg = (FIX / "rgb420.jpg").read_bytes()
        body = jpg + bytes(range(256)) * 2000  # 512 KB after the picture: several blocks
        (pics / "big.jpg").write_bytes((FIX / "rgb444.jpg").read_bytes() + b"\0" * 900_000)
        (pics / "copy.jpg").write_bytes(body)
        os.utime(pics / "copy.jpg", ns=(1_500_000_000_123, 1_500_000_000_456))
        cat = hashed(tmp_path, pics)
        env = dict(os.environ, FERRY_STALL_AT="2:30000")
        p = subprocess.Popen([FERRY_BIN, "dupes", cat, "--threshold", "40", "--move-dupes-to",
                              other, "--apply", "-q"], env=env, stderr=subprocess.PIPE)
        final = pathlib.Path(str(other) + str((pics / "copy.jpg").resolve()))
        deadline = time.time() + 20
        while time.time() < deadline and not any(
                q.is_file() and q.stat().st_size > 0 for q in final.parent.glob("*")
                if final.parent.is_dir()):
            time.sleep(0.02)
        alive = p.poll() is None
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
        assert alive, "the apply did not stall inside its copy"
        assert not final.exists(), "a partial copy under the final name"
        left = [q.name for q in final.parent.iterdir()]
        assert left == [".copy.jpg.ferry-part"], left
        assert (pics / "copy.jpg").read_bytes() == body
        assert log_rows(other) == []
        r = apply(cat, other)
        assert r.returncode == 0, r.stderr
        assert sorted(q.name for q in final.parent.iterdir()) == ["copy.jpg"]
        assert final.read_bytes() == body and final.stat().st_mtime_ns == 1_500_000_000_456
        assert not (pics / "copy.jpg").exists()
        assert [(x["from"], x["to"]) for x in log_rows(other)] == \
            [(str((pics / "copy.jpg").resolve()), str(final))]
    finally:
        shutil.rmtree(other, ignore_errors=True)


def test_identical_copy_at_the_destination_is_finished(tmp_path):
    """A destination that already holds a whole, identical copy (a run killed
    after its rename, before its log and unlink): verified, logged, the
    source removed. One that differs: left alone, reported (exit 3)."""
    pics, aside = tmp_path / "pics", tmp_path / "aside"
    three_copies(pics)
    cat = hashed(tmp_path, pics)
    c0, c1 = (pics / "copy0.jpg").resolve(), (pics / "copy1.jpg").resolve()
    d0, d1 = (pathlib.Path(str(aside) + str(c)) for c in (c0, c1))
    d0.parent.mkdir(parents=True)
    shutil.copy(c0, d0)
    d1.write_bytes(b"someone else's file")
    r = apply(cat, aside)
    assert r.returncode == 3, r.stderr
    assert "identical" in r.stderr and f"{d1}: already exists" in r.stderr, r.stderr
    assert not c0.exists() and c1.exists()
    assert d0.read_bytes() == (FIX / "rgb420.jpg").read_bytes()
    assert d1.read_bytes() == b"someone else's file"
    assert [x["from"] for x in log_rows(aside)] == [str(c0)]


# ------------------------------------------------------------ item 8, 26


def test_move_list_text_and_base64_must_agree(tmp_path):
    """A line whose text columns say one thing and base64 columns another is
    refused, naming the line; hand-edited text without base64 columns is
    followed; names the HTML page writes escaped (bytes not UTF-8 as \\xNN, a
    backslash as \\\\) agree with their bytes."""
    pics, aside = tmp_path / "pics", tmp_path / "aside"
    pics.mkdir()
    for n in ("orig.jpg", "q55.jpg"):
        shutil.copy(FIX / "rgb420.jpg", pics / n)
    odd = os.fsencode(str(pics)) + b"/odd\xff\\name.jpg"
    shutil.copy(FIX / "rgb420.jpg", odd)
    cat = hashed(tmp_path, pics)
    orig, q55 = str(pics / "orig.jpg"), str(pics / "q55.jpg")
    lst = tmp_path / "list.csv"
    # the text says "move q55, keep orig"; the base64 the opposite
    lst.write_text(f"path,keeper,path_b64,keeper_b64\n{q55},{orig},{b64(orig)},{b64(q55)}\n")
    r = ferry("dupes", cat, "--threshold", "40", "--apply-list", lst, "--move-dupes-to", aside,
              "--apply", "-q")
    assert r.returncode == 3 and "line 2" in r.stderr and "disagree" in r.stderr, r.stderr
    assert (pics / "orig.jpg").exists() and (pics / "q55.jpg").exists()
    # the page's escaped text beside the exact bytes: agree
    shown = str(pics) + "/odd\\xFF\\\\name.jpg"
    lst.write_bytes(("path,keeper,path_b64,keeper_b64\n" + f"{shown},{orig},"
                     f"{base64.b64encode(odd).decode()},{b64(orig)}\n").encode())
    r = ferry("dupes", cat, "--threshold", "40", "--apply-list", lst, "--move-dupes-to", aside,
              "--apply", "-q")
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(odd)
    # text only (the base64 columns deleted by hand): followed
    lst.write_text(f"path,keeper\n{q55},{orig}\n")
    r = ferry("dupes", cat, "--threshold", "40", "--apply-list", lst, "--move-dupes-to", aside,
              "--apply", "-q")
    assert r.returncode == 0, r.stderr
    assert (pics / "orig.jpg").exists() and not (pics / "q55.jpg").exists()


def test_move_list_with_a_utf8_bom(tmp_path):
    """Excel's "CSV UTF-8" starts with a byte order mark: still a move list."""
    pics, aside = tmp_path / "pics", tmp_path / "aside"
    three_copies(pics)
    cat = hashed(tmp_path, pics)
    lst = tmp_path / "list.csv"
    a, k = pics / "copy0.jpg", pics / "big.jpg"
    lst.write_bytes(b"\xef\xbb\xbf" + f"path,keeper\r\n{a},{k}\r\n".encode())
    r = ferry("dupes", cat, "--threshold", "40", "--apply-list", lst, "--move-dupes-to", aside,
              "--apply", "-q")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in pics.iterdir()) == ["big.jpg", "copy1.jpg"]


# ------------------------------------------------------------ item 9


def test_symbolic_link_inside_the_destination_not_followed(tmp_path):
    """`ln -s /elsewhere DIR/tmp`: no file lands in /elsewhere; each move is
    refused, naming the link, and the files stay."""
    pics, aside, elsewhere = tmp_path / "pics", tmp_path / "aside", tmp_path / "elsewhere"
    three_copies(pics)
    cat = hashed(tmp_path, pics)
    elsewhere.mkdir()
    aside.mkdir()
    first = pathlib.Path(str(pics.resolve())).parts[1]  # "tmp", under pytest
    (aside / first).symlink_to(elsewhere)
    r = apply(cat, aside)
    assert r.returncode == 3 and "symbolic link" in r.stderr and str(aside / first) in r.stderr, \
        r.stderr
    assert list(elsewhere.rglob("*")) == []
    assert sorted(p.name for p in pics.iterdir()) == ["big.jpg", "copy0.jpg", "copy1.jpg"]
    assert log_rows(aside) == []


def test_symbolic_link_as_the_undo_log_refused(tmp_path):
    pics, aside = tmp_path / "pics", tmp_path / "aside"
    three_copies(pics)
    cat = hashed(tmp_path, pics)
    aside.mkdir()
    target = tmp_path / "victim.csv"
    target.write_text("from,to\n")
    (aside / LOG).symlink_to(target)
    r = apply(cat, aside)
    assert r.returncode == 1 and str(aside / LOG) in r.stderr, r.stderr
    assert target.read_text() == "from,to\n" and len(list(pics.iterdir())) == 3


# ------------------------------------------------------------ item 14


def _entries(cat):
    r = ferry("index", "export", cat)
    assert r.returncode == 0, r.stderr
    return [row["path"] for row in csv.DictReader(r.stdout.splitlines())]


def test_destination_inside_the_library_keeps_its_own_photos(tmp_path):
    """A move destination inside the library: the photos the user keeps
    there stay in the catalog; only what ferry moved there (its log's
    destinations) is left out. A folder holding a ferry-moves.csv that
    lists nothing hides nothing."""
    pics = tmp_path / "pics"
    three_copies(pics)
    keep = pics / "keep"
    keep.mkdir()
    shutil.copy(FIX / "palette.png", keep / "mine.png")
    shutil.copy(FIX / "gray.png", keep / "mine2.png")
    cat = hashed(tmp_path, pics)
    assert apply(cat, keep).returncode == 0
    r = ferry("hash", pics, "-o", cat)
    # the two copies moved away leave the catalog; the user's two photos stay
    assert r.returncode == 0 and " 2 removed" in r.stderr, r.stderr
    paths = _entries(cat)
    assert str(keep / "mine.png") in paths and str(keep / "mine2.png") in paths, paths
    assert not any(p.startswith(str(keep) + "/") and p.endswith(".jpg") for p in paths), paths
    assert len(paths) == 3
    other = pics / "other"
    other.mkdir()
    shutil.copy(FIX / "rgb.png", other / "x.png")
    (other / LOG).write_text("from,to\n")
    r = ferry("hash", pics, "-o", cat)
    assert r.returncode == 0, r.stderr
    assert str(other / "x.png") in _entries(cat)


# ------------------------------------------------------------ item 18


def test_fifo_in_the_catalog_is_never_waited_on(tmp_path):
    """A catalog entry that became a FIFO: `ferry dupes` (the keeper's camera
    check) and an apply neither block nor move it."""
    pics, aside = tmp_path / "pics", tmp_path / "aside"
    three_copies(pics)
    cat = hashed(tmp_path, pics)
    (pics / "copy0.jpg").unlink()
    os.mkfifo(pics / "copy0.jpg")
    for keep in ("original,pixels,size,oldest", "path"):
        t = time.time()
        r = ferry("dupes", cat, "--threshold", "40", "--keep", keep, timeout=20)
        assert r.returncode == 0 and time.time() - t < 15, r.stderr
    r = apply(cat, aside, timeout=20)
    assert r.returncode == 3 and "copy0.jpg" in r.stderr, r.stderr
    assert (pics / "copy0.jpg").exists() and not (pics / "copy1.jpg").exists()


# ------------------------------------------------------------ undo


def _runs(dest):
    r = ferry("dupes", "--undo", dest, "--list-runs")
    assert r.returncode == 0, r.stderr
    return list(csv.DictReader(r.stdout.splitlines()))


def test_undo_puts_back_the_last_run_then_the_one_before(tmp_path):
    pics, aside = tmp_path / "pics", tmp_path / "aside"
    three_copies(pics)
    shutil.copy(FIX / "progressive.jpg", pics / "p0.jpg")
    shutil.copy(FIX / "progressive.jpg", pics / "p1.jpg")
    for p in pics.iterdir():
        os.utime(p, ns=(1_400_000_000_000_000_000, 1_400_000_000_000_000_000))
    cat = hashed(tmp_path, pics)
    lst = tmp_path / "list.csv"
    lst.write_text(f"path,keeper\n{pics / 'p1.jpg'},{pics / 'p0.jpg'}\n")
    r = ferry("dupes", cat, "--threshold", "40", "--apply-list", lst, "--move-dupes-to", aside,
              "--apply", "-q")
    assert r.returncode == 0, r.stderr
    assert apply(cat, aside).returncode == 0
    assert sorted(p.name for p in pics.iterdir()) == ["big.jpg", "p0.jpg"]
    runs = _runs(aside)
    assert [int(x["files"]) for x in runs] == [1, 2] and all(x["put_back"] == "0" for x in runs)
    assert {x["run"] for x in log_rows(aside)} == {runs[0]["run"], runs[1]["run"]}
    r = ferry("dupes", "--undo", aside)  # a dry run
    assert r.returncode == 0 and r.stderr.count("would put back /") == 2, r.stderr
    assert "dry run" in r.stderr and sorted(p.name for p in pics.iterdir()) == ["big.jpg",
                                                                                 "p0.jpg"]
    r = ferry("dupes", "--undo", aside, "--apply")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in pics.iterdir()) == ["big.jpg", "copy0.jpg", "copy1.jpg",
                                                      "p0.jpg"]
    assert (pics / "copy0.jpg").read_bytes() == (FIX / "rgb420.jpg").read_bytes()
    assert (pics / "copy0.jpg").stat().st_mtime_ns == 1_400_000_000_000_000_000
    assert [x["put_back"] for x in _runs(aside)] == ["0", "2"]
    r = ferry("dupes", "--undo", aside, "--apply")  # the run before
    assert r.returncode == 0 and (pics / "p1.jpg").exists(), r.stderr
    r = ferry("dupes", "--undo", aside, "--apply")
    assert r.returncode == 0 and "nothing to put back" in r.stderr, r.stderr
    # the files are back where the catalog has them: they move again
    assert apply(cat, aside).returncode == 0
    assert sorted(p.name for p in pics.iterdir()) == ["big.jpg", "p0.jpg"]


def test_undo_a_named_run_and_refusals(tmp_path):
    """--run ID puts back that run alone; a file back in its place is never
    overwritten (named, exit 3; the others are put back); an unknown run is
    named; a log row pointing outside DIR is refused."""
    pics, aside = tmp_path / "pics", tmp_path / "aside"
    three_copies(pics)
    cat = hashed(tmp_path, pics)
    assert apply(cat, aside).returncode == 0
    run = _runs(aside)[0]["run"]
    r = ferry("dupes", "--undo", aside, "--run", "no-such-run")
    assert r.returncode == 2 and "no-such-run" in r.stderr, r.stderr
    (pics / "copy0.jpg").write_bytes(b"a new file")
    r = ferry("dupes", "--undo", aside, "--run", run, "--apply")
    assert r.returncode == 3 and f"{pics / 'copy0.jpg'}: exists" in r.stderr, r.stderr
    assert (pics / "copy0.jpg").read_bytes() == b"a new file"
    assert (pics / "copy1.jpg").read_bytes() == (FIX / "rgb420.jpg").read_bytes()
    (pics / "copy0.jpg").unlink()
    r = ferry("dupes", "--undo", aside, "--run", run, "--apply")
    assert r.returncode == 0 and (pics / "copy0.jpg").exists(), r.stderr
    # a crafted row: "to" outside DIR
    victim = tmp_path / "victim.jpg"
    victim.write_bytes(b"x")
    with open(aside / LOG, "a") as f:
        f.write(f"{tmp_path / 'stolen.jpg'},{victim},crafted\n")
    r = ferry("dupes", "--undo", aside, "--run", "crafted", "--apply")
    assert r.returncode == 3 and "not inside" in r.stderr, r.stderr
    assert victim.exists() and not (tmp_path / "stolen.jpg").exists()


def test_undo_reads_an_old_two_column_log(tmp_path):
    """A log from before runs were marked (from,to): one run, put back."""
    pics, aside = tmp_path / "pics", tmp_path / "aside"
    pics.mkdir()
    dst = pathlib.Path(str(aside) + str(pics.resolve() / "a.jpg"))
    dst.parent.mkdir(parents=True)
    shutil.copy(FIX / "rgb420.jpg", dst)
    (aside / LOG).write_text(f"from,to\n{pics.resolve() / 'a.jpg'},{dst}\n")
    runs = _runs(aside)
    assert len(runs) == 1 and runs[0]["files"] == "1", runs
    r = ferry("dupes", "--undo", aside, "--apply")
    assert r.returncode == 0, r.stderr
    assert (pics / "a.jpg").exists() and not dst.exists()
    rows = log_rows(aside)
    assert list(rows[0]) == ["from", "to", "run"] and len(rows) == 2, rows


def test_undo_across_file_systems(tmp_path):
    other = second_file_system(tmp_path)
    try:
        pics = tmp_path / "pics"
        three_copies(pics)
        os.utime(pics / "copy0.jpg", ns=(1_300_000_000_000_000_001, 1_300_000_000_000_000_002))
        cat = hashed(tmp_path, pics)
        assert apply(cat, other).returncode == 0
        r = ferry("dupes", "--undo", other, "--apply")
        assert r.returncode == 0, r.stderr
        assert (pics / "copy0.jpg").read_bytes() == (FIX / "rgb420.jpg").read_bytes()
        assert (pics / "copy0.jpg").stat().st_mtime_ns == 1_300_000_000_000_000_002
        assert not [p for p in other.rglob("*.jpg")]
        assert not [p for p in pics.iterdir() if "ferry-part" in p.name]
    finally:
        shutil.rmtree(other, ignore_errors=True)
