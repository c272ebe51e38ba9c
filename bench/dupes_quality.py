#!/usr/bin/env python3
"""How well `ferry dupes` finds near-duplicates: pair precision, recall and
F1 against a set's GROUND_TRUTH.csv (file,group,edit: tests/gen/gen_hardset.py
makes one; corpus/dupes has one; group -1: a file with no duplicate), for ferry's default settings and for
each hash and threshold asked, with recall per kind of edit.

    python3 bench/dupes_quality.py SET_DIR [--ferry build/ferry]
        [--mode fast|compatible] [--hash-size 16] [--sweep phash:56,72,88 ...]
        [--same PAIRS.csv]

A pair counts as found when both files land in one group of `ferry dupes`
(groups are transitive, as users see them). Data on stdout (one line per
setting, then the recall per edit of the default), messages on stderr.

Claims it proves (bench/CLAIMS.md): C63.
"""
import argparse
import collections
import csv
import itertools
import json
import os
import subprocess
import sys
import tempfile


def truth(set_dir):
    rows = list(csv.DictReader(open(os.path.join(set_dir, "GROUND_TRUTH.csv"))))
    # group -1 (or empty): a file with no duplicate (corpus/dupes' distractors)
    group = {r["file"]: (r["group"] if r["group"] not in ("", "-1") else "solo:" + r["file"])
             for r in rows}
    edit = {r["file"]: r.get("edit", "") for r in rows}
    return group, edit


def pairs_of(groups):
    out = set()
    for g in groups:
        for a, b in itertools.combinations(sorted(g), 2):
            out.add((a, b))
    return out


def score(found, group):
    files = sorted(group)
    positives = {(a, b) for a, b in itertools.combinations(files, 2) if group[a] == group[b]}
    tp = len(found & positives)
    p = tp / len(found) if found else 1.0
    r = tp / len(positives) if positives else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f1, positives


def amend(group, same_csv):
    """The truth with the groups of each listed pair (file_a, file_b: the
    same picture, bench/dupes_same_picture.py) joined."""
    label = dict(group)
    for r in csv.DictReader(open(same_csv)):
        old, new = label[r["file_b"]], label[r["file_a"]]
        for f in label:
            if label[f] == old:
                label[f] = new
    return label


def hash_set(ferry, set_dir, catalog, mode, hash_size, extra=()):
    r = subprocess.run([ferry, "hash", set_dir, "-o", catalog, "--mode", mode,
                        "--hash-size", str(hash_size), "--hashes", "all", *extra],
                       capture_output=True, text=True)
    if r.returncode not in (0, 3):
        sys.exit(f"dupes_quality: ferry hash failed: {r.stderr.strip()}")


def run_dupes(ferry, catalog, hash_kind=None, threshold=None, extra=()):
    cmd = [ferry, "dupes", catalog, "--format", "json", "-q", *extra]
    if hash_kind:
        cmd += ["--hash", hash_kind]
    if threshold is not None:
        cmd += ["--threshold", str(threshold)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"dupes_quality: {' '.join(cmd)}: {out.stderr.strip()}")
    doc = json.loads(out.stdout)
    groups = [[os.path.basename(m["path"]) for m in g["members"]] for g in doc["groups"]]
    doc["names"] = groups
    return doc, pairs_of(groups)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("set_dir")
    ap.add_argument("--ferry", default="build/ferry")
    ap.add_argument("--mode", default="fast")
    ap.add_argument("--hash-size", default="16")
    ap.add_argument("--sweep", nargs="*", default=[],
                    help="HASH:T1,T2,... settings besides the default")
    ap.add_argument("--hash-extra", default="", help="more `ferry hash` options, e.g. "
                    "'--device cuda --mode fast'")
    ap.add_argument("--dupes-extra", default="", help="more `ferry dupes` options, e.g. "
                    "'--device cuda'")
    ap.add_argument("--same", help="pairs found to be the same picture "
                    "(bench/dupes_same_picture.py --write): also score against the truth "
                    "with their groups joined")
    a = ap.parse_args()
    group, edit = truth(a.set_dir)
    truths = [("truth", group)] + ([("truth+same", amend(group, a.same))] if a.same else [])
    with tempfile.TemporaryDirectory() as tmp:
        catalog = os.path.join(tmp, "set.fidx")
        hash_set(a.ferry, a.set_dir, catalog, a.mode, a.hash_size, a.hash_extra.split())
        more = tuple(a.dupes_extra.split())
        settings = [(None, None, more), (None, None, ("--no-robust",) + more)]
        for s in a.sweep:
            kind, ts = s.split(":")
            settings += [(kind, int(t), ("--no-robust",)) for t in ts.split(",")]
        print(f"set {a.set_dir}: {len(group)} files, {len(set(group.values()))} groups; "
              f"ferry hash --mode {a.mode} --hash-size {a.hash_size}")
        print(f"{'setting':<34} {'against':<11} {'pairs':>7} {'precision':>9} {'recall':>7} "
              f"{'F1':>6}")
        default_found = None
        for kind, t, extra in settings:
            doc, found = run_dupes(a.ferry, catalog, kind, t, extra)
            name = f"{kind} {t}" if kind else f"default ({doc['hash']} {doc['threshold']})"
            if "--no-robust" in extra:
                name += " --no-robust"
            elif kind is None:
                default_found = found
            for tname, tg in truths:
                p, rc, f1, positives = score(found, tg)
                print(f"{name:<34} {tname:<11} {len(found):>7} {p:>9.3f} {rc:>7.3f} {f1:>6.3f}")
    # recall per edit: pairs (original, edited copy) found by the default
    hit, total = collections.Counter(), collections.Counter()
    origin = {group[f]: f for f in group if edit[f] in ("orig", "original")}
    for f in group:
        o = origin.get(group[f])
        if o is None or f == o:
            continue
        total[edit[f]] += 1
        hit[edit[f]] += tuple(sorted((o, f))) in default_found
    if total:
        print("recall of (original, copy) pairs by the default, per edit:")
        for e in sorted(total, key=lambda e: (hit[e] / total[e], e)):
            print(f"  {e:<20} {hit[e]:>3} / {total[e]:<3} {hit[e] / total[e]:.2f}")


if __name__ == "__main__":
    main()
