#!/usr/bin/env bash
# One rank of bench/dist_load.py under torchrun on the GPU machine (the device bundle's library
# and Python package), pinned to CPUS with taskset (the loader's default workers follow the
# affinity): batch 256, 20 warm-up batches, 200 timed from the second epoch. Prints one line:
# images/s, workers, the JPEG engine's images and ms a chunk in its call, cores busy, errors.
#   bash bench/load_cores.sh SET LOG CPUS WORKERS LABEL   (WORKERS 0: ferry's default)
# SET: an ImageFolder (bench/jpeg_set.sh); dist_load's whole output is appended to LOG. Exit:
# the run's (a run over 80 s is killed).
set -u
set_dir=$1 log=$2 cpus=$3 workers=$4 label=$5
D=${FERRY_DEVICE_DIR:-.device}
export LD_LIBRARY_PATH=$PWD/$D/lib PYTHONPATH=$PWD/$D/py PYTHONUNBUFFERED=1
wa=()
[ "$workers" != 0 ] && wa=(--workers "$workers")
run=$(mktemp)
taskset -c "$cpus" timeout -k 10 80 python3 -m torch.distributed.run --standalone \
  --nproc-per-node 1 bench/dist_load.py "$set_dir" --batch-size 256 --batches 200 --warmup 20 \
  "${wa[@]}" --timeout 70 --label "$label" > "$run" 2>&1
rc=$?
echo "exit $rc" >> "$run"
cat "$run" >> "$log"
python3 - "$label" "$(grep '^{' "$run" | tail -1)" <<'PY' ||
import json, sys
if not sys.argv[2]:
    sys.exit(1)  # no JSON line: the end of the run's output instead
d = json.loads(sys.argv[2])
r = (d.get("ranks") or [{}])[0]
c, s = r.get("gpu_chunks"), r.get("gpu_call_s")
ms = 1e3 * s / c if c and s is not None else 0
print(f"{sys.argv[1]:>16}: {d.get('images_per_s')} images/s, {r.get('workers')} workers, "
      f"engine {r.get('gpu_decoded')} images, {ms:.2f} ms a chunk, "
      f"cores busy {r.get('cores_busy')}, errors {d.get('errors')}")
PY
  tail -3 "$run"
rm -f "$run"
exit "$rc"
