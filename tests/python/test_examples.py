"""The examples run: dedup.py on edited copies; train_imagenet.py for two
steps with each loader (needs torch and torchvision; skipped otherwise)."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

import ferry

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.skipif(not hasattr(ferry, "find_duplicates"), reason="built without hashing")
def test_dedup(sample, tmp_path):
    from PIL import Image
    src = sample / "class0" / "p0000.jpg"
    im = Image.open(src).convert("RGB")
    im.save(tmp_path / "a.png")
    im.resize((im.width // 2, im.height // 2)).save(tmp_path / "a_small.jpg")
    Image.open(sample / "class1" / "p0001.jpg").save(tmp_path / "other.jpg")
    out = subprocess.run([sys.executable, str(EXAMPLES / "dedup.py"), str(tmp_path), "--json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    groups = json.loads(out.stdout)
    assert [[os.path.basename(m["path"]) for m in g] for g in groups] == [["a.png", "a_small.jpg"]]
    moved = subprocess.run([sys.executable, str(EXAMPLES / "dedup.py"), str(tmp_path),
                            "--move-to", str(tmp_path / "dupes")], capture_output=True,
                           text=True, timeout=60)
    assert moved.returncode == 0, moved.stderr
    assert (tmp_path / "dupes" / "a_small.jpg").exists() and (tmp_path / "a.png").exists()
    log = [json.loads(line) for line in (tmp_path / "dupes" / "dedup-moves.jsonl").open()]
    assert [(os.path.basename(e["from"]), os.path.basename(e["keeper"])) for e in log] == \
        [("a_small.jpg", "a.png")]


@pytest.mark.skipif(not hasattr(ferry, "find_duplicates"), reason="built without hashing")
def test_dedup_names_and_no_overwrite(sample, tmp_path):
    """A name that is not UTF-8: U+FFFD and path_b64 in --json, its bytes in the list; a
    file already at a destination is never replaced: that member stays, named, exit 1."""
    import base64
    from PIL import Image
    im = Image.open(sample / "class0" / "p0000.jpg").convert("RGB")
    src = tmp_path / "src"
    src.mkdir()
    im.save(src / "a.png")
    bad = os.fsencode(str(src)) + b"/b\xff.png"
    im.save(os.fsdecode(bad), format="PNG")
    run = [sys.executable, str(EXAMPLES / "dedup.py"), str(src)]
    out = subprocess.run(run + ["--json"], capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    out.stdout.decode("utf-8")  # strict UTF-8
    members = json.loads(out.stdout)[0]
    odd = [m for m in members if "path_b64" in m]
    assert len(odd) == 1 and base64.b64decode(odd[0]["path_b64"]) == bad
    assert odd[0]["path"].endswith("b\ufffd.png")
    listed = subprocess.run(run, capture_output=True, timeout=60)
    assert listed.returncode == 0 and bad in listed.stdout, listed.stderr
    dest = tmp_path / "dupes"
    dest.mkdir()
    keeper = os.path.basename(members[0]["path"])
    other = [m for m in members if os.path.basename(m["path"]) != keeper][0]
    rel = os.path.basename(base64.b64decode(other["path_b64"]) if "path_b64" in other
                           else os.fsencode(other["path"]))
    (dest / os.fsdecode(rel)).write_bytes(b"already here")
    moved = subprocess.run(run + ["--move-to", str(dest)], capture_output=True, timeout=60)
    assert moved.returncode == 1 and b"already exists (not replaced)" in moved.stderr
    assert (dest / os.fsdecode(rel)).read_bytes() == b"already here"
    assert (src / os.fsdecode(rel)).exists() and (src / keeper).exists()


def train_imagenet(data, *args):
    """examples/train_imagenet.py DATA ARGS... as one process (its CompletedProcess)."""
    return subprocess.run([sys.executable, str(EXAMPLES / "train_imagenet.py"), str(data),
                           *args], capture_output=True, text=True, timeout=300)


def last_json(out):
    """The run's last line, its JSON result, after checking that it ran."""
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("loader", ["ferry", "torch"])
def test_train_imagenet_two_steps(tiny, loader):
    pytest.importorskip("torch", reason="torch not importable")
    pytest.importorskip("torchvision", reason="torchvision not importable")
    result = last_json(train_imagenet(
        tiny, "--loader", loader, "--arch", "resnet18", "--batch-size", "4", "--size", "32",
        "--steps", "3", "--warmup", "1", "--workers", "1", "--device", "cpu", "--amp", "off",
        "--log-every", "0"))
    assert result["loader"] == loader and result["steps"] == 3 and result["images_per_s"] > 0
    assert result["cores_busy"] > 0 and result["steps_per_epoch"] > 0
    # the 2 timed steps' waits: the longest, and those over 5 ms by step number (3 at most)
    assert 0 <= result["data_wait_ms_max"] and set(result["data_waits_over_5ms"]) <= {2, 3}
    assert result["nccl_high_priority"] is False  # a DDP-on-CUDA option, off by default
    assert result["ddp"] is None  # one process: no DDP
    # CUDA's: how cuDNN picks its kernels, and the census of the step's kernels (none asked)
    assert result["cudnn_benchmark"] is None and result["kernel_census"] is None
    sec = result["seconds"]  # the run's wall time: start-up, the 1 warm-up step, the 2 timed
    assert sec["start_up"] > 0 and sec["warmup"] >= 0 and sec["timed"] > 0
    q = result["step_ms"]  # the 2 timed steps' times, as percentiles
    assert 0 < q["p10"] <= q["p50"] <= q["p90"] <= q["p99"]
    assert result["gpu_ms"] is None  # the step's parts on a CUDA stream's clock: none on the CPU
    h = result["host_ms"]  # on the host's: the 2 timed steps' parts, and the 1 gap between them
    assert set(h) == {"gap", "prepare", "forward", "backward", "optimizer"}
    assert h["forward"]["mean"] > 0 and h["prepare"]["mean"] >= 0
    assert result["main_thread_preempted_per_step"] >= 0  # Linux reports the thread's switches
    # the CUDA allocator's counters: none off CUDA
    assert result["cuda_allocator_timed"] is None and result["cuda_reserved_mib"] is None
    if loader == "ferry":  # on the CPU: the one worker asked for, no image on an engine
        assert result["ferry_workers"] == 1 and result["ferry_engine_share"] == 0.0
        assert result["ferry_engine_share_timed"] in (0.0, None)  # None: nothing made meanwhile
        # the C loader's wait is a part of the step's data wait
        assert 0 <= result["ferry_wait_ms_per_step"] <= result["data_wait_ms_per_step"] + 0.05
    else:
        assert "ferry_workers" not in result
    assert "ranks" not in result  # one process


