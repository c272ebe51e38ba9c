"""Issue 19 from the outside: the catalog follows the library (a moved
folder, `ferry index prune`, `ferry hash --prune`, `ferry dupes` leaving
vanished files out), the move destination is never hashed back in, outputs
that scripts can read (data on stdout, lossless names, one group numbering,
write errors), and dead ends that say what to do."""
import base64
import csv
import io
import json
import os
import re
import shutil
import subprocess

from ferrylib import FERRY_BIN, ROOT

FIX = ROOT / "tests" / "fixtures" / "hash"


def ferry(*args, **kw):
    return subprocess.run([FERRY_BIN, *map(str, args)], capture_output=True, text=True,
                          errors="surrogateescape",
                          timeout=kw.pop("timeout", 120), **kw)


def _library(d):
    """Three copies of one picture (one group), two others."""
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy2(FIX / "rgb444.jpg", d / "big.jpg")
    for i in range(2):
        shutil.copy2(FIX / "rgb420.jpg", d / f"copy{i}.jpg")
    shutil.copy2(FIX / "palette.png", d / "other.png")
    shutil.copy2(FIX / "gray.png", d / "gray.png")
    return d


def _entries(cat):
    r = ferry("index", "export", cat, "--format", "json")
    assert r.returncode == 0, r.stderr
    return [e["path"] for e in json.loads(r.stdout)["entries"]]


def test_moved_library_is_followed_not_doubled(tmp_path):
    """Hash, move the folder, hash the new path into the same catalog: the
    files keep their hashes (none hashed again), the catalog is not doubled,
    and dupes pairs nothing with the vanished old paths."""
    old, new, cat = tmp_path / "a" / "pics", tmp_path / "b", tmp_path / "c.fidx"
    _library(old)
    assert ferry("hash", old, "-o", cat, "-q").returncode == 0
    os.rename(old, new)
    r = ferry("hash", new, "-o", cat)
    assert r.returncode == 0, r.stderr
    assert "5 files moved from another folder kept their hashes" in r.stderr
    assert "(0 hashed" in r.stderr
    paths = _entries(cat)
    assert len(paths) == 5 and all(p.startswith(str(new.resolve()) + "/") for p in paths)
    r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", tmp_path / "aside", "-f",
              "json")
    assert r.returncode == 0, r.stderr
    members = [m["path"] for g in json.loads(r.stdout)["groups"] for m in g["members"]]
    assert len(members) == 3 and all(p.startswith(str(new.resolve())) for p in members)
    assert str(old) not in r.stderr  # no plan to move files that no longer exist


def test_index_prune(tmp_path):
    pics, cat = _library(tmp_path / "pics"), tmp_path / "c.fidx"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    r = ferry("index", "prune", cat)
    assert r.returncode == 0 and "0 entries of vanished files dropped" in r.stderr
    (pics / "copy1.jpg").unlink()
    (pics / "gray.png").unlink()
    r = ferry("index", "prune", cat)
    assert r.returncode == 0 and "2 entries of vanished files dropped" in r.stderr, r.stderr
    assert len(_entries(cat)) == 3
    assert not os.path.exists(str(cat) + ".journal")
    r = ferry("index", "prune", tmp_path / "none.fidx")
    assert r.returncode == 1 and "none.fidx" in r.stderr
    bad = tmp_path / "bad.fidx"
    bad.write_bytes(b"not a catalog")
    r = ferry("index", "prune", bad)
    assert r.returncode == 1 and "bad.fidx" in r.stderr and bad.read_bytes() == b"not a catalog"
    assert "prune" in ferry("index", "--help").stdout


def test_hash_prune_drops_vanished_entries_elsewhere(tmp_path):
    one, two, cat = _library(tmp_path / "one"), tmp_path / "two", tmp_path / "c.fidx"
    two.mkdir()
    shutil.copy(FIX / "rgb420.jpg", two / "t.jpg")
    assert ferry("hash", one, "-o", cat, "-q").returncode == 0
    (one / "gray.png").unlink()
    r = ferry("hash", two, "-o", cat)
    assert r.returncode == 0 and "5 kept from other folders" in r.stderr, r.stderr
    assert len(_entries(cat)) == 6  # without --prune, other folders are left as they were
    r = ferry("hash", two, "-o", cat, "--prune")
    assert r.returncode == 0 and "1 entries of vanished files dropped (--prune)" in r.stderr
    assert len(_entries(cat)) == 5
    assert "--prune" in ferry("hash", "--help").stdout


def test_dupes_leaves_out_vanished_files(tmp_path):
    pics, cat, aside = _library(tmp_path / "pics"), tmp_path / "c.fidx", tmp_path / "aside"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    (pics / "copy0.jpg").unlink()
    r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", aside, "--format", "csv")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == 2 and not any(x["path"].endswith("copy0.jpg") for x in rows)
    assert "1 entries left out" in r.stderr and "copy0.jpg" not in r.stderr
    assert "not moved" not in r.stderr
    r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", aside, "--apply", "-q")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in pics.iterdir()) == ["big.jpg", "gray.png", "other.png"]


