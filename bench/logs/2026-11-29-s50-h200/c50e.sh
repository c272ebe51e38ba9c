#!/usr/bin/env bash
# (After the run, its set-making lines and its one() became bench/jpeg_set.sh and
# bench/load_cores.sh, the same commands; its log is kept as c50e.log.gz.)
# Session 50, call 5 (one H200, 16 cores), bundle of ae325ed: the workers beside the engine on
# 12 and 16 cores (taskset), where the rule is unchanged (cores - 4), two rounds interleaved.
O=${OUT:-/tmp/out}
SET=/tmp/x2set
bash bench/jpeg_set.sh $SET || exit 1
echo "set: $(find $SET -name '*.jpg' | wc -l) JPEGs; bundle $(cat .device/COMMIT)"
one() { bash bench/load_cores.sh $SET "$O/c50c.log" "$@"; } # CPUS WORKERS(0: default) LABEL
for r in 1 2; do
  echo "round $r"
  one 0-11 4 "12c 4 workers"
  one 0-11 6 "12c 6 workers"
  one 0-11 0 "12c default"
  one 0-15 11 "16c 11 workers"
  one 0-15 0 "16c default"
done
gzip -f "$O/c50c.log"