@pytest.mark.parametrize("ddp", [[], ["--ddp-bn", "local", "--ddp-bucket-view"],
                                 ["--ddp-bn", "broadcast"]])
def test_train_imagenet_two_ranks_report_each(tiny, ddp, tmp_path):
    """Under torchrun (2 CPU processes, gloo): rank 0's line lists both ranks' own figures;
    with the example's DDP defaults (BatchNorm statistics averaged at the end), with PyTorch's
    buffer broadcast, and with the statistics left to each rank and gradients as views."""
    pytest.importorskip("torch", reason="torch not importable")
    pytest.importorskip("torchvision", reason="torchvision not importable")
    # torchrun's own temporary folder (its logs) inside the test's, which pytest removes
    env = dict(os.environ, OMP_NUM_THREADS="1", TMPDIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          "--nproc-per-node", "2", str(EXAMPLES / "train_imagenet.py"), str(tiny),
                          "--loader", "ferry", "--arch", "resnet18", "--batch-size", "2",
                          "--size", "32", "--steps", "3", "--warmup", "1", "--workers", "1",
                          "--device", "cpu", "--amp", "off", "--log-every", "0"] + ddp,
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    assert len(lines) == 1, out.stdout  # rank 0 alone prints
    result = lines[0]
    assert result["world_size"] == 2 and [r["rank"] for r in result["ranks"]] == [0, 1]
    mode = ddp[1] if ddp else "epoch-mean"
    assert result["ddp"] == {"broadcast_buffers": mode == "broadcast", "bn_stats": mode,
                             "gradient_as_bucket_view": "--ddp-bucket-view" in ddp}
    # each rank's statistics come from its own share of the images: averaged at the run's end
    # they are the same on both; left alone they are not
    digests = [r["bn_stats_digest"] for r in result["ranks"]]
    assert None not in digests and (digests[0] == digests[1]) == (mode == "epoch-mean"), digests
    assert result["bn_stats_digest"] == digests[0]
    for r in result["ranks"]:
        assert r["ferry_workers_active"] == 1 and r["ferry_engine_share"] == 0.0
        assert 0 <= r["ferry_wait_ms_per_step"] <= r["data_wait_ms_per_step"] + 0.05
        assert 0 < r["step_ms"]["p50"] <= r["step_ms"]["p99"]
        assert r["gpu_ms"] is None and r["main_thread_preempted_per_step"] >= 0
        assert r["host_ms"]["backward"]["p50"] > 0


