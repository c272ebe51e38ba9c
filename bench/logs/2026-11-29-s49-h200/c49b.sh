#!/usr/bin/env bash
# (After the run, its set-making lines became bench/jpeg_set.sh, the same commands.)
# session 49 call 3: one state a context (call size from the batch) against the rule before
# (FERRY_GPU_PAD=16), cold and warm, batches 256/128/64/16; the GPU unit tests
set -u
export LD_LIBRARY_PATH=$PWD/.device/lib
nvidia-smi --query-gpu=name --format=csv,noheader; nproc; date -u; echo "bundle $(cat .device/COMMIT)"
SET=/tmp/x2set
t0=$(date +%s)
bash bench/jpeg_set.sh $SET || exit 1
mkdir -p /tmp/x2small; for d in $(ls -d $SET/class_0?? | head -40); do cp -al "$d" /tmp/x2small/; done 2>/dev/null
echo "set $(find $SET -name '*.jpg' | wc -l), small $(find /tmp/x2small -name '*.jpg' | wc -l), $(( $(date +%s) - t0 )) s"
for t in test_gpu test_loader test_epoch_ahead test_watchdog; do
  timeout 150 .device/$t 2>&1 | grep -E "CHECK failed|passed|^loader " | tail -12 | sed "s/^/$t: /"
done
cfgs=()
for r in 1 2 3; do
  for b in 256 128 64; do cfgs+=("n$b.$r||--batch $b" "o$b.$r|FERRY_GPU_PAD=16|--batch $b"); done
done
cfgs+=("n16||--batch 16" "o16|FERRY_GPU_PAD=16|--batch 16" "eng256|FERRY_BENCH_ENGINE_ONLY=1|"
  "engo256|FERRY_BENCH_ENGINE_ONLY=1,FERRY_GPU_PAD=16|" "eng64|FERRY_BENCH_ENGINE_ONLY=1|--batch 64"
  "engo64|FERRY_BENCH_ENGINE_ONLY=1,FERRY_GPU_PAD=16|--batch 64" "dbg256|FERRY_DEBUG=1|"
  "dbg64|FERRY_DEBUG=1|--batch 64")
bash bench/epoch0_probe.sh $SET "${cfgs[@]}"
for d in dbg256 dbg64; do
  echo "$d: $(grep -c 'grows' /tmp/out/e0-$d.err) exclusive calls, $(grep -c '0x0 0 bytes' /tmp/out/e0-$d.err) set-ups"
  grep '0x0 0 bytes' /tmp/out/e0-$d.err | sed 's/.*context/context/; s/grows.*;/:/'
done
EPOCHS=4 bash bench/epoch0_probe.sh /tmp/x2small "small||" "smallo|FERRY_GPU_PAD=16|" \
  "small64||--batch 64" "small64o|FERRY_GPU_PAD=16|--batch 64"
