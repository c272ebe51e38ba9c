#!/usr/bin/env python3
"""Perceptual hashing, Hamming search and duplicate finding, measured side by
side with imagehash in one run.

    python3 bench/bench_hash.py [--build build] [--corpus ../shared/corpus]
                                [--sections speed,agree,search,dupes] [--append]

speed   images per second per core on corpus/hires (12 MP): imagehash 4.3
        (Pillow) against ferry compatible and fast mode, one thread each, for
        pHash alone and for all six hashes; then ferry on every core.
agree   how often fast-mode hashes equal compatible-mode ones (0, <= 2,
        <= 4 bits apart) on every JPEG/PNG/WebP of photos/, hires/, dupes/.
search  all-pairs Hamming throughput per core for each popcount kernel (64-
        and 256-bit codes), and 1M random 64-bit codes at threshold 8 on
        every core (the method chosen automatically, and each forced).
dupes   pair precision/recall/F1 per hash, hash size and threshold on
        dupes/GROUND_TRUTH.csv, fast and compatible mode.

Prints Markdown; --append adds it to bench/RESULTS.md as a dated section
with the CPU model (then move its figures into their subject's section and
their rows in bench/CLAIMS.md).

Claims it proves (bench/CLAIMS.md): C47, C48, C49, C56, C57, C62.
"""
import argparse
import collections
import csv
import ctypes
import datetime
import os
import pathlib
import platform
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))

KINDS = ["ahash", "dhash", "dhash_v", "phash", "whash", "colorhash"]


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def images(corpus, subs):
    out = []
    for sub in subs:
        d = corpus / sub
        out += sorted(p for p in d.iterdir() if p.suffix.lower() in (".jpg", ".png", ".webp"))
    return out


