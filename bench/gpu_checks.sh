#!/usr/bin/env bash
# One call on the GPU machine (device tool, with .device/ from
# bench/device_bundle.sh carried): the GPU unit tests, the Python GPU tests
# with torch, then the loader soak (bench/soak_gpu.py) until SOAK_SECONDS.
#   bash bench/gpu_checks.sh [SOAK_FIRST] [SOAK_RUNS] [SOAK_SECONDS] [TESTS=1]
# Claims it proves (bench/CLAIMS.md): C34, C35.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
first=${1:-0} runs=${2:-300} secs=${3:-400} tests=${4:-1}
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$PWD/.device/py FERRY_PY_PATH=$PWD/.device/py PYTHONUNBUFFERED=1
export FERRY_BIN=$PWD/.device/ferry
# the GPU tests' full tier (tests/tiers.cmake): cheap on a GPU
export FERRY_TEST_TIER=full
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nproc; date -u; echo "bundle of commit $(cat .device/COMMIT 2>/dev/null || echo unknown)"
SET=/tmp/set
if [ ! -d "$SET" ]; then
  t0=$(date +%s)
  python3 .device/synth_imagenet.py .device/photos "$SET" "${SET_N:-2000}" --classes 100 >/dev/null
  echo "made $(find "$SET" -name '*.jpg' | wc -l) JPEGs in $(( $(date +%s) - t0 )) s"
fi
if [ "$tests" = 1 ]; then
  for t in test_gpu test_watchdog test_loader test_epoch_ahead test_gpu_hash test_hash_engine \
    test_gpu_hamming test_gpu_plan; do
    (cd "$PWD" && timeout 300 .device/$t 2>&1 | grep -E "CHECK failed|passed|parking|epoch ahead" |
      tail -12 | sed "s/^/$t: /")
  done
  timeout 400 python3 -m pytest -q -x -p no:cacheprovider tests/python/test_gpu.py \
    tests/python/test_watchdog.py tests/python/test_torch.py tests/python/test_hash.py \
    tests/python/test_hash_cli.py tests/python/test_examples.py tests/python/test_numa.py \
    tests/python/test_log_level.py 2>&1 | tail -6
fi
if [ -n "${SANITIZE:-}" ]; then # compute-sanitizer over the GPU tests (issue 15)
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  for tool in racecheck synccheck memcheck; do
    for t in test_gpu test_gpu_hash; do
      timeout 500 "$cs" --tool $tool --error-exitcode 9 .device/$t > "$OUT/cs-$tool-$t.txt" 2>&1
      echo "compute-sanitizer $tool $t: exit $? ($(grep -E 'ERROR SUMMARY|passed' "$OUT/cs-$tool-$t.txt" | tr '\n' ' '))"
    done
  done
fi
[ "$runs" = 0 ] && exit 0
python3 bench/soak_gpu.py --ferry .device/ferry --dir "$SET" --first "$first" --runs "$runs" \
  --max-seconds "$secs" --log "$OUT/soak.jsonl" --dumps "$OUT" 2>&1 | tail -30
