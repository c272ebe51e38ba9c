#!/usr/bin/env python3
"""Sum up bench/gpu_clock_sampler.sh's CSV per training run: for each run (the samples in a row
that name the same torchrun command) and each GPU it kept busy (utilisation >= --busy %), the
samples, the SM clock's mean and range, the memory clock, power, temperature and the clock-event
reasons seen. One line per run, in order; a run's number matches gpu_x2_checks' ab order.

  python3 bench/clock_by_run.py smi.csv [--busy 90] [--json]
"""
import argparse
import collections
import csv
import json
import statistics
import sys


def runs(rows):
    """[(command, [rows])] for each stretch of samples naming one torchrun command; samples
    without one ("-", or an older sampler's line that named itself) end a stretch."""
    out, cur = [], None
    for r in rows:
        run = r.get("run") or "-"
        if not run.startswith("np="):
            cur = None
            continue
        if cur is None or cur[0] != run:
            cur = (run, [])
            out.append(cur)
        cur[1].append(r)
    return out


def num(text):
    """A sample's number, or None where nvidia-smi said "[N/A]" or the like."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def values(rs, key):
    return [v for v in (num(r[key]) for r in rs) if v is not None]


def per_gpu(samples, busy):
    by = collections.defaultdict(list)
    for r in samples:
        u = num(r["util_pct"])
        if u is not None and u >= busy:
            by[r["gpu"]].append(r)
    res = {}
    for g, rs in sorted(by.items()):
        sm, mem, pw, tc = (values(rs, k) for k in ("sm_mhz", "mem_mhz", "power_w", "temp_c"))
        res[g] = {"samples": len(rs),
                  "sm_mhz_mean": round(statistics.mean(sm)) if sm else None,
                  "sm_mhz_min": min(sm, default=None), "sm_mhz_max": max(sm, default=None),
                  "mem_mhz_mean": round(statistics.mean(mem)) if mem else None,
                  "power_w_mean": round(statistics.mean(pw)) if pw else None,
                  "temp_c_max": max(tc, default=None),
                  "reasons": dict(collections.Counter(r["reasons"] for r in rs))}
    return res


def show(v, fmt="{:.0f}"):
    return "?" if v is None else fmt.format(v)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--busy", type=float, default=90.0,
                    help="a sample counts when the GPU's utilisation is at least this (%%)")
    ap.add_argument("--json", action="store_true", help="one JSON object per run")
    a = ap.parse_args(argv)
    try:
        with open(a.csv, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print(f"clock_by_run: {a.csv}: {e.strerror}", file=sys.stderr)
        return 2
    need = {"t", "gpu", "sm_mhz", "mem_mhz", "power_w", "temp_c", "util_pct", "reasons", "run"}
    if rows and not need <= set(rows[0]):
        print(f"clock_by_run: {a.csv}: not gpu_clock_sampler.sh's CSV (no "
              f"{', '.join(sorted(need - set(rows[0])))})", file=sys.stderr)
        return 2
    found = runs(rows)
    if not found:
        print(f"clock_by_run: {a.csv}: no sample names a torchrun command", file=sys.stderr)
        return 1
    for i, (cmd, samples) in enumerate(found, 1):
        gpus = per_gpu(samples, a.busy)
        if a.json:
            print(json.dumps({"run": i, "command": cmd, "gpus": gpus}))
            continue
        parts = [f"GPU {g}: {v['samples']} samples, SM {show(v['sm_mhz_mean'])} MHz "
                 f"({show(v['sm_mhz_min'])}-{show(v['sm_mhz_max'])}), memory "
                 f"{show(v['mem_mhz_mean'])} MHz, {show(v['power_w_mean'])} W, up to "
                 f"{show(v['temp_c_max'])} C, reasons "
                 + ", ".join(f"{k} x{n}" for k, n in v["reasons"].items())
                 for g, v in gpus.items()] or ["no GPU busy"]
        np_, _, rest = cmd.partition(" ")
        opts = rest[rest.find("--loader"):] if "--loader" in rest else rest
        print(f"run {i} ({np_} {opts}): " + "; ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
