#!/usr/bin/env bash
# (After the run, its set-making lines became bench/jpeg_set.sh, the same commands.)
# session 49 call 2: FERRY_GPU_PAD=63 (every call one of 64) against 16 / 48, cold and warm
set -u
export LD_LIBRARY_PATH=$PWD/.device/lib
nvidia-smi --query-gpu=name --format=csv,noheader; nproc; date -u; echo "bundle $(cat .device/COMMIT)"
SET=/tmp/x2set
t0=$(date +%s)
bash bench/jpeg_set.sh $SET || exit 1
mkdir -p /tmp/x2small; for d in $(ls -d $SET/class_0?? | head -40); do cp -al "$d" /tmp/x2small/; done 2>/dev/null
echo "set $(find $SET -name '*.jpg' | wc -l), small $(find /tmp/x2small -name '*.jpg' | wc -l), $(( $(date +%s) - t0 )) s"
timeout 120 .device/test_gpu 2>&1 | grep -E "CHECK failed|passed" | tail -5
bash bench/epoch0_probe.sh $SET "base||" "pad63|FERRY_GPU_PAD=63|" "pad48|FERRY_GPU_PAD=48|" \
  "base2||" "pad63b|FERRY_GPU_PAD=63|" "eng|FERRY_BENCH_ENGINE_ONLY=1|" \
  "eng63|FERRY_BENCH_ENGINE_ONLY=1,FERRY_GPU_PAD=63|" "dbg63|FERRY_DEBUG=1,FERRY_GPU_PAD=63|" \
  "base3||" "pad63c|FERRY_GPU_PAD=63|" "b64|FERRY_GPU_PAD=63|--batch 64" "b64d||--batch 64" \
  "b16|FERRY_GPU_PAD=63|--batch 16" "b16d||--batch 16"
grep -c "grows" /tmp/out/e0-dbg63.err; grep "0x0 0 bytes" /tmp/out/e0-dbg63.err | head -8
EPOCHS=4 bash bench/epoch0_probe.sh /tmp/x2small "small||" "small63|FERRY_GPU_PAD=63|" \
  "seng|FERRY_BENCH_ENGINE_ONLY=1|" "seng63|FERRY_BENCH_ENGINE_ONLY=1,FERRY_GPU_PAD=63|"
