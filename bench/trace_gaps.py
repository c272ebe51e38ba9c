#!/usr/bin/env python3
"""Where a training step's GPU stream waits: sums up a Chrome trace of PyTorch's profiler with
CUDA activity (examples/train_imagenet.py --profile DIR writes DIR/rank<R>.json).

    python3 bench/trace_gaps.py DIR/rank0.json DIR/rank1.json --steps 8 [--json]
    (a trace may be gzipped, NAME.json.gz, as bench/gpu_x2_checks.sh keeps them)

The step's stream is the one with the most kernel time. Between two of its operations (kernels,
copies, memsets) a gap is either the host's ("host late": the next operation was launched after
the previous one ended, so the stream had nothing queued) or a wait for something else (launched
in time, started late: an event of another stream, NCCL's or the loader's). Where the trace
lacks an operation's launch call, its gap counts as a wait (launch_found says how often). Each
wait is split by what ran meanwhile on the GPU's other streams: NCCL's kernels, other work (the
loader's copies and kernels), or nothing. Figures are ms per step (the window's totals /
--steps).

Output: one line per trace (--json: one JSON object per line), with the longest gaps.
"""
import argparse
import gzip
import json
import sys

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
LAUNCH_CATS = {"cuda_runtime", "cuda_driver"}


def load(path):
    """The trace's GPU operations and its launch calls by correlation id."""
    with (gzip.open if str(path).endswith(".gz") else open)(path, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    ops, launches = [], {}
    for e in events:
        if e.get("ph") != "X" or "dur" not in e:
            continue
        cat = str(e.get("cat", "")).lower()
        args = e.get("args") or {}
        if cat in GPU_CATS:
            ops.append({"cat": cat, "name": e.get("name", ""), "ts": float(e["ts"]),
                        "end": float(e["ts"]) + float(e["dur"]),
                        "stream": args.get("stream", e.get("tid")),
                        "corr": args.get("correlation")})
        elif cat in LAUNCH_CATS and args.get("correlation") is not None:
            launches[args["correlation"]] = float(e["ts"])
    return ops, launches


def union(intervals):
    """Merged, sorted (start, end) intervals."""
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def overlap(a, b, merged):
    """Length of [a, b) covered by merged intervals."""
    return sum(max(0.0, min(b, y) - max(a, x)) for x, y in merged if y > a and x < b)


def is_nccl(op):
    return op["name"].lower().startswith("nccl")


def phases(mine):
    """Each of the step stream's operations' part of the step, from the step's own kernels: a
    step's fused SGD kernels (FusedSgd) are its update, the loss's nll_loss_forward kernel ends
    its forward, what follows up to the update is its backward. None when the trace holds
    neither kernel (another model, loss or optimizer)."""
    names = [o["name"] for o in mine]
    if not any("FusedSgd" in n for n in names) or not any("nll_loss_forward" in n for n in names):
        return None
    out, state = [], "forward"
    for n in names:
        if "FusedSgd" in n:
            out.append("optimizer")
            state = "forward"
        else:
            out.append(state)
            if "nll_loss_forward" in n:
                state = "backward"
    return out


def analyse(ops, launches, steps, top=5):
    if not ops:
        return {"error": "no GPU operation in the trace (was it recorded with CUDA activity?)"}
    kernel_us = {}
    for o in ops:
        if o["cat"] == "kernel":
            kernel_us[o["stream"]] = kernel_us.get(o["stream"], 0.0) + o["end"] - o["ts"]
    main = max(kernel_us, key=kernel_us.get) if kernel_us else ops[0]["stream"]
    mine = sorted((o for o in ops if o["stream"] == main), key=lambda o: o["ts"])
    others = [o for o in ops if o["stream"] != main]
    nccl = union((o["ts"], o["end"]) for o in others if is_nccl(o))
    rest = union((o["ts"], o["end"]) for o in others if not is_nccl(o))
    either = union([(o["ts"], o["end"]) for o in others])
    t0, t1 = mine[0]["ts"], max(o["end"] for o in mine)
    busy = union((o["ts"], o["end"]) for o in mine)
    anything = union([(o["ts"], o["end"]) for o in ops])
    late = wait_nccl = wait_other = wait_none = 0.0
    matched = sum(1 for o in mine if launches.get(o["corr"]) is not None)
    gaps, reach = [], mine[0]["end"]
    part = phases(mine)
    by_part = {}  # a gap counts in the part of the operation it delays
    for i, op in enumerate(mine[1:], 1):
        gap = op["ts"] - reach
        if gap > 0:
            launched = launches.get(op["corr"])
            h = min(gap, max(0.0, launched - reach)) if launched is not None else 0.0
            w0 = reach + h  # the wait: from the launch (or the gap's start) to the op's start
            n = overlap(w0, op["ts"], nccl)  # NCCL first; the loader's where NCCL was idle
            r = overlap(w0, op["ts"], either) - n
            wn = max(0.0, (gap - h) - n - r)
            late, wait_nccl, wait_other, wait_none = late + h, wait_nccl + n, wait_other + r, \
                wait_none + wn
            gaps.append({"at_ms": round((reach - t0) / 1e3, 3), "ms": round(gap / 1e3, 3),
                         "host_late_ms": round(h / 1e3, 3), "before": op["name"][:60]})
            if part:
                b = by_part.setdefault(part[i], [0.0, 0.0])
                b[0], b[1] = b[0] + gap, b[1] + h
                gaps[-1]["part"] = part[i]
        reach = max(reach, op["end"])
    per = 1e3 * steps  # µs in the window -> ms per step
    stream_ms = {}
    for o in others:
        k = str(o["stream"])
        s = stream_ms.setdefault(k, {"nccl": is_nccl(o), "kernel": 0.0, "copy": 0.0})
        s["kernel" if o["cat"] == "kernel" else "copy"] += o["end"] - o["ts"]
    step_kernels = union((o["ts"], o["end"]) for o in mine if o["cat"] == "kernel")
    beside = sum(overlap(x, y, rest) for x, y in step_kernels)
    return {
        "steps": steps, "main_stream": main,
        # the step's operations whose launch call the trace holds: without it, host late is 0
        "launch_found": round(matched / len(mine), 3), "window_ms": round((t1 - t0) / 1e3, 3),
        "step_ms": round((t1 - t0) / per, 3),
        "stream_busy_ms": round(sum(y - x for x, y in busy) / per, 3),
        "stream_idle_ms": round(((t1 - t0) - sum(y - x for x, y in busy)) / per, 3),
        "host_late_ms": round(late / per, 3),
        "wait_nccl_ms": round(wait_nccl / per, 3),
        "wait_other_streams_ms": round(wait_other / per, 3),
        "wait_nothing_ms": round(wait_none / per, 3),
        "gpu_idle_ms": round(((t1 - t0) - overlap(t0, t1, anything)) / per, 3),
        # the stream's idle time and its host-late share in each part of the step (None: the
        # trace has no fused SGD or nll_loss kernel to tell the parts by)
        "parts": ({k: {"idle_ms": round(v[0] / per, 3), "host_late_ms": round(v[1] / per, 3)}
                   for k, v in sorted(by_part.items())} if part else None),
        # the other streams' work (the loader's copies and kernels) while the step's kernels ran
        "other_streams_beside_step_ms": round(beside / per, 3),
        "streams": {k: {"nccl": v["nccl"], "kernel_ms": round(v["kernel"] / per, 3),
                        "copy_ms": round(v["copy"] / per, 3)}
                    for k, v in sorted(stream_ms.items())},
        "longest_gaps": sorted(gaps, key=lambda g: -g["ms"])[:top],
    }


def line(path, r):
    if "error" in r:
        return f"{path}: {r['error']}"
    s = ", ".join(f"{k}{' nccl' if v['nccl'] else ''} {v['kernel_ms']}+{v['copy_ms']}"
                  for k, v in r["streams"].items())
    g = "; ".join(f"{x['ms']} ms at {x['at_ms']} (host {x['host_late_ms']}) before {x['before']}"
                  for x in r["longest_gaps"][:3])
    pt = ", ".join(f"{k} {v['idle_ms']} (host {v['host_late_ms']})"
                   for k, v in (r["parts"] or {}).items()) or "not told apart"
    return (f"{path}: step {r['step_ms']} ms on stream {r['main_stream']}: busy "
            f"{r['stream_busy_ms']}, idle {r['stream_idle_ms']} = host late {r['host_late_ms']} "
            f"(launch calls found for {100 * r['launch_found']:.0f} %) + "
            f"waits on NCCL {r['wait_nccl_ms']}, on other streams {r['wait_other_streams_ms']}, "
            f"on nothing {r['wait_nothing_ms']}; idle by part: {pt}; GPU idle {r['gpu_idle_ms']}; "
            f"other streams beside "
            f"the step's kernels {r['other_streams_beside_step_ms']}; streams (kernel+copy ms) "
            f"{s}; longest gaps: {g}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("traces", nargs="+")
    p.add_argument("--steps", type=int, required=True, help="the steps the traces hold")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    if a.steps < 1:
        p.error("--steps must be at least 1")
    rc = 0
    for path in a.traces:
        try:
            r = analyse(*load(path), a.steps)
        except (OSError, ValueError, KeyError, TypeError) as e:
            r = {"error": f"cannot read the trace: {e}"}
        if "error" in r:
            rc = 1
            print(f"trace_gaps: {path}: {r['error']}", file=sys.stderr)
            continue
        print(json.dumps(dict(r, trace=path)) if a.json else line(path, r), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
