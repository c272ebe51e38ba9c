"""ferry.build_info(): which backends this ferry was built with (CUDA, video,
HEIF), and why.

A wheel (and any build that is not in place) carries what setup.py found,
in ferry/_build_info.py; an in-place build (`setup.py build_ext --inplace`,
what `make test` runs) writes no such file, and the answer is then asked of
the extension itself:

  CUDA   the C library's CUDA entry points are stubs that answer "built
         without CUDA" when it was built without (src/cuda/*_stub.c): that
         text is in the extension's file exactly then;
  video  a VideoReader over a file that does not exist fails "built without
         libavcodec" without video, with a read error otherwise;
  HEIF   probing the first bytes of a HEIC file fails "built without
         libheif" without libheif, as damaged data otherwise.

Nothing here touches a GPU or the file system beyond reading the
extension's own file.
"""
from __future__ import annotations

import copy
import functools
import os
import tempfile
from typing import Any, Dict, Tuple

from . import _ferry

# build_info()'s keys and _build_info.BACKENDS' names for them
_BACKENDS = (("cuda", "CUDA"), ("video", "video"), ("heif", "HEIF"))
_HEIC_HEAD = b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic"


def _cuda() -> Tuple[bool, str]:
    try:
        with open(_ferry.__file__, "rb") as f:
            stub = b"built without CUDA" in f.read()
    except OSError as e:
        return False, f"unknown: the extension's file cannot be read ({e})"
    if stub:
        return False, ("built without CUDA (no nvcc or nvjpeg.h when it was built, FERRY_CUDA=0, "
                       "or the library compiled without CMake): device='cuda' raises "
                       "UnsupportedError")
    return True, ("the CUDA backend is compiled in (libcuda, nvJPEG and NVDEC are loaded at "
                  "run time)")


def _video() -> Tuple[bool, str]:
    with tempfile.TemporaryDirectory(prefix="ferry-build-info-") as d:
        try:
            _ferry.VideoReader(os.path.join(d, "missing.mp4")).close()
        except _ferry.Error as e:
            if "without libavcodec" in str(e):
                return False, ("built without libavcodec (libavformat, libavcodec and "
                               "libswscale not found, FERRY_VIDEO=OFF, or the library compiled "
                               "without CMake)")
    return True, "libavcodec is compiled in"


def _heif() -> Tuple[bool, str]:
    try:
        _ferry.probe(_HEIC_HEAD)
    except _ferry.Error as e:
        if "without libheif" in str(e):
            return False, "built without libheif (FERRY_HEIF=OFF): HEIC and AVIF are refused"
    return True, "libheif is compiled in"


@functools.lru_cache(maxsize=None)
def _info() -> Dict[str, Any]:
    try:
        from . import _build_info
        built = dict(getattr(_build_info, "BACKENDS", {}))
    except ImportError:
        built = {}
    probes = {"cuda": _cuda, "video": _video, "heif": _heif}
    out: Dict[str, Any] = {}
    details: Dict[str, Any] = {}
    from_build = True
    for key, name in _BACKENDS:
        if name in built:
            have, why = built[name]
        else:
            have, why = probes[key]()
            from_build = False
        out[key] = bool(have)
        details[key] = str(why)
    details["source"] = (
        "ferry/_build_info.py, written when this ferry was built" if from_build else
        "asked of the extension at run time (an in-place build writes no ferry/_build_info.py)")
    details["version"] = _ferry.version
    out["details"] = details
    return out


def build_info() -> Dict[str, Any]:
    """Which backends this ferry was built with: {"cuda": bool, "video": bool,
    "heif": bool, "details": {"cuda": why, "video": why, "heif": why,
    "source": where the answer comes from, "version": ferry's version}}.

    From ferry/_build_info.py, which a wheel build writes, else asked of the
    extension (in-place builds). "cuda" says that the CUDA backend is
    compiled in, not that a GPU, its driver or nvJPEG is there: those are
    found when a loader opens a device (`ferry doctor` lists them)."""
    return copy.deepcopy(_info())
