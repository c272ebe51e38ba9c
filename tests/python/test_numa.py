"""The loader's threads near its GPU (the numa option, src/pipeline/place.c):
CPU mode never places them and says so (Loader.numa); the option's values;
on a GPU, with a made-up sysfs (FERRY_SYSFS_ROOT, a test control the library
reads once per process: so in a process of its own) that puts the real GPU on
the second of two nodes, the loader's threads run on that node's CPUs."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

import ferry
from ferrylib import FERRY_BIN


def test_cpu_mode_is_not_placed(sample):
    with ferry.Loader(sample, batch_size=8, size=32, workers=2, output="numpy") as L:
        node, why = L.numa
        assert node == -1 and "CPU mode" in why
        assert sum(len(x) for x, _ in L) > 0
    with ferry.Loader(sample, batch_size=8, size=32, workers=2, numa="off") as L:
        assert L.numa[0] == -1
    with pytest.raises(ferry.InvalidArgument, match="numa"):
        ferry.Loader(sample, batch_size=8, size=32, numa="on")


def _cpulist(cpus):
    out, cpus = [], sorted(cpus)
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def _threads_on(cpus):
    n = 0
    for task in pathlib.Path("/proc/self/task").iterdir():
        try:
            status = (task / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Cpus_allowed_list:"):
                n += line.split(":", 1)[1].strip() == cpus
    return n


def test_gpu_threads_on_the_gpus_node(sample, tmp_path):
    r = subprocess.run([FERRY_BIN, "doctor", "--json"], capture_output=True, text=True,
                       timeout=120)
    gpus = json.loads(r.stdout).get("gpus", []) if r.returncode == 0 else []
    if not gpus or "pci" not in gpus[0]:
        pytest.skip("no CUDA device (ferry doctor lists none)")
    pci = gpus[0]["pci"]
    mine = sorted(os.sched_getaffinity(0))
    if len(mine) < 2:
        pytest.skip("one CPU allowed")
    n0, n1 = _cpulist(mine[:len(mine) // 2]), _cpulist(mine[len(mine) // 2:])
    sys_ = tmp_path / "sys"
    for node, cpus in ((0, n0), (1, n1)):
        d = sys_ / "devices" / "system" / "node" / f"node{node}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpus + "\n")
    dev = sys_ / "bus" / "pci" / "devices" / pci
    dev.mkdir(parents=True)
    for name, text in (("vendor", "0x10de"), ("class", "0x030200"), ("numa_node", "1"),
                       ("local_cpulist", n1)):
        (dev / name).write_text(text + "\n")
    env = dict(os.environ, FERRY_SYSFS_ROOT=str(tmp_path))
    env.pop("LOCAL_WORLD_SIZE", None)
    code = (f"import sys; sys.path[:0] = {sys.path!r}; import test_numa; "
            f"test_numa._placed({str(sample)!r}, {n1!r}, {mine!r})")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
    if r.returncode == 77:
        pytest.skip(r.stdout.strip())
    assert r.returncode == 0, r.stdout + r.stderr


def _placed(sample, n1, mine):
    """In the child process: the loader on cuda:0 placed on node 1; exit 77 to skip."""
    try:
        L = ferry.Loader(sample, batch_size=8, size=32, workers=3, device="cuda:0",
                         output="tensor")
    except ferry.UnsupportedError as e:
        print(f"no GPU loader here: {e}")
        sys.exit(77)
    with L:
        assert L.numa == (1, n1)
        assert _threads_on(n1) >= 3
        assert sorted(os.sched_getaffinity(0)) == mine  # the opener's CPUs given back
        # len() is the planned count, an upper bound: a skipped file's place is filled from
        # the epoch's tail, which may end the epoch a batch early (issue 53)
        assert len(L) - 1 <= sum(1 for _ in L) <= len(L)
    with ferry.Loader(sample, batch_size=8, size=32, workers=3, device="cuda:0",
                      numa="off", output="tensor") as L:
        node, why = L.numa
        assert node == -1 and "numa off" in why
