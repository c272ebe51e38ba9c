"""ferry.build_info(): which backends this ferry holds. Runs against an
in-place build (no ferry/_build_info.py: the answer is asked of the
extension) and an installed wheel (the answer is setup.py's record); in both
the answer must agree with what the extension does."""
import os
import pathlib

import pytest

import ferry
from ferry import _info

FIX = pathlib.Path(__file__).resolve().parent.parent / "fixtures"
SAMPLE = pathlib.Path(__file__).resolve().parents[2] / "data" / "sample"


def _has_build_info():
    try:
        from ferry import _build_info  # noqa: F401
        return True
    except ImportError:
        return False


def test_shape():
    info = ferry.build_info()
    assert set(info) == {"cuda", "video", "heif", "details"}
    for key in ("cuda", "video", "heif"):
        assert isinstance(info[key], bool)
        assert isinstance(info["details"][key], str) and info["details"][key]
    assert info["details"]["version"] == ferry.__version__
    assert "build_info" in ferry.__all__
    assert ferry.build_info.__module__ == "ferry"


def test_source():
    source = ferry.build_info()["details"]["source"]
    if _has_build_info():
        assert "_build_info.py" in source and "run time" not in source
    else:
        assert source.startswith("asked of the extension at run time")


def test_fresh_copy():
    a = ferry.build_info()
    a["cuda"] = "changed"
    a["details"]["cuda"] = "changed"
    b = ferry.build_info()
    assert b["cuda"] != "changed" and b["details"]["cuda"] != "changed"


def test_build_record_agrees():
    """A wheel's record and the run-time answers say the same."""
    if not _has_build_info():
        pytest.skip("an in-place build: no ferry/_build_info.py to compare with")
    from ferry import _build_info
    info = ferry.build_info()
    for key, name in (("cuda", "CUDA"), ("video", "video"), ("heif", "HEIF")):
        assert info[key] == bool(_build_info.BACKENDS[name][0])
        assert info["details"][key] == _build_info.BACKENDS[name][1]


@pytest.mark.parametrize("key", ["cuda", "video", "heif"])
def test_run_time_answer_agrees(key):
    """The run-time probes give what build_info() says, whichever way it
    was found."""
    have, why = {"cuda": _info._cuda, "video": _info._video, "heif": _info._heif}[key]()
    assert have == ferry.build_info()[key], why


def test_cuda_behaviour():
    """Without CUDA a GPU loader is refused as "built without CUDA"; with
    it, any other reason (no such device here)."""
    with pytest.raises(ferry.Error) as e:
        ferry.Loader(str(SAMPLE), batch_size=4, size=32, device="cuda:99", output="tensor")
    assert ("built without CUDA" in str(e.value)) == (not ferry.build_info()["cuda"]), e.value


def test_video_behaviour():
    clip = FIX / "video" / "testsrc_h264.mp4"
    if not clip.exists():
        pytest.skip(f"{clip} is missing")
    if ferry.build_info()["video"]:
        with ferry.VideoReader(str(clip), batch_size=2) as r:
            assert r.info["width"] > 0
    else:
        with pytest.raises(ferry.UnsupportedError, match="without libavcodec"):
            ferry.VideoReader(str(clip))


def test_heif_behaviour():
    heic = FIX / "codecs" / "rgb.heic"
    if ferry.build_info()["heif"]:
        assert ferry.probe(str(heic))["format"].upper() == "HEIF"
    else:
        with pytest.raises(ferry.UnsupportedError, match="without libheif"):
            ferry.probe(str(heic))


def test_no_side_effects(tmp_path, monkeypatch):
    """The run-time probes leave nothing behind in the temporary folder."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    _info._video()
    _info._heif()
    assert os.listdir(tmp_path) == []
