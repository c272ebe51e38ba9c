"""What the CUDA backend of ferry's Python build needs, and whether it was asked for.

Shared by the in-tree PEP 517 backend (ferry_build.py: which packages the
isolated build environment must hold) and setup.py (what to tell CMake, and
whether a build without CUDA is an error). Standard library only.

FERRY_CUDA (environment):
  1 / on / yes   CUDA is required: the build fails, saying why, without it.
  0 / off / no   CUDA is left out.
  unset / auto   CUDA is built when nvcc is found; the build says why not.
"""
import os
import re
import shutil
import subprocess

ON = ("1", "on", "yes", "true")
OFF = ("0", "off", "no", "false")


def requested():
    """'on', 'off' or 'auto' from $FERRY_CUDA; SystemExit on anything else."""
    v = os.environ.get("FERRY_CUDA", "").strip().lower()
    if v in ("", "auto"):
        return "auto"
    if v in ON:
        return "on"
    if v in OFF:
        return "off"
    raise SystemExit(f"ferry: FERRY_CUDA must be 1 (require CUDA), 0 (leave it out) or auto "
                     f"(unset), not {os.environ['FERRY_CUDA']!r}")


def find_nvcc():
    """The nvcc CMake would use: $CUDACXX, nvcc on PATH, /usr/local/cuda/bin/nvcc."""
    cands = [os.environ.get("CUDACXX"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"]
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.realpath(c)
    return None


def nvcc_version(nvcc):
    """(major, minor) of nvcc's CUDA release, or None."""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"release (\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def toolkit_nvjpeg_header(nvcc):
    """nvjpeg.h of the toolkit nvcc belongs to, or None."""
    inc = os.path.join(os.path.dirname(os.path.dirname(nvcc)), "include", "nvjpeg.h")
    return inc if os.path.isfile(inc) else None


def nvjpeg_requirement(version):
    """The PyPI package whose wheel carries nvjpeg.h for nvcc's CUDA major:
    nvidia-nvjpeg is CUDA 13's (nvidia/cu13/include), nvidia-nvjpeg-cu12 CUDA 12's."""
    if version and version[0] == 12:
        return "nvidia-nvjpeg-cu12"
    if version and version[0] == 13:
        return "nvidia-nvjpeg>=13,<14"
    return "nvidia-nvjpeg"


def wheel_nvjpeg_header():
    """nvjpeg.h of an nvidia-nvjpeg(-cuXX) package importable by this Python
    (in pip's isolated build environment: the one get_requires asked for)."""
    try:
        import nvidia  # a namespace package: nvidia-nvjpeg puts cu13/include/nvjpeg.h in it
    except ImportError:
        return None
    for base in list(getattr(nvidia, "__path__", [])):
        for sub in ("cu13", "cu12", "nvjpeg"):
            h = os.path.join(base, sub, "include", "nvjpeg.h")
            if os.path.isfile(h):
                return h
    return None


def build_requirements():
    """(extra requirements for the build environment, one line saying why)."""
    want = requested()
    if want == "off":
        return [], "FERRY_CUDA=0: the CUDA backend is left out"
    nvcc = find_nvcc()
    if not nvcc:
        why = "nvcc not found (not in $CUDACXX, on PATH or in /usr/local/cuda/bin)"
        if want == "on":
            raise SystemExit(f"ferry: FERRY_CUDA=1 but {why}: install the CUDA toolkit, or "
                             "unset FERRY_CUDA for a CPU-only build")
        return [], f"CUDA backend left out: {why}"
    if toolkit_nvjpeg_header(nvcc):
        return [], f"nvcc {nvcc}: nvjpeg.h from its toolkit"
    req = nvjpeg_requirement(nvcc_version(nvcc))
    return [req], f"nvcc {nvcc}: nvjpeg.h from the {req} wheel (added to the build requirements)"
