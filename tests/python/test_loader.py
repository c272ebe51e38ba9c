"""ferry.Loader: shapes, dtypes, values equal to the C pipeline, epochs,
sharding arguments, options."""
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

import cref
import ferry


def numpy_loader(source, *args, **kw):
    kw.setdefault("output", "numpy")
    kw.setdefault("workers", 2)
    return ferry.Loader(source, *args, **kw)


@pytest.mark.parametrize("dtype,np_dtype", [("uint8", np.uint8), ("float16", np.float16),
                                            ("float32", np.float32), (np.float16, np.float16)])
@pytest.mark.parametrize("layout", ["chw", "hwc"])
def test_shapes_and_dtypes(sample, dtype, np_dtype, layout):
    loader = numpy_loader(sample, 16, (40, 56), dtype=dtype, layout=layout, shuffle=False)
    assert len(loader) == 4 and loader.num_samples == 49 and loader.source_size == 49
    counts = []
    for images, labels in loader:
        n = images.shape[0]
        counts.append(n)
        assert images.shape == ((n, 3, 40, 56) if layout == "chw" else (n, 40, 56, 3))
        assert images.dtype == np_dtype
        assert images.flags["C_CONTIGUOUS"]
        assert labels.dtype == np.int64 and labels.shape == (n,)
        assert set(labels.tolist()) <= {0, 1, 2, 3}
    # 49 samples, one truncated file skipped: its place takes the last sample, 16 + 16 + 16
    # (len() stays the planned 4: an upper bound)
    assert counts == [16, 16, 16]


def test_float_range_and_normalisation(sample):
    plain = numpy_loader(sample, 8, 32, dtype="float32", shuffle=False)
    x, _ = next(iter(plain))
    assert 0.0 <= x.min() and x.max() <= 1.0
    norm = numpy_loader(sample, 8, 32, dtype="float32", shuffle=False, normalize=True)
    y, _ = next(iter(norm))
    mean = np.array(ferry.IMAGENET_MEAN, np.float32)[None, :, None, None]
    std = np.array(ferry.IMAGENET_STD, np.float32)[None, :, None, None]
    np.testing.assert_allclose(y, (x - mean) / std, rtol=1e-5, atol=1e-5)


CONFIGS = [
    dict(py=dict(batch_size=8, size=48), c=dict(batch_size=8, width=48, height=48)),
    dict(py=dict(batch_size=5, size=(40, 56), crop="random", flip=True, dtype="float16",
                 mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.3), seed=7),
         c=dict(batch_size=5, width=56, height=40, crop=2, flip_prob=0.5, dtype=1, normalize=1,
                mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.3), seed=7)),
    dict(py=dict(batch_size=16, size=33, layout="hwc", dtype="float32", crop="none",
                 filter="bicubic", shuffle=False),
         c=dict(batch_size=16, width=33, height=33, layout=0, dtype=2, crop=0, filter=3,
                shuffle=0)),
    dict(py=dict(batch_size=7, size=32, rank=1, world_size=3, drop_last=True, seed=3),
         c=dict(batch_size=7, width=32, height=32, rank=1, world_size=3, drop_last=1, seed=3)),
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=["center-u8", "random-f16-norm", "hwc-f32-bicubic",
                                              "rank1of3-droplast"])
def test_values_equal_c_pipeline(sample, cfg):
    """Byte for byte what the C loader gives (libferry.so through ctypes),
    with a different number of workers: determinism included."""
    reason = cref.unusable()
    if reason:
        pytest.skip(reason)
    cref.check_layout()
    want = cref.run_epochs(sample, [0, 1], workers=1, **cfg["c"])
    loader = numpy_loader(sample, workers=2, **cfg["py"])
    for epoch, batches in zip([0, 1], want):
        n = 0
        for g, (images, labels, indices) in zip(loader.batches(epoch), batches):
            n += 1
            assert g.epoch == epoch
            assert g.images.dtype == images.dtype and g.images.shape == images.shape
            assert np.array_equal(g.images.view(np.uint8), images.view(np.uint8))
            assert np.array_equal(g.labels, labels)
            assert np.array_equal(g.indices, indices)
        assert n == len(batches) <= len(loader)  # the planned count: an upper bound


