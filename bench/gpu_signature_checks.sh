#!/usr/bin/env bash
# One call on the GPU machine (device tool, .device/ from
# bench/device_bundle.sh carried): signatures and robust matching with a GPU
# (issue 19). test_hash_engine (the engine's signatures against the CPU's),
# test_gpu_hash (a GPU catalog's signatures equal to the CPU's), then the
# generated hard set (tests/gen/gen_hardset.py from .device/photos) scored
# with the CPU alone, with the JPEG engine (--device cuda --mode fast) and
# with the pair search on the GPU (ferry dupes --device cuda), and fast-mode
# hashing speed with and without signatures, engine on.
#   bash bench/gpu_signature_checks.sh
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$PWD/.device/py PYTHONUNBUFFERED=1 FERRY_CORPUS=$PWD/.device
F=$PWD/.device/ferry
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nproc; date -u
for t in ${TESTS-test_hash_engine test_gpu_hash test_signature}; do
  timeout 300 .device/$t > "$OUT/$t.log" 2>&1
  echo "$t: exit $? $(tail -1 "$OUT/$t.log")"
  grep -E "signature|SKIP|failed:" "$OUT/$t.log" | head -8
done
H=/tmp/hard
[ -d $H ] || python3 tests/gen/gen_hardset.py .device/photos $H --groups 40 | tail -1
python3 bench/dupes_quality.py $H --ferry "$F" | sed -n 1,4p
FERRY_HASH_ENGINE_FIRST=1 python3 bench/dupes_quality.py $H --ferry "$F" \
  --hash-extra "--device cuda --mode fast" --dupes-extra "--device cuda" | sed -n 1,4p
# the same catalog, pairs on the CPU and on the GPU: the same groups
rm -f /tmp/h.fidx
FERRY_HASH_ENGINE_FIRST=1 "$F" hash $H -o /tmp/h.fidx --device cuda --mode fast
"$F" dupes /tmp/h.fidx --format json > /tmp/cpu.json
"$F" dupes /tmp/h.fidx --format json --device cuda > /tmp/gpu.json
cmp -s /tmp/cpu.json /tmp/gpu.json && echo "dupes --device cuda: the same JSON as the CPU's" \
  || echo "dupes --device cuda: DIFFERENT JSON from the CPU's"
# speed: fast mode with the engine (started at once), signatures or not
S=/tmp/set
[ -d $S ] || python3 .device/synth_imagenet.py .device/photos $S 4000 --classes 100 >/dev/null
for r in 1 2; do
  for k in all ahash,dhash,dhash_v,phash,whash,colorhash; do
    rm -f /tmp/s.fidx
    t0=$(date +%s%N)
    FERRY_HASH_ENGINE_MIN_S=0 "$F" hash $S -o /tmp/s.fidx --device cuda --mode fast --hashes $k -q
    t1=$(date +%s%N)
    echo "hash --device cuda --mode fast --hashes $k, 4000 files: $(( (t1 - t0) / 1000000 )) ms"
  done
done
# the second pass's cost: random catalogs, CPU (every core) and GPU
.device/bench_dupes_robust --n ${ROBUST_N:-40000,200000}
.device/bench_dupes_robust --n ${ROBUST_N:-40000,200000} --device 0
