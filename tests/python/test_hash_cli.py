"""`ferry hash`, `ferry index`, `ferry dupes` from the outside: output
formats, exit codes, messages, incremental updates, a run killed with
SIGKILL and resumed, the duplicate ground truth (pair F1 >= 0.95 with the
default settings), moving duplicates aside (dry run, --apply)."""
import base64
import csv
import io
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from ferrylib import CORPUS, FERRY_BIN, ROOT
from hashlib_ferry import write_bmp16

FIX = ROOT / "tests" / "fixtures" / "hash"
needs_corpus = pytest.mark.skipif(not (CORPUS / "dupes").is_dir(),
                                  reason=f"shared corpus not found at {CORPUS}")


def ferry(*args, **kw):
    return subprocess.run([FERRY_BIN, *map(str, args)], capture_output=True, text=True,
                          timeout=kw.pop("timeout", 300), **kw)


@pytest.fixture
def pics(tmp_path):
    """The hash fixtures, some in a subfolder, plus a broken file."""
    d = tmp_path / "pics"
    (d / "sub").mkdir(parents=True)
    for i, p in enumerate(sorted(FIX.glob("*"))):
        if p.suffix in (".jpg", ".png", ".webp"):
            shutil.copy(p, d / ("sub" if i % 3 == 0 else "") / p.name)
    (d / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a JPEG")
    (d / "readme.txt").write_text("not an image")
    return d


def test_help_and_usage_errors():
    for cmd in ("hash", "index", "dupes"):
        r = ferry(cmd, "--help")
        assert r.returncode == 0 and f"usage: ferry {cmd}" in r.stdout
    assert "hash PATH" in ferry("--help").stdout
    r = ferry("hash")
    assert r.returncode == 2 and "needs at least one file" in r.stderr
    r = ferry("hash", FIX, "--frob")
    assert r.returncode == 2 and "unknown option '--frob'" in r.stderr
    r = ferry("hash", FIX, "--hashes", "phash,sha1")
    assert r.returncode == 2 and "unknown hash 'sha1'" in r.stderr
    r = ferry("hash", FIX, "--hash-size", "12")
    assert r.returncode == 2 and "8 or 16" in r.stderr
    r = ferry("hash", FIX, "--mode", "exact")
    assert r.returncode == 2 and "fast or compatible" in r.stderr
    r = ferry("dupes")
    assert r.returncode == 2 and "needs a catalog" in r.stderr
    r = ferry("index", "explode", "x.fidx")
    assert r.returncode == 2 and "unknown subcommand" in r.stderr


def test_hash_prints_imagehash_hex():
    """Compatible mode on stdout: imagehash's strings (golden.csv)."""
    r = ferry("hash", FIX / "rgb420.jpg", FIX / "gray.png", "--mode", "compatible",
              "--hash-size", "8")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [pathlib.Path(x["path"]).name for x in rows] == ["gray.png", "rgb420.jpg"]
    gold = {(g["file"], g["kind"]): g["hex"] for g in csv.DictReader(open(FIX / "golden.csv"))
            if g["size"] in ("8", "3")}
    for row in rows:
        name = pathlib.Path(row["path"]).name
        for kind in ("ahash", "dhash", "dhash_v", "phash", "whash", "colorhash"):
            assert row[kind] == gold[(name, kind)], (name, kind)


def test_bad_files_reported_run_goes_on(pics):
    r = ferry("hash", pics)
    assert r.returncode == 3
    assert "broken.jpg" in r.stderr  # named, with the reason
    assert len(r.stdout.strip().splitlines()) == 1 + sum(1 for _ in pics.rglob("*.*")) - 2
    r = ferry("hash", pics / "nope")
    assert r.returncode == 1 and "nope" in r.stderr
    empty = pics / "empty"
    empty.mkdir()
    r = ferry("hash", empty)
    assert r.returncode == 1 and "no image files" in r.stderr


def test_device_cuda_fast_without_a_gpu(pics):
    """--device cuda --mode fast: without a usable GPU the cores hash alone,
    with the same rows as the CPU run and a note saying why; --device cuda
    alone (compatible mode) refuses. Progress goes to a terminal only."""
    cpu = ferry("hash", pics, "--mode", "fast")
    gpu = ferry("hash", pics, "--device", "cuda", "--mode", "fast")
    if "is not used" not in gpu.stderr:
        pytest.skip("a GPU with a JPEG engine answers here (tests/unit/test_hash_engine.c)")
    assert gpu.returncode == cpu.returncode == 3 and gpu.stdout == cpu.stdout
    assert "JPEG engine of cuda:0 is not used" in gpu.stderr
    assert "\r" not in cpu.stderr and "files (" not in cpu.stderr  # no progress in a pipe
    r = ferry("hash", pics, "--device", "cuda")
    assert r.returncode == 1 and "cannot hash on GPU cuda:0" in r.stderr


def test_compatible_csv_says_where_it_is_not_imagehash(tmp_path):
    """`ferry hash --mode compatible` on a 16-bit BMP: its row as usual, and
    a line on stderr that its hashes are not bit-exact with imagehash; none
    for 8-bit files or in fast mode; with -o, a count in the summary."""
    d = tmp_path / "p"
    d.mkdir()
    write_bmp16(d / "deep.bmp")
    # a 16-bit PNG is decoded as Pillow does (test_hash_png16.py): no line for it
    shutil.copy(ROOT / "tests" / "fixtures" / "codecs" / "gray16.png", d / "deep.png")
    shutil.copy(FIX / "rgb.png", d / "rgb.png")
    r = ferry("hash", d, "--mode", "compatible")
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.strip().splitlines()) == 4
    assert ("1 file not bit-exact with imagehash (HEIF" in r.stderr and
            str(d / "deep.bmp") in r.stderr and "deep.png" not in r.stderr), r.stderr
    r = ferry("hash", d / "rgb.png", "--mode", "compatible")
    assert r.returncode == 0 and "bit-exact" not in r.stderr, r.stderr
    r = ferry("hash", d, "--mode", "fast")
    assert r.returncode == 0 and "bit-exact" not in r.stderr, r.stderr
    # a catalog: counted among the files hashed in this run (ferry_index_stats.inexact)
    cat = tmp_path / "c.fidx"
    r = ferry("hash", d, "--mode", "compatible", "-o", cat)
    assert r.returncode == 0 and "1 of the files hashed are not bit-exact" in r.stderr, r.stderr
    r = ferry("hash", d, "--mode", "compatible", "-o", cat)  # nothing hashed again
    assert r.returncode == 0 and "bit-exact" not in r.stderr, r.stderr


