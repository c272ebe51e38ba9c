#!/usr/bin/env bash
# (After the run, its set-making lines and its one() became bench/jpeg_set.sh and
# bench/load_cores.sh, the same commands; its log is kept as c50d.log.gz.)
# Session 50, call 4 (one H200, 16 cores), on the bundle of ae325ed (the new default workers
# beside the engine, engine_ctl.c): ferry's default against the old rule's count and neighbours
# on 4, 6, 8, 12 and 16 cores (taskset), warm windows, batch 256, 200 timed batches; then the
# GPU unit tests that run the loader (test_gpu, test_loader, test_epoch_ahead).
O=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=$PWD/.device/lib
SET=/tmp/x2set
bash bench/jpeg_set.sh $SET || exit 1
echo "set: $(find $SET -name '*.jpg' | wc -l) JPEGs; bundle $(cat .device/COMMIT)"
one() { bash bench/load_cores.sh $SET "$O/c50c.log" "$@"; } # CPUS WORKERS(0: default) LABEL
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
