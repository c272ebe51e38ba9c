#!/usr/bin/env bash
# Probe (device tool, .device/ carried): the first epoch on a GPU. `ferry load`
# over SET for EPOCHS epochs under each configuration, every epoch's line:
# images/s, seconds, the engine's share, ms a call in the engine, the
# consumer's wait. The eleventh session found epoch 0 at 12,798 images/s and
# 20 ms a call against 33,000 and 5 ms in the warm epochs (one H200): whether
# that is the start (a constant) or a rate (the whole epoch), and what in it.
#   bash bench/epoch0_probe.sh SET [CONFIG...]   CONFIG: label|ENV=V,...|ferry args
set -u
# shellcheck source=bench/probe_env.sh
. "$(dirname "$0")/probe_env.sh"
set_dir=$1
shift
for cfg in "$@"; do
  IFS='|' read -r label envs args <<<"$cfg"
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  (probe_exec "$envs" timeout 120 .device/ferry load "$set_dir" --device "${DEV:-cuda:0}" \
    --crop random --dtype f16 --flip --normalize --epochs "${EPOCHS:-3}" --json --quiet $args) \
    >"$OUT/e0-$label.json" 2>"$OUT/e0-$label.err"
  rc=$?
  python3 - "$OUT/e0-$label.json" "$label" "$rc" "$t0" <<'PY'
import json, sys, time
label, rc, wall = sys.argv[2], sys.argv[3], time.time() - float(sys.argv[4])
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"{label}: no result (exit {rc}: {e})"); sys.exit()
line = []
for e in d["epochs"]:
    c = max(e["gpu_chunks"], 1)
    line.append(f"{e['images'] / e['seconds']:6.0f}/s {e['seconds']:5.2f}s "
                f"eng {e['gpu_decoded'] / max(e['images'], 1):4.0%} "
                f"{1e3 * e.get('gpu_call_s', 0) / c:5.1f}ms "
                f"w{e['consumer_waited_s'] / e['seconds']:4.0%}")
print(f"{label:>10} ({wall:4.1f}s, {d['workers']}w): " + " | ".join(line))
PY
done