def test_catalog_incremental_and_export(pics, tmp_path):
    cat = tmp_path / "c.fidx"
    r = ferry("hash", pics, "-o", cat)
    assert r.returncode == 3 and "1 failed" in r.stderr, r.stderr
    n = sum(1 for p in pics.rglob("*") if p.suffix in (".jpg", ".png", ".webp"))
    assert f"{n} files ({n} hashed" in r.stderr
    r = ferry("hash", pics, "-o", cat)
    assert f"0 hashed, {n} unchanged" in r.stderr
    (pics / "new.jpg").write_bytes((FIX / "rgb444.jpg").read_bytes())
    (pics / "rgb.png").unlink()
    r = ferry("hash", pics, "-o", cat)
    assert "1 hashed" in r.stderr and "1 removed" in r.stderr, r.stderr
    r = ferry("index", "info", cat)
    assert r.returncode == 0 and f"{n} files, 1 failed" in r.stdout and "mode fast" in r.stdout
    r = ferry("index", "export", cat)
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == n and {"phash", "colorhash", "mtime_ns"} <= set(rows[0])
    assert len(rows[1]["phash"]) == 64  # 256-bit by default for catalogs
    out = tmp_path / "c.json"
    assert ferry("index", "export", cat, "--format", "json", "-o", out).returncode == 0
    j = json.loads(out.read_text())
    assert len(j["entries"]) == n and j["options"]["hash_size"] == 16
    bad = [e for e in j["entries"] if e["error"]]
    assert len(bad) == 1 and "broken.jpg" in bad[0]["path"]
    r = ferry("index", "export", pics / "broken.jpg")
    assert r.returncode == 1 and "not a ferry catalog" in r.stderr
    # an output that is the catalog itself (or a link to it) is refused, the catalog kept
    before = cat.read_bytes()
    (tmp_path / "link.csv").symlink_to(cat)
    for cmd in (("dupes", cat, "-o", cat), ("dupes", cat, "-o", tmp_path / "link.csv")):
        r = ferry(*cmd)
        assert r.returncode == 2 and "refusing to overwrite" in r.stderr, (cmd, r.stderr)
    r = ferry("index", "export", cat, "-o", cat)  # (links too: test_catalog_shares.py)
    assert r.returncode == 2 and f"{cat}: is the input {cat}" in r.stderr, r.stderr
    assert cat.read_bytes() == before
    r = ferry("hash", pics, "-o", pics / "new.jpg")  # a photo named as the catalog
    assert r.returncode == 1 and f"inside the input folder {pics}" in r.stderr, r.stderr
    r = ferry("hash", FIX / "rgb.png", "-o", pics / "new.jpg")  # not walked: still no catalog
    assert r.returncode == 1 and "not a ferry catalog" in r.stderr, r.stderr
    assert (pics / "new.jpg").read_bytes() == (FIX / "rgb444.jpg").read_bytes()