def test_epochs_shuffle_and_determinism(sample):
    a = numpy_loader(sample, 10, 24, seed=5)
    b = numpy_loader(sample, 10, 24, seed=5, workers=1)
    order = lambda L, e: np.concatenate([x.indices for x in L.batches(e)]).tolist()  # noqa: E731
    e0, e1 = order(a, 0), order(a, 1)
    assert sorted(e0) == sorted(e1) and e0 != e1
    assert order(b, 0) == e0 and order(b, 1) == e1
    c = numpy_loader(sample, 10, 24, seed=6)
    assert order(c, 0) != e0
    unshuffled = numpy_loader(sample, 10, 24, shuffle=False)
    assert order(unshuffled, 0) == sorted(order(unshuffled, 0))


def test_epoch_ahead_same_batches_and_made_early(sample):
    """The next epoch's first batches are made before it starts (epoch_ahead, the default),
    and every epoch's batches equal those of a loader that does not (random crops and flips,
    epochs run in order, one skipped, one left early)."""
    kw = dict(crop="random", flip=True, seed=3, prefetch=2, workers=2)
    on = numpy_loader(sample, 8, 24, **kw)
    off = numpy_loader(sample, 8, 24, epoch_ahead=False, **kw)

    def epoch(L, e, stop=None):
        got = []
        for k, b in enumerate(L.batches(e)):
            if k == stop:
                break
            got.append((b.indices.copy(), b.images.copy()))
        return got

    for e, stop in ((0, None), (1, None), (3, 2), (4, None)):
        a, b = epoch(on, e, stop), epoch(off, e, stop)
        assert len(a) == len(b) > 0
        for (ia, xa), (ib, xb) in zip(a, b):
            assert (ia == ib).all() and (xa == xb).all(), f"epoch {e}"
    # made ahead: after epoch 0 (49 files), a ring of 2 fills with epoch 1's first 16, no more
    made = lambda L: L.stats()["images"] + L.stats()["skipped"]  # noqa: E731
    fresh = numpy_loader(sample, 8, 24, **kw)
    assert sum(len(b.indices) for b in fresh.batches(0)) == 48
    deadline = time.monotonic() + 10
    while made(fresh) < 49 + 16 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    assert made(fresh) == 49 + 16


EXIT_HOLDING = r"""
import atexit, os, sys
def tasks():
    return len(os.listdir("/proc/self/task"))
seen = {}
# registered before ferry's own: runs after it (atexit is last in, first out)
atexit.register(lambda: print("AT EXIT", seen["before"], tasks(), flush=True))
import ferry
seen["before"] = tasks()
L = ferry.Loader(sys.argv[1], batch_size=8, size=24, workers=3, prefetch=3, output="numpy")
for x, y in L:  # the loop's last batch stays referenced; no close()
    pass
print("IN LOOP", tasks(), L._core.closed, flush=True)
"""


