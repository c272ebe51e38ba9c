#!/usr/bin/env bash
# One call on the GPU machine (device tool, .device/ from bench/device_bundle.sh
# carried) for issue 20's GPU side: the Python tests that need a GPU or torch
# (test_gpu, test_torch, test_load_tensor, test_sources), pin_memory, then
# bench/bench_load_tensor.py (a synthetic ImageNet-like set, listed N times,
# into one f16 tensor on the GPU; peers side by side on a subset) and the
# same set as WebDataset shards against the folder.
#   bash bench/gpu_sources_checks.sh            (SYNTH=25000 REPEAT=8 by default)
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$PWD/.device/py PYTHONUNBUFFERED=1 FERRY_BIN=$PWD/.device/ferry
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nproc; date -u
if [ -z "${SKIP_TESTS-}" ]; then
  timeout 400 python3 -m pytest -q -p no:cacheprovider tests/python/test_gpu.py \
    tests/python/test_torch.py tests/python/test_load_tensor.py tests/python/test_sources.py tests/python/test_augment.py \
    -rs 2>&1 | tail -12
fi
S=/tmp/synth
if [ ! -d $S ]; then
  t0=$(date +%s)
  python3 .device/synth_imagenet.py .device/photos $S "${SYNTH:-25000}" --classes 100 >/dev/null
  echo "synthesised ${SYNTH:-25000} JPEGs in $(( $(date +%s) - t0 )) s; $(du -sh $S | cut -f1)"
fi
python3 bench/bench_load_tensor.py $S --repeat "${REPEAT:-8}" --ferry .device/ferry \
  ${BENCH_EXTRA-} 2>&1 | tee "$OUT/load_tensor.txt"
# Cold reads: the page cache dropped before each run (needs root on the
# machine; said when it cannot be done), one epoch each, folder vs shards.
if [ -n "${COLD-}" ]; then
  for src in /tmp/synth '/tmp/shards/train-{000000..000024}.tar'; do
    for dev in cpu cuda; do
      if sync && echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then
        .device/ferry load "$src" --size 224 --device $dev --json --quiet |
          python3 -c "import json,sys; j=json.load(sys.stdin); print('cold', sys.argv[1], sys.argv[2], round(j['images_per_s']))" "$src" $dev
      else
        echo "cold reads: cannot drop the page cache here (not root?): not measured"
      fi
    done
  done
fi
