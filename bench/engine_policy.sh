#!/usr/bin/env bash
# On the GPU machine (.device/ carried): the JPEG engine's contexts by
# policy (FERRY_GPU_ENGINE_POLICY; POLICIES="adapt one always" by default),
# decode-bound (ferry load, val and train pipelines) and under a stand-in
# consumer (--consume-ms), one script, one machine.
set -u
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
SET=${1:-/tmp/set10k}
[ -d "$SET" ] || python3 .device/synth_imagenet.py .device/photos "$SET" 10000 --classes 100 >/dev/null
extras=("--crop none" "--crop random --flip" "--crop none --consume-ms 20" "--crop none --consume-ms 40")
[ -n "${QUICK:-}" ] && extras=("--crop none" "--crop random --flip")
for extra in "${extras[@]}"; do
  for policy in ${POLICIES:-adapt one always}; do
    r=$(FERRY_DEBUG=1 FERRY_GPU_ENGINE_POLICY=$policy .device/ferry load "$SET" --device cuda:0 --size 224 --dtype f16 --normalize \
        --batch 256 --epochs 4 --quiet $extra 2>&1)
    best=$(echo "$r" | grep -oE '[0-9]+ images/s' | tail -3 | sort -n | tail -1)
    wait=$(echo "$r" | grep -oE 'waited on ferry [0-9.]+%' | tail -3 | tr '\n' ' ')
    eng=$(echo "$r" | grep -oE 'engine decoded [0-9]+ of [0-9]+' | tail -1)
    ctl=$(echo "$r" | grep -c 'debug: JPEG engine contexts')
    last=$(echo "$r" | grep -o 'debug: JPEG engine contexts.*' | tail -1)
    echo "$extra | $policy | best of epochs 2-4: $best | $wait | $eng | $ctl changes, last: $last"
  done
done
