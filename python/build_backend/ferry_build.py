"""ferry's in-tree PEP 517 build backend (pyproject.toml: backend-path).

setuptools.build_meta, plus one thing: where the CUDA backend can be built
(nvcc found, or FERRY_CUDA=1) and the CUDA toolkit has no nvjpeg.h, the build
environment also gets the nvidia-nvjpeg wheel for its header (the library
itself is loaded at run time). A CPU-only machine downloads nothing more.
setup.py then tells CMake where that header is, and prints which backends it
built (ferry_cuda.py: FERRY_CUDA=1 requires CUDA, 0 leaves it out).
"""
import sys

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403  (every other hook unchanged)

import ferry_cuda


def _cuda_requirements():
    extra, why = ferry_cuda.build_requirements()
    print(f"ferry: {why}", file=sys.stderr, flush=True)
    return extra


def get_requires_for_build_wheel(config_settings=None):
    return _setuptools.get_requires_for_build_wheel(config_settings) + _cuda_requirements()


def get_requires_for_build_editable(config_settings=None):
    return _setuptools.get_requires_for_build_editable(config_settings) + _cuda_requirements()