def best_of(fn, reps):
    """Seconds of the fastest of `reps` runs (the machine is shared: the
    minimum is the least disturbed)."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


# ------------------------------------------------------------------ speed

def _ih_worker(job):
    """imagehash over a list of files, in a worker process."""
    import imagehash
    from PIL import Image

    kinds, files = job
    t0 = time.perf_counter()
    for f in files:
        im = Image.open(f)
        if kinds == "phash":
            imagehash.phash(im)
        else:
            im.load()
            imagehash.average_hash(im), imagehash.dhash(im), imagehash.dhash_vertical(im)
            imagehash.phash(im), imagehash.whash(im), imagehash.colorhash(im)
    return time.perf_counter() - t0


def section_speed(args, out):
    """Side by side, interleaved: each round times imagehash, ferry
    compatible and ferry fast one after the other, so that the machine's
    ups and downs hit all three alike; the median round is reported."""
    import multiprocessing
    import shutil
    import statistics
    import tempfile

    from hashlib_ferry import COMPATIBLE, FAST, Hasher

    files = images(args.corpus, ["hires"])
    n = len(files)
    rounds = 3 if args.quick else 7
    cores = os.cpu_count()
    res = {}
    for label, kinds in (("pHash", ["phash"]), ("all six hashes", KINDS)):
        key = "phash" if len(kinds) == 1 else "all"
        hashers = {m: Hasher(mode, hash_size=8, kinds=kinds)
                   for m, mode in (("compatible", COMPATIBLE), ("fast", FAST))}
        for h in hashers.values():
            h.hash(files[0])  # warm the buffers
        times = collections.defaultdict(list)
        for r in range(rounds if key == "phash" else max(2, rounds // 3)):
            times["imagehash"].append(_ih_worker((key, files)) / n)
            for m, h in hashers.items():
                t0 = time.perf_counter()
                for f in files:
                    h.result(f)
                times[m].append((time.perf_counter() - t0) / n)
        res[label] = {k: statistics.median(v) for k, v in times.items()}
    out.append(f"### Hashing {n} twelve-megapixel JPEGs (corpus/hires), one thread\n")
    out.append(f"Median of interleaved rounds (imagehash, then ferry compatible, then ferry fast, "
               f"repeated); the machine is shared, so single rounds vary by +-30%.\n")
    out.append("| hashes | implementation | ms / image | images/s per core | vs imagehash |")
    out.append("|---|---|---:|---:|---:|")
    for label, t in res.items():
        for impl, name in (("imagehash", "imagehash 4.3 + Pillow"),
                           ("compatible", "ferry compatible (bit-identical)"),
                           ("fast", "ferry fast")):
            out.append(f"| {label} | {name} | {t[impl] * 1e3:.1f} | {1 / t[impl]:.1f} | "
                       f"{t['imagehash'] / t[impl]:.1f}x |")
    # every core busy: imagehash in one process per core, ferry with one
    # thread per core, on distinct copies of the files (page cache warm)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="ferry_bench_speed_"))
    copies = []
    for k in range(4 * cores):
        for f in files:
            dst = tmp / f"{k}_{f.name}"
            try:
                os.link(f, dst)
            except OSError:
                shutil.copy(f, dst)
            copies.append(dst)
    chunks = [(["phash"], copies[i::cores]) for i in range(cores)]
    ih, comp, fast = [], [], []
    with multiprocessing.Pool(cores) as pool:
        for r in range(max(2, rounds // 2)):
            t0 = time.perf_counter()
            pool.map(_ih_worker, [("phash", c[1]) for c in chunks])
            ih.append(time.perf_counter() - t0)
            for mode, acc in (("compatible", comp), ("fast", fast)):
                t0 = time.perf_counter()
                subprocess.run([args.ferry, "hash", tmp, "--hashes", "phash", "--mode", mode,
                                "--hash-size", "8"], capture_output=True, check=True)
                acc.append(time.perf_counter() - t0)
    shutil.rmtree(tmp)
    m = len(copies)
    out.append(f"\n**Every core busy** ({cores} cores, {m} files: imagehash in {cores} processes, "
               f"`ferry hash --hashes phash` with {cores} threads, process start included):\n")
    out.append("| implementation | images/s | per core | vs imagehash |")
    out.append("|---|---:|---:|---:|")
    t_ih = statistics.median(ih)
    for name, t in (("imagehash 4.3 + Pillow", t_ih),
                    ("ferry compatible", statistics.median(comp)),
                    ("ferry fast", statistics.median(fast))):
        out.append(f"| {name} | {m / t:.1f} | {m / t / cores:.1f} | {t_ih / t:.1f}x |")
    out.append("")


# ------------------------------------------------------------------ agree

def section_agree(args, out):
    from hashlib_ferry import COMPATIBLE, FAST, Hasher

    files = images(args.corpus, ["photos", "hires", "dupes"])
    out.append(f"### Fast against compatible mode, {len(files)} corpus files "
               "(photos, hires, dupes)\n")
    out.append("| hash | size | identical | <= 2 bits | <= 4 bits | mean bits |")
    out.append("|---|---:|---:|---:|---:|---:|")
    for size in (8, 16):
        c, f = Hasher(COMPATIBLE, hash_size=size), Hasher(FAST, hash_size=size)
        dist = collections.defaultdict(list)
        for p in files:
            try:
                a, b = c.result(p), f.result(p)
            except OSError:
                continue
            for i, k in enumerate(KINDS):
                dist[k].append(sum(bin(a.hash[i].w[j] ^ b.hash[i].w[j]).count("1")
                                   for j in range(4)))
        for k in KINDS:
            if k == "colorhash" and size == 16:
                continue  # colorhash does not depend on the hash size
            v = dist[k]
            share = lambda t: 100.0 * sum(d <= t for d in v) / len(v)
            out.append(f"| {k} | {size if k != 'colorhash' else '3 bits/bin'} | {share(0):.1f}% "
                       f"| {share(2):.1f}% | {share(4):.1f}% | {sum(v) / len(v):.2f} |")
    out.append("")


# ----------------------------------------------------------------- search

def random_codes(n, words, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    return np.ascontiguousarray(rng.integers(0, 2**63, n * words, dtype=np.uint64) * 2 +
                                rng.integers(0, 2, n * words, dtype=np.uint64))


def run_pairs(L, codes, n, words, t, threads, method):
    from hashlib_ferry import SearchOptions

    o = SearchOptions.default()
    o.threshold, o.threads, o.method = t, threads, method
    pairs, count = ctypes.c_void_p(), ctypes.c_size_t()
    t0 = time.perf_counter()
    rc = L.ferry_hamming_pairs(codes.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(n), words,
                               ctypes.byref(o), ctypes.byref(pairs), ctypes.byref(count))
    dt = time.perf_counter() - t0
    assert rc == 0, L.ferry_last_error()
    L.ferry_pairs_free(pairs)
    return dt, count.value


def isa_subprocess(args, isa, n, words, t):
    """Each kernel in a fresh process. FERRY_ISA is a test control (src/core/testctl.c),
    used here on purpose: it caps the search's CPU kernels so that each one is timed on
    the same codes; the library reads it once, at its first use."""
    code = ("import sys; sys.path.insert(0, %r); import bench_hash as b, ctypes;"
            "from ferrylib import lib; L = lib(); L.ferry_search_isa.restype = ctypes.c_char_p;"
            "c = b.random_codes(%d, %d, 1); dt, k = b.run_pairs(L, c, %d, %d, %d, 1, 1);"
            "print(L.ferry_search_isa().decode(), dt, k)"
            % (str(ROOT / "bench"), n, words, n, words, t))
    env = dict(os.environ, FERRY_ISA=isa)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if r.returncode:
        return None
    name, dt, k = r.stdout.split()
    return name, float(dt), int(k)


def section_search(args, out):
    from ferrylib import lib

    L = lib()
    L.ferry_search_isa.restype = ctypes.c_char_p
    L.ferry_search_last_method.restype = ctypes.c_char_p
    out.append("### All-pairs Hamming search, one thread (brute force)\n")
    out.append("| kernel | code | pairs compared | seconds | pairs/s per core |")
    out.append("|---|---|---:|---:|---:|")
    for isa in ("avx512", "avx2", "popcnt", "scalar"):
        for words, n, t in ((1, 60000 if args.quick else 150000, 8), (4, 40000, 32)):
            if isa == "scalar":
                n //= 3
            res = isa_subprocess(args, isa, n, words, t)
            if not res or res[0] != isa:
                continue
            pairs = n * (n - 1) / 2
            out.append(f"| {isa} | {64 * words}-bit | {pairs:.3g} | {res[1]:.2f} | "
                       f"{pairs / res[1] / 1e9:.2f} G |")
    cores = os.cpu_count()
    n = 200000 if args.quick else 1000000
    codes = random_codes(n, 1, 2)
    out.append(f"\n### {n:,} random 64-bit codes, all pairs within 8 bits, {cores} threads\n")
    out.append("| method | seconds | pairs found | equivalent pairs/s |")
    out.append("|---|---:|---:|---:|")
    for label, method in (("auto", 0), ("brute force", 1), ("multi-index hashing", 2)):
        dt, k = run_pairs(L, codes, n, 1, 8, 0, method)
        used = L.ferry_search_last_method().decode()
        out.append(f"| {label} ({used}) | {dt:.1f} | {k} | {n * (n - 1) / 2 / dt / 1e9:.1f} G |")
    out.append("")


def peer_versions():
    """imagehash and Pillow's versions, where they import (the search
    sections need neither)."""
    found = []
    for name, mod in (("imagehash", "imagehash"), ("Pillow", "PIL")):
        try:
            found.append(f"{name} {__import__(mod).__version__}")
        except ImportError:
            found.append(f"{name} not installed")
    return ", ".join(found) + "."


def section_crossover(args, out):
    """Where brute force and multi-index hashing cross: each forced, and
    the automatic choice, on random codes (the same statistic: best of 2)."""
    from ferrylib import lib

    L = lib()
    L.ferry_search_last_method.restype = ctypes.c_char_p
    cores = os.cpu_count()
    out.append(f"\n### Brute force or multi-index hashing: the automatic choice, {cores} threads\n")
    out.append("| codes | bits | threshold | auto (its choice) | brute force | multi-index | "
               "pairs | auto / best |")
    out.append("|---:|---:|---:|---:|---:|---:|---:|---:|")
    grid = [(100000, 1, (4, 8, 12, 16)), (300000, 1, (8, 10, 12)), (100000, 4, (32, 48))]
    if args.quick:
        grid = [(100000, 1, (8, 16)), (50000, 4, (32,))]
    for n, words, ts in grid:
        codes = random_codes(n, words, 3)
        for t in ts:
            row = {}
            for label, method in (("auto", 0), ("brute", 1), ("mih", 2)):
                runs = [run_pairs(L, codes, n, words, t, 0, method) for _ in range(2)]
                row[label] = (min(r[0] for r in runs), runs[0][1],
                              L.ferry_search_last_method().decode())
            best = min(row["brute"][0], row["mih"][0])
            out.append(f"| {n:,} | {64 * words} | {t} | {row['auto'][0]:.2f} s "
                       f"({row['auto'][2]}) | {row['brute'][0]:.2f} s | {row['mih'][0]:.2f} s | "
                       f"{row['auto'][1]} | {row['auto'][0] / best:.2f} |")
    out.append("")


# ------------------------------------------------------------------ dupes

def pr_table(rows, truth, kind, thresholds):
    names = sorted(rows)
    n = len(names)
    h = [int(rows[x][kind], 16) for x in names]
    d = {(i, j): bin(h[i] ^ h[j]).count("1") for i in range(n) for j in range(i + 1, n)}
    real = {p for p in d if truth[names[p[0]]] >= 0 and truth[names[p[0]]] == truth[names[p[1]]]}
    res = []
    for t in thresholds:
        parent = list(range(n))

        def find(a):
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a
        for p, dist in d.items():
            if dist <= t:
                parent[find(p[0])] = find(p[1])
        grouped = {p for p in d if find(p[0]) == find(p[1])}
        tp = len(grouped & real)
        prec = tp / len(grouped) if grouped else 1.0
        rec = tp / len(real)
        res.append((t, prec, rec, 2 * prec * rec / (prec + rec) if prec + rec else 0))
    return res


def section_dupes(args, out, tmp):
    truth = {r["file"]: int(r["group"])
             for r in csv.DictReader(open(args.corpus / "dupes" / "GROUND_TRUTH.csv"))}
    out.append("### Duplicate groups on dupes/ (GROUND_TRUTH.csv): pair precision / recall / F1\n")
    out.append("Pairs are those of the groups (union-find over all pairs within the "
               "threshold), against the pairs of the ground-truth groups.\n")
    for size in (8, 16):
        for mode in ("fast", "compatible"):
            cat = tmp / f"d{size}{mode}.fidx"
            subprocess.run([args.ferry, "hash", args.corpus / "dupes", "-o", cat, "--mode", mode,
                            "--hash-size", str(size), "-q"], check=True)
            r = subprocess.run([args.ferry, "index", "export", cat], capture_output=True,
                               text=True, check=True)
            rows = {os.path.basename(x["path"]): x for x in csv.DictReader(r.stdout.splitlines())}
            out.append(f"\n**hash size {size}, {mode} mode** (P / R / F1)\n")
            bits = size * size
            steps = ([0, 1, 2, 3, 4, 6, 8, 10, 12, 14, 16] if size == 8 else
                     [0, 4, 8, 10, 12, 16, 24, 32, 48, 56, 64, 68, 72, 76, 80, 88])
            out.append("| hash | " + " | ".join(f"t={t}" for t in steps) + " |")
            out.append("|---|" + "---|" * len(steps))
            for kind in KINDS:
                ts = [t for t in steps if t <= (42 if kind == "colorhash" else bits)]
                res = pr_table(rows, truth, kind, ts)
                cells = [f"{p:.2f}/{rr:.2f}/**{f:.2f}**" if f == max(x[3] for x in res)
                         else f"{p:.2f}/{rr:.2f}/{f:.2f}" for _, p, rr, f in res]
                out.append(f"| {kind} | " + " | ".join(cells) + " |")
    out.append("")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("FERRY_BUILD", str(ROOT / "build")))
    ap.add_argument("--corpus", default=os.environ.get(
        "FERRY_CORPUS", str(ROOT.parent / "shared" / "corpus")))
    ap.add_argument("--sections", default="speed,agree,search,dupes",
                    help="comma list of speed, agree, search, crossover, dupes")
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    ap.add_argument("--append", action="store_true", help="append to bench/RESULTS.md")
    args = ap.parse_args()
    os.environ["FERRY_BUILD"] = args.build
    args.corpus = pathlib.Path(args.corpus)
    args.ferry = os.environ.get("FERRY_BIN", str(pathlib.Path(args.build) / "ferry"))
    if not (args.corpus / "hires").is_dir():
        sys.exit(f"bench_hash: corpus not found at {args.corpus}")
    import tempfile

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="ferry_bench_hash_"))
    out = [f"## Perceptual hashing and duplicate search ({datetime.date.today().isoformat()})\n",
           f"Machine: {cpu_model()}, {os.cpu_count()} cores; `python3 bench/bench_hash.py"
           f"{' --quick' if args.quick else ''} --sections {args.sections}`. {peer_versions()}\n"]
    sections = {"speed": section_speed, "agree": section_agree, "search": section_search,
                "crossover": section_crossover,
                "dupes": lambda a, o: section_dupes(a, o, tmp)}
    for name in args.sections.split(","):
        t0 = time.time()
        sections[name](args, out)
        print(f"[{name}: {time.time() - t0:.0f} s]", file=sys.stderr)
    text = "\n".join(out) + "\n"
    print(text)
    if args.append:
        with open(ROOT / "bench" / "RESULTS.md", "a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
