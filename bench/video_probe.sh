#!/usr/bin/env bash
# Where ferry's NVDEC run stands against the engines: each configuration
# of `ferry video` (every frame → 960×960 f16 normalised batches) over
# COPIES copies of FILE, with `nvidia-smi dmon -s u` (decoder busy %, one
# sample a second) beside it. One call on the GPU machine with .devv/:
#   bash bench/video_probe.sh FILE COPIES "CONFIG" ["CONFIG" ...]
# e.g. CONFIG "--jobs 8" or "--jobs 8 --cpu-jobs 1 --threads 8".
set -u
f=$1 copies=$2
shift 2
export FERRY_VIDEO_STAGES=1 LD_LIBRARY_PATH=$PWD/.devv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
files=()
for _ in $(seq "$copies"); do files+=("$f"); done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for cfg in "$@"; do
  nvidia-smi dmon -s u -d 1 > /tmp/dmon.txt 2>&1 &
  dm=$!
  sleep 1
  # shellcheck disable=SC2086
  line=$(timeout 300 .devv/ferry video --device cuda:0 --size 960 --dtype f16 --normalize \
    --batch 16 --quiet $cfg "${files[@]}" 2>&1 | grep -E "frames/s|stages|failed" | tr '\n' ' ')
  kill $dm 2>/dev/null
  wait $dm 2>/dev/null
  dec=$(awk '$1 ~ /^[0-9]+$/ {print $5}' /tmp/dmon.txt | tr '\n' ' ')
  echo "[$cfg] $line"
  echo "    decoder busy % per second: $dec"
done
