#!/usr/bin/env bash
# Prepares .device/ (git-ignored) for runs on a GPU machine through the
# device tool, which has no compiler toolchain for ferry's dependencies and
# Python 3.12: a CUDA build without video (fewer shared libraries to carry),
# the shared libraries that machine lacks, the Python package built for
# Python 3.12, and corpus/photos with synth_imagenet.py to make JPEG sets
# there. Name ".device" in the call's carry, then on the machine:
#   export LD_LIBRARY_PATH=$PWD/.device/lib PYTHONPATH=$PWD/.device/py
#   .device/ferry load ...; python3 bench/soak_gpu.py --ferry .device/ferry ...
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/bundle_lib.sh
B=${FERRY_GPU_BUILD:-build-gpu}
D=.device
SHARED=${FERRY_SHARED:-../shared}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DFERRY_HEIF=OFF -DFERRY_VIDEO=OFF >/dev/null
cmake --build "$B" -j "$(nproc)" --target ferry ferry_static test_gpu test_loader test_watchdog \
  test_epoch_ahead test_gpu_hash test_hash_engine test_gpu_hamming test_gpu_plan test_signature bench_dupes_robust \
  test_hamming_multi bench_gpu_hamming >/dev/null
grep -q "FERRY_HAVE_CUDA" "$B/CMakeCache.txt" || true
rm -rf "$D"
mkdir -p "$D/lib" "$D/py/ferry"
cp "$B"/ferry "$B"/test_gpu "$B"/test_loader "$B"/test_watchdog "$B"/test_epoch_ahead \
  "$B"/test_gpu_hash "$B"/test_hash_engine "$B"/test_gpu_hamming "$B"/test_gpu_plan "$B"/test_signature \
  "$B"/bench_dupes_robust "$B"/test_hamming_multi "$B"/bench_gpu_hamming "$D/"
bundle_libs "$D/lib"
bundle_commit "$D"
bundle_python "$B" "$D/py/ferry"
if [ -d "$SHARED/corpus/photos" ]; then
  mkdir -p "$D/photos"
  cp "$SHARED"/corpus/photos/*.jpg "$D/photos/"
  cp "$SHARED/tools/synth_imagenet.py" "$D/"
fi
du -sh "$D"
