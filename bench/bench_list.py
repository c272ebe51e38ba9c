"""How long a Loader takes to list a folder source (ImageFolder layout):
the time from ferry.Loader(...) to its num_samples, which is the listing
(the walk, the image-name filter, the sort, the labels) plus opening the
loader. Beside it, os.walk over the same tree (names only, the floor any
walk pays). The tree is made once: FILES empty files named *.jpg, 1,000
per class folder (the files are never read).

  python3 bench/bench_list.py [--files 200000] [--repeat 5] [--dir PATH]

Prints one JSON line: median and best seconds for each.

Claims it proves (bench/CLAIMS.md): C72.
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import ferry  # noqa: E402


def make_tree(root: str, files: int) -> None:
    per = 1000
    for c in range((files + per - 1) // per):
        d = os.path.join(root, f"class{c:05d}")
        os.makedirs(d, exist_ok=True)
        for i in range(min(per, files - c * per)):
            open(os.path.join(d, f"{i:06d}.jpg"), "wb").close()


def timed(fn, repeat: int) -> list:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", help="an existing tree to list instead of a made one")
    a = ap.parse_args()
    made = None
    root = a.dir
    if not root:
        made = root = tempfile.mkdtemp(prefix="ferry-bench-list-")
        make_tree(root, a.files)
    try:
        counted = []

        def loader():
            ld = ferry.Loader(root, 256, 224, device="cpu", output="numpy")
            counted.append(ld.num_samples)
            ld.close()

        def walk():
            n = 0
            for _, _, names in os.walk(root):
                n += sum(1 for x in names if x.endswith(".jpg"))
            counted.append(n)

        t_loader = timed(loader, a.repeat)
        t_walk = timed(walk, a.repeat)
        print(json.dumps({
            "files": counted[0], "repeat": a.repeat,
            "loader_open_median_s": round(statistics.median(t_loader), 4),
            "loader_open_best_s": round(min(t_loader), 4),
            "os_walk_median_s": round(statistics.median(t_walk), 4),
            "os_walk_best_s": round(min(t_walk), 4),
        }))
    finally:
        if made:
            shutil.rmtree(made, ignore_errors=True)


if __name__ == "__main__":
    main()
