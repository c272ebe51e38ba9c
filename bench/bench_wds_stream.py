"""Stream shards' cost (docs/PERFORMANCE.md, "WebDataset stream shards"):
a .tar.gz of corpus/photos (written 8 times over: ~130 MB of members) read
by ferry (zlib inflate + ferry's tar walk, at Loader open; members then
copied out of memory: ferry's own part of the cost) against Python's tarfile
over gzip (the same zlib), libarchive (bsdtar -xOf, libarchive-tools;
skipped with a line when absent) and `gzip -dc` (zlib's inflate alone).
Figures: MB/s of member bytes delivered, best of 3.

    python3 bench/bench_wds_stream.py [CORPUS/photos]
"""
import gzip
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import ferry  # noqa: E402


def best(fn, n=3):
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t)


def main():
    photos = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/corpus/photos"
    files = sorted(f for f in os.listdir(photos) if f.lower().endswith((".jpg", ".png")))
    d = tempfile.mkdtemp()
    plain = os.path.join(d, "s.tar")
    total = 0
    with tarfile.open(plain, "w", format=tarfile.GNU_FORMAT) as t:
        for rep in range(8):
            for i, f in enumerate(files):
                data = open(os.path.join(photos, f), "rb").read()
                for name, b in ((f"r{rep}k{i:05d}.{f.rsplit('.', 1)[1].lower()}", data),
                                (f"r{rep}k{i:05d}.txt", b"a caption")):
                    info = tarfile.TarInfo(name)
                    info.size = len(b)
                    t.addfile(info, io.BytesIO(b))
                    total += len(b)
    gz = plain + ".gz"
    with open(plain, "rb") as fi, gzip.open(gz, "wb", compresslevel=6) as fo:
        fo.write(fi.read())
    mb = total / 1e6

    def ferry_gz():
        with ferry.Loader(gz, batch_size=64, size=16, output="numpy", workers=1) as L:
            assert L.source_size > 0

    def ferry_plain():
        with ferry.Loader(plain, batch_size=64, size=16, output="numpy", workers=1) as L:
            assert L.source_size > 0

    def tarfile_gz():
        with tarfile.open(gz, "r:gz") as t:
            for m in t:
                if m.isfile():
                    t.extractfile(m).read()

    def bsdtar_gz():  # libarchive: every member's bytes out (-O), discarded
        subprocess.run(["bsdtar", "-xOf", gz], stdout=subprocess.DEVNULL, check=True)

    def gzip_dc():
        subprocess.run(["gzip", "-dc", gz], stdout=subprocess.DEVNULL, check=True)

    print(f"members: {mb:.1f} MB; shard {os.path.getsize(plain) / 1e6:.1f} MB, "
          f"gz {os.path.getsize(gz) / 1e6:.1f} MB")
    for name, fn in (("ferry .tar.gz (zlib + tar walk)", ferry_gz),
                     ("ferry pipe:cat .tar.gz", lambda: ferry.Loader(
                         "pipe:cat " + gz, batch_size=64, size=16, output="numpy").close()),
                     ("ferry .tar (headers only, pread)", ferry_plain),
                     ("python tarfile r:gz", tarfile_gz),
                     ("libarchive (bsdtar -xOf)", bsdtar_gz),
                     ("gzip -dc (inflate alone)", gzip_dc)):
        if fn is bsdtar_gz and not shutil.which("bsdtar"):
            print(f"SKIPPED: {name}: bsdtar not installed (apt-get install libarchive-tools)")
            continue
        s = best(fn)
        print(f"{name:36s} {s * 1e3:8.1f} ms  {mb / s:8.1f} MB/s")


if __name__ == "__main__":
    main()
