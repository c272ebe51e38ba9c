"""Hard near-duplicates (issue 19's acceptance): tests/gen/gen_hardset.py's set
from the corpus photos (40 groups of an original and 16 edits: crops,
quarter turns, mirror, EXIF-turned, letterbox, grey, gamma, heavy JPEG,
half size, a 3 degree turn, among look-alike originals) through `ferry hash`
and `ferry dupes` with default settings: pair precision >= 0.99 and F1 >=
0.95; every turned, mirrored and letterboxed copy found; the hash alone
(--no-robust) finds a minority, so the signatures are doing the work."""
import collections
import itertools
import json
import os
import subprocess
import sys

import pytest

from ferrylib import CORPUS, FERRY_BIN, ROOT

pytest.importorskip("PIL", reason="gen_hardset.py needs Pillow")
needs_photos = pytest.mark.skipif(not (CORPUS / "photos").is_dir(),
                                  reason=f"shared corpus photos not found at {CORPUS}")


def groups_of(cat, *extra):
    r = subprocess.run([str(FERRY_BIN), "dupes", str(cat), "--format", "json", "-q", *extra],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return [[os.path.basename(m["path"]) for m in g["members"]]
            for g in json.loads(r.stdout)["groups"]]


def score(groups, truth):
    found = {tuple(sorted(p)) for g in groups for p in itertools.combinations(g, 2)}
    by = collections.defaultdict(list)
    for f, g in truth.items():
        by[g].append(f)
    real = {tuple(sorted(p)) for g in by.values() for p in itertools.combinations(g, 2)}
    tp = len(found & real)
    p, r = tp / max(1, len(found)), tp / len(real)
    return p, r, 2 * p * r / max(1e-9, p + r), found


@needs_photos
def test_hard_set_default_settings(tmp_path):
    out = tmp_path / "hard"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "gen" / "gen_hardset.py"),
                        str(CORPUS / "photos"), str(out), "--groups", "40"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    rows = [line.split(",") for line in (out / "GROUND_TRUTH.csv").read_text().split()[1:]]
    truth = {f: g for f, g, _ in rows}
    edit = {f: e for f, _, e in rows}
    cat = tmp_path / "hard.fidx"
    r = subprocess.run([str(FERRY_BIN), "hash", str(out), "-o", str(cat), "-q"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    p, rec, f1, found = score(groups_of(cat), truth)
    print(f"hard set, default: precision {p:.3f} recall {rec:.3f} F1 {f1:.3f}")
    assert p >= 0.99 and f1 >= 0.95
    orig = {g: f for f, g in truth.items() if edit[f] == "orig"}
    for e in ("rot90", "rot180", "rot270", "mirror", "exif6", "letterbox", "gray", "png"):
        hit = sum(tuple(sorted((orig[truth[f]], f))) in found for f in truth if edit[f] == e)
        assert hit >= 38, f"{e}: {hit} of 40 copies found"
    p0, rec0, _, _ = score(groups_of(cat, "--no-robust"), truth)
    print(f"hard set, --no-robust: precision {p0:.3f} recall {rec0:.3f}")
    assert rec0 < 0.5 < rec
