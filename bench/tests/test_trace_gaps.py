"""bench/trace_gaps.py: where a step's GPU stream waits, from a profiler's Chrome trace.

A test of a bench/ tool, outside `make test`: python3 -m pytest bench/tests"""
import gzip
import importlib.util
import json
import pathlib

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "bench" / "trace_gaps.py"


@pytest.fixture(scope="module")
def tg():
    spec = importlib.util.spec_from_file_location("trace_gaps", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def op(cat, name, ts, dur, stream, corr=None):
    args = {"stream": stream, "device": 0}
    if corr is not None:
        args["correlation"] = corr
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 0, "tid": stream,
            "args": args}


def launch(ts, corr):
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts, "dur": 3,
            "pid": 99, "tid": 99, "args": {"correlation": corr}}


def trace(tmp_path):
    """The step's stream 7: K1, a gap the host is late for (launched at 140, 40 µs after K1
    ends, started 10 µs later), K2, a gap waiting on NCCL (40 µs) then the loader's copy
    (10 µs), K3 with a loader kernel beside it for 30 µs."""
    ev = [op("kernel", "k1", 0, 100, 7, 1), launch(10, 1),
          op("kernel", "k2", 150, 100, 7, 2), launch(140, 2),
          op("kernel", "k3", 300, 100, 7, 3), launch(120, 3),
          op("kernel", "ncclDevKernel_Broadcast", 240, 50, 20, 4), launch(100, 4),
          op("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 280, 30, 30, 5),
          op("kernel", "ferry_resize", 350, 30, 30, 6),
          {"ph": "i", "name": "an instant event", "ts": 5}]
    p = tmp_path / "rank0.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    return p


def test_trace_gaps_splits_the_step_streams_idle(tg, tmp_path):
    r = tg.analyse(*tg.load(trace(tmp_path)), steps=1)
    assert r["main_stream"] == 7 and r["step_ms"] == 0.4 and r["stream_busy_ms"] == 0.3
    assert r["launch_found"] == 1.0
    assert r["stream_idle_ms"] == 0.1
    assert r["host_late_ms"] == 0.04 and r["wait_nothing_ms"] == 0.01
    assert r["wait_nccl_ms"] == 0.04 and r["wait_other_streams_ms"] == 0.01
    assert r["gpu_idle_ms"] == 0.05  # 100..150: nothing on any stream
    # the loader's kernel during k3 (30 µs) and the tail of its copy (300..310)
    assert r["other_streams_beside_step_ms"] == 0.04
    assert r["streams"]["20"] == {"nccl": True, "kernel_ms": 0.05, "copy_ms": 0.0}
    assert r["streams"]["30"] == {"nccl": False, "kernel_ms": 0.03, "copy_ms": 0.03}
    assert [g["before"] for g in r["longest_gaps"]] == ["k2", "k3"]
    # per step: the window's totals over the steps it holds
    r2 = tg.analyse(*tg.load(trace(tmp_path)), steps=2)
    assert r2["step_ms"] == 0.2 and r2["host_late_ms"] == 0.02


def test_trace_gaps_cli(tg, tmp_path, capsys):
    good = trace(tmp_path)
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"traceEvents": [launch(1, 1)]}))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert tg.main([str(good), "--steps", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["trace"] == str(good) and out["host_late_ms"] == 0.04
    packed = tmp_path / "rank0.json.gz"  # a gzipped trace
    packed.write_bytes(gzip.compress(good.read_bytes()))
    assert tg.main([str(packed), "--steps", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["host_late_ms"] == 0.04
    assert tg.main([str(good), str(empty), str(broken), "--steps", "1"]) == 1
    cap = capsys.readouterr()
    assert cap.out.count("\n") == 1 and "host late 0.04" in cap.out  # the good one's line
    assert f"{empty}: no GPU operation in the trace" in cap.err
    assert f"{broken}: cannot read the trace" in cap.err
    with pytest.raises(SystemExit):
        tg.main([str(good), "--steps", "0"])


def test_trace_gaps_tells_the_steps_parts(tg, tmp_path):
    """With the step's own markers (the loss's nll_loss_forward kernel ends a forward, the fused
    SGD kernels are the update), each gap counts in the part it delays; without them the parts
    are not told apart."""
    ev, corr, t = [], 0, 0.0
    for step in range(2):  # per step: forward gap 30 (host late 20), backward gap 10 (a wait)
        for name, pre, late_by in [("conv_fwd", 30, 20), ("nll_loss_forward_kernel", 0, 0),
                                   ("conv_bwd", 10, 0), ("FusedSgdMathFunctor", 0, 0)]:
            if step == 0 and name == "conv_fwd":
                pre = late_by = 0  # the window starts at its first operation
            corr += 1
            start = t + pre
            ev += [op("kernel", name, start, 50, 7, corr), launch(t + late_by, corr)]
            t = start + 50
    p = tmp_path / "parts.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    r = tg.analyse(*tg.load(p), steps=2)
    # step 2's forward gap (30, of which 20 before its launch) and both backward gaps (10 each,
    # launched in time), over 2 steps; and each part's kernel time per step (50 µs a kernel)
    assert r["parts"] == {"backward": {"idle_ms": 0.01, "host_late_ms": 0.0, "kernel_ms": 0.05},
                          "forward": {"idle_ms": 0.015, "host_late_ms": 0.01, "kernel_ms": 0.1},
                          "optimizer": {"idle_ms": 0.0, "host_late_ms": 0.0, "kernel_ms": 0.05}}
    assert {g["part"] for g in r["longest_gaps"]} == {"forward", "backward"}
    for e in ev:
        e["name"] = e["name"].replace("FusedSgd", "Adam")
    p.write_text(json.dumps({"traceEvents": ev}))
    assert tg.analyse(*tg.load(p), steps=2)["parts"] is None


def test_trace_gaps_diff_names_the_kernels_that_differ(tg, tmp_path, capsys):
    """--diff: two traces of the same step whose processes picked other kernels for a layer
    (as cuDNN's autotuner may): the kernels that differ, the largest difference first, with
    the ones only one trace has."""
    def write(name, kernels):
        ev, t = [], 0
        for i, (k, dur) in enumerate(kernels, 1):
            ev += [op("kernel", k, t, dur, 7, i), launch(t, i)]
            t += dur
        p = tmp_path / name
        p.write_text(json.dumps({"traceEvents": ev}))
        return p
    a = write("a.json", [("conv_tile128", 300), ("bn", 100), ("relu", 50)])
    b = write("b.json", [("conv_tile64", 400), ("bn", 100), ("relu", 60)])
    d = tg.diff_kernels(tg.analyse(*tg.load(a), steps=1), tg.analyse(*tg.load(b), steps=1))
    assert d["a_kernel_ms"] == 0.45 and d["b_kernel_ms"] == 0.56
    assert d["only_in_a"] == 1 and d["only_in_b"] == 1
    assert [(x["kernel"], x["only_in"]) for x in d["differ"]] == [
        ("conv_tile64", "b"), ("conv_tile128", "a"), ("relu", None)]  # bn: the same, left out
    assert tg.main([str(a), str(b), "--steps", "1", "--diff"]) == 0
    out = capsys.readouterr().out
    assert "(only in b) conv_tile64" in out and out.count("\n") == 6
    with pytest.raises(SystemExit):
        tg.main([str(a), "--steps", "1", "--diff"])
