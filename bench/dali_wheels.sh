#!/usr/bin/env bash
# Fetches NVIDIA DALI and what it needs as wheels for the GPU machine's
# Python 3.12 into .whl/ (git-ignored), the DALI wheel itself split into
# parts of 45 MiB in .dali/ (git-ignored), since a device call carries 64
# MiB. Then, on the warm machine, one call per part (it stays warm 30 s
# between calls):
#   calls 1..N: carry .dali/part.aa (ab, ac, ...);  cp .dali/part.* /tmp/
#   last call:  carry .whl and .dali/name;  cat /tmp/part.* > /tmp/$(cat .dali/name) &&
#               pip install -q --no-index --no-deps --target /tmp/site /tmp/*.whl .whl/*.whl
# DALI is a peer in benchmarks (bench/bench_gpu.py, examples/train_imagenet.py), never a
# dependency of ferry. Nothing here is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
W=.whl D=.dali
mkdir -p "$W" "$D"
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${plat[@]}" -d "$W" nvidia-dali-cuda130==2.4.0 nvidia-nvimgcodec-cu13 \
  nvidia-nvjpeg astunparse gast optree makefun libcst nvtx
dali=$(ls "$W"/nvidia_dali_cuda130-*.whl)
basename "$dali" > "$D/name"
rm -f "$D"/part.*
split -b 45M "$dali" "$D/part."
rm "$dali"
ls -la "$W" "$D"
