#!/usr/bin/env bash
# On the GPU machine (.device/ carried): decode-bound `ferry load` (val:
# resize 224; train: random crop + flip) over engine contexts
# (FERRY_GPU_DECODERS), chunk sizes (FERRY_GPU_CHUNK), CPU workers and prefetch, every
# context always on: where ferry alone leaves the JPEG engine and the cores
# idle (issue 15: ferry and DALI side by side together made ~35,000 img/s
# where ferry alone made ~27,000). One line per setting, best of epochs 2-4.
# FERRY_BENCH_ENGINE_ONLY=1: the CPU workers leave every sample to the engine
# threads (the engine's own rate; bench/RESULTS.md, session 7).
#   DECODERS="3 4 6 8" CHUNKS="32 64 128" WORKERS="0 14" PREFETCH="3 6" bash bench/engine_sweep.sh [SET]
set -u
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
SET=${1:-/tmp/set10k}
[ -d "$SET" ] || python3 .device/synth_imagenet.py .device/photos "$SET" 10000 --classes 100 >/dev/null
for pipe in "--crop none" "--crop random --flip"; do
  for dec in ${DECODERS:-3 4 6 8}; do
    for chunk in ${CHUNKS:-32 64 128}; do
      for workers in ${WORKERS:-0}; do
       for pf in ${PREFETCH:-3}; do
        wopt=(--prefetch "$pf") && [ "$workers" != 0 ] && wopt+=(--workers "$workers")
        r=$(FERRY_GPU_ENGINE_POLICY=always FERRY_GPU_DECODERS=$dec FERRY_GPU_CHUNK=$chunk \
            timeout 120 .device/ferry load "$SET" --device cuda:0 --size 224 --dtype f16 \
            --normalize --batch 256 --epochs 4 --quiet $pipe "${wopt[@]}" 2>&1)
        best=$(echo "$r" | grep -oE '[0-9]+ images/s' | tail -3 | sort -n | tail -1)
        eng=$(echo "$r" | grep -oE 'engine decoded [0-9]+ of [0-9]+' | tail -1)
        idle=$(echo "$r" | grep -oE 'workers idle [0-9.]+ s' | tail -1)
        echo "$pipe | decoders $dec | chunk $chunk | workers ${workers/#0/default} | prefetch $pf | $best | $eng | $idle"
       done
      done
    done
  done
done
