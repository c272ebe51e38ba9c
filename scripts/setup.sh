#!/usr/bin/env bash
# Installs what ferry needs on a Debian machine, and only what is missing:
# compilers and CMake, the codec libraries (libjpeg-turbo, libpng, libwebp),
# and the Python packages the tests use (NumPy, Pillow as the reference
# decoder, pytest). Safe to run again: it checks first.
set -euo pipefail

debs=(build-essential cmake pkg-config libjpeg62-turbo-dev libpng-dev libwebp-dev libtiff-dev libgif-dev libheif-dev libde265-dev libstb-dev libraw-dev zlib1g-dev python3 python3-pip)
# headless Chromium opens the duplicate report in tests/python/test_hash_report.py
debs+=(chromium)
# JSON: jansson writes every JSON output (catalog export, dupes report, --json)
# and reads WebDataset label members
debs+=(libjansson-dev)
# WebDataset http(s) shards are fetched by the curl command (as webdataset's gopen);
# bsdtar (libarchive) is bench/bench_wds_stream.py's reference reader of .tar.gz
debs+=(curl libarchive-tools)
# clang's libFuzzer and sanitizer runtimes: the fuzz targets (fuzz/) and TSan
debs+=(clang-14 libclang-rt-14-dev)
# video (src/video): libavformat/libavcodec/libswscale; ffmpeg's ffprobe is
# the tests' reference for frame counts and timestamps
debs+=(libavformat-dev libavcodec-dev libswscale-dev libavutil-dev ffmpeg)
# NVDEC (src/video/nvdec.c): the ffnvcodec headers (libcuda and libnvcuvid
# are loaded at run time; without the headers the GPU video path says so)
debs+=(libffmpeg-nvenc-dev)
# OpenCL (src/opencl): PoCL runs the OpenCL kernels on the CPU so that
# `make test` tests them for real (test_opencl_search, the CLI's dupes
# --device opencl); ocl-icd-opencl-dev gives the ICD loader libOpenCL.so.1
# and CL/cl.h, which ferry does not need to build (it opens the loader at
# run time and declares what it calls in src/opencl/cl_api.h)
debs+=(pocl-opencl-icd ocl-icd-opencl-dev)
pips=(numpy pillow pytest)
# setuptools builds the Python extension (setup.py). torch is never installed
# here (it is huge): the PyTorch tests skip, saying so, when it is absent.
# setuptools >= 77 reads pyproject.toml's licence as an SPDX string (PEP 639)
pips+=("setuptools>=77")
# imagehash's own tests, run against ferry.imagehash, import these
pips+=(six packaging)
# WebDataset shards: webdataset is the reference writer and reader of
# tests/python/test_webdataset.py only (never a runtime need of ferry)
pips+=(webdataset)
# the Python tests on every core (make check/test: pytest -n JOBS)
pips+=(pytest-xdist)

missing_debs=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing_debs+=("$p")
done
# A machine may carry its own toolchain (python3 from pyenv, cmake from pip):
# what is on PATH and works is good enough.
if [ ${#missing_debs[@]} -gt 0 ]; then
  still=()
  for p in "${missing_debs[@]}"; do
    case $p in
      python3) command -v python3 >/dev/null || still+=("$p") ;;
      python3-pip) python3 -m pip --version >/dev/null 2>&1 || still+=("$p") ;;
      cmake) command -v cmake >/dev/null || still+=("$p") ;;
      chromium) command -v chromium >/dev/null || still+=("$p") ;;
      ffmpeg) command -v ffprobe >/dev/null || still+=("$p") ;;
      clang-14) command -v clang-14 >/dev/null || command -v clang >/dev/null || still+=("$p") ;;
      libclang-rt-14-dev)
        # any clang whose libFuzzer runtime is there will do
        ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
          still+=("$p") ;;
      build-essential) command -v cc >/dev/null && command -v make >/dev/null || still+=("$p") ;;
      *) still+=("$p") ;;
    esac
  done
  missing_debs=("${still[@]+"${still[@]}"}")
fi
# The Python extension needs the headers of the python3 on PATH; Debian's
# python3-dev has them for Debian's python3 (a pyenv/conda python has its own).
if command -v python3 >/dev/null && ! python3 -c 'import os,sys,sysconfig; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) else 1)' 2>/dev/null; then
  dpkg-query -W -f='${Status}' python3-dev 2>/dev/null | grep -q "install ok installed" || missing_debs+=(python3-dev)
fi
if [ ${#missing_debs[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing_debs[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing_debs[@]}"
fi

# The CUDA backend compiles where nvcc is; nvJPEG's header comes from the
# toolkit or from the nvidia-nvjpeg wheel (the library is loaded at run time).
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda_inc=$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")/../include
  if [ ! -f "$cuda_inc/nvjpeg.h" ] && ! python3 -c 'import nvidia, os, sys; sys.exit(0 if any(os.path.exists(os.path.join(p, "cu13/include/nvjpeg.h")) for p in nvidia.__path__) else 1)' 2>/dev/null; then
    pips+=(nvidia-nvjpeg)
  fi
fi

missing_py=()
for p in "${pips[@]}"; do
  mod=$p; [ "$p" = pillow ] && mod=PIL; [ "$p" = pytest-xdist ] && mod=xdist
  [ "$p" = nvidia-nvjpeg ] && { missing_py+=("$p"); continue; }
  if [ "$p" = "setuptools>=77" ]; then
    python3 -c 'import setuptools,sys; sys.exit(int(setuptools.__version__.split(".")[0]) < 77)' \
      2>/dev/null || missing_py+=("$p")
    continue
  fi
  python3 -c "import $mod" 2>/dev/null || missing_py+=("$p")
done
if [ ${#missing_py[@]} -gt 0 ]; then
  echo "setup: installing Python packages: ${missing_py[*]}"
  extra=()
  # Debian's own python3 refuses pip installs outside a venv (PEP 668).
  python3 -c 'import sysconfig,os,sys; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["stdlib"],"EXTERNALLY-MANAGED")) else 1)' \
    && extra+=(--break-system-packages)
  python3 -m pip install -q "${extra[@]+"${extra[@]}"}" "${missing_py[@]}"
fi

# imagehash's own test suite (its PyPI sdist's tests/), run against
# ferry.imagehash by tests/python/test_imagehash_suite.py; offline, that
# test is skipped and says so
ih="$(cd "$(dirname "$0")/.." && pwd)/.cache/imagehash"
if [ ! -f "$ih/ImageHash-4.3.2.tar.gz" ]; then
  mkdir -p "$ih"
  python3 -m pip download -q --no-deps --no-binary :all: -d "$ih" imagehash==4.3.2 ||
    echo "setup: could not download imagehash's sdist: its test suite will be skipped"
fi
