"""Zero copy and the lifetime of batches: a batch's buffer is the loader's
own, stays valid (and unchanged) while anything refers to it, and goes back
to the loader when the last reference goes; reference counts hold."""
import gc
import sys

import numpy as np
import pytest

import ferry
from ferry import _ferry


def raw_loader(source, **kw):
    kw = {"batch_size": 8, "width": 32, "height": 32, "workers": 2, "prefetch": 3, **kw}
    return _ferry.Loader(str(source), **kw)


def test_numpy_array_is_the_loaders_buffer(sample):
    core = raw_loader(sample)
    b = core.next()
    arr = np.from_dlpack(b.images)
    assert arr.ctypes.data == b.data_ptr == b.images.data_ptr
    assert b.data_ptr % 4096 == 0  # page-aligned slot
    assert arr.shape == (b.count, 3, 32, 32) and arr.nbytes == b.nbytes
    view = np.asarray(b.images)  # buffer protocol: the same memory
    assert view.ctypes.data == b.data_ptr
    arr[0, 0, 0, 0] = 17  # writable: it is your batch
    assert view[0, 0, 0, 0] == 17


def test_loader_yields_views_of_a_ring(sample):
    """Through ferry.Loader: consecutive batches live in `prefetch`
    page-aligned buffers that are reused."""
    loader = ferry.Loader(sample, 4, 16, output="numpy", workers=2, prefetch=3)
    ptrs = [x.ctypes.data for x, _ in loader]
    # 48 good samples of 49: 12 full batches (the skipped file's place filled)
    assert len(ptrs) == 12 and all(p % 4096 == 0 for p in ptrs)
    assert len(set(ptrs)) == 3


def test_batch_holds_its_slot_until_freed(sample):
    core = raw_loader(sample)
    b = core.next()
    t = b.images
    arr = np.from_dlpack(t)
    del b, t
    assert core.live_batches == 1  # the array still refers to the slot
    del arr
    assert core.live_batches == 0


def test_held_data_does_not_change(sample):
    """Keep batch 0 while the loader fills the other buffers: its contents
    stay what they were. With a C library that gives freed slots the next
    batch (HELD_ACROSS_EPOCHS), the rest of the epoch flows through the
    other buffers; with one whose ring fills strictly in order, batch 0
    blocks batch `buffers`: a StateError, never a hang nor an overwrite."""
    core = raw_loader(sample, batch_size=4, prefetch=4)  # 4 buffers
    first = np.from_dlpack(core.next().images)
    snapshot = first.copy()
    for _ in range(3):
        x = core.next()
        assert x is not None
        del x
    assert np.array_equal(first, snapshot)
    if _ferry.HELD_ACROSS_EPOCHS:
        while core.next() is not None:
            pass
        assert np.array_equal(first, snapshot)
        return
    with pytest.raises(ferry.StateError, match="batch 4 needs the buffer that batch 0"):
        core.next()
    assert np.array_equal(first, snapshot)
    del first
    assert core.next().index == 4


def test_ring_exhaustion_is_an_error_not_a_overwrite(sample):
    loader = ferry.Loader(sample, 4, 16, output="numpy", workers=2, prefetch=2)
    it = iter(loader)
    kept = [next(it), next(it)]  # prefetch = 2 buffers, both held
    snapshot = [x.copy() for x, _ in kept]
    with pytest.raises(ferry.StateError, match="still referenced") as e:
        next(it)
    assert e.value.status == _ferry.ESTATE and "copy=True" in str(e.value)
    assert all(np.array_equal(x, s) for (x, _), s in zip(kept, snapshot))
    kept.pop(0)
    x, _ = next(it)  # a slot came back
    assert x.shape[0] == 4


def test_cycles_are_collected_before_giving_up(sample):
    loader = ferry.Loader(sample, 4, 16, output="numpy", workers=2, prefetch=2)
    it = iter(loader)
    for _ in range(2):
        x, _ = next(it)
        cycle = [x]
        cycle.append(cycle)  # a reference cycle keeps x alive until gc
        del x, cycle
    assert next(it)[0].shape[0] == 4


def test_copy_mode_releases_at_once(sample):
    loader = ferry.Loader(sample, 8, 16, output="numpy", workers=2, copy=True, prefetch=2)
    kept = [x for x, _ in loader]  # would exhaust a 2-buffer ring without copies
    assert len(kept) == 6 and loader._core.live_batches == 0
    assert all(x.flags["OWNDATA"] for x in kept)


