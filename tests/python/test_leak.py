"""No leak over 10,000 batches: Python objects, Python-heap memory
(tracemalloc sees PyMem_Raw too: capsules' contexts, label copies) and the
process's resident memory stay flat."""
import gc
import os
import tracemalloc

import numpy as np
import pytest

import ferry

N = 10_000


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run(loader, batches, use):
    n = 0
    while n < batches:
        for x, y in loader:
            use(x, y)
            n += 1
            if n == batches:
                break
    return n


@pytest.mark.parametrize("output", ["numpy", "torch"])
def test_no_leak_over_10000_batches(tiny, output):
    if output == "torch":
        pytest.importorskip("torch", reason="torch not importable: the numpy run covers the C side")
    loader = ferry.Loader(tiny, 2, 8, output=output, workers=2, prefetch=3, dtype="float16")
    total = [0.0]

    def use(x, y):
        total[0] += float(x[0, 0, 0, 0]) + int(y[0])

    warm = run(loader, 1_000, use)
    gc.collect()
    objects = len(gc.get_objects())
    rss = rss_bytes()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    done = warm + run(loader, N - warm, use)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert done == N
    assert grown < 64 * 1024, [str(s) for s in after.compare_to(before, "lineno")[:10]]
    assert len(gc.get_objects()) - objects < 200
    assert rss_bytes() - rss < 8 * 1024 * 1024, (rss, rss_bytes())
    loader.close()


def test_batches_all_released_at_the_end(tiny):
    loader = ferry.Loader(tiny, 4, 8, output="numpy", workers=2)
    kept = []
    for i, (x, y) in enumerate(loader):
        if i % 5 == 0:
            kept.append(np.array(x))  # copies: release as we go
    del x, y
    assert loader._core.live_batches == 0
    core = loader._core
    loader.close()
    assert core.freed
