#!/usr/bin/env bash
# Issue 22 on the GPU machine, from the OpenCL bundle (bench/device_bundle_opencl.sh makes
# .devocl/, named in the call's carry; the corpus in FERRY_CORPUS, default /tmp/corpus, where
# an earlier call copied .devocl_corpus). Builds nothing:
#   bash bench/gpu_opencl_checks.sh
# OpenCL device: the first GPU of any platform (NVIDIA's ICD; PoCL may be listed first),
# FERRY_TEST_OPENCL_DEVICE to choose. Runs: test_opencl_hash (every hash of the corpus's
# photos, hires and dupes, synthetic images, `ferry hash --device opencl`, a catalog: against
# the CPU's compatible mode), test_gpu_hash (the CUDA kernels on the same corpus),
# test_opencl_hash_core, test_opencl_search and test_opencl_cache on the GPU, the Python tests
# (test_opencl.py; test_search_api.py, its CUDA cases too), then
# bench_opencl_hamming (the search: OpenCL / CUDA, same pairs) and bench_gpu_hash (hashes:
# CUDA, OpenCL, the CPU; ferry hash --device cuda / opencl end to end). Logs under $OUT;
# exit 1 if a test failed.
# Claims it proves (bench/CLAIMS.md): C54.
set -u
D=${FERRY_DEVICE_DIR:-.devocl}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FERRY_BIN=$PWD/$D/ferry FERRY_SAMPLE=$PWD/data/sample FERRY_CORPUS=${FERRY_CORPUS:-/tmp/corpus}
[ -d "$FERRY_CORPUS/photos" ] || echo "no corpus at $FERRY_CORPUS: the tests fall back to data/sample"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
"$D/ferry" doctor | grep -iE "^(OpenCL|opencl:)"
gpu=$("$D/ferry" doctor | awk -F'[: ]' '/^opencl:[0-9]+: .*, GPU, /{print $2; exit}')
if [ -z "$gpu" ]; then
  echo "no OpenCL GPU listed: the checks below run on whatever device is default"
  gpu=0
fi
export FERRY_TEST_OPENCL_DEVICE=${FERRY_TEST_OPENCL_DEVICE:-$gpu}
echo "OpenCL device under test: opencl:$FERRY_TEST_OPENCL_DEVICE; $(nproc) cores; $(date -u); bundle of commit $(cat "$D/COMMIT" 2>/dev/null || echo unknown)"
bad=0
for t in test_opencl_hash test_gpu_hash test_opencl_hash_core test_opencl_search test_opencl_cache; do
  t0=$(date +%s)
  timeout 500 "$D/$t" > "$OUT/$t.txt" 2>&1
  rc=$?
  echo "$t: exit $rc in $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/$t.txt")"
  grep -E "testing|synthetic|images of|ferry hash --device|catalog of|hashes compared|CHECK failed|SKIPPED|DIFFERENT" \
    "$OUT/$t.txt" | head -20
  [ "$rc" = 0 ] || bad=1
done
if [ -d "$D/py/ferry" ]; then
  FERRY_PY_PATH=$PWD/$D/py timeout 300 python3 -m pytest -q -rs -p no:cacheprovider \
    tests/python/test_opencl.py tests/python/test_search_api.py > "$OUT/pytest.txt" 2>&1
  rc=$?
  echo "pytest test_opencl.py test_search_api.py: exit $rc: $(tail -1 "$OUT/pytest.txt")"
  [ "$rc" = 0 ] || { tail -30 "$OUT/pytest.txt"; bad=1; }
fi
echo "== bench_opencl_hamming --opencl $FERRY_TEST_OPENCL_DEVICE"
timeout 300 "$D/bench_opencl_hamming" --opencl "$FERRY_TEST_OPENCL_DEVICE" 2>&1 | tee "$OUT/bench_opencl_hamming.txt"
echo "== bench_gpu_hash --ferry $D/ferry"
timeout 400 "$D/bench_gpu_hash" --ferry "$PWD/$D/ferry" 2>&1 | tee "$OUT/bench_gpu_hash.txt"
echo "checks: $([ "$bad" = 0 ] && echo all passed || echo FAILED)"
exit "$bad"