def test_killed_run_resumes(tmp_path):
    """SIGKILL in the middle of a run: the previous catalog is untouched,
    the journal keeps what was done, the next run resumes from it and gives
    the same catalog as an uninterrupted run."""
    src = CORPUS / "photos" if (CORPUS / "photos").is_dir() else FIX
    pics = tmp_path / "pics"
    pics.mkdir()
    files = sorted(p for p in src.iterdir() if p.suffix in (".jpg", ".png", ".webp"))
    reps = 1 if len(files) > 300 else 20
    for k in range(reps):
        for p in files:
            shutil.copy(p, pics / f"{k}_{p.name}")
    cat, clean = tmp_path / "c.fidx", tmp_path / "clean.fidx"
    first = files[: len(files) // 4]
    sub = tmp_path / "first"
    sub.mkdir()
    assert ferry("hash", pics, "-o", cat, "--threads", "1", "--hashes", "phash", "-q",
                 "--mode", "compatible").returncode in (0, 3)
    before = cat.read_bytes()
    for p in list(pics.iterdir())[::2]:  # change half of them: the next run has work to do
        os.utime(p, ns=(0, 1))
    proc = subprocess.Popen([FERRY_BIN, "hash", pics, "-o", cat, "--threads", "1", "--hashes",
                             "phash", "--mode", "compatible", "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journal = pathlib.Path(str(cat) + ".journal")
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        if journal.exists() and journal.stat().st_size > 400:
            break
        time.sleep(0.02)
    if proc.poll() is not None:
        pytest.skip("the run finished before it could be killed (machine too fast)")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert cat.read_bytes() == before  # the old catalog, intact
    assert journal.exists()
    r = ferry("hash", pics, "-o", cat, "--threads", "2", "--hashes", "phash", "--mode",
              "compatible")
    assert r.returncode in (0, 3), r.stderr
    resumed = int(r.stderr.split(" resumed")[0].rsplit(", ", 1)[1])
    print(r.stderr.strip())
    assert resumed > 0, r.stderr
    assert not journal.exists()
    assert ferry("hash", pics, "-o", clean, "--hashes", "phash", "--mode", "compatible",
                 "-q").returncode in (0, 3)
    a = ferry("index", "export", cat).stdout
    b = ferry("index", "export", clean).stdout
    strip = lambda s: [(r["path"], r["phash"], r["status"]) for r in csv.DictReader(io.StringIO(s))]
    assert strip(a) == strip(b)


def pair_f1(rows, truth_groups):
    pred, truth = set(), set()
    by_group = {}
    for r in rows:
        by_group.setdefault(r["group"], []).append(os.path.basename(r["path"]))
    for members in by_group.values():
        pred |= {tuple(sorted((a, b))) for a in members for b in members if a < b}
    tg = {}
    for f, g in truth_groups.items():
        if g >= 0:
            tg.setdefault(g, []).append(f)
    for members in tg.values():
        truth |= {tuple(sorted((a, b))) for a in members for b in members if a < b}
    tp = len(pred & truth)
    p, r = tp / max(1, len(pred)), tp / len(truth)
    return 2 * p * r / (p + r), p, r


def same_picture_truth(truth):
    """corpus/dupes' truth with the groups joined that hold one picture twice:
    tests/fixtures/corpus_dupes_same_picture.csv, pairs that
    bench/dupes_same_picture.py registered pixel to pixel (a copy mirrored,
    re-cropped or recoloured, correlation >= 0.95) although the truth keeps
    them apart."""
    # a file of no group (-1) is a group of its own
    label = {f: g if g >= 0 else 100000 + k for k, (f, g) in enumerate(sorted(truth.items()))}
    for r in csv.DictReader(open(FIX.parent / "corpus_dupes_same_picture.csv")):
        a, b = label[r["file_a"]], label[r["file_b"]]
        label = {f: (a if g == b else g) for f, g in label.items()}
    return label


@needs_corpus
@pytest.mark.parametrize("mode", ["fast", "compatible"])
def test_dupes_ground_truth_default_settings(tmp_path, mode):
    """Default settings on ../shared/corpus/dupes: pair F1 >= 0.95 and
    precision >= 0.99 once the pictures it holds twice are joined; the hash
    alone (--no-robust) F1 >= 0.95 on the truth as it is."""
    cat = tmp_path / "d.fidx"
    r = ferry("hash", CORPUS / "dupes", "-o", cat, "--mode", mode, "-q")
    assert r.returncode == 0, r.stderr
    r = ferry("dupes", cat)  # defaults: pHash, its threshold, the signatures
    assert r.returncode == 0, r.stderr
    assert "more joined by signatures" in r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    truth = {row["file"]: int(row["group"])
             for row in csv.DictReader(open(CORPUS / "dupes" / "GROUND_TRUTH.csv"))}
    f1, p, rec = pair_f1(rows, same_picture_truth(truth))
    print(f"{mode}: pair F1 {f1:.3f} (precision {p:.3f}, recall {rec:.3f})")
    assert f1 >= 0.95 and p >= 0.99
    keepers = [r for r in rows if r["keeper"] == "1"]
    assert len(keepers) == len({r["group"] for r in rows})
    j = json.loads(ferry("dupes", cat, "--format", "json", "-q").stdout)
    assert j["hash"] == "phash" and len(j["groups"]) == len(keepers)
    assert all(g["members"][0]["keeper"] for g in j["groups"])
    alone = ferry("dupes", cat, "--no-robust")
    f1, p, rec = pair_f1(list(csv.DictReader(io.StringIO(alone.stdout))), truth)
    assert f1 >= 0.95 and "0 more joined" in alone.stderr


def test_move_dupes_dry_run_and_apply(tmp_path):
    pics = tmp_path / "pics"
    pics.mkdir()
    for i in range(3):  # three copies of a picture: one group of three
        shutil.copy(FIX / "rgb420.jpg", pics / f"copy{i}.jpg")
    shutil.copy(FIX / "rgb444.jpg", pics / "big.jpg")  # same picture, larger file
    shutil.copy(FIX / "palette.png", pics / "other.png")
    cat, aside = tmp_path / "c.fidx", tmp_path / "aside"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", aside, "--format", "json")
    assert r.returncode == 0 and "dry run" in r.stderr
    # the plan goes to stderr: stdout holds the report alone, which parses
    assert r.stderr.count("would move /") == 3 and not aside.exists()
    assert "would move" not in r.stdout and len(json.loads(r.stdout)["groups"]) == 1
    assert len(list(pics.iterdir())) == 5
    r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", aside, "--apply", "-q")
    assert r.returncode == 0, r.stderr
    left = sorted(p.name for p in pics.iterdir())
    assert left == ["big.jpg", "other.png"]  # the keeper (largest file) and the odd one stay
    moved = list(aside.rglob("*.jpg"))
    assert len(moved) == 3 and all(str(pics)[1:] in str(m) for m in moved)
    log = list(csv.DictReader(open(aside / "ferry-moves.csv")))
    assert len(log) == 3 and all(pathlib.Path(x["to"]).exists() for x in log)
    # again: the files are gone, left out (never listed or moved twice), the user is told
    r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", aside, "--apply", "-q")
    assert r.returncode == 0 and "3 entries left out" in r.stderr and "moved 0 files" in r.stderr
    assert len(list(csv.DictReader(open(aside / "ferry-moves.csv")))) == 3
    r = ferry("dupes", cat, "--apply")
    assert r.returncode == 2 and "--move-dupes-to" in r.stderr


def _three_copies(pics):
    pics.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIX / "rgb444.jpg", pics / "big.jpg")  # the keeper: the largest file
    for i in range(2):
        shutil.copy(FIX / "rgb420.jpg", pics / f"copy{i}.jpg")


def test_move_across_file_systems(tmp_path):
    """Issue 16 item 15: a move to another file system copies: the copy keeps
    the file's times and the source goes; when the destination fills up (the
    FERRY_FAIL_WRITE fault point: ENOSPC inside the copy) the error names
    ENOSPC, the partial copy is removed and the source stays (exit 3)."""
    other = pathlib.Path("/dev/shm")
    if not other.is_dir() or os.stat(other).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system here (/dev/shm absent or on the same device as "
                    f"{tmp_path}): the cross-device copy is not exercised")
    pics = tmp_path / "pics"
    _three_copies(pics)
    old = 1_500_000_000
    for p in pics.iterdir():
        os.utime(p, ns=(old * 10**9 + 123, old * 10**9 + 456))
    cat = tmp_path / "c.fidx"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    aside = pathlib.Path(tempfile.mkdtemp(dir=other, prefix="ferry-move-"))
    try:
        env = dict(os.environ, FERRY_FAIL_WRITE="3000")
        r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", aside / "a", "--apply",
                  "-q", env=env)
        assert r.returncode == 3 and "No space left on device" in r.stderr, r.stderr
        assert (pics / "copy0.jpg").exists() or (pics / "copy1.jpg").exists()
        left = sorted(p.name for p in pics.iterdir())
        assert left[0] == "big.jpg" and len(left) >= 2
        partial = [p for p in (aside / "a").rglob("*.jpg")]
        for p in partial:  # only whole copies remain, and their sources are gone
            assert not (pics / p.name).exists()
        r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", aside / "b", "--apply", "-q")
        assert r.returncode in (0, 3), r.stderr
        assert sorted(p.name for p in pics.iterdir()) == ["big.jpg"]
        moved = list(aside.rglob("*.jpg"))
        assert len(moved) == 2
        for m in moved:
            assert m.stat().st_mtime_ns == old * 10**9 + 456
            assert m.read_bytes() == (FIX / "rgb420.jpg").read_bytes()
    finally:
        shutil.rmtree(aside, ignore_errors=True)


def test_move_keeper_is_a_link(tmp_path):
    """A symbolic link to a group member is another name of it, never
    cataloged (docs/DEDUP.md): the member keeps and stays, the link never
    dangles."""
    pics = tmp_path / "pics"
    pics.mkdir()
    shutil.copy(FIX / "rgb444.jpg", pics / "z_original.jpg")
    (pics / "a_link.jpg").symlink_to("z_original.jpg")
    shutil.copy(FIX / "rgb420.jpg", pics / "m_copy.jpg")
    cat, aside = tmp_path / "c.fidx", tmp_path / "aside"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", aside, "--apply", "-q")
    assert "a_link.jpg" not in r.stderr, r.stderr
    assert (pics / "a_link.jpg").exists() and (pics / "z_original.jpg").exists()
    assert not (pics / "m_copy.jpg").exists()  # a real copy is moved
    assert r.returncode == 0, r.stderr


def test_move_keeper_gone_or_replaced(tmp_path):
    """The keeper deleted after hashing: it is left out (never listed), the
    group is what remains and one copy always stays. The keeper replaced by
    another picture: nothing of its group moves (exit 3)."""
    pics = tmp_path / "pics"
    _three_copies(pics)
    cat, aside = tmp_path / "c.fidx", tmp_path / "aside"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    keeper = pics / "big.jpg"
    keeper.unlink()
    r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", aside, "--apply", "-q")
    assert r.returncode == 0 and "1 entries left out" in r.stderr, r.stderr
    assert sorted(p.name for p in pics.iterdir()) == ["copy0.jpg"]
    shutil.rmtree(pics)
    shutil.rmtree(aside)
    _three_copies(pics)
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    keeper.unlink()
    shutil.copy(FIX / "palette.png", keeper)  # another picture under the keeper's name
    r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", aside, "--apply", "-q")
    assert r.returncode == 3 and "keeper of its group is gone or changed" in r.stderr, r.stderr
    assert sorted(p.name for p in pics.iterdir()) == ["big.jpg", "copy0.jpg", "copy1.jpg"]


def test_move_destination_inside_the_tree(tmp_path):
    """Moved copies hashed again from inside the destination neither become
    keepers nor make the original move."""
    pics = tmp_path / "pics"
    _three_copies(pics)
    cat, aside = tmp_path / "c.fidx", pics / "dupes"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", aside, "--apply", "-q")
    assert r.returncode == 0, r.stderr
    r = ferry("hash", pics, "-o", cat)  # the walk leaves the move destination out
    assert r.returncode == 0 and "1 `ferry dupes` move destinations walked" in r.stderr, r.stderr
    r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", aside, "--apply", "-q")
    assert r.returncode == 0 and "moved 0 files" in r.stderr, r.stderr
    # named as a root, it is hashed: its files still neither keep nor move
    assert ferry("hash", pics, aside, "-o", cat, "-q").returncode == 0
    r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", aside, "--apply", "-q")
    assert r.returncode == 0 and "already inside" in r.stderr, r.stderr
    assert (pics / "big.jpg").exists()
    assert len(list(aside.rglob("*.jpg"))) == 2
    assert not list((aside).rglob("dupes/*/dupes"))  # no nesting


def rewrite_catalog_paths(cat, fn):
    """Rewrites every entry's path of a .fidx with fn (the format of
    src/catalog/catalog.c and record.c: 40-byte header, then per entry a u32
    length and the record, whose path length is the u16 at offset 32; a
    20-byte trailer whose last 4 bytes are the CRC-32 of all before them)."""
    import struct
    import zlib
    d = cat.read_bytes()
    count = struct.unpack_from("<Q", d, 32)[0]
    out, at = bytearray(d[:40]), 40
    for _ in range(count):
        n = struct.unpack_from("<I", d, at)[0]
        rec = d[at + 4:at + 4 + n]
        pl = struct.unpack_from("<H", rec, 32)[0]
        path = fn(rec[40:40 + pl].decode())
        pb = path.encode()
        new = bytearray(rec[:40]) + pb + rec[40 + pl:]
        struct.pack_into("<H", new, 32, len(pb))
        out += struct.pack("<I", len(new)) + new
        at += 4 + n
    out += d[at:at + 16]
    out += struct.pack("<I", zlib.crc32(bytes(out)))
    cat.write_bytes(bytes(out))


def test_move_paths_with_dotdot_stay_inside(tmp_path):
    """Catalog paths with '..' (here '/../../../' before the real path, as a
    crafted catalog may hold) are normalised: every move lands inside the
    destination."""
    pics = tmp_path / "pics"
    _three_copies(pics)
    cat, aside = tmp_path / "c.fidx", tmp_path / "aside"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    rewrite_catalog_paths(cat, lambda p: "/../../.." + p)
    r = ferry("index", "export", cat)
    assert r.returncode == 0 and "/../../.." in r.stdout, r.stderr
    r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", aside, "--apply", "-q")
    assert r.returncode == 0, r.stderr
    moved = list(aside.rglob("*.jpg"))
    assert len(moved) == 2 and all(str(m.resolve()).startswith(str(aside.resolve()) + "/")
                                   for m in moved)
    log = list(csv.DictReader(open(aside / "ferry-moves.csv")))
    assert all(".." not in row["to"] for row in log)


def test_move_log_quotes_odd_names(tmp_path):
    """A name with quotes, a comma and a newline stays one field of the undo log."""
    pics = tmp_path / "pics"
    _three_copies(pics)
    odd = pics / 'a "b",\nc.jpg'
    (pics / "copy0.jpg").rename(odd)
    cat, aside = tmp_path / "c.fidx", tmp_path / "aside"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", aside, "--apply", "-q")
    assert r.returncode == 0, r.stderr
    log = list(csv.DictReader(open(aside / "ferry-moves.csv", newline="")))
    assert len(log) == 2 and any(row["from"] == str(odd) for row in log)


def test_unreadable_folder_keeps_its_entries(tmp_path):
    """A folder the walk cannot list is named, the run exits 3, and its old
    entries stay in the catalog instead of being dropped as removed.
    (FERRY_DENY_DIR stands in for a permission error: tests run as root.)"""
    pics = tmp_path / "pics"
    _three_copies(pics / "locked")
    shutil.copy(FIX / "palette.png", pics / "open.png")
    cat = tmp_path / "c.fidx"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    before = ferry("index", "export", cat).stdout
    assert before.count("/locked/") == 3
    env = dict(os.environ, FERRY_DENY_DIR="locked")
    r = ferry("hash", pics, "-o", cat, env=env)
    assert r.returncode == 3, r.stderr
    assert "locked: Permission denied (not hashed; its catalog entries are kept)" in r.stderr
    assert "0 removed" in r.stderr and "their 3 catalog entries are kept" in r.stderr
    assert ferry("index", "export", cat).stdout.count("/locked/") == 3
    if os.geteuid() != 0:  # a real permission error, where permissions deny something
        (pics / "locked").chmod(0)
        try:
            r = ferry("hash", pics, "-o", cat)
            assert r.returncode == 3 and "Permission denied" in r.stderr, r.stderr
        finally:
            (pics / "locked").chmod(0o755)


def test_walks_agree_on_names(tmp_path):
    """Every walk (a catalog's, `ferry hash`'s, the loader's) takes the same
    names (io/walk.c): .jpe and .jfif are JPEGs; dot files and dot folders
    (macOS's ._IMG.jpg, .thumbnails/) are left out, also with --all-files."""
    pics = tmp_path / "pics"
    (pics / "cls" / ".thumbnails").mkdir(parents=True)
    for name in ["a.jpg", "b.JPE", "c.jfif", "._a.jpg", ".thumbnails/t.jpg"]:
        shutil.copy(sorted(FIX.glob("*.jpg"))[0], pics / "cls" / name)
    want = {"a.jpg", "b.JPE", "c.jfif"}
    r = ferry("hash", pics, "-q")
    assert r.returncode == 0, r.stderr
    got = {pathlib.Path(row["path"]).name for row in csv.DictReader(io.StringIO(r.stdout))}
    assert got == want
    cat = tmp_path / "c.fidx"
    assert ferry("hash", pics, "-o", cat, "--all-files", "-q").returncode == 0
    exported = ferry("index", "export", cat).stdout
    assert {pathlib.Path(row["path"]).name
            for row in csv.DictReader(io.StringIO(exported))} == want
    r = ferry("load", pics, "--batch", "8", "--size", "32", "--epochs", "1")
    assert r.returncode == 0, r.stderr
    assert "epoch 0: 3 images, 0 skipped" in r.stdout + r.stderr, r.stdout + r.stderr


def test_deep_and_long_paths_are_walked_or_named(tmp_path):
    """A tree deeper than the open-file limit is walked whole; a path longer
    than the system's limit is named, never dropped silently."""
    import resource
    deep = tmp_path / "deep"
    d = deep
    for i in range(60):
        d = d / f"d{i}"
    d.mkdir(parents=True)
    shutil.copy(FIX / "palette.png", d / "bottom.png")
    cat = tmp_path / "c.fidx"

    def low_fds():
        resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))
    r = subprocess.run([FERRY_BIN, "hash", str(deep), "-o", str(cat)], capture_output=True,
                       text=True, timeout=120, preexec_fn=low_fds)
    assert r.returncode == 0 and "1 files (1 hashed" in r.stderr, r.stderr
    # a path past PATH_MAX (4096 bytes), made one level at a time
    long_root = tmp_path / "long"
    long_root.mkdir()
    fd = os.open(long_root, os.O_RDONLY)
    try:
        for i in range(20):
            name = f"{i:02d}" + "x" * 240
            os.mkdir(name, dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        with open(os.open("deep.png", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "wb") as f:
            f.write((FIX / "palette.png").read_bytes())
    finally:
        os.close(fd)
    r = ferry("hash", long_root, "-o", tmp_path / "l.fidx")
    assert r.returncode in (1, 3), r.stderr
    assert "File name too long" in r.stderr, r.stderr


def test_killed_save_leftovers_are_removed(tmp_path):
    """A catalog save killed between writing CATALOG.tmpPID and renaming it
    leaves that file; the next run (holding the catalog's lock) removes
    exactly such names, nothing else."""
    pics = tmp_path / "pics"
    _three_copies(pics)
    cat = tmp_path / "c.fidx"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    stale = tmp_path / "c.fidx.tmp4242"
    stale.write_bytes(b"half a catalog")
    mine = [tmp_path / "c.fidx.tmp-notes", tmp_path / "c.fidx.tmp12x", tmp_path / "d.fidx.tmp1"]
    for m in mine:
        m.write_text("mine")
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    assert not stale.exists()
    assert all(m.read_text() == "mine" for m in mine)


@pytest.mark.parametrize("offset,value", [(24, 1000), (28, 0xFFFFFFFF)])
def test_catalog_with_impossible_settings_refused(tmp_path, offset, value):
    """A catalog header claiming settings ferry never writes (hash size 1000,
    colorhash bits -1) is refused as damaged, not loaded."""
    import struct
    import zlib
    pics = tmp_path / "pics"
    _three_copies(pics)
    cat = tmp_path / "c.fidx"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    d = bytearray(cat.read_bytes())
    struct.pack_into("<I", d, offset, value)
    struct.pack_into("<I", d, len(d) - 4, zlib.crc32(bytes(d[:-4])))
    cat.write_bytes(bytes(d))
    r = ferry("index", "info", cat)
    assert r.returncode == 1 and "catalog is damaged (its hash settings" in r.stderr, r.stderr


def _lossy(b):
    """The name as ferry's JSON spells it: each byte that is not part of
    valid UTF-8 replaced by U+FFFD (per byte, unlike Python's "replace",
    which gives one U+FFFD for a sequence cut short)."""
    out, i = [], 0
    while i < len(b):
        for n in (1, 2, 3, 4):
            try:
                out.append(b[i:i + n].decode("utf-8"))
                i += n
                break
            except UnicodeDecodeError:
                pass
        else:
            out.append("\ufffd")
            i += 1
    return "".join(out)


def _name_bytes(obj, key):
    """The exact bytes of a name in ferry's JSON: `<key>_b64` when there is
    one (and only for a name that is not UTF-8), else the string itself;
    the string is checked against the U+FFFD rule."""
    if key + "_b64" in obj:
        raw = base64.b64decode(obj[key + "_b64"], validate=True)
        with pytest.raises(UnicodeDecodeError):
            raw.decode("utf-8")
        assert obj[key] == _lossy(raw), (obj[key], raw)
        return raw
    return obj[key].encode("utf-8")


ODD_NAMES = [b"caf\xe9.jpg", b"x\xf8\x88\x80\x80\x80.jpg", b"o\xc0\xafl.jpg", b"s\xed\xa0\x80.jpg",
             b"t\xe2\x82-cut.jpg", "ok-\u00e9\U0001f600.jpg".encode()]


def test_json_names_in_any_bytes_round_trip(tmp_path):
    """File names that are not UTF-8 (Latin-1, a 5-byte form, an overlong
    slash, a surrogate, a sequence cut short) give strict UTF-8 JSON: the
    name with U+FFFD for each such byte, and path_b64 / keeper_b64 with the
    exact bytes (absent for a UTF-8 name)."""
    pics = tmp_path / "pics"
    pics.mkdir()
    data = (FIX / "rgb420.jpg").read_bytes()
    for n in ODD_NAMES:
        with open(os.path.join(os.fsencode(pics), n), "wb") as f:
            f.write(data)
    cat, out = tmp_path / "c.fidx", tmp_path / "c.json"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    assert ferry("index", "export", cat, "--format", "json", "-o", out).returncode == 0
    raw = out.read_bytes()
    j = json.loads(raw.decode("utf-8"))  # strict UTF-8 as a whole
    got = sorted(os.path.basename(_name_bytes(e, "path")) for e in j["entries"])
    assert got == sorted(ODD_NAMES)
    assert sum("path_b64" in e for e in j["entries"]) == len(ODD_NAMES) - 1
    assert b"\\udc" not in raw  # no lone surrogates any more
    r = subprocess.run([FERRY_BIN, "dupes", str(cat), "--format", "json", "--threshold", "40",
                        "-q"], capture_output=True, timeout=60)
    groups = json.loads(r.stdout.decode("utf-8"))["groups"]
    members = sorted(os.path.basename(_name_bytes(m, "path")) for g in groups
                     for m in g["members"])
    assert members == sorted(ODD_NAMES)
    for g in groups:
        assert _name_bytes(g, "keeper") == _name_bytes(g["members"][0], "path")


def test_json_summaries_name_any_bytes(tmp_path):
    """The --json summaries carry names the same way: `ferry hash --json`
    (the catalog, the files that failed), `ferry load --json` (the source,
    the files skipped) and `ferry info --json`."""
    odd = os.path.join(os.fsencode(tmp_path), b"d\xe9p\xf4t")
    cls = os.path.join(odd, b"cl\xe0ss")  # one class folder, as `ferry load` reads a folder
    os.makedirs(cls)
    bad = os.path.join(cls, b"cass\xe9.jpg")
    with open(bad, "wb") as f:
        f.write((FIX / "rgb420.jpg").read_bytes()[:300])  # cut short: fails
    good = os.path.join(cls, "ok-\u00e9.jpg".encode())
    shutil.copy(FIX / "rgb420.jpg", good)
    cat = os.path.join(os.fsencode(tmp_path), b"cat\xe9.fidx")
    r = subprocess.run([FERRY_BIN, "hash", odd, "-o", cat, "--json"], capture_output=True,
                       timeout=120)
    assert r.returncode == 3, r.stderr
    j = json.loads(r.stdout.decode("utf-8"))
    assert _name_bytes(j, "catalog") == cat
    assert [_name_bytes(e, "path") for e in j["errors"]] == [bad]
    r = subprocess.run([FERRY_BIN, "load", odd, "--size", "16", "--json"], capture_output=True,
                       timeout=120)
    assert r.returncode == 3, r.stderr
    j = json.loads(r.stdout.decode("utf-8"))
    assert _name_bytes(j, "source") == odd
    assert [_name_bytes(e, "path") for e in j["skipped_files"]] == [bad]
    assert j["skipped_files"][0]["error"].startswith(_lossy(bad))  # the message: U+FFFD only
    r = subprocess.run([FERRY_BIN, "info", "--json", good], capture_output=True, timeout=60)
    j = json.loads(r.stdout.decode("utf-8"))
    assert r.returncode == 0 and _name_bytes(j, "file") == good and "file_b64" in j
    utf8 = tmp_path / "ok-\u00e9.jpg"
    shutil.copy(FIX / "rgb420.jpg", utf8)
    r = subprocess.run([FERRY_BIN, "info", "--json", utf8], capture_output=True, timeout=60)
    j = json.loads(r.stdout.decode("utf-8"))
    assert r.returncode == 0 and j["file"] == str(utf8) and "file_b64" not in j


def test_dupes_of_100000_identical_hashes_in_bounded_memory(tmp_path):
    """100,000 entries with one hash (copies of one picture) make one group
    in bounded memory: identical codes are searched once, not as 5e9 pairs.
    The catalog is made from a one-entry catalog, its record repeated with
    other paths (the format of src/catalog/catalog.c and record.c)."""
    import struct
    import zlib
    pics = tmp_path / "pics"
    pics.mkdir()
    shutil.copy(FIX / "rgb420.jpg", pics / "a.jpg")
    cat = tmp_path / "c.fidx"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    d = cat.read_bytes()
    assert struct.unpack_from("<Q", d, 32)[0] == 1
    n0 = struct.unpack_from("<I", d, 40)[0]
    rec = d[44:44 + n0]
    pl = struct.unpack_from("<H", rec, 32)[0]
    n = 100_000
    out = bytearray(d[:32]) + struct.pack("<Q", n)
    for i in range(n):  # sorted paths, as the catalog keeps them
        path = f"{pics}/{i:06d}.jpg".encode()
        os.symlink("a.jpg", path)  # files that exist: dupes leaves vanished ones out
        new = bytearray(rec[:40]) + path + rec[40 + pl:]
        struct.pack_into("<H", new, 32, len(path))
        out += struct.pack("<I", len(new)) + new
    out += d[44 + n0:44 + n0 + 8] + struct.pack("<Q", n)
    out += struct.pack("<I", zlib.crc32(bytes(out)))
    cat.write_bytes(bytes(out))
    # the peak of this one ferry, measured by a fresh Python that runs only
    # it (this process' RUSAGE_CHILDREN also holds every earlier child's)
    wrap = ("import resource, subprocess, sys\n"
            "r = subprocess.run(sys.argv[1:])\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
            "sys.exit(r.returncode)")
    r = subprocess.run([sys.executable, "-c", wrap, FERRY_BIN, "dupes", str(cat), "--format",
                        "json", "-o", str(tmp_path / "g.json")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    peak_kib = int(r.stderr.strip().splitlines()[-1])
    assert "1 groups, 100000 files, 4999950000 pairs" in r.stderr, r.stderr
    j = json.loads((tmp_path / "g.json").read_text())
    assert len(j["groups"]) == 1 and len(j["groups"][0]["members"]) == n
    assert j["pairs"] == n * (n - 1) // 2
    assert 0 < peak_kib < 1024 * 1024, f"peak RSS {peak_kib} KiB"


def _keeper_set(d):
    """One picture as a camera JPEG (EXIF Make/Model), a PNG made from it, a
    re-saved JPEG without EXIF, and a PNG upscaled 2x; older to newer."""
    from PIL import Image
    d.mkdir(parents=True, exist_ok=True)
    im = Image.open(FIX / "rgb420.jpg").convert("RGB").resize((320, 240))
    exif = Image.Exif()
    exif[0x010F], exif[0x0110] = "TestMaker", "TestCam 1"
    im.save(d / "cam.jpg", quality=85, exif=exif.tobytes())
    im.save(d / "conv.png")
    im.save(d / "resaved.jpg", quality=97)
    im.resize((640, 480)).save(d / "big.png")
    for i, name in enumerate(["cam.jpg", "conv.png", "resaved.jpg", "big.png"]):
        os.utime(d / name, ns=(1_600_000_000 * 10**9 + i * 10**9,) * 2)
    return d


def _keeper(cat, *extra):
    r = ferry("dupes", cat, "--format", "json", "-q", *extra)
    assert r.returncode == 0, r.stderr
    groups = json.loads(r.stdout)["groups"]
    assert len(groups) == 1, groups
    return os.path.basename(groups[0]["keeper"]), groups[0]


def test_dupes_keeper_rules(tmp_path):
    """The default keeper is the camera's file (not the larger PNG made from
    it, nor an upscaled copy); --keep states other rules; a bad one is a
    usage error naming it."""
    pics = _keeper_set(tmp_path / "pics")
    cat = tmp_path / "c.fidx"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    assert _keeper(cat)[0] == "cam.jpg"
    assert _keeper(cat, "--keep", "original,pixels,size,oldest")[0] == "cam.jpg"
    assert _keeper(cat, "--keep", "pixels,size")[0] == "big.png"
    assert _keeper(cat, "--keep", "size")[0] == "big.png"
    assert _keeper(cat, "--keep", "newest")[0] == "big.png"
    assert _keeper(cat, "--keep", "oldest")[0] == "cam.jpg"
    assert _keeper(cat, "--keep", "path")[0] == "big.png"  # first path, bytewise
    # without the camera's file: at one size the JPEG, not the PNG made from it
    os.unlink(pics / "cam.jpg")
    os.unlink(pics / "big.png")
    cat2 = tmp_path / "c2.fidx"
    assert ferry("hash", pics, "-o", cat2, "-q").returncode == 0
    assert _keeper(cat2)[0] == "resaved.jpg"
    assert os.path.getsize(pics / "conv.png") > os.path.getsize(pics / "resaved.jpg")
    for bad in ["bogus", "pixels,,size", "", "pixels,size,oldest,newest,path,size,pixels,path,size"]:
        r = ferry("dupes", cat, "--keep", bad)
        assert r.returncode == 2 and "--keep" in r.stderr, (bad, r.stderr)
    assert "'bogus'" in ferry("dupes", cat, "--keep", "bogus").stderr


def test_dupes_reference_folder_wins_and_never_moves(tmp_path):
    """Files under --reference keep first and are never moved, even when
    another rule prefers a file outside."""
    pics = _keeper_set(tmp_path / "pics")
    ref = tmp_path / "pics" / "archive"
    ref.mkdir()
    shutil.copy(pics / "conv.png", ref / "a.png")
    shutil.copy(pics / "conv.png", ref / "b.png")
    cat = tmp_path / "c.fidx"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    name, g = _keeper(cat, "--reference", ref)
    assert name == "a.png" and len(g["members"]) == 6
    assert _keeper(cat)[0] == "cam.jpg"
    dest = tmp_path / "dupes"
    r = ferry("dupes", cat, "--reference", ref, "--move-dupes-to", dest, "--apply", "-f", "json")
    assert r.returncode == 0, r.stderr
    assert "1 files under --reference folders: not moved" in r.stderr, r.stderr
    assert (ref / "a.png").exists() and (ref / "b.png").exists()
    assert not (pics / "cam.jpg").exists() and not (pics / "big.png").exists()
    r = ferry("dupes", cat, "--reference", tmp_path / "nowhere")
    assert r.returncode == 2 and "not a folder" in r.stderr


def test_find_duplicates_keep_and_reference(tmp_path):
    """Python's find_duplicates takes the same rules as `ferry dupes`."""
    import ferry as fy
    pics = _keeper_set(tmp_path / "pics")
    g = fy.find_duplicates(pics, threshold=12)
    assert len(g) == 1 and os.path.basename(g[0][0]) == "cam.jpg"
    g = fy.find_duplicates(pics, threshold=12, keep="pixels,size")
    assert os.path.basename(g[0][0]) == "big.png"
    ref = pics / "ref"
    ref.mkdir()
    shutil.copy(pics / "resaved.jpg", ref / "r.jpg")
    g = fy.find_duplicates(pics, threshold=12, reference=[ref])
    assert g[0][0] == str(ref / "r.jpg")
    with pytest.raises(fy.InvalidArgument, match="bogus"):
        fy.find_duplicates(pics, threshold=12, keep="bogus")
    # a missing path is FileNotFoundError, as everywhere in Python (issue 53, item 5)
    with pytest.raises(FileNotFoundError, match="nowhere"):
        fy.find_duplicates(pics, threshold=12, reference=[tmp_path / "nowhere"])
    with pytest.raises(fy.InvalidArgument, match="not a folder"):
        fy.find_duplicates(pics, threshold=12, reference=[pics / "cam.jpg"])


def test_find_duplicates_exclude(tmp_path, monkeypatch):
    """find_duplicates(exclude=) leaves out what `ferry dupes --exclude`
    leaves out (the C rule: a pattern on the absolute path, or a folder),
    before hashing; a relative source gives the paths as given."""
    import ferry as fy
    pics = _keeper_set(tmp_path / "pics")
    (pics / "thumbs").mkdir()
    shutil.copy(pics / "cam.jpg", pics / "thumbs" / "t.jpg")
    assert len(fy.find_duplicates(pics, threshold=12)[0]) == 5
    g = fy.find_duplicates(pics, threshold=12, exclude=["*.png", str(pics / "thumbs")])
    assert sorted(os.path.basename(p) for p in g[0]) == ["cam.jpg", "resaved.jpg"]
    g = fy.find_duplicates(pics, threshold=12, exclude="*/thumbs/*")
    assert "t.jpg" not in {os.path.basename(p) for p in g[0]} and len(g[0]) == 4
    monkeypatch.chdir(tmp_path)
    g = fy.find_duplicates("pics", threshold=12, exclude=["*.png"])
    assert sorted(g[0]) == sorted(["pics/cam.jpg", "pics/resaved.jpg", "pics/thumbs/t.jpg"])
    assert fy.find_duplicates(pics, threshold=12, exclude=["*"]) == []
    with pytest.raises(fy.InvalidArgument, match="empty exclude"):
        fy.find_duplicates(pics, threshold=12, exclude=[""])


def test_dupes_exclude(tmp_path):
    """--exclude leaves out files by shell pattern (a star crosses slashes)
    or folder; leaving out everything says so; an empty pattern is a usage
    error."""
    pics = _keeper_set(tmp_path / "pics")
    (pics / "thumbs").mkdir()
    shutil.copy(pics / "cam.jpg", pics / "thumbs" / "t.jpg")
    cat = tmp_path / "c.fidx"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    assert len(_keeper(cat)[1]["members"]) == 5
    name, g = _keeper(cat, "--exclude", "*.png", "--exclude", "*/thumbs/*")
    assert name == "cam.jpg" and sorted(os.path.basename(m["path"]) for m in g["members"]) == \
        ["cam.jpg", "resaved.jpg"]
    r = ferry("dupes", cat, "--exclude", pics / "thumbs", "-f", "json")
    assert r.returncode == 0 and "1 entries left out by --exclude" in r.stderr, r.stderr
    r = ferry("dupes", cat, "--exclude", pics)
    assert r.returncode == 1 and "--exclude left out every file" in r.stderr, r.stderr
    r = ferry("dupes", cat, "--exclude", "")
    assert r.returncode == 2 and "--exclude needs a pattern" in r.stderr


def test_apply_list_refusals(tmp_path):
    """`ferry dupes --apply-list`: a move list that is not one is a usage
    error; a line naming a file outside the catalog, a keeper of another
    group, a reference file or a keeper listed to move is refused with its
    line number (exit 3) while the good lines move; a file listed twice
    moves once."""
    pics, other = tmp_path / "pics", tmp_path / "other"
    pics.mkdir()
    other.mkdir()
    for i in range(3):
        shutil.copy(FIX / "rgb420.jpg", pics / f"a{i}.jpg")
    shutil.copy(FIX / "progressive.jpg", pics / "b0.jpg")
    shutil.copy(FIX / "progressive.jpg", other / "b1.jpg")
    cat, aside, lst = tmp_path / "c.fidx", tmp_path / "aside", tmp_path / "list.csv"
    assert ferry("hash", pics, other, "-o", cat, "-q").returncode == 0
    lst.write_text("hello\n")
    r = ferry("dupes", cat, "--apply-list", lst, "--move-dupes-to", aside, "-q")
    assert r.returncode == 2 and "not a move list" in r.stderr
    r = ferry("dupes", cat, "--apply-list", lst, "-q")
    assert r.returncode == 2 and "--move-dupes-to" in r.stderr

    def b64(p):
        return base64.b64encode(os.fsencode(p)).decode()

    a0, a1, a2, b0 = (str(pics / n) for n in ("a0.jpg", "a1.jpg", "a2.jpg", "b0.jpg"))
    b1 = str(other / "b1.jpg")
    rows = ["path,keeper,path_b64,keeper_b64",
            f"{a1},{a0},{b64(a1)},{b64(a0)}",                  # good
            f"{a1},{a0},{b64(a1)},{b64(a0)}",                  # twice: moves once
            f"{a2},{b0},{b64(a2)},{b64(b0)}",                  # keeper of another group
            f"/nowhere.jpg,{a0},{b64('/nowhere.jpg')},{b64(a0)}",  # not in the catalog
            f"{a0},{a2},{b64(a0)},{b64(a2)}",                  # a0 keeps above: refused
            f"{b1},{b0},{b64(b1)},{b64(b0)}",                  # under --reference
            f"{a2},{a0},not base64!,{b64(a0)}"]                # a damaged line
    lst.write_text("\n".join(rows) + "\n")
    r = ferry("dupes", cat, "--apply-list", lst, "--move-dupes-to", aside, "--apply",
              "--reference", other, "-q")
    assert r.returncode == 3, r.stderr
    for line, why in ((4, "not in its keeper's group"), (5, "not in the catalog"),
                      (6, "listed both to keep and to move"), (7, "--reference"),
                      (8, "not a path in base64")):
        assert f"line {line}" in r.stderr and why in r.stderr, (line, why, r.stderr)
    assert sorted(p.name for p in pics.iterdir()) == ["a0.jpg", "a2.jpg", "b0.jpg"]
    assert (other / "b1.jpg").exists()
    moved = list(csv.DictReader(open(aside / "ferry-moves.csv")))
    assert [os.path.basename(m["from"]) for m in moved] == ["a1.jpg"]