def test_move_destination_is_not_hashed_back(tmp_path):
    """dupes --apply into a folder inside the library, then hash the library
    again: the moved files stay out of the catalog (the destination holds
    ferry-moves.csv, which the walk skips)."""
    pics, cat = _library(tmp_path / "pics"), tmp_path / "pics.fidx"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    r = ferry("dupes", cat, "--threshold", "40", "--move-dupes-to", pics / "_dupes", "--apply",
              "-q")
    assert r.returncode == 0, r.stderr
    assert (pics / "_dupes" / "ferry-moves.csv").exists()
    r = ferry("hash", pics, "-o", cat)
    assert r.returncode == 0, r.stderr
    paths = _entries(cat)
    assert len(paths) == 3 and not any("_dupes" in p for p in paths)
    assert "1 `ferry dupes` move destinations walked" in r.stderr
    r = ferry("dupes", cat, "--threshold", "40", "-f", "json", "-q")
    assert json.loads(r.stdout)["groups"] == []


def test_outputs_for_scripts(tmp_path):
    """Data on stdout only; names in any bytes given back exactly (path_b64
    beside the JSON string, escaped in HTML); one group numbering (from 0) in
    CSV, JSON and HTML; a write error is exit 1."""
    pics = _library(tmp_path / "pics")
    odd = b"caf\xe9 <b>\x01.jpg"
    with open(os.path.join(os.fsencode(pics), odd), "wb") as f:
        f.write((FIX / "rgb420.jpg").read_bytes())
    cat = tmp_path / "c.fidx"
    assert ferry("hash", pics, "-o", cat, "-q").returncode == 0
    args = ("dupes", cat, "--threshold", "40", "--move-dupes-to", tmp_path / "aside")
    r = subprocess.run([FERRY_BIN, *map(str, args), "-f", "json"], capture_output=True, timeout=60)
    assert r.returncode == 0 and b"would move" in r.stderr and b"would move" not in r.stdout
    j = json.loads(r.stdout.decode("utf-8"))  # strict UTF-8, parses alone
    members = [m for g in j["groups"] for m in g["members"]]
    b64 = [base64.b64decode(m["path_b64"]) for m in members if "path_b64" in m]
    assert b64 == [os.fsencode(pics) + b"/" + odd]
    # the string: U+FFFD for the byte that is not UTF-8, the control character as it is
    assert [m["path"] for m in members if "path_b64" in m] == [f"{pics}/caf\ufffd <b>\x01.jpg"]
    assert all("path_b64" not in m for m in members if not m["path"].startswith(str(pics) + "/caf"))
    r = ferry("index", "export", cat, "--format", "json")
    ent = [e for e in json.loads(r.stdout)["entries"] if "path_b64" in e]
    assert len(ent) == 1 and base64.b64decode(ent[0]["path_b64"]).endswith(odd)
    html = tmp_path / "d.html"
    assert ferry(*args[:4], "-f", "html", "-o", html, "-q").returncode == 0
    page = html.read_bytes()
    page.decode("utf-8")  # no raw bytes that are not UTF-8
    assert b"\x01" not in page
    data = json.loads(re.search(rb'id="ferry-data">(.*?)</script>', page, re.S).group(1))
    shown = [f for f in data["files"] if len(f) > 9]  # the exact bytes beside the shown name
    assert [f[1] for f in shown] == ["caf\\xE9 <b>\\x01.jpg"]
    assert base64.b64decode(shown[0][9]) == os.fsencode(pics) + b"/" + odd
    assert b"<b>" not in page.split(b'id="ferry-data">')[1].split(b"</script>")[0]
    groups_html = list(range(len(data["groups"])))
    groups_csv = sorted({int(x["group"]) for x in csv.DictReader(io.StringIO(
        ferry(*args[:4], "-q").stdout))})
    groups_json = [g["group"] for g in j["groups"]]
    assert groups_html == groups_csv == groups_json == [0]
    # write errors: exit 1, the file named
    for cmd in (("hash", pics), ("index", "export", cat), ("index", "info", cat),
                ("dupes", cat, "-q")):
        with open("/dev/full", "w") as full:
            r = subprocess.run([FERRY_BIN, *map(str, cmd)], stdout=full, stderr=subprocess.PIPE,
                               text=True, timeout=60)
        assert r.returncode == 1 and "fail" in r.stderr, (cmd, r.returncode, r.stderr)
    r = ferry("dupes", cat, "-q", "-o", "/dev/full")
    assert r.returncode == 1 and "/dev/full" in r.stderr


def test_dead_ends_say_what_to_do(tmp_path):
    empty, cat = tmp_path / "empty", tmp_path / "e.fidx"
    empty.mkdir()
    assert ferry("hash", empty, "-o", cat, "-q").returncode == 1
    r = ferry("dupes", cat)
    assert r.returncode == 1 and "no files to compare" in r.stderr, r.stderr
    assert "threshold" not in r.stderr
    pics = _library(tmp_path / "pics")
    r = ferry("dupes", pics)
    assert r.returncode == 2
    assert f"ferry hash {pics} -o {pics}.fidx" in r.stderr
    assert f"ferry dupes {pics}.fidx" in r.stderr
    other = tmp_path / "phone"
    other.mkdir()
    for name in ("a.PSD", "b.psd", "d.psb", "notes.txt"):
        (other / name).write_bytes(b"x")
    for extra in ((), ("-o", tmp_path / "p.fidx")):
        r = ferry("hash", other, *extra)
        assert r.returncode == 1
        assert "found 3 Photoshop file(s)" in r.stderr, r.stderr
        assert "do" in r.stderr and "not read yet" in r.stderr
