#!/usr/bin/env bash
# Session 50, call 2 (one H200, 16 cores): how one rank's loading rate grows with its cores,
# warm windows, on the bundle of 36f3f71: ferry's default, the engine alone and the cores alone,
# on all 16 cores and pinned to 8 (taskset; the loader's defaults follow the affinity); ferry's
# default twice in each (the "1 rank" run and the variant 1x0). The parts of issue 21's bound (2 ranks / 1 rank <= (2E + C)/(E + C)).
O=${OUT:-/tmp/out}
OUT=$O/c16 PARTS=load BUDGET=265 LOAD_VARIANTS="1x0:engine 1x0:cpu 1x0" \
  bash bench/gpu_x2_checks.sh 1 2>&1 | grep -E "images/s|variant|FAILED|set:|cores busy" | cut -c1-220
OUT=$O/c8 FERRY_X2_PIN=0-7 PARTS=load BUDGET=245 LOAD_VARIANTS="1x0:engine 1x0:cpu 1x0" \
  bash bench/gpu_x2_checks.sh 1 2>&1 | grep -E "images/s|variant|FAILED|cores busy" | cut -c1-220
tar czf "$O/c50b-logs.tgz" -C "$O" c16 c8 2>/dev/null
rm -rf "$O"/c16 "$O"/c8
