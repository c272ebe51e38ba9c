"""The GIL is released while the loader waits for a batch, and one loader
serves one consumer thread at a time."""
import faulthandler
import os
import threading
import time

import pytest

import ferry
from ferry import _ferry


def test_next_releases_the_gil_and_is_single_consumer(sample, tmp_path):
    # A worker waits (poll, within the read time-out) on a FIFO until this
    # thread opens and closes it for writing: next() on another thread waits
    # meanwhile. If next() held the
    # GIL, this thread could not run the code that unblocks it.
    fifo = tmp_path / "stuck.jpg"
    os.mkfifo(fifo)
    lst = tmp_path / "list.txt"
    lst.write_text(f"{fifo},0\n{sample / 'class0' / 'p0000.jpg'},1\n")
    core = _ferry.Loader(str(lst), batch_size=2, width=16, height=16, workers=1, shuffle=False)
    got = {}

    def consume():
        try:
            got["batch"] = core.next()
        except BaseException as e:  # pragma: no cover - reported below
            got["error"] = e

    faulthandler.dump_traceback_later(60, exit=True)  # a hang would be a failure, not a stall
    try:
        t = threading.Thread(target=consume)
        t.start()
        time.sleep(0.3)
        assert t.is_alive(), got  # still waiting for the batch, without the GIL
        with pytest.raises(ferry.StateError, match="another thread"):
            core.next()
        with open(fifo, "wb"):  # unblocks the worker: the FIFO reads as empty
            pass
        t.join(30)
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert not t.is_alive() and "error" not in got, got
    b = got.pop("batch")
    assert b.count == 1 and b.labels.__dlpack__() is not None
    skipped = core.take_skipped()
    assert len(skipped) == 1 and skipped[0][0] == str(fifo)
    assert skipped[0][1] == _ferry.ECORRUPT and "empty file" in skipped[0][2], skipped


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
