#!/usr/bin/env python3
"""ferry's Hamming search side by side with FAISS's flat binary index
(faiss-cpu from PyPI: a peer for comparison, never a dependency of ferry):
the same random codes, the same threads, the same statistic (best of
--repeat runs, wall time of the call). Checks that the results agree: the
same pairs within the threshold (FAISS: range_search with radius t + 1), and
per query the same k smallest distances (FAISS: k + 1 neighbours with the
query itself dropped; ties between equal distances may pick other indices).

    python3 bench/bench_faiss.py [--n 100000] [--bits 64,256] [--threads 2]
        [--t 8] [--k 10] [--repeat 3]

Needs build/libferry.so (make) and faiss-cpu (pip install faiss-cpu).

Claims it proves (bench/CLAIMS.md): C58.
"""
import argparse
import ctypes
import os
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python"))


class Neighbor(ctypes.Structure):
    _fields_ = [("index", ctypes.c_uint32), ("distance", ctypes.c_uint32)]


def best_of(repeat, fn):
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--bits", default="64,256")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--t", default="12,90", help="pair thresholds, one per --bits")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    try:
        import faiss
    except ImportError:
        sys.exit("bench_faiss: faiss-cpu is not installed (pip install faiss-cpu)")
    from ferrylib import lib
    from hashlib_ferry import SearchOptions

    L = lib()
    L.ferry_search_last_method.restype = ctypes.c_char_p
    faiss.omp_set_num_threads(args.threads)
    rng = np.random.default_rng(5)
    print(f"| codes | bits | job | ferry | FAISS {faiss.__version__} | ferry / FAISS speed | "
          "same results |")
    print("|---:|---:|---|---:|---:|---:|---|")
    for bits, t in zip((int(b) for b in args.bits.split(",")),
                       (int(x) for x in args.t.split(","))):
        words, n, k = bits // 64, args.n, args.k
        codes = rng.integers(0, 2**64 - 1, size=(n, words), dtype=np.uint64, endpoint=True)
        xb = codes.view(np.uint8).reshape(n, bits // 8)  # little-endian words: same bits
        index = faiss.IndexBinaryFlat(bits)
        index.add(xb)
        o = SearchOptions.default()
        o.threshold, o.threads = t, args.threads

        def ferry_pairs():
            p, cnt = ctypes.c_void_p(), ctypes.c_size_t()
            rc = L.ferry_hamming_pairs(codes.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(n),
                                       words, ctypes.byref(o), ctypes.byref(p), ctypes.byref(cnt))
            assert rc == 0, L.ferry_last_error()
            arr = np.ctypeslib.as_array(ctypes.cast(p, ctypes.POINTER(ctypes.c_uint32)),
                                        shape=(cnt.value, 3)).copy() if cnt.value else \
                np.zeros((0, 3), np.uint32)
            L.ferry_pairs_free(p)
            return arr

        def faiss_pairs():
            lims, dist, ids = index.range_search(xb, t + 1)
            q = np.repeat(np.arange(n), np.diff(lims).astype(np.int64))
            keep = ids > q
            return np.stack([q[keep], ids[keep], dist[keep]], axis=1)

        tf, pf = best_of(args.repeat, ferry_pairs)
        method = L.ferry_search_last_method().decode()
        tq, pq = best_of(args.repeat, faiss_pairs)
        same = {tuple(r) for r in pf.tolist()} == {tuple(r) for r in pq.tolist()}
        print(f"| {n:,} | {bits} | pairs within {t} ({len(pf)}; ferry: {method}) | {tf:.3f} s | "
              f"{tq:.3f} s | {tq / tf:.2f}x | {'yes' if same else 'NO'} |", flush=True)

        out = (Neighbor * (n * k))()

        def ferry_topk():
            rc = L.ferry_hamming_topk(codes.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(n),
                                      words, k, ctypes.byref(o), out)
            assert rc == 0, L.ferry_last_error()
            return np.frombuffer(out, dtype=np.uint32).reshape(n, k, 2)[:, :, 1].copy()

        def faiss_topk():
            d, i = index.search(xb, k + 1)
            self_col = i == np.arange(n)[:, None]
            # the query itself is one of the k + 1 (distance 0); drop it, keep k
            d2 = np.where(self_col, -1, d)
            return np.sort(d2, axis=1)[:, 1:] if self_col.any(axis=1).all() else d[:, :k]

        tf, df = best_of(args.repeat, ferry_topk)
        tq, dq = best_of(args.repeat, faiss_topk)
        same = np.array_equal(np.sort(df, axis=1), np.sort(dq, axis=1))
        print(f"| {n:,} | {bits} | top-{k} of every code | {tf:.3f} s | {tq:.3f} s | "
              f"{tq / tf:.2f}x | {'yes' if same else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
