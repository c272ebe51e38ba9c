#!/usr/bin/env bash
# On the GPU machine (.device/ carried): the training step fed by ferry with
# and without the JPEG engine, against the same step on synthetic data (its
# ceiling), examples/train_imagenet.py, one script, one machine.
#   bash bench/train_step.sh [ARCH] [STEPS] [compare|probe|dali]
# The engine run prints the engine controller's decisions (the library's
# debug lines: ferry.set_log_level("debug") before the script runs).
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
# examples/train_imagenet.py run as `python3 SCRIPT` would, the library's debug lines on
DEBUG_PY='import os, runpy, sys, ferry
ferry.set_log_level("debug")
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
runpy.run_path(sys.argv[0], run_name="__main__")'
run() { # NAME [debug] -- ARGS...
  local name=$1; shift
  local py=(python3)
  if [ "$1" = debug ]; then py=(python3 -c "$DEBUG_PY"); shift; fi
  shift # --
  echo "== $name"
  "${py[@]}" examples/train_imagenet.py "$SET" --arch "$arch" --steps "$steps" \
    --warmup 20 --epochs 10 --log-every 0 "$@" 2>&1 | grep -E '^\{|Error|error|debug: JPEG engine' |
    tee -a "$OUT/train_$arch.txt"
}
mode=${3:-compare}
[ -n "${NO_SYN:-}" ] || run synthetic -- --loader synthetic
run ferry-engine debug -- --loader ferry --hw-decode
run ferry-cpu -- --loader ferry --no-hw-decode
if [ "$mode" = probe ]; then # where the engine's cost to the step comes from
  run ferry-engine-prefetch8 -- --loader ferry --hw-decode --prefetch 8
fi
if [ "$mode" = dali ]; then # the peer, same script, same machine
  run dali-engine-0.65 -- --loader dali --dali-hw-load 0.65
  run dali-engine-0.9 -- --loader dali --dali-hw-load 0.9
  run dali-cpu -- --loader dali --dali-decoder cpu
fi