def test_train_imagenet_step_timeline_parts(monkeypatch):
    """The example's step timeline (its CUDA path, on events that read a clock of our own, and
    the host's, on a patched perf_counter): each step's parts and the gap between steps come
    out as the differences between its marks."""
    pytest.importorskip("torch", reason="torch not importable")
    mod = load_example()
    clock = stand_in_clocks(monkeypatch, mod, host_scale=2)  # the host's clock runs 2x
    cpu = mod.StepTimeline(False)
    cpu.begin(), cpu.mark(), cpu.mark(), cpu.mark(), cpu.end()
    assert cpu.summary(gpu=True) is None  # no CUDA: no GPU clock
    tl = mod.StepTimeline(True)
    tl.end()  # a step that was not begun (the last untimed one) leaves nothing
    tl.mark()  # nor does a mark outside a step (the forward pre-hook in an untimed step)
    for gap, prep, fwd, bwd, upd in [(0, 1, 10, 20, 3), (1, 2, 11, 22, 3), (5, 3, 12, 24, 3)]:
        clock[0] += gap
        tl.begin()
        for part in (prep, fwd, bwd):
            clock[0] += part
            tl.mark()
        clock[0] += upd
        tl.end()
    assert tl.stages_summary(gpu=True) is None  # no stage marked
    g, h = tl.summary(gpu=True), tl.summary(gpu=False)
    assert g["gap"]["mean"] == 3.0 and g["gap"]["p10"] == 1 and g["gap"]["p99"] == 5
    assert g["prepare"]["mean"] == 2.0 and g["prepare"]["p90"] == 3
    assert g["forward"]["mean"] == 11.0 and g["forward"]["p50"] == 11
    assert g["backward"]["mean"] == 22.0 and g["optimizer"]["p90"] == 3
    assert h["gap"]["mean"] == 6.0 and h["backward"]["p50"] == 44 and h["optimizer"]["mean"] == 6
    # the steps' wall times on the host (2x): batch in hand to the next, the last to its end
    assert tl.periods_ms(2e-3 * clock[0]) == pytest.approx([70, 86, 84])
    assert mod.percentiles([]) is None