def test_exit_stops_threads_of_a_loader_left_open(sample):
    """A script that ends holding its last batch and never closes its loader: at exit the
    loader's threads (making the next epoch ahead) are stopped and joined before the
    interpreter and its libraries shut down."""
    if not os.path.isdir("/proc/self/task"):
        pytest.skip("no /proc/self/task here: threads not countable")
    r = subprocess.run([sys.executable, "-c", EXIT_HOLDING, str(sample)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    in_loop = int(re.search(r"^IN LOOP (\d+)", r.stdout, re.M).group(1))
    before, after = map(int, re.search(r"^AT EXIT (\d+) (\d+)", r.stdout, re.M).groups())
    assert in_loop >= before + 3, r.stdout
    assert after == before, r.stdout


def test_stop_keeps_held_batches(sample):
    L = numpy_loader(sample, 8, 24, workers=2, prefetch=2)
    it = L.batches(0)
    b = next(it)
    kept = b.images.copy()
    assert L._core.stop() is True
    assert (b.images == kept).all()
    with pytest.raises(ferry.StateError, match="stopped"):
        next(it)
    assert L._core.stop() is True  # again: harmless
    del it, b
    L.close()


def test_close_with_a_batch_held_stops_threads_now(sample):
    """close() while the loop variable still holds a batch: the threads stop at once (they
    would otherwise make the next epoch ahead until that batch is freed); the batch stays
    readable, and the loader is freed with it."""
    if not os.path.isdir("/proc/self/task"):
        pytest.skip("no /proc/self/task here: threads not countable")
    workers = lambda: _thread_names().count("ferry-worker")  # noqa: E731
    before = workers()
    L = numpy_loader(sample, 8, 24, workers=3, prefetch=3)
    for x, y in L:
        pass
    kept = x.copy()
    assert _soon(workers, before + 3) == before + 3
    L.close()
    assert workers() == before
    assert (x == kept).all()
    del x, y


def test_set_epoch_and_auto_increment(sample):
    loader = numpy_loader(sample, 49, 16)
    first = [b.epoch for b in loader.batches()]
    second = [b.epoch for b in loader.batches()]
    assert first == [0] and second == [1]
    loader.set_epoch(7)
    assert [b.epoch for b in loader.batches()] == [7]
    for images, labels in loader:  # epoch 8
        pass
    assert [b.epoch for b in loader.batches()] == [9]
    with pytest.raises(ferry.InvalidArgument):
        loader.set_epoch(-1)


def test_paths_labels_classes(sample):
    loader = numpy_loader(sample, 8, 16)
    assert loader.classes == ["class0", "class1", "class2", "class3"]
    assert loader.num_classes == 4
    b = next(iter(loader.batches()))
    for i, label in zip(b.indices.tolist(), b.labels.tolist()):
        path = loader.path(i)
        assert path.startswith(str(sample)) and f"class{label}" in path
        assert loader.label(i) == label
    with pytest.raises(IndexError):
        loader.path(10**6)


def test_rank_world_size_from_environment(sample, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    loader = numpy_loader(sample, 4, 16)
    assert (loader.rank, loader.world_size) == (1, 4)
    assert loader.num_samples == 12  # samples 1, 5, ..., 45 of 49
    explicit = numpy_loader(sample, 4, 16, rank=0, world_size=2)
    assert (explicit.rank, explicit.world_size) == (0, 2)
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ferry.InvalidArgument, match="WORLD_SIZE"):
        numpy_loader(sample, 4, 16)


def test_workers_default_shares_cores(sample, monkeypatch):
    # workers=None is the C library's choice (0), reported by Loader.workers: on
    # the CPU, the cores this process may use divided by LOCAL_WORLD_SIZE
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "64")
    loader = numpy_loader(sample, 4, 16, workers=None)
    assert loader._options["workers"] == 0
    assert loader.workers == ferry._ferry.default_threads() >= 1
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    assert numpy_loader(sample, 4, 16, workers=None).workers == ferry._ferry.default_threads()
    assert numpy_loader(sample, 4, 16, workers=3).workers == 3


def test_workers_active_in_stats(sample, monkeypatch):
    # stats()["workers_active"]: every worker unless park_workers=True parked some (test_loader.c
    # and test_gpu.c check the parking itself)
    park = [o for o in ferry._ferry.loader_options() if o["name"] == "park_workers"]
    assert len(park) == 1 and park[0]["type"] == "bool" and park[0]["default"] == "0"
    loader = numpy_loader(sample, 4, 16, workers=3)
    for _ in loader:
        pass
    assert loader.stats()["workers_active"] == loader.workers == 3
    # a CPU loader: no JPEG engine, so no image decoded on it and no call to it
    assert loader.stats()["gpu_decoded"] == loader.stats()["gpu_chunks"] == 0
    assert loader.stats()["gpu_call_s"] == 0.0
    parked = numpy_loader(sample, 4, 16, workers=3, park_workers=True)  # a keyword of the table
    for _ in parked:
        pass
    assert 1 <= parked.stats()["workers_active"] <= parked.workers == 3


@pytest.mark.parametrize("kw,match", [
    (dict(dtype="int7"), "dtype"), (dict(layout="cwh"), "layout"), (dict(crop="top"), "crop"),
    (dict(filter="gauss"), "filter"), (dict(on_error="ignore"), "on_error"),
    (dict(device="tpu"), "device"), (dict(output="jax"), "output"),
    (dict(mean=(123.7, 116.3, 103.5)), "0..1 units"), (dict(mean=(0.5, 0.5)), "3 values"),
    (dict(size=(1, 2, 3)), "size"), (dict(batch_size=0), "batch_size"),
    (dict(prefetch=0), "prefetch"), (dict(prefetch=True), "prefetch"),
    (dict(rank=2, world_size=2), "rank"),
    (dict(flip=1.5), "flip"), (dict(crop="random", scale=(0.5, 0.1)), "scale"),
])
def test_invalid_arguments(sample, kw, match):
    with pytest.raises(ferry.InvalidArgument, match=match) as e:
        numpy_loader(sample, **{"batch_size": 4, **kw})
    assert isinstance(e.value, ValueError) and e.value.status == -1


def test_ring_length(sample):
    """prefetch=None (the default) is ferry's choice, a ring of 4 on the CPU;
    prefetch=N gives N buffers, as C's prefetch and `ferry load --prefetch N`
    do; the ring's length is readable."""
    assert numpy_loader(sample, batch_size=4).ring == 4
    assert numpy_loader(sample, batch_size=4, prefetch=3).ring == 3


def test_memory_cache(sample):
    """cache="memory": the second epoch comes from RAM, equal to the first;
    random pipelines and nonsense values are refused."""
    kw = dict(batch_size=8, size=24, shuffle=False, workers=2, cache="memory")
    loader = numpy_loader(sample, **kw)
    first = [x.copy() for x, _ in loader]
    loader.set_epoch(1)
    second = [x.copy() for x, _ in loader]
    assert len(first) == len(second) > 0
    assert all(np.array_equal(a, b) for a, b in zip(first, second))
    with pytest.raises(ferry.InvalidArgument, match="deterministic"):
        numpy_loader(sample, **{**kw, "crop": "random"})
    with pytest.raises(ferry.InvalidArgument, match="cache"):
        ferry.Loader(sample, 4, 16, cache="/tmp/cache")


def test_cuda_device_without_a_gpu(sample):
    """Asking for a GPU where there is none (or a build without CUDA) is a
    ferry.Error that says why, raised when the loader is made."""
    try:
        import torch
        if torch.cuda.is_available():
            pytest.skip("a GPU is present: tests/python/test_gpu.py covers it")
    except ImportError:
        pass
    with pytest.raises(ferry.Error) as e:
        ferry.Loader(sample, 4, 16, device="cuda:0", output="tensor")
    assert isinstance(e.value, ferry.UnsupportedError)
    assert "CUDA" in str(e.value) or "GPU" in str(e.value)


def test_numpy_output_needs_cpu(sample):
    with pytest.raises(ferry.InvalidArgument, match="numpy"):
        ferry.Loader(sample, 4, 16, device="cuda:0", output="numpy")


def test_repr_len_context_manager(sample):
    with numpy_loader(sample, 8, 16) as loader:
        assert "49 samples" in repr(loader) and len(loader) == 7
    assert "closed" in repr(loader)
    with pytest.raises(ferry.StateError, match="closed"):
        iter(loader)
    with pytest.raises(ferry.StateError):
        len(loader)


def test_tensor_output_without_numpy_or_torch(sample):
    loader = ferry.Loader(sample, 8, 16, output="tensor", workers=2, shuffle=False)
    images, labels = next(iter(loader))
    assert isinstance(images, ferry.Tensor) and images.shape == (8, 3, 16, 16)
    assert images.dtype == "uint8" and labels.dtype == "int64" and len(labels) == 8
    assert memoryview(images).shape == (8, 3, 16, 16)


def test_iterate_in_a_thread(sample):
    import threading
    loader = numpy_loader(sample, 8, 16)
    seen = []
    t = threading.Thread(target=lambda: seen.extend(len(y) for _, y in loader))
    t.start()
    t.join(60)
    assert sum(seen) == 48


def test_decode_and_probe(sample, fixtures):
    img = ferry.decode(sample / "class0" / "exif_orient6.jpg")
    raw = ferry.decode(sample / "class0" / "exif_orient6.jpg", ignore_orientation=True)
    info = ferry.probe(sample / "class0" / "exif_orient6.jpg")
    assert info["format"] == "JPEG" and info["orientation"] == 6
    assert raw.shape == (info["height"], info["width"], 3)
    assert img.shape == (info["width"], info["height"], 3)  # rotated upright
    gray = ferry.decode(fixtures / "rgb8.png", channels=1)
    assert gray.ndim == 3 and gray.shape[2] == 1 and gray.dtype == np.uint8
    want = np.fromfile(fixtures / "rgb8.png.rgb", np.uint8)
    assert np.array_equal(ferry.decode(fixtures / "rgb8.png").ravel(), want)


def test_no_images_names_the_formats_seen(tmp_path):
    """Issue 19: a folder holding only formats ferry does not read yet says
    which it saw (as ferry hash does), not just "no images found"."""
    (tmp_path / "cls").mkdir()
    (tmp_path / "cls" / "a.PSD").write_bytes(b"")
    (tmp_path / "b.psb").write_bytes(b"")
    with pytest.raises(ferry.EmptySourceError) as e:
        ferry.Loader(str(tmp_path), batch_size=1)
    assert "found 2 Photoshop file(s), formats ferry does not read yet" in str(e.value)
    (tmp_path / "cls" / "a.PSD").unlink()
    (tmp_path / "b.psb").unlink()
    with pytest.raises(ferry.EmptySourceError, match="no images found"):
        ferry.Loader(str(tmp_path), batch_size=1)


def _threads():
    """(name, nice value) of each thread of this process, from /proc/self/task."""
    out = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:  # the thread ended
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out.append((stat[stat.index("(") + 1:stat.rindex(")")], int(fields[16])))  # 19: nice
    return out


def _thread_names():
    return [name for name, _nice in _threads()]


def _worker_nices():
    return [nice for name, nice in _threads() if name == "ferry-worker"]


def _worker_policies():
    """Each ferry-worker thread's scheduling policy (/proc stat field 41; 5: SCHED_IDLE)."""
    out = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if stat[stat.index("(") + 1:stat.rindex(")")] == "ferry-worker":
            out.append(int(stat[stat.rindex(")") + 2:].split()[38]))
    return out


def _soon(read, want, seconds=10.0):
    """read() once it equals want, or its last value after `seconds`: a thread
    names itself and sets its nice value when it first runs, which on a busy
    machine can come after the batch the others made."""
    end = time.monotonic() + seconds
    while (got := read()) != want and time.monotonic() < end:
        time.sleep(0.01)
    return got


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"),
                    reason="thread names are read from /proc/self/task (Linux only)")
