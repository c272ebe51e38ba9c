#!/usr/bin/env bash
# On the GPU machine (.device/ carried): the training step fed by ferry with
# and without the JPEG engine, against the same step on synthetic data (its
# ceiling), examples/train_imagenet.py, one script, one machine.
#   bash bench/train_step.sh [ARCH] [STEPS] [compare|probe|policy|dali]
# dali: also NVIDIA DALI's pipeline (examples/dali_pipes.py), from /tmp/site
# (bench/dali_install.sh) -- the JPEG engine at hw_decoder_load 0.65 and 0.9,
# and CPU decoding.
# Claims it proves (bench/CLAIMS.md): C20, C21, C22.
set -u
OUT=${OUT:-/tmp/out}
arch=${1:-resnet50} steps=${2:-100}
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$PWD/.device/py${DALI_SITE:+:$DALI_SITE} PYTHONUNBUFFERED=1
SET=/tmp/set10k
if [ ! -d "$SET" ]; then
  python3 .device/synth_imagenet.py .device/photos "$SET" 10000 --classes 100 >/dev/null
fi
run() { # NAME ENV... -- ARGS...
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  echo "== $name"
  env "${envs[@]}" python3 examples/train_imagenet.py "$SET" --arch "$arch" --steps "$steps" \
    --warmup 20 --epochs 10 --log-every 0 "$@" 2>&1 | grep -E '^\{|Error|error|debug: JPEG engine' |
    tee -a "$OUT/train_$arch.txt"
}
mode=${3:-compare}
[ -n "${NO_SYN:-}" ] || run synthetic X=1 -- --loader synthetic
run ferry-engine FERRY_DEBUG=1 -- --loader ferry --hw-decode
run ferry-cpu X=1 -- --loader ferry --no-hw-decode
if [ "$mode" = probe ]; then # where the engine's cost to the step comes from
  run ferry-engine-normal-priority FERRY_GPU_NO_PRIORITY=1 -- --loader ferry --hw-decode
  run ferry-engine-1-decoder FERRY_GPU_DECODERS=1 -- --loader ferry --hw-decode
  run ferry-engine-chunk16 FERRY_GPU_CHUNK=16 -- --loader ferry --hw-decode
  run ferry-engine-prefetch8 X=1 -- --loader ferry --hw-decode --prefetch 8
fi
if [ "$mode" = policy ]; then # the engine contexts' policies (device.c)
  for p in one always; do
    run ferry-engine-$p FERRY_GPU_ENGINE_POLICY=$p -- --loader ferry --hw-decode
  done
fi
if [ "$mode" = dali ]; then # the peer, same script, same machine
  run dali-engine-0.65 X=1 -- --loader dali --dali-hw-load 0.65
  run dali-engine-0.9 X=1 -- --loader dali --dali-hw-load 0.9
  run dali-cpu X=1 -- --loader dali --dali-decoder cpu
fi
