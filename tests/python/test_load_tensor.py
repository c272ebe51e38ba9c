"""ferry.load_tensor: a whole source into one tensor, equal to the loader's
batches in order; bad files left out with a warning; the memory check
before anything large is allocated."""
import numpy as np
import pytest

import ferry


def test_equals_the_loaders_batches(sample):
    kw = dict(size=(40, 48), dtype="float16", mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))
    with pytest.warns(ferry.SkippedFileWarning):
        x, y = ferry.load_tensor(str(sample), batch_size=7, output="numpy", **kw)
    with ferry.Loader(str(sample), batch_size=7, shuffle=False, output="numpy", copy=True,
                      **kw) as L:
        with pytest.warns(ferry.SkippedFileWarning):
            parts = list(L)
        n = L.num_samples
    want_x = np.concatenate([p[0] for p in parts])
    want_y = np.concatenate([p[1] for p in parts])
    assert x.shape == (len(want_x), 3, 40, 48) and x.dtype == np.float16
    assert len(want_x) == n - 1  # data/sample holds one truncated file
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_array_equal(y, want_y)
    assert y.dtype == np.int64


def test_left_out_files_are_said(sample):
    with pytest.warns(UserWarning, match=r"load_tensor: 1 of 49 samples were left out"):
        x, y = ferry.load_tensor(str(sample), size=16, output="numpy")
    assert len(x) == len(y) == 48


def test_hwc_and_a_sequence_source(sample):
    files = sorted(str(p) for p in sample.rglob("p*.jpg"))[:5]
    x, y = ferry.load_tensor(files, size=24, layout="hwc", labels=[4, 3, 2, 1, 0],
                             output="numpy", progress=True)
    assert x.shape == (5, 24, 24, 3)
    assert list(y) == [4, 3, 2, 1, 0]
    np.testing.assert_array_equal(x[2], ferry.load_tensor([files[2]], size=24, layout="hwc",
                                                           output="numpy")[0][0])


def test_memory_checked_before_allocating(sample):
    with pytest.raises(ferry.TooLargeError, match=r"need .* GB .* the host has .* GB free"):
        ferry.load_tensor(str(sample), size=16384, dtype="float32", batch_size=1, prefetch=2,
                          max_batch_bytes=8 << 30,
                          output="numpy")


def test_refuses_shuffle(sample):
    with pytest.raises(ferry.InvalidArgument, match="order"):
        ferry.load_tensor(str(sample), shuffle=True)


def test_torch_output(sample):
    torch = pytest.importorskip("torch", reason="torch not installed here (the GPU machine "
                                "runs this with torch)")
    x, y = ferry.load_tensor(str(sample), size=16, output="torch", on_error="skip")
    assert isinstance(x, torch.Tensor) and x.shape[0] == 48 and y.dtype == torch.int64


def run_load(*args):
    import os
    import subprocess
    return subprocess.run([os.environ.get("FERRY_BIN", "ferry"), "load", *map(str, args)],
                          capture_output=True, text=True)


def test_cli_save_npy_equals_load_tensor(sample, tmp_path):
    out = tmp_path / "all.npy"
    r = run_load(sample, "--size", "24x20", "--dtype", "f16", "--layout", "hwc", "--save", out)
    assert r.returncode == 3, r.stderr  # finished, one bad file skipped
    assert f"wrote {out} (48 samples) and {tmp_path / 'all.labels.npy'}" in r.stderr
    x, y = np.load(out, mmap_mode="r"), np.load(tmp_path / "all.labels.npy")
    with pytest.warns(UserWarning):
        want_x, want_y = ferry.load_tensor(str(sample), size=(20, 24), dtype="float16",
                                           layout="hwc", output="numpy")
    assert x.shape == (48, 20, 24, 3) and x.dtype == np.float16
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_array_equal(y, want_y)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["all.labels.npy", "all.npy"]


def test_cli_save_refusals(sample, tmp_path):
    r = run_load(sample, "--save", tmp_path / "x.bin")
    assert r.returncode == 2 and "must end in .npy" in r.stderr
    r = run_load(sample, "--save", tmp_path / "x.npy", "--epochs", "2")
    assert r.returncode == 2 and "one epoch" in r.stderr
    r = run_load(sample, "--save", tmp_path / "x.npy", "--gpu")
    assert r.returncode == 2 and "load_tensor" in r.stderr
    r = run_load(sample, "--save", tmp_path / "no" / "x.npy")
    assert r.returncode == 1 and "cannot write" in r.stderr
    keep = tmp_path / "keep.npy"
    keep.write_bytes(b"old")
    r = run_load(tmp_path / "missing-dir", "--save", keep)
    assert r.returncode == 1
    assert keep.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.npy"]


def test_gpu_paths(sample):
    """device="cuda": batches made on the cores (small sets, gpu_decode=False)
    or by the GPU loader (gpu_decode=True) land in one CUDA tensor. The GPU
    loader's CPU workers give the cores' very pixels; its JPEG engine decodes
    at full size (box chroma upsampling) where the cores decode at a reduced
    DCT scale (fancy upsampling), so the engine's batches are compared with
    the cores' exact path (dct_scaling=False, exact_decode=True), where only
    the chroma upsampling differs, and only loosely with the default: at 32
    px a 1/8-scale decode is an 8x8 box average, a different downscale
    (measured on an H100: mean 1.5-2.0 levels, one image 7.3; it had been
    asserted below 2.0 and failed once at 2.03)."""
    torch = pytest.importorskip("torch", reason="torch not installed here")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device here (the GPU machine runs this)")

    def load(**kw):
        with pytest.warns(UserWarning):
            x, y = ferry.load_tensor(str(sample), size=32, device="cuda", **kw)
        assert x.is_cuda and y.is_cuda and x.shape == (48, 3, 32, 32)
        return x.cpu().float(), y.cpu()

    got = {mode: load(gpu_decode=mode) for mode in (None, False, True)}
    assert torch.equal(got[None][0], got[False][0])
    for mode in (False, True):
        assert torch.equal(got[mode][1], got[None][1])
    workers = load(gpu_decode=True, hw_decode=False)
    assert torch.equal(workers[0], got[False][0])
    exact = dict(dct_scaling=False, exact_decode=True)
    cores, engine = load(gpu_decode=False, **exact), load(gpu_decode=True, **exact)
    d = (engine[0] - cores[0]).abs().mean(dim=(1, 2, 3))
    print(f"engine vs the cores' exact path: mean {d.mean():.3f}, worst image {d.max():.2f}")
    assert d.mean() < 0.5 and d.max() < 1.5  # measured: 0.11, 0.27
    d = (got[True][0] - got[False][0]).abs().mean(dim=(1, 2, 3))
    print(f"engine vs the cores' default (DCT scaling): mean {d.mean():.3f}, worst {d.max():.2f}")
    assert d.mean() < 4.0 and d.max() < 16.0