def test_train_imagenet_profile_keeps_the_last_steps(tmp_path):
    """--profile: a Chrome trace of exactly the last --profile-steps steps (on the CPU, of the
    host's operators: the profiler's step marks tell which steps it holds); --profile with too
    few --steps is refused before anything runs."""
    pytest.importorskip("torch", reason="torch not importable")
    pytest.importorskip("torchvision", reason="torchvision not importable")
    base = [sys.executable, str(EXAMPLES / "train_imagenet.py"), str(tmp_path), "--loader",
            "synthetic", "--arch", "resnet18", "--batch-size", "2", "--size", "32", "--device",
            "cpu", "--amp", "off", "--log-every", "0"]
    prof = tmp_path / "prof"
    out = subprocess.run(base + ["--steps", "7", "--warmup", "3", "--profile", str(prof),
                                 "--profile-steps", "2"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1])["profiled_steps"] == 2
    events = json.loads((prof / "rank0.json").read_text())["traceEvents"]
    # started after step 1 (warmup 3 - 2): steps 2..5 traced and dropped, 6 and 7 kept
    marks = {e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#")}
    assert marks == {"ProfilerStep#4", "ProfilerStep#5"}, marks
    refused = subprocess.run(base + ["--steps", "4", "--warmup", "3", "--profile", str(prof),
                                     "--profile-steps", "3"],
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "--profile needs --steps above" in refused.stderr


def test_train_imagenet_forward_stages(monkeypatch):
    """--forward-stages: marks where the forward enters each stage split the forward into stem,
    each stage and the loss, on the GPU's clock (stand-in events) and the host's; a stage mark
    outside a timed step is dropped; ResNet's stages are hooked, a model without any is said."""
    pytest.importorskip("torch", reason="torch not importable")
    ex = load_example()
    clock = stand_in_clocks(monkeypatch, ex, host_scale=1)
    tl = ex.StepTimeline(True)
    tl.stage("layer1")  # outside a step: nothing
    for stem, l1, l2, fc in [(1, 4, 6, 1), (3, 4, 8, 1)]:
        tl.begin()
        clock[0] += 0.5
        tl.mark()  # the forward starts
        for name, d in (("layer1", stem), ("layer2", l1), ("fc", l2)):
            clock[0] += d
            tl.stage(name)
        clock[0] += fc
        tl.mark()  # the loss
        clock[0] += 10
        tl.mark()
        tl.end()
    want = {"stem": 2.0, "layer1": 4.0, "layer2": 7.0, "fc": 1.0}
    assert tl.stages_summary(gpu=True) == want
    assert tl.stages_summary(gpu=False) == want
    assert ex.StepTimeline(False).stages_summary(gpu=True) is None

    torchvision = pytest.importorskip("torchvision", reason="torchvision not importable")
    seen = []

    class Recorder:
        def stage(self, name):
            seen.append(name)
    m = torchvision.models.resnet18(num_classes=10).eval()
    ex.hook_stages(m, Recorder(), 0)
    m(ex.torch.zeros(1, 3, 32, 32))
    assert seen == ["layer1", "layer2", "layer3", "layer4", "fc"]


def test_train_imagenet_gpu_caught_up(monkeypatch):
    """--forward-stages on CUDA: at each mark, whether the step's stream had reached the
    previous mark (its event complete), as a share of the timed steps, in the order a step
    makes its marks; never without the option or without CUDA."""
    pytest.importorskip("torch", reason="torch not importable")
    ex = load_example()
    clock = stand_in_clocks(monkeypatch, ex, host_scale=1)
    tl = ex.StepTimeline(True, catch_up=True)
    # the stand-in GPU has run everything up to gpu_done when the host reaches a mark
    for caught_at in (set(), {"layer4", "fc"}, {"layer4", "prepare"}, set()):
        for point in ("prepare", "forward", "layer1", "layer4", "fc", "backward", "optimizer",
                      "end"):
            # the previous mark was recorded 1 ms ago: run past it, or not yet
            clock.gpu_done[0] = clock[0] if point in caught_at else clock[0] - 1.5
            if point == "prepare":
                tl.begin()
            elif point == "end":
                tl.end()
            elif point.startswith("layer") or point == "fc":
                tl.stage(point)
            else:
                tl.mark()
            clock[0] += 1
    d = tl.caught_up_summary()
    # the first step's first mark has no mark before it: 3 steps counted there, 4 elsewhere
    assert list(d) == ["forward", "layer1", "layer4", "fc", "backward", "optimizer", "end",
                       "prepare"], d
    assert d["layer4"] == 0.5 and d["fc"] == 0.25 and d["layer1"] == 0.0
    assert d["prepare"] == 0.333 and d["end"] == 0.0
    assert ex.StepTimeline(True).caught_up_summary() is None  # not asked for
    assert ex.StepTimeline(False, catch_up=True).caught_up_summary() is None  # no CUDA


def test_train_imagenet_forward_stages_in_a_run(tiny):
    """--forward-stages in a CPU run: the host's stage times in the JSON, none on a GPU clock."""
    pytest.importorskip("torch", reason="torch not importable")
    pytest.importorskip("torchvision", reason="torchvision not importable")
    r = last_json(train_imagenet(
        tiny, "--loader", "synthetic", "--arch", "resnet18", "--batch-size", "2", "--size", "32",
        "--steps", "4", "--warmup", "1", "--device", "cpu", "--amp", "off", "--log-every", "0",
        "--forward-stages"))
    st = r["forward_stages_ms"]
    assert st["gpu"] is None and r["gpu_caught_up"] is None  # no GPU clock, no stream to catch up
    assert list(st["host"]) == ["stem", "layer1", "layer2", "layer3", "layer4", "fc"]
    assert all(v > 0 for v in st["host"].values()), st


def stand_in_clocks(monkeypatch, mod, host_scale):
    """The example's clocks on a list of our own ([ms], advanced by the test): torch.cuda.Event's
    record() / elapsed_time() read it, and the host's perf_counter reads it host_scale times."""
    class Clock(list):  # [ms], and gpu_done: [ms] up to which the stand-in GPU has run
        pass
    clock = Clock([0.0])

    class Event:
        def __init__(self, enable_timing=False):
            assert enable_timing
            self.t = None

        def record(self):
            self.t = clock[0]

        def elapsed_time(self, other):
            return other.t - self.t

        def query(self):  # the GPU has run the work before this event: up to gpu_done
            return self.t <= gpu_done[0]
    gpu_done = clock.gpu_done = [float("-inf")]
    monkeypatch.setattr(mod.torch.cuda, "Event", Event)
    monkeypatch.setattr(mod.time, "perf_counter", lambda: host_scale * 1e-3 * clock[0])
    return clock


def load_example():
    import importlib.util
    spec = importlib.util.spec_from_file_location("train_imagenet",
                                                  EXAMPLES / "train_imagenet.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_train_imagenet_kernel_census_counts_the_step_stream():
    """--kernel-census's count: the kernels of the stream with the most kernel time (not NCCL's,
    not copies), per step, and a digest that tells another choice of kernels apart."""
    pytest.importorskip("torch", reason="torch not importable")
    mod = load_example()

    def k(name, dur, stream=7, cat="kernel"):
        return {"ph": "X", "cat": cat, "name": name, "ts": 0, "dur": dur,
                "args": {"stream": stream}}
    ev = [k("conv_a", 100), k("conv_a", 100), k("bn_b", 50), k("ncclDevKernel_AllReduce", 30, 20),
          k("Memcpy HtoD", 500, 7, "gpu_memcpy"), {"ph": "i", "name": "mark", "ts": 1}]
    c = mod.kernel_census(ev, 2)
    assert c["steps"] == 2 and c["kernel_ms_per_step"] == 0.125 and c["distinct"] == 2
    slower = [dict(e, dur=e["dur"] * 2) if e.get("name") == "bn_b" else e for e in ev]
    assert mod.kernel_census(slower, 2)["digest"] == c["digest"]  # the same kernels
    other = [dict(e, name="bn_c") if e.get("name") == "bn_b" else e for e in ev]
    assert mod.kernel_census(other, 2)["digest"] != c["digest"]  # another choice
    assert "error" in mod.kernel_census([k("Memcpy", 5, 7, "gpu_memcpy")], 2)


def test_train_imagenet_quiet_tuning_leaves_the_model_as_it_was():
    """--cudnn-benchmark quiet's pass (run here on the CPU, the same code): a forward and
    backward of a synthetic batch that leaves no gradient and puts the BatchNorm statistics
    back, which such a pass alone would have moved."""
    pytest.importorskip("torch", reason="torch not importable")
    tv = pytest.importorskip("torchvision", reason="torchvision not importable")
    import argparse
    import copy
    mod = load_example()
    torch = mod.torch
    torch.manual_seed(0)
    model = tv.models.resnet18(num_classes=1000).to(memory_format=torch.channels_last)
    model.train()
    args = argparse.Namespace(batch_size=2, size=32, amp="off", channels_last=True,
                              device="cpu")
    before = copy.deepcopy(model.state_dict())
    moved = copy.deepcopy(model)  # the pass without its put-back: the statistics move
    moved(torch.randn(2, 3, 32, 32))
    assert not torch.equal(moved.bn1.running_mean, before["bn1.running_mean"])
    mod.tune_quietly(model, args)
    after = model.state_dict()
    assert set(after) == set(before)
    for name, v in before.items():
        assert torch.equal(after[name], v), name
    assert all(q.grad is None for q in model.parameters())
    assert model.training


def test_train_imagenet_average_buffers_is_the_ranks_mean(monkeypatch):
    """--ddp-bn epoch-mean's average: each floating-point buffer becomes the mean of the ranks'
    (a stand-in all-reduce adds the other rank's values); the integer counts stay."""
    pytest.importorskip("torch", reason="torch not importable")
    import torch
    import torch.distributed as dist
    ex = load_example()
    bn = torch.nn.BatchNorm2d(3)
    bn.running_mean.copy_(torch.tensor([1.0, 2.0, 3.0]))
    bn.running_var.copy_(torch.tensor([4.0, 4.0, 4.0]))
    bn.num_batches_tracked.fill_(7)
    other = torch.cat([torch.tensor([3.0, 2.0, 1.0]), torch.tensor([2.0, 6.0, 4.0])])
    calls = []

    def all_reduce(t):
        calls.append(t.numel())
        t += other
    monkeypatch.setattr(dist, "all_reduce", all_reduce)
    ex.average_buffers(bn, 2)
    assert calls == [6]  # one collective for every buffer
    assert bn.running_mean.tolist() == [2.0, 2.0, 2.0]
    assert bn.running_var.tolist() == [3.0, 5.0, 4.0]
    assert bn.num_batches_tracked.item() == 7
    before = ex.buffers_digest(bn)
    ex.average_buffers(bn, 1)  # one rank: nothing to average, no collective
    assert calls == [6] and ex.buffers_digest(bn) == before
    assert ex.buffers_digest(torch.nn.Linear(2, 2)) is None  # no buffer


def test_train_imagenet_kernel_census_needs_warmup(tmp_path):
    pytest.importorskip("torch", reason="torch not importable")
    pytest.importorskip("torchvision", reason="torchvision not importable")
    out = train_imagenet(tmp_path, "--loader", "synthetic", "--device", "cpu", "--steps", "6",
                         "--warmup", "4", "--kernel-census")
    assert out.returncode == 2 and "--kernel-census needs --warmup 5 or more, not 4" in out.stderr
    out = train_imagenet(tmp_path, "--loader", "synthetic", "--device", "cpu", "--steps", "6",
                         "--forward-stages", "--compile")
    assert out.returncode == 2 and "--forward-stages marks the forward as it runs" in out.stderr


def cuda_resnet18(tmp_path, what, *args):
    """The example on the GPU: ResNet-18 on synthetic batches of 8 at 64 px, with ARGS (its
    JSON result); skipped, saying WHAT needs a GPU, without torch, torchvision or CUDA."""
    torch = pytest.importorskip("torch", reason="torch not importable")
    pytest.importorskip("torchvision", reason="torchvision not importable")
    if not torch.cuda.is_available():
        pytest.skip(f"no CUDA device: {what} run on a GPU only")
    return last_json(train_imagenet(
        tmp_path, "--loader", "synthetic", "--arch", "resnet18", "--batch-size", "8", "--size",
        "64", "--log-every", "0", *args))


@pytest.mark.parametrize("tune", ["quiet", "off"])
def test_train_imagenet_cuda_census_and_tuning(tmp_path, tune):
    """On a GPU: the step's kernels counted over two warm-up steps, with cuDNN's kernels timed
    before the loader starts (quiet) or picked by its heuristics (off)."""
    r = cuda_resnet18(tmp_path, "the census and cuDNN's tuning", "--steps", "8", "--warmup",
                      "5", "--kernel-census", "--cudnn-benchmark", tune)
    assert r["cudnn_benchmark"] == tune and r["steps"] == 8
    c = r["kernel_census"]
    assert c["steps"] == 2 and c["kernel_ms_per_step"] > 0 and c["distinct"] > 5, c
    assert len(c["digest"]) == 10
    # what the allocator asked of the driver in the timed steps, and what it holds
    a = r["cuda_allocator_timed"]
    assert set(a) == {"device_allocs", "device_frees", "alloc_retries", "syncs_all_streams"}
    assert all(isinstance(v, int) and v >= 0 for v in a.values()), a
    assert r["cuda_reserved_mib"] > 0


def test_train_imagenet_cuda_forward_stages(tmp_path):
    """On a GPU: --forward-stages gives each stage's time on the GPU's clock, and at each mark
    the share of timed steps in which the GPU had reached the previous mark."""
    r = cuda_resnet18(tmp_path, "the stages on the GPU's clock", "--steps", "12", "--warmup",
                      "4", "--forward-stages")
    g = r["forward_stages_ms"]["gpu"]
    assert list(g) == ["stem", "layer1", "layer2", "layer3", "layer4", "fc"]
    assert all(v > 0 for v in g.values()), g
    dr = r["gpu_caught_up"]
    assert list(dr)[:7] == ["forward", "layer1", "layer2", "layer3", "layer4", "fc", "backward"]
    assert all(0 <= v <= 1 for v in dr.values()), dr


def test_train_imagenet_kernel_census_window(monkeypatch):
    """--kernel-census's window (with a stand-in profiler and synchronize): it starts after step
    --warmup - 4 and stops after --warmup - 2, where --profile starts; a run that ends inside
    the window gets an error in place of the census."""
    pytest.importorskip("torch", reason="torch not importable")
    import argparse
    import torch.profiler
    mod = load_example()
    calls = []

    class Profile:
        def __init__(self, activities):
            calls.append(("new", activities))

        def start(self):
            calls.append("start")

        def stop(self):
            calls.append("stop")

        def export_chrome_trace(self, path):
            ev = [{"ph": "X", "cat": "kernel", "name": "conv", "ts": 0, "dur": 3000,
                   "args": {"stream": 7}}]
            pathlib.Path(path).write_text(json.dumps({"traceEvents": ev}))

    monkeypatch.setattr(torch.profiler, "profile", Profile)
    monkeypatch.setattr(mod.torch.cuda, "synchronize", lambda: calls.append("sync"))
    args = argparse.Namespace(kernel_census=True, warmup=6)
    c = mod.KernelCensus(args, True)
    for step in range(1, 9):
        c.after_step(step)
        if step in (2, 4):
            assert calls[-1] == ("start" if step == 2 else "stop"), (step, calls)
    c.finish()
    assert [x for x in calls if isinstance(x, str)] == ["sync", "start", "sync", "stop"]
    assert c.result["kernel_ms_per_step"] == 1.5 and c.result["distinct"] == 1
    early = mod.KernelCensus(args, True)
    for step in range(1, 4):
        early.after_step(step)
    early.finish()
    assert early.result == {"error": "the run ended within the census's steps (3..4)"}
    assert mod.KernelCensus(args, False).on is False  # without CUDA: no census
