"""device="cuda:N": batches made on the GPU, exported as kDLCUDA DLPack
tensors. Needs torch with CUDA and a GPU; skipped with the reason otherwise
(CI has none: run these on an H100/H200 and record the result)."""
import numpy as np
import pytest

import ferry
from ferry import _ferry

torch = pytest.importorskip("torch", reason="torch not importable: GPU tests need torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU visible to torch", allow_module_level=True)


def gpu_loader(source, **kw):
    try:
        return ferry.Loader(source, **kw)
    except ferry.UnsupportedError as e:
        pytest.skip(f"ferry's C library cannot use the GPU here: {e}")


def test_cuda_batches_are_device_tensors(sample):
    loader = gpu_loader(sample, batch_size=8, size=64, device="cuda:0", dtype="float16",
                        normalize=True, workers=2)
    for images, labels in loader:
        assert images.is_cuda and images.device.index == 0
        assert images.dtype == torch.float16 and images.shape[1:] == (3, 64, 64)
        assert labels.is_cuda and labels.dtype == torch.int64


def test_cuda_engine_calls_counted(sample):
    """stats(): with the JPEG engine, the images it decoded and its calls, at most 64 images a
    call (chunks of 64 positions); none without it (hw_decode=False)."""
    loader = gpu_loader(sample, batch_size=16, size=64, device="cuda:0", workers=1,
                        hw_decode=True)
    for _ in loader:
        pass
    s = loader.stats()
    if s["gpu_decoded"] == 0:
        pytest.skip("the JPEG engine took no image here (no hardware engine on this GPU?)")
    assert s["gpu_chunks"] >= 1
    assert -(-s["gpu_decoded"] // 64) <= s["gpu_chunks"] <= s["gpu_decoded"], s
    assert s["gpu_call_s"] > 0, s  # time in the engine's calls
    off = gpu_loader(sample, batch_size=16, size=64, device="cuda:0", workers=1,
                     hw_decode=False)
    for _ in off:
        pass
    assert off.stats()["gpu_decoded"] == off.stats()["gpu_chunks"] == 0
    assert off.stats()["gpu_call_s"] == 0.0


def test_cuda_zero_copy(sample):
    core = _ferry.Loader(str(sample), batch_size=8, width=64, height=64, workers=2, device=0)
    b = core.next()
    t = b.images
    assert t.__dlpack_device__() == (2, 0) and t.device == "cuda:0"
    x = torch.from_dlpack(t)
    assert x.data_ptr() == b.data_ptr and x.is_cuda
    with pytest.raises(BufferError):
        memoryview(t)
    del x, t, b
    assert core.live_batches == 0


def test_cuda_values_close_to_cpu(sample):
    kw = dict(batch_size=8, size=(48, 64), dtype="float32", shuffle=False, workers=2,
              hw_decode=False)
    cpu = [x.clone() for x, _ in ferry.Loader(sample, **kw)]
    gpu = [x.cpu() for x, _ in gpu_loader(sample, device="cuda:0", **kw)]
    assert len(cpu) == len(gpu)
    for a, b in zip(cpu, gpu):
        assert a.shape == b.shape
        if a.numel():  # the last batch holds only truncated.jpg: empty
            assert (a - b).abs().max().item() <= 1.0 / 255 + 1e-6


def test_consumer_stream_recorded(sample):
    """Work queued on the consumer's stream finishes before the slot is
    rewritten: ferry records the stream given to __dlpack__."""
    loader = gpu_loader(sample, batch_size=8, size=64, device="cuda:0", workers=2,
                        dtype="float32", prefetch=2)
    s = torch.cuda.Stream()
    sums = []
    with torch.cuda.stream(s):
        for images, _ in loader:
            ref = images.clone()
            torch.cuda._sleep(2_000_000)  # long work reading `images` on s
            sums.append((images - ref).abs().sum())
    torch.cuda.synchronize()
    assert all(v.item() == 0 for v in sums)


@pytest.mark.parametrize("hw_decode", [True, False])
def test_cuda_batches_full_around_skipped_files(sample, tmp_path, hw_decode):
    """Fixed-shape batches on the GPU (fill.c, the same rule as the CPU's):
    9 bad files of 57, every batch full but the last, drop_last all full,
    the same indices and labels as the CPU loader's, whatever the workers."""
    import shutil
    src = tmp_path / "holes"
    shutil.copytree(sample, src)
    good = (sample / "class1" / "p0001.jpg").read_bytes()
    for i in range(8):
        (src / "class1" / f"q{i}.jpg").write_bytes(good[:3000])
    cpu = ferry.Loader(src, batch_size=10, size=32, output="numpy", workers=2, seed=4)
    want = [(b.indices.tolist(), b.labels.tolist()) for b in cpu.batches(0)]
    assert [len(i) for i, _ in want] == [10, 10, 10, 10, 8]
    for workers in (1, 3):
        gpu = gpu_loader(src, batch_size=10, size=32, device="cuda:0", workers=workers, seed=4,
                         hw_decode=hw_decode)
        got = [(b.indices.tolist(), b.labels.tolist()) for b in gpu.batches(0)]
        assert got == want, f"workers={workers}"
        assert gpu.stats()["skipped"] >= 9
        assert len(gpu.skipped) == 9
    drop = gpu_loader(src, batch_size=10, size=32, device="cuda:0", workers=2, drop_last=True,
                      hw_decode=hw_decode)
    for images, _ in drop:
        assert images.shape[0] == 10
