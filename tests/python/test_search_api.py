"""ferry.hamming_pairs and ferry.hamming_topk (issue 21's search on several
GPUs, from Python): the pairs and the k nearest codes of a user's own codes,
checked against a NumPy brute force; the same results on an OpenCL device
(PoCL in `make test`) and on one or several CUDA GPUs (device 0 listed twice:
two threads on it) where there is one, skipped saying why where not; bad
codes and arguments refused naming the reason."""
import numpy as np
import pytest

import ferry

U32 = 0xFFFFFFFF


def clustered(n, words, seed, spread=6, centres=50):
    """n codes near `centres` random centres: pairs and ties within a few
    bits (about n * n / centres / 2 pairs of one centre)."""
    rng = np.random.default_rng(seed)
    middle = rng.integers(0, 2**63, (centres, words), dtype=np.uint64)
    codes = middle[rng.integers(0, centres, n)].copy()
    for _ in range(spread):
        word = rng.integers(0, words, n)
        bit = rng.integers(0, 64, n, dtype=np.uint64)
        codes[np.arange(n), word] ^= np.uint64(1) << bit
    return codes if words > 1 else codes[:, 0].copy()


def distances(codes):
    """The full Hamming distance matrix (NumPy, small n)."""
    c = codes.reshape(len(codes), -1)
    x = c[:, None, :] ^ c[None, :, :]
    bits = np.unpackbits(x.view(np.uint8), axis=-1)
    return bits.reshape(len(codes), len(codes), -1).sum(-1)


def oracle_topk(codes, k):
    d = distances(codes)
    n = len(codes)
    out = np.full((n, k, 2), U32, dtype=np.uint64)
    for i in range(n):
        others = [(int(d[i, j]), j) for j in range(n) if j != i]
        others.sort()
        for r, (dist, j) in enumerate(others[:k]):
            out[i, r] = (j, dist)
    return out


def oracle_pairs(codes, t):
    d = distances(codes)
    i, j = np.nonzero(np.triu(d <= t, 1))
    return np.stack([i, j, d[i, j]], 1).tolist()


@pytest.mark.parametrize("words", [1, 4])
def test_cpu_against_numpy(words):
    codes = clustered(300, words, seed=words)
    t = 8 if words == 1 else 24
    want = oracle_pairs(codes, t)
    assert len(want) > 100
    for method in ("auto", "brute", "mih"):
        got = np.asarray(ferry.hamming_pairs(codes, t, method=method))
        assert got.dtype == np.uint32 and got.tolist() == want, method
    for k in (1, 5, 32, 299, 400):  # 400 > n - 1: padded with 2**32 - 1
        want_k = oracle_topk(codes, k)
        for method in ("auto", "brute", "mih"):
            got = np.asarray(ferry.hamming_topk(codes, k, threads=3, method=method))
            assert got.shape == (300, k, 2) and got.dtype == np.uint32
            assert (got == want_k).all(), (k, method)


