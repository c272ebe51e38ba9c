#!/usr/bin/env bash
# The OpenCL bundle for the GPU machine (issue 22: hashes and the search on NVIDIA's OpenCL
# beside ferry's CUDA kernels): builds here with CUDA, copies into .devocl/ the programs
# bench/gpu_opencl_checks.sh runs, the codec libraries the machine lacks and the Python
# package for its Python 3.12; into .devocl_corpus/ the corpus's photos, hires and dupes
# (FERRY_SHARED/corpus: the hashes are compared on all three). The two do not fit one call's
# 64 MiB beside the working tree: carry .devocl_corpus first and copy it to /tmp/corpus of
# the warm machine, then .devocl at once (an idle machine goes back after 30 s).
#   bash bench/device_bundle_opencl.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/bundle_lib.sh
B=${FERRY_GPU_BUILD:-build-gpu}
D=.devocl
SHARED=${FERRY_SHARED:-../shared}
progs="ferry test_opencl_hash test_opencl_hash_core test_opencl_search test_opencl_cache test_gpu_hash
  bench_opencl_hamming bench_gpu_hash"
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DFERRY_HEIF=OFF -DFERRY_VIDEO=OFF >/dev/null
# shellcheck disable=SC2086
cmake --build "$B" -j "$(nproc)" --target ferry_static $progs >/dev/null
rm -rf "$D" "${D}_corpus"
mkdir -p "$D/lib" "$D/py/ferry" "${D}_corpus"
for p in $progs; do cp "$B/$p" "$D/"; done
bundle_libs "$D/lib"
bundle_commit "$D"
bundle_python "$B" "$D/py/ferry"
for c in photos hires dupes; do
  if [ -d "$SHARED/corpus/$c" ]; then cp -r "$SHARED/corpus/$c" "${D}_corpus/"; fi
done
du -sh "$D" "${D}_corpus"
