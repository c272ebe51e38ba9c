"""Issue 51: what were environment knobs are arguments now. The library's log
level (ferry.set_log_level; FERRY_DEBUG and the *_STATS printers before):
"info" by default, debug lines only at "debug", a bad level refused; and the
options that took the knobs' place, checked with the same words in Python:
engine_min_s of hashing (FERRY_HASH_ENGINE_MIN_S), nvdec_keep of the video
reader (FERRY_NVDEC_KEEP)."""
import os
import subprocess
import sys

import pytest

import ferry


def test_set_and_get_log_level():
    assert ferry.get_log_level() == "info"
    try:
        ferry.set_log_level("DEBUG")
        assert ferry.get_log_level() == "debug"
        ferry.set_log_level("warning")
        assert ferry.get_log_level() == "warning"
        with pytest.raises(ferry.InvalidArgument, match="debug, info, warning, not 'loud'"):
            ferry.set_log_level("loud")
        with pytest.raises(ferry.InvalidArgument):
            ferry.set_log_level(0)
        assert ferry.get_log_level() == "warning"
        with pytest.raises(ferry.InvalidArgument, match="log level 7 is none of"):
            ferry._ferry.set_log_level(7)
    finally:
        ferry.set_log_level("info")


_SEARCH = """
import sys
sys.path[:0] = {path!r}
import numpy, ferry
if {debug}:
    ferry.set_log_level("debug")
codes = numpy.random.default_rng(5).integers(0, 2**63, size=40000, dtype=numpy.uint64)
ferry.hamming_pairs(codes, 4, threads=2)
"""


@pytest.mark.parametrize("debug", [False, True])
def test_debug_lines_only_at_debug(debug):
    """The search's choice of method (FERRY_SEARCH_STATS before) on stderr at "debug" only."""
    pytest.importorskip("numpy")
    r = subprocess.run([sys.executable, "-c", _SEARCH.format(path=sys.path, debug=debug)],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, FERRY_SEARCH_STATS="1", FERRY_DEBUG="1"))
    assert r.returncode == 0, r.stderr
    assert ("ferry: debug: search: n 40000, t 4" in r.stderr) == debug, r.stderr


def test_engine_min_s_checked(sample):
    path = os.path.join(sample, "class0", "p0000.jpg")
    with pytest.raises(ferry.InvalidArgument, match="engine_min_s -1 is not 0..3600 seconds"):
        ferry.hash([path], engine_min_s=-1)
    assert ferry.hash([path], engine_min_s=0)[0]  # on the cores: the engine is not asked for


def test_index_update_engine_min_s_checked(sample, tmp_path):
    with pytest.raises(ferry.InvalidArgument, match="engine_min_s 4000 is not 0..3600"):
        ferry.index_update(tmp_path / "c.fidx", os.path.join(sample, "class0"), engine_min_s=4000)
    assert not (tmp_path / "c.fidx").exists()


def test_nvdec_keep_checked():
    clip = os.path.join(os.path.dirname(__file__), "..", "fixtures", "video", "testsrc_h264.mp4")
    with pytest.raises(ferry.InvalidArgument, match="nvdec_keep"):
        ferry.VideoReader(clip, nvdec_keep=65)
    try:
        r = ferry.VideoReader(clip, nvdec_keep=0)
    except ferry.UnsupportedError as e:
        pytest.skip(f"no video decoding in this build: {e}")
    with r:
        assert sum(b.count for b in r) > 0
