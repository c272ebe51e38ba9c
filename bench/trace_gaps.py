#!/usr/bin/env python3
"""Where a training step's GPU stream waits: sums up a Chrome trace of PyTorch's profiler with
CUDA activity (examples/train_imagenet.py --profile DIR writes DIR/rank<R>.json).

    python3 bench/trace_gaps.py DIR/rank0.json DIR/rank1.json --steps 8 [--json]
    python3 bench/trace_gaps.py A.json B.json --steps 8 --diff [--json]
    (a trace may be gzipped, NAME.json.gz)

A tool for reading traces, not a benchmark: it proves no row of bench/CLAIMS.md. Its tests:
python3 -m pytest bench/tests

The step's stream is the one with the most kernel time. Between two of its operations (kernels,
copies, memsets) a gap is either the host's ("host late": the next operation was launched after
the previous one ended, so the stream had nothing queued) or a wait for something else (launched
in time, started late: an event of another stream, NCCL's or the loader's). Where the trace
lacks an operation's launch call, its gap counts as a wait (launch_found says how often). Each
wait is split by what ran meanwhile on the GPU's other streams: NCCL's kernels, other work (the
loader's copies and kernels), or nothing. Figures are ms per step (the window's totals /
--steps).

Output: one line per trace (--json: one JSON object per line), with the longest gaps. --diff
(two traces): the step stream's kernels whose time per step differs between them, the largest
difference first, as cuDNN's autotuner (torch.backends.cudnn.benchmark) may choose other
convolution kernels in each process.
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
    neither kernel (another model, loss or optimizer). The window may open inside a step (the
    GPU runs behind the host): what comes before its first nll_loss_forward then counts as a
    forward though it may hold the end of a backward, so compare parts, not windows, with
    care."""
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
    kernels, part_kernel = {}, {}
    for i, o in enumerate(mine):
        if o["cat"] == "kernel":
            kernels[o["name"]] = kernels.get(o["name"], 0.0) + o["end"] - o["ts"]
            if part:
                part_kernel[part[i]] = part_kernel.get(part[i], 0.0) + o["end"] - o["ts"]
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
        "parts": ({k: {"idle_ms": round(by_part.get(k, (0.0, 0.0))[0] / per, 3),
                       "host_late_ms": round(by_part.get(k, (0.0, 0.0))[1] / per, 3),
                       "kernel_ms": round(part_kernel.get(k, 0.0) / per, 3)}
                   for k in sorted(set(by_part) | set(part_kernel))} if part else None),
        # the step stream's kernel time per step, by kernel name
        "kernels": {k: round(v / per, 4) for k, v in sorted(kernels.items())},
        # the other streams' work (the loader's copies and kernels) while the step's kernels ran
        "other_streams_beside_step_ms": round(beside / per, 3),
        "streams": {k: {"nccl": v["nccl"], "kernel_ms": round(v["kernel"] / per, 3),
                        "copy_ms": round(v["copy"] / per, 3)}
                    for k, v in sorted(stream_ms.items())},
        "longest_gaps": sorted(gaps, key=lambda g: -g["ms"])[:top],
    }


def diff_kernels(a, b, top=12):
    """The kernels of two analyses' step streams whose time per step differs, the largest
    difference first: ms per step in each (0 where a trace lacks the kernel)."""
    ka, kb = a["kernels"], b["kernels"]
    rows = [{"kernel": k, "a_ms": ka.get(k, 0.0), "b_ms": kb.get(k, 0.0),
             "only_in": "a" if k not in kb else "b" if k not in ka else None}
            for k in set(ka) | set(kb) if ka.get(k, 0.0) != kb.get(k, 0.0)]
    rows.sort(key=lambda x: (-abs(x["a_ms"] - x["b_ms"]), x["kernel"]))
    return {"a_kernel_ms": round(sum(ka.values()), 3), "b_kernel_ms": round(sum(kb.values()), 3),
            "a_distinct": len(ka), "b_distinct": len(kb),
            "only_in_a": sum(1 for k in ka if k not in kb),
            "only_in_b": sum(1 for k in kb if k not in ka), "differ": rows[:top]}


def diff_line(pa, pb, d):
    rows = "\n".join(f"  {x['a_ms']:8.3f} {x['b_ms']:8.3f}  "
                      f"{'(only in ' + x['only_in'] + ') ' if x['only_in'] else ''}"
                      f"{x['kernel'][:100]}" for x in d["differ"])
    return (f"a {pa}: {d['a_kernel_ms']} ms of kernels per step, {d['a_distinct']} kernels "
            f"({d['only_in_a']} not in b)\nb {pb}: {d['b_kernel_ms']} ms, {d['b_distinct']} "
            f"kernels ({d['only_in_b']} not in a)\n  a ms     b ms    (per step; largest "
            f"difference first)\n{rows}")


def line(path, r):
    if "error" in r:
        return f"{path}: {r['error']}"
    s = ", ".join(f"{k}{' nccl' if v['nccl'] else ''} {v['kernel_ms']}+{v['copy_ms']}"
                  for k, v in r["streams"].items())
    g = "; ".join(f"{x['ms']} ms at {x['at_ms']} (host {x['host_late_ms']}) before {x['before']}"
                  for x in r["longest_gaps"][:3])
    pt = ", ".join(f"{k} {v['idle_ms']} (host {v['host_late_ms']}; kernels {v['kernel_ms']})"
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
    p.add_argument("--diff", action="store_true",
                   help="two traces: the step stream's kernels whose time differs between them")
    a = p.parse_args(argv)
    if a.steps < 1:
        p.error("--steps must be at least 1")
    if a.diff and len(a.traces) != 2:
        p.error(f"--diff compares two traces, not {len(a.traces)}")
    rc, done = 0, []
    for path in a.traces:
        try:
            r = analyse(*load(path), a.steps)
        except (OSError, ValueError, KeyError, TypeError) as e:
            r = {"error": f"cannot read the trace: {e}"}
        if "error" in r:
            rc = 1
            print(f"trace_gaps: {path}: {r['error']}", file=sys.stderr)
            continue
        done.append(r)
        if not a.diff:
            print(json.dumps(dict(r, trace=path)) if a.json else line(path, r), flush=True)
    if a.diff and len(done) == 2:
        d = diff_kernels(*done)
        print(json.dumps(dict(d, a=a.traces[0], b=a.traces[1])) if a.json
              else diff_line(*a.traces, d))
    return rc


if __name__ == "__main__":
    sys.exit(main())
