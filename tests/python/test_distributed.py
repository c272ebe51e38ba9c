"""torchrun-style: 2 processes with RANK/WORLD_SIZE (and torch.distributed
over gloo when torch is importable) cover every sample exactly once per
epoch."""
import json
import os
import pathlib
import socket
import subprocess
import sys

import pytest

WORKER = pathlib.Path(__file__).with_name("dist_worker.py")


def have_torch_distributed():
    try:
        import torch.distributed as dist
        return dist.is_available() and dist.is_gloo_available()
    except ImportError:
        return False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(source, tmp_path, world, epochs, batch, drop_last, gloo):
    port = str(free_port())
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                   LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        out = tmp_path / f"rank{rank}.json"
        cmd = [sys.executable, str(WORKER), str(source), str(epochs), str(batch),
               "1" if drop_last else "0", str(out)] + (["gloo"] if gloo else [])
        procs.append((subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True), out))
    results = []
    for p, out in procs:
        log, _ = p.communicate(timeout=120)
        assert p.returncode == 0, log
        if out.exists():
            results += json.loads(out.read_text())
    return sorted(results, key=lambda r: r["rank"])


@pytest.mark.parametrize("drop_last", [False, True], ids=["all", "drop_last"])
def test_two_ranks_cover_every_sample_once(tiny, tmp_path, drop_last):
    gloo = have_torch_distributed()
    if not gloo:
        print("torch.distributed not importable: plain processes with RANK/WORLD_SIZE")
    n, batch, epochs = 64, 5, 3
    results = torchrun(tiny, tmp_path, 2, epochs, batch, drop_last, gloo)
    assert [(r["rank"], r["world_size"]) for r in results] == [(0, 2), (1, 2)]
    orders = []
    for e in range(epochs):
        per_rank = [r["epochs"][e]["indices"] for r in results]
        everything = per_rank[0] + per_rank[1]
        assert len(everything) == len(set(everything)), "a sample was served twice"
        if drop_last:
            # 32 per rank -> 6 full batches of 5: every rank the same count
            assert [len(x) for x in per_rank] == [30, 30]
            assert all(r["epochs"][e]["sizes"] == [5] * 6 for r in results)
            assert set(everything) <= set(range(n))
        else:
            assert sorted(everything) == list(range(n))
            assert [len(x) for x in per_rank] == [32, 32]
        orders.append(per_rank[0])
    assert orders[0] != orders[1] != orders[2]  # reshuffled every epoch
    assert all(r["len"] == (6 if drop_last else 7) for r in results)
