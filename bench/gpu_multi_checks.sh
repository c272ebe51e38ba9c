#!/usr/bin/env bash
# The search on several GPUs (issue 21: ferry_search_options.devices, `ferry dupes --device
# cuda:0,1`) on the GPU machine, from the device bundle (bench/device_bundle.sh makes .device/,
# named in the call's carry; FERRY_DEVICE_DIR names another). Builds nothing:
#   bash bench/gpu_multi_checks.sh [DEVICES] [N] [TOPK_N]
# DEVICES: the list compared with its first device alone (default: every GPU nvidia-smi lists,
# or 0,0 on a machine of one GPU: two threads on it). N: random 64-bit codes of the benchmark,
# all pairs within 8 bits (default 20000000; 0 leaves it out). TOPK_N: random 64-bit codes of
# the top-k benchmark, k = 8 (default 1048576; 0 leaves it out). Runs test_hamming_multi and
# test_gpu_hamming (top-k on several threads of cuda:0 included), `ferry dupes --device
# cuda:DEVICES` against the CPU's groups, the Python test (with the bundle's package), then
# bench_gpu_hamming --multi DEVICES --multi-n N --multi-topk-n TOPK_N (top-k first: the
# neighbours on DEVICES against its first device alone).
# Logs under $OUT; exit 1 if anything failed.
set -u
D=${FERRY_DEVICE_DIR:-.device}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FERRY_BIN=$PWD/$D/ferry FERRY_SAMPLE=$PWD/data/sample PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$ngpu" -gt 1 ]; then auto=$(seq -s, 0 $((ngpu - 1))); else auto=0,0; fi
devices=${1:-$auto} n=${2:-20000000} topk_n=${3:-1048576}
echo "devices $devices, benchmark on $n codes, top-k on $topk_n; $(nproc) cores; $(date -u); bundle of commit $(cat "$D/COMMIT" 2>/dev/null || echo unknown)"
bad=0

for t in test_hamming_multi test_gpu_hamming; do
  timeout 500 "$D/$t" > "$OUT/$t.txt" 2>&1
  rc=$?
  echo "$t: exit $rc: $(tail -1 "$OUT/$t.txt")"
  grep -E "devices|x cuda:0|top-k|CHECK failed|SKIPPED|split" "$OUT/$t.txt" | head -60
  [ "$rc" = 0 ] || bad=1
done

# the CLI: a bad list is a usage error; the list's groups are the CPU's, byte for byte
tmp=$(mktemp -d)
mkdir -p "$tmp/set/a" "$tmp/set/b"
cp data/sample/class0/*.jpg "$tmp/set/a/" && cp data/sample/class0/*.jpg "$tmp/set/b/"
"$D/ferry" hash "$tmp/set" -o "$tmp/set.fidx" > /dev/null 2>&1
"$D/ferry" dupes "$tmp/set.fidx" --device cuda:0,x > "$tmp/usage.txt" 2>&1
rc=$?
if [ "$rc" = 2 ] && grep -q "'x' is not a device number" "$tmp/usage.txt"; then
  echo "cli: --device cuda:0,x refused (exit 2): ok"
else
  echo "cli: --device cuda:0,x: exit $rc: FAILED"; cat "$tmp/usage.txt"; bad=1
fi
"$D/ferry" dupes "$tmp/set.fidx" --format csv -o "$tmp/cpu.csv" 2> "$tmp/cpu.err"
"$D/ferry" dupes "$tmp/set.fidx" --device "cuda:$devices" --format csv -o "$tmp/gpus.csv" \
  2> "$tmp/gpus.err"
rc=$?
if [ "$rc" = 0 ] && [ "$(wc -l < "$tmp/cpu.csv")" -gt 2 ] && cmp -s "$tmp/cpu.csv" "$tmp/gpus.csv"; then
  echo "cli: dupes --device cuda:$devices: the CPU's groups: ok ($(cat "$tmp/gpus.err"))"
else
  echo "cli: dupes --device cuda:$devices: exit $rc, groups differ or none: FAILED"
  cat "$tmp/gpus.err"; bad=1
fi
rm -rf "$tmp"

if [ -d "$D/py/ferry" ]; then
  FERRY_PY_PATH=$PWD/$D/py timeout 300 python3 -m pytest -q -p no:cacheprovider \
    tests/python/test_search_api.py tests/python/test_hash.py -k "search_device or hamming_primitives or cpu_against or inputs or opencl_same or cuda_devices" -rs > "$OUT/pytest.txt" 2>&1
  rc=$?
  echo "python: exit $rc: $(tail -1 "$OUT/pytest.txt")"
  [ "$rc" = 0 ] || { tail -30 "$OUT/pytest.txt"; bad=1; }
else
  echo "python: SKIPPED: no package in $D/py"
fi

if [ "$n" != 0 ] || [ "$topk_n" != 0 ]; then
  timeout 560 "$D/bench_gpu_hamming" --multi "$devices" --multi-n "$n" --multi-topk-n "$topk_n" \
    2>&1 | tee "$OUT/bench_multi.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || bad=1
fi
echo "gpu_multi_checks: $([ "$bad" = 0 ] && echo ok || echo FAILED)"
exit "$bad"
