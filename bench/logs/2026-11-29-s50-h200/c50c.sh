#!/usr/bin/env bash
# (After the run, its set-making lines and its one() became bench/jpeg_set.sh and
# bench/load_cores.sh, the same commands; its log is kept as c50c.log.gz.)
# Session 50, call 3 (one H200, 16 cores): one rank's workers beside the JPEG engine on 8 cores
# (taskset 0-7) and on 16, warm windows (dist_load.py's default: timed from the second epoch),
# batch 256, 200 timed batches, two rounds interleaved. On 8 cores ferry's default (7 workers +
# 4 engine threads) loaded 24,262 / 24,721 images/s against 29,292 for the engine alone (call 2).
O=${OUT:-/tmp/out}
SET=/tmp/x2set
bash bench/jpeg_set.sh $SET || exit 1
echo "set: $(find $SET -name '*.jpg' | wc -l) JPEGs; bundle $(cat .device/COMMIT)"
one() { bash bench/load_cores.sh $SET "$O/c50c.log" "$@"; } # CPUS WORKERS(0: default) LABEL
for r in 1 2; do
  echo "round $r"
  one 0-7 0 "8c default"
  one 0-7 4 "8c 4 workers"
  one 0-7 3 "8c 3 workers"
  one 0-7 5 "8c 5 workers"
  one 0-15 0 "16c default"
  one 0-15 10 "16c 10 workers"
  one 0-15 8 "16c 8 workers"
done
gzip -f "$O/c50c.log"
