#!/usr/bin/env bash
# Probe (device tool, .device/ carried): why the JPEG engine decodes at about
# half its own rate beside the CPU workers (bench/RESULTS.md, issue 21). Two
# `ferry load` processes at once, one per GPU, each on its half of the set,
# under each configuration; per rank the warm epochs' images/s, the engine's
# share and the workers' idle time.
#   bash bench/mix_probe.sh SET [CONFIG...]   CONFIG: label|ENV=V,...|ferry args
# RANKS=2: processes at once; SHARE=1: each told it is one of RANKS on the host
# (LOCAL_WORLD_SIZE, LOCAL_RANK, as torchrun does: its share of the cores); default 0,
# every process sizing itself to every core (the tenth session's call 5)
set -u
# shellcheck source=bench/probe_env.sh
. "$(dirname "$0")/probe_env.sh"
set_dir=$1
shift
ranks=${RANKS:-2}
for cfg in "$@"; do
  IFS='|' read -r label envs args <<<"$cfg"
  pids=()
  for r in $(seq 0 $((ranks - 1))); do
    (if [ "${SHARE:-0}" = 1 ]; then export LOCAL_WORLD_SIZE=$ranks LOCAL_RANK=$r; fi
     # shellcheck disable=SC2086
     probe_exec "$envs" timeout 120 .device/ferry load "$set_dir" --device cuda:$r --rank $r \
       --world-size 2 --crop random --dtype f16 --epochs 3 --json --quiet $args) \
      >"$OUT/mix-$label-$r.json" 2>"$OUT/mix-$label-$r.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  for r in $(seq 0 $((ranks - 1))); do
    python3 - "$OUT/mix-$label-$r.json" "$label" "$r" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"{sys.argv[2]} rank {sys.argv[3]}: no result ({e})"); sys.exit()
ep = d["epochs"][1:]
img = sum(e["images"] for e in ep); s = sum(e["seconds"] for e in ep)
g = sum(e["gpu_decoded"] for e in ep); c = sum(e["gpu_chunks"] for e in ep)
call = sum(e.get("gpu_call_s", 0) for e in ep)
idle = sum(e["workers_idle_s"] for e in ep); wait = sum(e["consumer_waited_s"] for e in ep)
print(f"{sys.argv[2]:>14} rank {sys.argv[3]}: {img / s:8.0f} images/s, {d['workers']} workers, "
      f"engine {g / img:5.1%} of images ({g / s:6.0f}/s, {g / max(c, 1):4.1f} a chunk, "
      f"{1e3 * call / max(c, 1):5.2f} ms a call), "
      f"workers idle {idle / s / max(d['workers'], 1):5.1%}, consumer waited {wait / s:5.1%}")
PY
  done
done