def test_last_batch_survives_the_next_epoch(sample):
    """The loop variable still holds the last batch when the next epoch
    starts: its data must not be overwritten by the new epoch."""
    # x is kept for the whole test, the loop holds one more: 2 of 3 buffers
    loader = ferry.Loader(sample, 8, 16, output="numpy", workers=2, prefetch=3)
    for x, y in loader:
        pass
    snapshot = x.copy()
    for epoch in range(3):
        for x2, y2 in loader:
            assert np.array_equal(x, snapshot)
    del x2, y2
    assert np.array_equal(x, snapshot)


def test_break_mid_epoch_then_next_epoch(sample):
    # 2 batches kept, the loop holds one more: 3 of 4 buffers
    loader = ferry.Loader(sample, 4, 16, output="numpy", workers=2, prefetch=4)
    held = []
    for i, (x, _) in enumerate(loader):
        held.append(x)
        if i == 1:
            break
    snapshot = [h.copy() for h in held]
    n = sum(len(y) for _, y in loader)
    assert n == 48
    assert all(np.array_equal(h, s) for h, s in zip(held, snapshot))


def test_stale_iterator(sample):
    loader = ferry.Loader(sample, 4, 16, output="numpy", workers=2)
    old = iter(loader)
    next(old)
    new = iter(loader)
    with pytest.raises(ferry.StateError, match="another epoch"):
        next(old)
    assert next(new)[0].shape[0] == 4


def test_close_with_live_batches(sample):
    core = raw_loader(sample)
    arr = np.from_dlpack(core.next().images)
    snapshot = arr.copy()
    core.close()
    assert core.closed and not core.freed  # freed with its last batch
    with pytest.raises(ferry.StateError, match="closed"):
        core.next()
    assert np.array_equal(arr, snapshot)
    del arr
    assert core.freed


def test_loader_freed_before_its_batches(sample):
    import weakref
    loader = ferry.Loader(sample, 8, 16, output="numpy", workers=2)
    x, y = next(iter(loader))
    snapshot = x.copy()
    core = weakref.ref(loader._core)
    del loader
    gc.collect()
    assert core() is not None and np.array_equal(x, snapshot)
    del x
    assert core() is None  # the C loader went with its last batch


def test_reference_counts(sample):
    core = raw_loader(sample)
    base_core = sys.getrefcount(core)
    b = core.next()
    assert sys.getrefcount(core) == base_core + 1  # the batch holds the loader
    base_b = sys.getrefcount(b)
    t = b.images
    assert sys.getrefcount(b) == base_b + 1  # the tensor holds the batch
    base_t = sys.getrefcount(t)
    cap = t.__dlpack__()
    assert sys.getrefcount(t) == base_t + 1  # the capsule holds the tensor
    del cap  # never consumed: its destructor calls the deleter
    assert sys.getrefcount(t) == base_t
    arr = np.from_dlpack(t)
    assert sys.getrefcount(t) == base_t + 1  # NumPy holds the managed tensor
    mv = memoryview(t)
    assert sys.getrefcount(t) == base_t + 2
    mv.release()
    del arr
    assert sys.getrefcount(t) == base_t
    labels = b.labels  # a copy: does not hold the batch
    assert sys.getrefcount(b) == base_b + 1
    indices = b.indices  # a view: holds it
    assert sys.getrefcount(b) == base_b + 2
    del t, labels, indices
    assert sys.getrefcount(b) == base_b
    del b
    assert sys.getrefcount(core) == base_core and core.live_batches == 0


def test_fork_child_cannot_use_parents_loader(sample):
    import os
    core = raw_loader(sample)
    core.next()  # threads running
    pid = os.fork()
    if pid == 0:  # child: the loader's threads do not exist here
        code = 1
        try:
            core.next()
        except ferry.StateError as e:
            code = 0 if "another process" in str(e) else 2
        except BaseException:
            code = 3
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert core.next() is not None


def test_batch_repr_and_fields(sample):
    core = raw_loader(sample, batch_size=8)
    b = core.next()
    assert b.index == 0 and b.epoch == 0 and b.device == -1 and b.count in (7, 8)
    assert "batch 0 of epoch 0" in repr(b) and "uint8 CHW on cpu" in repr(b)
    assert b.loader is core
    assert repr(b.images).startswith("ferry.Tensor(shape=(")


def test_ring_of_one_needs_copy(sample):
    """prefetch=1 is a ring of one buffer, as in C: it serves copy=True; a
    plain loop, which holds the last batch while it asks for the next, gets
    a StateError that says so instead of a hang or an overwrite."""
    loader = ferry.Loader(sample, 4, 16, output="numpy", workers=2, prefetch=1, copy=True)
    assert loader.ring == 1 and sum(len(y) for _, y in loader) == 48
    loader = ferry.Loader(sample, 4, 16, output="numpy", workers=2, prefetch=1)
    with pytest.raises(ferry.StateError, match="a ring of one cannot serve a for loop"):
        for x, y in loader:
            pass