def test_inputs_taken_and_refused():
    codes = clustered(64, 1, seed=9)
    want = np.asarray(ferry.hamming_topk(codes, 3)).tolist()
    # [n, 1] is 64-bit codes too; a CPU torch tensor where torch is installed
    assert np.asarray(ferry.hamming_topk(codes.reshape(-1, 1), 3)).tolist() == want
    try:
        import torch
    except ImportError:
        print("torch not installed: the torch-tensor input is not checked here")
    else:
        assert np.asarray(ferry.hamming_topk(torch.from_numpy(codes), 3)).tolist() == want
    assert np.asarray(ferry.hamming_topk(np.zeros(0, np.uint64), 4)).shape == (0, 4, 2)
    assert np.asarray(ferry.hamming_topk(codes[:1], 2)).tolist() == [[[U32, U32], [U32, U32]]]
    assert np.asarray(ferry.hamming_pairs(np.zeros(0, np.uint64), 3)).shape == (0, 3)
    bad = [
        (codes.astype(np.int32), "uint64"),
        (codes.astype(np.float64), "uint64"),
        (codes.reshape(-1, 2), "1 or 4 64-bit words"),
        (codes.reshape(4, 4, 4), "3-D"),
        (np.zeros((8, 8), np.uint64)[:, ::2], "C-contiguous"),
        ("not codes", "uint64 array"),
    ]
    for arg, why in bad:
        with pytest.raises(ferry.InvalidArgument, match=why):
            ferry.hamming_topk(arg, 2)
        with pytest.raises(ferry.InvalidArgument, match=why):
            ferry.hamming_pairs(arg, 2)
    for k in (0, -1):
        with pytest.raises(ferry.InvalidArgument, match="k must be"):
            ferry.hamming_topk(codes, k)
    with pytest.raises(ferry.InvalidArgument, match="k must be 1..65536"):
        ferry.hamming_topk(codes, 70000)
    with pytest.raises(ferry.InvalidArgument, match="method"):
        ferry.hamming_topk(codes, 2, method="faiss")
    with pytest.raises(ferry.InvalidArgument, match="at most 8"):
        ferry.hamming_topk(codes, 2, device="cuda:" + ",".join("0" * 9))
    with pytest.raises(ferry.InvalidArgument, match="one OpenCL device at a time"):
        ferry.hamming_pairs(codes, 2, device="opencl:0,1")


def opencl_ok():
    try:
        ferry.hamming_pairs(np.zeros(2, np.uint64), 1, device="opencl")
        return None
    except ferry.Error as e:
        return str(e)


@pytest.mark.parametrize("words", [1, 4])
def test_opencl_same_as_cpu(words):
    why = opencl_ok()
    if why:
        pytest.skip(f"no OpenCL device: {why}")
    codes = clustered(3000, words, seed=10 + words)
    t = 8 if words == 1 else 24
    cpu = np.asarray(ferry.hamming_pairs(codes, t))
    assert len(cpu) > 1000
    assert np.asarray(ferry.hamming_pairs(codes, t, device="opencl")).tolist() == cpu.tolist()
    for k in (1, 7, 32):
        want = np.asarray(ferry.hamming_topk(codes, k)).tolist()
        assert np.asarray(ferry.hamming_topk(codes, k, device="opencl")).tolist() == want
    with pytest.raises(ferry.Error, match="32"):
        ferry.hamming_topk(codes, 33, device="opencl")


@pytest.mark.parametrize("words", [1, 4])
def test_cuda_devices_same_as_cpu(words):
    """One GPU and a list (cuda:0,0: two threads on GPU 0, the code path of
    two GPUs) give the CPU's pairs and neighbours."""
    codes = clustered(200_000, words, seed=20 + words, centres=50_000)
    t = 6 if words == 1 else 20
    try:
        ferry.hamming_pairs(codes[:2], 1, device="cuda:0")
    except ferry.UnsupportedError as e:
        pytest.skip(f"no CUDA GPU: {e}")
    cpu = np.asarray(ferry.hamming_pairs(codes, t))
    assert len(cpu) > 10000
    for dev in ("cuda:0", "cuda:0,0", [0, 0, 0]):
        assert np.array_equal(np.asarray(ferry.hamming_pairs(codes, t, device=dev)), cpu), dev
    small = codes[:5000]
    for k in (1, 10, 32):
        want = np.asarray(ferry.hamming_topk(small, k))
        assert (np.asarray(ferry.hamming_topk(small, k, device="cuda:0")) == want).all(), k
        # past 2 x 65,536 queries: several blocks, handed out among the threads
        want = np.asarray(ferry.hamming_topk(codes, k, device="cuda:0"))
        for dev in ("cuda:0,0", [0, 0, 0]):
            got = np.asarray(ferry.hamming_topk(codes, k, device=dev))
            assert (got == want).all(), (k, dev)
    with pytest.raises(ferry.Error, match="32"):
        ferry.hamming_topk(codes[:100], 33, device="cuda:0,0")
