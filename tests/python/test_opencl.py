"""Issue 22 from Python: hashes and the duplicate search on an OpenCL device
(device="opencl[:N]", search_device="opencl[:N]"): the same bits and groups
as the CPU's compatible mode, bad devices refused by name. Under PoCL (`make
test`) the device is the CPU's; where there is no OpenCL device at all the
device tests are skipped saying why, and the refusals still run."""
import json
import subprocess

import pytest

import ferry
from ferry import _ferry
from ferrylib import FERRY_BIN, ROOT

SAMPLE = ROOT / "data" / "sample"


def opencl_devices():
    """`ferry doctor --json`'s OpenCL devices, and why there are none."""
    r = subprocess.run([FERRY_BIN, "doctor", "--json"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    return d.get("opencl_devices") or [], d.get("opencl_why")


DEVICES, WHY = opencl_devices()
needs_opencl = pytest.mark.skipif(not any(d.get("can_hash") for d in DEVICES),
                                  reason=f"no OpenCL device that can hash ({WHY or DEVICES})")


def sample_files():
    return sorted(str(p) for p in SAMPLE.rglob("*.jpg"))


def test_device_parsing():
    from ferry._common import _compute_device
    assert _compute_device("opencl") == _ferry.DEVICE_OPENCL_ANY
    assert _compute_device("opencl:2") == _ferry.DEVICE_OPENCL + 2
    assert _compute_device(" OpenCL:0 ") == _ferry.DEVICE_OPENCL
    assert _compute_device("cuda:1") == 1 and _compute_device(None) == -1
    for bad in ("opencl:x", "opencl:", "opencl:70000", "gpu"):
        with pytest.raises(ferry.InvalidArgument, match="opencl"):
            _compute_device(bad)


def test_fast_mode_refused():
    with pytest.raises(ferry.Error, match="compatible mode"):
        ferry.hash(sample_files()[:3], "phash", mode="fast", device="opencl")


def test_missing_device_named():
    with pytest.raises(ferry.Error, match="opencl:999"):
        ferry.hash(sample_files()[:3], "phash", mode="compatible", device="opencl:999")
    with pytest.raises(ferry.InvalidArgument, match="one OpenCL device"):
        ferry.find_duplicates(SAMPLE, search_device="opencl:0,1")


@needs_opencl
def test_hashes_equal_cpu():
    files = sample_files()
    kinds = ["ahash", "dhash", "dhash_v", "phash", "whash", "colorhash"]
    for size in (8, 16):
        cpu = ferry.hash(files, kinds, mode="compatible", hash_size=size, on_error="skip")
        ocl = ferry.hash(files, kinds, mode="compatible", hash_size=size, on_error="skip",
                         device="opencl")
        assert sum(x is not None for x in cpu) > 40
        assert ocl == cpu


@needs_opencl
def test_catalog_and_search_equal_cpu(tmp_path):
    a, b = tmp_path / "cpu.fidx", tmp_path / "ocl.fidx"
    ferry.index_update(a, SAMPLE, mode="compatible")
    ferry.index_update(b, SAMPLE, mode="compatible", device="opencl")
    export = []
    for fidx in (a, b):
        r = subprocess.run([FERRY_BIN, "index", "export", str(fidx), "--format", "csv"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        export.append(r.stdout)
    assert export[0] == export[1] and export[0].count("\n") > 40
    cpu = ferry.find_duplicates(SAMPLE, mode="compatible")
    ocl = ferry.find_duplicates(SAMPLE, mode="compatible", device="opencl",
                                search_device="opencl")
    assert ocl == cpu
