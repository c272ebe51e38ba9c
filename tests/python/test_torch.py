"""PyTorch: tensors through torch.from_dlpack, without a copy. Skipped, with
the reason, when torch cannot be imported (scripts/setup.sh does not install
it: it is huge)."""
import numpy as np
import pytest

import ferry
from ferry import _ferry

torch = pytest.importorskip("torch", reason="torch not importable (pip install torch to run "
                                            "the PyTorch tests)")


def test_default_output_is_torch(sample):
    loader = ferry.Loader(sample, 8, 32, workers=2)
    assert loader.output == "torch"
    images, labels = next(iter(loader))
    assert isinstance(images, torch.Tensor) and isinstance(labels, torch.Tensor)
    assert images.dtype == torch.uint8 and images.shape[1:] == (3, 32, 32)
    assert labels.dtype == torch.int64 and images.device.type == "cpu"


def test_zero_copy(sample):
    core = _ferry.Loader(str(sample), batch_size=8, width=32, height=32, workers=2)
    b = core.next()
    x = torch.from_dlpack(b.images)
    assert x.data_ptr() == b.data_ptr
    x[0, 0, 0, 0] = 3  # the same memory as NumPy's view
    assert np.asarray(b.images)[0, 0, 0, 0] == 3
    del b
    assert core.live_batches == 1  # the tensor holds the slot
    del x
    assert core.live_batches == 0


@pytest.mark.parametrize("dtype,want", [("uint8", torch.uint8), (torch.float16, torch.float16),
                                        ("float32", torch.float32)])
def test_dtypes(sample, dtype, want):
    loader = ferry.Loader(sample, 4, 16, dtype=dtype, workers=2, layout="hwc", shuffle=False)
    x, _ = next(iter(loader))
    assert x.dtype == want and x.shape == (4, 16, 16, 3) and x.is_contiguous()


def test_same_values_as_numpy(sample):
    kw = dict(batch_size=8, size=24, crop="random", flip=True, dtype="float16", normalize=True,
              seed=3, workers=2)
    t = [x.clone() for x, _ in ferry.Loader(sample, output="torch", **kw)]
    n = [x.copy() for x, _ in ferry.Loader(sample, output="numpy", **kw)]
    assert all(np.array_equal(a.numpy(), b) for a, b in zip(t, n))


def test_copy_true_clones(sample):
    loader = ferry.Loader(sample, 8, 16, workers=2, copy=True, prefetch=2)
    kept = [x for x, _ in loader]
    # 48 good files of 49 in full batches of 8 (the bad one's place filled: issue 53)
    assert loader._core.live_batches == 0 and len(kept) == 6
    assert all(x.shape[0] == 8 for x in kept)


def test_training_step(sample):
    """A small model learns a step on ferry batches (float16 in, AMP-style
    cast), labels usable by cross_entropy as they come."""
    loader = ferry.Loader(sample, 16, 32, crop="random", flip=True, dtype="float32",
                          normalize=True, workers=2)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.AdaptiveAvgPool2d(1),
                                torch.nn.Flatten(), torch.nn.Linear(8, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for images, labels in loader:
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert torch.isfinite(loss)


def test_tensor_freed_from_another_thread(sample):
    """torch may free a tensor on a thread of its own: the deleter takes the
    GIL."""
    import threading
    core = _ferry.Loader(str(sample), batch_size=8, width=16, height=16, workers=2)
    box = [torch.from_dlpack(core.next().images)]
    t = threading.Thread(target=box.clear)
    t.start()
    t.join()
    assert core.live_batches == 0
