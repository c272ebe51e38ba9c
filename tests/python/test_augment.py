"""Per-sample augmentations on ferry's batches: ColorJitter's factors depend
only on (seed, epoch, sample index), differ between samples of a batch, and
equal a per-image reference; Loader(augment=) applies any callable."""
import numpy as np
import pytest

import ferry


def reference(img, b, c, s):
    """One image (H, W, 3 floats 0..1) jittered the documented way."""
    w = np.array([0.299, 0.587, 0.114], np.float32)
    x = np.clip(img * b, 0, 1)
    m = (x * w).sum(-1).mean()
    x = np.clip((x - m) * c + m, 0, 1)
    g = (x * w).sum(-1, keepdims=True)
    return np.clip((x - g) * s + g, 0, 1)


def test_factors_per_sample_and_reproducible():
    j = ferry.ColorJitter(0.4, 0.3, 0.2, seed=7)
    f = j.factors(np.arange(100), epoch=3)
    assert f.shape == (100, 3)
    assert (f[:, 0] >= 0.6).all() and (f[:, 0] <= 1.4).all()
    assert (f[:, 2] >= 0.8).all() and (f[:, 2] <= 1.2).all()
    assert len(np.unique(f[:, 0])) == 100  # every sample its own
    np.testing.assert_array_equal(f[[5, 9]], j.factors(np.array([5, 9]), epoch=3))
    assert not np.array_equal(f, j.factors(np.arange(100), epoch=4))
    assert not np.array_equal(f, ferry.ColorJitter(0.4, 0.3, 0.2, seed=8).factors(
        np.arange(100), epoch=3))


def test_loader_augment_matches_the_reference(sample):
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
    j = ferry.ColorJitter(0.4, 0.4, 0.4, seed=1, mean=mean, std=std, layout="hwc")
    kw = dict(batch_size=16, size=24, dtype="float32", layout="hwc", mean=mean, std=std,
              shuffle=True, seed=3, output="numpy")
    with pytest.warns(ferry.SkippedFileWarning):
        with ferry.Loader(str(sample), augment=j, **kw) as L:
            got = [(b.images.copy(), np.asarray(b.indices).copy()) for b in L.batches(2)]
    with pytest.warns(ferry.SkippedFileWarning):
        with ferry.Loader(str(sample), **kw) as L:
            plain = [b.images.copy() for b in L.batches(2)]
    for (x, idx), p in zip(got, plain):
        f = j.factors(idx, 2)
        for k in range(len(idx)):
            img = p[k] * np.array(std, np.float32) + np.array(mean, np.float32)
            want = (reference(img, *f[k]) - np.array(mean, np.float32)) / np.array(std, np.float32)
            np.testing.assert_allclose(x[k], want, atol=1e-4)
    assert not np.allclose(got[0][0], plain[0])


def test_uint8_batches_become_floats(sample):
    j = ferry.ColorJitter(brightness=0.5)
    with ferry.Loader(str(sample), batch_size=8, size=16, output="numpy", augment=j,
                      shuffle=False) as L:
        x, _ = next(iter(L))
    assert x.dtype == np.float32 and 0 <= x.min() and x.max() <= 1


def test_any_callable_and_errors(sample):
    seen = []

    def f(images, indices, epoch):
        seen.append((len(indices), epoch))
        return images

    with ferry.Loader(str(sample), batch_size=20, size=16, output="numpy", augment=f) as L:
        with pytest.warns(ferry.SkippedFileWarning):
            list(L.batches(5))
    assert [e for _, e in seen] == [5, 5, 5] and sum(n for n, _ in seen) == 48
    with pytest.raises(TypeError, match="augment must be a callable"):
        ferry.Loader(str(sample), augment=3)
    with pytest.raises(ferry.InvalidArgument, match="brightness must be in"):
        ferry.ColorJitter(brightness=1.5)


def test_on_the_gpu(sample):
    torch = pytest.importorskip("torch", reason="torch not installed here")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device here (the GPU machine runs this)")
    j = ferry.ColorJitter(0.3, 0.3, 0.3, seed=2, mean=ferry.IMAGENET_MEAN, std=ferry.IMAGENET_STD)
    kw = dict(batch_size=16, size=32, dtype="float16", mean=ferry.IMAGENET_MEAN,
              std=ferry.IMAGENET_STD, shuffle=False)
    with ferry.Loader(str(sample), device="cuda", augment=j, **kw) as L:
        x, _ = next(iter(L))
        assert x.is_cuda and x.dtype == torch.float16
