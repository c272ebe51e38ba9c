"""The GIL is released while the loader waits for a batch, and one loader
serves one consumer thread at a time."""
import os
import subprocess
import sys
import threading
import time

import pytest

import ferry
from ferry import _ferry


_GIL_SCRIPT = r"""
import sys, threading, time
from ferry import _ferry
lst = sys.argv[1]
core = _ferry.Loader(lst, batch_size=1, width=16, height=16, workers=1, shuffle=False)
got = {}
def consume():
    try:
        got["batch"] = core.next()
    except BaseException as e:
        got["error"] = e
t = threading.Thread(target=consume)
t.start()
time.sleep(0.3)
assert t.is_alive(), got  # still waiting for the batch, without the GIL
try:
    core.next()
    raise SystemExit("a second consumer was let in")
except _ferry.StateError as e:
    assert "another thread" in str(e), e
t.join(30)
assert not t.is_alive() and "error" not in got, got
assert got["batch"].count == 1
print("ok")
"""


def test_next_releases_the_gil_and_is_single_consumer(sample, tmp_path):
    # The worker's first decode sleeps 2 s (the test control FERRY_STALL_AT,
    # read once per process: hence a process of its own) while next() waits
    # on another thread. If next() held the GIL, this thread could not run.
    lst = tmp_path / "list.txt"
    lst.write_text(f"{sample / 'class0' / 'p0000.jpg'},0\n")
    env = dict(os.environ, FERRY_STALL_AT="1:2000")
    r = subprocess.run([sys.executable, "-c", _GIL_SCRIPT, str(lst)], env=env, timeout=120,
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def test_loaders_in_parallel_threads(tiny):
    """Two loaders iterated by two threads at once."""
    counts = []

    def run():
        loader = ferry.Loader(tiny, 8, 8, output="numpy", workers=1)
        counts.append(sum(len(y) for _, y in loader))

    ts = [threading.Thread(target=run) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert counts == [64, 64]
