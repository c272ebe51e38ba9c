"""WebDataset shards read as streams: `pipe:CMD`, http:// URLs (a server on
127.0.0.1 in this test) and gzip-compressed shards (.tar.gz) give the same
samples, labels, order and pixels as the same shards read locally, and the
same keys as webdataset's own reader; their failures are clear errors naming
the shard."""
import functools
import gzip
import http.server
import io
import os
import socket
import tarfile
import threading

import numpy as np
import pytest

import ferry

KW = dict(batch_size=8, size=24, crop="center", output="numpy", workers=2)


def add(t, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    t.addfile(info, io.BytesIO(data))


def caption(i):
    return f"a photo, number {i}".encode() * (1 + i % 5)


@pytest.fixture(scope="module")
def shards(tmp_path_factory, sample):
    """data/sample's images (the truncated one among them) as 3 plain shards
    with cls labels, and a .tar.gz of each."""
    d = tmp_path_factory.mktemp("streams")
    files = sorted(p for p in sample.rglob("*") if p.suffix.lower() in (".jpg", ".png"))
    assert len(files) > 20
    per = (len(files) + 2) // 3
    for s in range(3):
        with tarfile.open(d / f"s-{s}.tar", "w", format=tarfile.GNU_FORMAT) as t:
            for i, f in enumerate(files[s * per:(s + 1) * per], start=s * per):
                add(t, f"k{i:04d}{f.suffix.lower()}", f.read_bytes())
                add(t, f"k{i:04d}.cls", str(i % 4).encode())
                add(t, f"k{i:04d}.txt", caption(i))
                if i % 3:  # a third of the samples without json: None there
                    add(t, f"k{i:04d}.json", b'{"i": %d}' % i)
        raw = (d / f"s-{s}.tar").read_bytes()
        (d / f"s-{s}.tar.gz").write_bytes(gzip.compress(raw))
    return d


@pytest.fixture(scope="module")
def server(shards):
    handler = functools.partial(QuietHandler, directory=str(shards))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    th = threading.Thread(target=httpd.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


def read_all(spec, **kw):
    """(keys, labels, pixels) of epoch 0, in the batches' order."""
    keys, labels, pix, fields = [], [], [], []
    with ferry.Loader(spec, **{**KW, **kw}, fields=("txt", "json")) as L:
        for b in L.batches(0):
            assert set(b.fields) == {"txt", "json"}
            assert len(b.fields["txt"]) == len(b.fields["json"]) == b.images.shape[0]
            fields += list(zip(b.fields["txt"], b.fields["json"]))
            for i in np.asarray(b.indices):
                keys.append(L.path(int(i)).rsplit(":", 1)[1])
            labels += [int(x) for x in np.asarray(b.labels)]
            pix.append(np.array(np.asarray(b.images), copy=True))
        skipped = sorted(p.rsplit(":", 1)[1] for p, _ in L.skipped)
    return keys, labels, np.concatenate(pix), skipped, fields


def specs(d, url):
    return {
        "pipe:cat": f"pipe:cat {d}/s-{{0..2}}.tar",
        "http": f"{url}/s-{{0..2}}.tar",
        "tar.gz": f"{d}/s-{{0..2}}.tar.gz",
        "pipe:cat .tar.gz": f"pipe:cat {d}/s-{{0..2}}.tar.gz",
        "http .tar.gz": f"{url}/s-{{0..2}}.tar.gz",
    }


@pytest.mark.parametrize("shuffle,rank", [(False, 0), (True, 0), (True, 1)])
def test_streams_equal_local_shards(shards, server, shuffle, rank):
    kw = dict(shuffle=shuffle, seed=5, on_error="skip", rank=rank, world_size=1 + rank)
    local = read_all(f"{shards}/s-{{0..2}}.tar", **kw)
    assert len(local[0]) > 10
    for what, spec in specs(shards, server).items():
        got = read_all(spec, **kw)
        assert got[0] == local[0], what
        assert got[1] == local[1], what
        np.testing.assert_array_equal(got[2], local[2], err_msg=what)
        assert got[3] == local[3], what
        assert got[4] == local[4], what
    # the fields are each sample's own, in the batch's order
    for key, (txt, js) in zip(local[0], local[4]):
        i = int(key[1:5])
        assert txt == caption(i), key
        assert js == (b'{"i": %d}' % i if i % 3 else None), key
    assert any(js is None for _, js in local[4])


def test_same_keys_as_webdataset(shards, server):
    wds = pytest.importorskip("webdataset", reason="webdataset not installed: the reference "
                              "reader of this test (pip install webdataset)")
    for spec in (f"pipe:cat {shards}/s-{{0..2}}.tar", f"{server}/s-{{0..2}}.tar.gz"):
        ref = [(s["__key__"], int(s["cls"]), s["txt"], s.get("json"))
               for s in wds.WebDataset(spec, shardshuffle=False)]
        with ferry.Loader(spec, **KW, shuffle=False) as L:
            ours = [(L.path(i).rsplit(":", 1)[1].split(".")[0], L.label(i),
                     L._core.field(i, "txt"), L._core.field(i, "json"))
                    for i in range(L.source_size)]
        assert ours == ref, spec


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_stream_errors_name_the_shard(shards, server, tmp_path):
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes((shards / "s-0.tar.gz").read_bytes()[:3000])
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"\x1f\x8b" + b"\0" * 100)
    (tmp_path / "x.tar.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 16)  # zstd's magic
    port = free_port()
    cases = [
        (f"{server}/missing.tar", f"{server}/missing.tar: cannot open: the server answered "
         "with an HTTP error"),
        (f"http://127.0.0.1:{port}/s-0.tar", f"http://127.0.0.1:{port}/s-0.tar: cannot open: "
         "cannot connect"),
        ("pipe:exit 3", "pipe:exit 3: cannot open: the command exited with status 3"),
        (f"pipe:cat {tmp_path}/none.tar", "the command exited with status 1"),
        (str(cut), "cut.tar.gz: the gzip stream is cut short"),
        (str(bad), "bad.tar.gz: damaged gzip stream"),
        ("s3://bucket/s-0.tar", "give \"pipe:aws s3 cp s3://bucket/s-0.tar -\""),
        (f"{tmp_path}/x.tar.zst", f"give \"pipe:zstd -dc {tmp_path}/x.tar.zst\""),
    ]
    for src, msg in cases:
        with pytest.raises(ferry.Error) as e:
            ferry.Loader(src, batch_size=4, size=16, output="numpy")
        assert msg in str(e.value), (src, str(e.value))


def test_fields_of_plain_files_refused(sample):
    with pytest.raises(ferry.Error) as e:
        ferry.Loader(str(sample), **KW, fields=("txt",))
    assert "field \"txt\": the source is not WebDataset shards" in str(e.value)
    with pytest.raises(ferry.InvalidArgument):
        ferry.Loader(str(sample), **KW, fields=(".txt",))


def test_fields_in_tuple_iteration(shards):
    with ferry.Loader(f"pipe:cat {shards}/s-0.tar", **KW, shuffle=True, seed=3,
                      fields="txt") as L:
        for images, labels, fields in L:
            assert list(fields) == ["txt"] and len(fields["txt"]) == images.shape[0]
            assert all(t.startswith(b"a photo, number ") for t in fields["txt"])


def test_stalled_command_stopped(shards):
    with pytest.raises(ferry.Error) as e:
        ferry.Loader(f"pipe:sleep 20; cat {shards}/s-0.tar", **KW, stall_timeout=0.3)
    assert "nothing received for 300 ms, stopped" in str(e.value)
    assert isinstance(e.value, TimeoutError)
