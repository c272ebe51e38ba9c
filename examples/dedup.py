#!/usr/bin/env python3
"""Find near-duplicate photos with ferry's perceptual hashes.

    python examples/dedup.py ~/Pictures                       # groups, keeper first
    python examples/dedup.py ~/Pictures --kind dhash --threshold 6 --json > dupes.json
    python examples/dedup.py ~/Pictures --move-to ~/dupes      # move all but the keepers

Each group lists files whose hashes are within --threshold bits of each other
(transitively); its first file is the keeper (ferry's default rules: the
camera's JPEG before a PNG made from it, then resolution, file size, age).
Nothing is deleted: --move-to moves the other members into a folder, keeping
their relative paths, and logs each move as it is made (DIR/dedup-moves.jsonl,
one JSON line per file, appended). A file already at a destination is never
replaced: that member stays and is named. For a catalog, `ferry dupes CATALOG
--move-dupes-to DIR --apply` does the same with a crash-safe journal.

JSON is strict UTF-8, as ferry's own (docs/DEDUP.md): a file name that is not
UTF-8 prints with U+FFFD for each bad byte and "<key>_b64" beside it holding
the name's exact bytes.
"""
import argparse
import base64
import json
import os
import shutil
import sys
import time

import ferry


def name_fields(key, path):
    """{key: text} for a path, plus key_b64 (its exact bytes) when it is not UTF-8."""
    raw = os.fsencode(path)
    try:
        return {key: raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {key: raw.decode("utf-8", "replace"), key + "_b64": base64.b64encode(raw).decode()}


def move_members(groups, roots, dest_dir):
    """Moves every member but the keeper under dest_dir, each logged when made.
    Returns the number of members left in place because of an error."""
    base = os.path.commonpath([os.path.abspath(r) for r in roots])
    if os.path.isfile(base):
        base = os.path.dirname(base)
    os.makedirs(dest_dir, exist_ok=True)
    log_path = os.path.join(dest_dir, "dedup-moves.jsonl")
    moved = failed = 0
    with open(log_path, "a", encoding="utf-8") as log:
        for g in groups:
            for path, _, _, _ in g[1:]:
                dest = os.path.join(dest_dir, os.path.relpath(os.path.abspath(path), base))
                if os.path.lexists(dest):
                    failed += 1
                    print(f"dedup: {path}: not moved: {dest} already exists (not replaced)",
                          file=sys.stderr)
                    continue
                try:
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    shutil.move(path, dest)
                except OSError as e:
                    failed += 1
                    print(f"dedup: {path}: not moved: {e}", file=sys.stderr)
                    if os.path.lexists(path) and os.path.lexists(dest):
                        os.remove(dest)  # a copy across file systems cut short: ours, partial
                    continue
                moved += 1
                entry = {**name_fields("from", path), **name_fields("to", dest),
                         **name_fields("keeper", g[0][0])}
                log.write(json.dumps(entry) + "\n")
                log.flush()
    print(f"moved {moved} files to {dest_dir} (log: {log_path})"
          + (f"; {failed} left in place (named above)" if failed else ""), file=sys.stderr)
    return failed


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("roots", nargs="+", help="directories (searched recursively) or files")
    p.add_argument("--kind", default="phash",
                   help="ahash, dhash, dhash_v, phash (default), whash, colorhash")
    p.add_argument("--threshold", type=int, default=None,
                   help="max Hamming distance (bits; default: ferry dupes', 72 of 256 for phash)")
    p.add_argument("--mode", choices=["fast", "compatible"], default="fast",
                   help="compatible: imagehash's exact bits (a full decode, slower)")
    p.add_argument("--hash-size", type=int, choices=[8, 16], default=16,
                   help="16: 256-bit hashes (default, as ferry hash); 8: imagehash's 64")
    p.add_argument("--workers", type=int, default=None, help="hashing threads (default: all)")
    p.add_argument("--device", default=None,
                   help="cuda or cuda:N: hash on a GPU too (fast mode: its JPEG engine)")
    p.add_argument("--json", action="store_true", help="print the groups as JSON")
    p.add_argument("--move-to", metavar="DIR", help="move every non-keeper member here")
    args = p.parse_args()
    # a name that is not UTF-8 is listed with its own bytes, not an encoding error
    sys.stdout.reconfigure(errors="surrogateescape")

    if not hasattr(ferry, "find_duplicates"):
        print("dedup: this ferry was built without hashing (src/hash, src/search)",
              file=sys.stderr)
        return 1
    t0 = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty():  # a line that rewrites itself, on a terminal only
            rate = done / max(time.perf_counter() - t0, 1e-9)
            end = "\n" if done == total else ""
            print(f"\rdedup: {done}/{total} files hashed ({rate:.0f}/s)", end=end,
                  file=sys.stderr, flush=True)

    try:
        groups = ferry.find_duplicates(args.roots, args.kind, args.threshold, mode=args.mode,
                                       hash_size=args.hash_size, workers=args.workers,
                                       details=True, device=args.device, progress=progress)
    except ferry.Error as e:
        print(f"dedup: {e}", file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - t0
    extra = sum(len(g) - 1 for g in groups)

    if args.json:
        print(json.dumps([[{**name_fields("path", path), "width": w, "height": h, "distance": d}
                           for path, w, h, d in g] for g in groups], indent=1))
    else:
        for i, g in enumerate(groups):
            print(f"group {i + 1} ({len(g)} files)")
            for j, (path, w, h, d) in enumerate(g):
                tag = "keep" if j == 0 else f"d={d:2d}"
                print(f"  {tag}  {w}x{h}  {path}")
        print(f"{len(groups)} groups, {extra} duplicates, {elapsed:.2f} s", file=sys.stderr)

    if args.move_to and move_members(groups, args.roots, args.move_to):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