def test_worker_threads_named(sample):
    # ferry's loader names its CPU decoding threads, as top -H and profilers show them
    # (bench/dist_load.py sums their CPU time by name)
    before = _thread_names().count("ferry-worker")
    loader = numpy_loader(sample, 4, 16, workers=3)
    next(iter(loader))
    assert _soon(lambda: _thread_names().count("ferry-worker") - before, 3) == 3
    loader.close()  # joins them
    assert _thread_names().count("ferry-worker") == before



@pytest.mark.skipif(not os.path.isdir("/proc/self/task"),
                    reason="thread nice values are read from /proc/self/task (Linux only)")
def test_workers_keep_the_process_priority(sample, monkeypatch):
    # the CPU workers run at the process's nice value and policy: FERRY_WORKER_NICE (an
    # experiment measured no faster, issue 51) is gone, and the environment changes nothing
    base = os.nice(0)
    for value in ("7", "idle"):
        monkeypatch.setenv("FERRY_WORKER_NICE", value)
        loader = numpy_loader(sample, 4, 16, workers=2)
        next(iter(loader))
        assert _soon(lambda: len(_worker_nices()), 2) == 2
        assert _worker_nices() == [base, base]
        assert _worker_policies() == [0, 0]  # SCHED_OTHER
        loader.close()
