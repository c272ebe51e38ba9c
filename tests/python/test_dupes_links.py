"""Two names of one file are not duplicates (issue 53): a hard link and
symbolic links (relative, absolute) of a photo, beside a real re-encoded
duplicate of it, are one file to `ferry hash`/`ferry dupes` and to
ferry.find_duplicates: the group is the photo and its real duplicate, and a
move moves only the real duplicate's file (no link left dangling, the photo
in place)."""
import csv
import io
import os
import shutil
import subprocess

import ferry
from ferrylib import FERRY_BIN, ROOT

FIX = ROOT / "tests" / "fixtures" / "hash"


def run(*args):
    r = subprocess.run([FERRY_BIN, *map(str, args)], capture_output=True, text=True,
                       errors="replace", timeout=60)
    assert r.returncode == 0, r.stderr
    return r


def library(tmp_path):
    """photo.jpg (the larger, the keeper), redo.jpg a re-encoded copy of it,
    photo_hardlink.jpg (after photo.jpg in sorted order), rel.jpg and
    abs.jpg symbolic links to photo.jpg."""
    d = tmp_path / "lib"
    d.mkdir()
    shutil.copy(FIX / "rgb444.jpg", d / "photo.jpg")
    shutil.copy(FIX / "rgb420.jpg", d / "redo.jpg")
    os.link(d / "photo.jpg", d / "photo_hardlink.jpg")
    os.symlink("photo.jpg", d / "rel.jpg")
    os.symlink(d / "photo.jpg", d / "abs.jpg")
    return d.resolve()


def groups_of(csv_text):
    g = {}
    for row in csv.DictReader(io.StringIO(csv_text)):
        g.setdefault(row["group"], []).append((row["path"], row["keeper"] == "1"))
    return sorted(sorted(v) for v in g.values())


def test_links_are_one_file_for_hash_and_dupes(tmp_path):
    d = library(tmp_path)
    cat = tmp_path / "c.fidx"
    run("hash", d, "-o", cat)
    got = groups_of(run("dupes", cat).stdout)
    assert got == [[(str(d / "photo.jpg"), True), (str(d / "redo.jpg"), False)]], got


def test_move_moves_only_the_real_duplicate(tmp_path):
    d = library(tmp_path)
    cat, dest = tmp_path / "c.fidx", tmp_path / "moved"
    run("hash", d, "-o", cat)
    dry = run("dupes", cat, "--move-dupes-to", dest).stderr
    would = sorted(line.split(" -> ")[0].split("would move ")[1] for line in dry.splitlines()
                   if "would move " in line and " -> " in line)
    assert would == [str(d / "redo.jpg")], dry
    r = run("dupes", cat, "--move-dupes-to", dest, "--apply")
    moved = sorted(str(p.relative_to(dest)) for p in dest.rglob("*")
                   if p.is_file() or p.is_symlink())
    assert moved == sorted(["ferry-moves.csv", str(d / "redo.jpg")[1:]]), (moved, r.stderr)
    assert sorted(os.listdir(d)) == ["abs.jpg", "photo.jpg", "photo_hardlink.jpg", "rel.jpg"]
    for name in ("rel.jpg", "abs.jpg"):  # no link left dangling
        assert (d / name).resolve() == d / "photo.jpg" and (d / name).exists()
    assert (d / "photo.jpg").stat().st_nlink == 2


def test_find_duplicates_gives_the_same_groups(tmp_path):
    d = library(tmp_path)
    got = [sorted(g) for g in ferry.find_duplicates(d)]
    assert got == [[str(d / "photo.jpg"), str(d / "redo.jpg")]], got


def test_a_duplicate_with_other_names_is_not_moved(tmp_path):
    """The real duplicate also hard-linked outside the folder: moving its one
    name would free nothing, so it stays (said, exit 3), and nothing lands."""
    d = library(tmp_path)
    os.link(d / "redo.jpg", tmp_path / "elsewhere.jpg")
    cat, dest = tmp_path / "c.fidx", tmp_path / "moved"
    run("hash", d, "-o", cat)
    r = subprocess.run([FERRY_BIN, "dupes", str(cat), "--move-dupes-to", str(dest), "--apply"],
                       capture_output=True, text=True, errors="replace", timeout=60)
    assert r.returncode == 3, r.stderr
    assert f"{d / 'redo.jpg'}: has 2 names (hard links)" in r.stderr, r.stderr
    assert (d / "redo.jpg").exists() and not (dest / str(d / "redo.jpg")[1:]).exists()
