#!/usr/bin/env bash
# Session 50, call 4 (one H200, 16 cores), on the bundle of ae325ed (the new default workers
# beside the engine, engine_ctl.c): ferry's default against the old rule's count and neighbours
# on 4, 6, 8, 12 and 16 cores (taskset), warm windows, batch 256, 200 timed batches; then the
# GPU unit tests that run the loader (test_gpu, test_loader, test_epoch_ahead).
O=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=$PWD/.device/lib PYTHONPATH=$PWD/.device/py PYTHONUNBUFFERED=1
SET=/tmp/x2set
if [ ! -d $SET ]; then
  python3 .device/synth_imagenet.py .device/photos $SET.tmp 10000 --classes 100 >/dev/null
  for k in 2 3 4; do for d in $SET.tmp/class_???; do cp -al "$d" "${d}_r$k"; done; done
  mv $SET.tmp $SET
fi
cat > /tmp/line.py <<'PY'
import json, sys
d = json.loads(sys.stdin.read() or "{}")
r = (d.get("ranks") or [{}])[0]
c, s = r.get("gpu_chunks"), r.get("gpu_call_s")
ms = 1e3 * s / c if c and s is not None else 0
print(f"{sys.argv[1]:>16}: {d.get('images_per_s')} images/s, {r.get('workers')} workers, "
      f"engine {r.get('gpu_decoded')} images, {ms:.2f} ms a chunk, "
      f"cores busy {r.get('cores_busy')}, errors {d.get('errors')}")
PY
echo "set: $(find $SET -name '*.jpg' | wc -l) JPEGs; bundle $(cat .device/COMMIT)"
one() { # CPUS WORKERS(0: default) LABEL
  local wa=()
  [ "$2" != 0 ] && wa=(--workers "$2")
  taskset -c "$1" timeout -k 10 80 python3 -m torch.distributed.run --standalone --nproc-per-node 1 \
    bench/dist_load.py $SET --batch-size 256 --batches 200 --warmup 20 "${wa[@]}" --timeout 70 \
    --label "$3" > /tmp/run.txt 2>&1
  echo "exit $?" >> /tmp/run.txt
  cat /tmp/run.txt >> "$O/c50c.log"
  grep '^{' /tmp/run.txt | tail -1 | python3 /tmp/line.py "$3" || tail -3 /tmp/run.txt
}
echo "round 1"
one 0-7 0 "8c default"
one 0-7 7 "8c 7 (old)"
one 0-5 0 "6c default"
one 0-5 2 "6c 2 workers"
one 0-5 5 "6c 5 (old)"
one 0-3 0 "4c default"
one 0-3 3 "4c 3 (old)"
one 0-11 0 "12c default"
one 0-11 7 "12c 7 workers"
one 0-11 10 "12c 10 workers"
one 0-15 0 "16c default"
echo "round 2 (8 cores)"
one 0-7 0 "8c default"
one 0-7 7 "8c 7 (old)"
gzip -f "$O/c50c.log"
for t in test_gpu test_loader test_epoch_ahead; do
  timeout 300 .device/$t 2>&1 | grep -E "CHECK failed|passed" | tail -6 | sed "s/^/$t: /"
done
