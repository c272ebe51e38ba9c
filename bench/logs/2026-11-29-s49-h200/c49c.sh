#!/usr/bin/env bash
# (After the run, its set-making lines became bench/jpeg_set.sh, the same commands.)
# session 49 call 4: the final code (one state a context, split after FY_PAD_BUY padding images):
# an A/B at batch 128 over 5 epochs, when the contexts split, then bench/gpu_checks.sh (unit tests, Python GPU tests, soak)
set -u
export LD_LIBRARY_PATH=$PWD/.device/lib
nvidia-smi --query-gpu=name --format=csv,noheader; nproc; date -u; echo "bundle $(cat .device/COMMIT)"
SET=/tmp/x2set
t0=$(date +%s)
bash bench/jpeg_set.sh $SET || exit 1
echo "set $(find $SET -name '*.jpg' | wc -l), $(( $(date +%s) - t0 )) s"
EPOCHS=5 bash bench/epoch0_probe.sh $SET "n128a||--batch 128" "o128a|FERRY_GPU_PAD=16|--batch 128" \
  "b128a|FERRY_GPU_PAD_BUY=2000|--batch 128" "n128b||--batch 128" "o128b|FERRY_GPU_PAD=16|--batch 128" \
  "b128b|FERRY_GPU_PAD_BUY=2000|--batch 128" "d128|FERRY_DEBUG=1|--batch 128" "n256||" "o256|FERRY_GPU_PAD=16|"
grep -h "padding images beyond" ${OUT:-/tmp/out}/e0-d128.err | sed 's/^/d128: /'
echo "d128: $(grep -c '0x0 0 bytes' ${OUT:-/tmp/out}/e0-d128.err) set-ups"
rm -f ${OUT:-/tmp/out}/e0-*
bash bench/gpu_checks.sh 0 300 100 1 2>&1 | tail -20
