#!/usr/bin/env bash
# Issue 21's acceptance figures ("Past one GPU") in one device call on a machine of several GPUs
# (nvidia-h200-x2), from the device bundle (bench/device_bundle.sh makes .device/, named in the
# call's carry; FERRY_DEVICE_DIR names another). Builds nothing:
#   bash bench/gpu_x2_checks.sh [NGPU]
# NGPU: the GPUs used (default: every GPU nvidia-smi lists). A JPEG set is made first
# (bench/jpeg_set.sh), then three parts:
#   load    bench/dist_load.py under torchrun, 1 rank then NGPU ranks, each on its own GPU with
#           its share of the cores (LOCAL_WORLD_SIZE) and its GPU's JPEG engine: images/s, and
#           NGPU ranks / 1 rank (acceptance on 2 GPUs: >= 1.8)
#   train   examples/train_imagenet.py, ResNet-50: --loader ferry on 1 GPU and on NGPU under
#           torchrun (DDP), TRAIN_PAIRS=3 pairs of them interleaved, --loader torch (the
#           DataLoader) on NGPU: images/s, ferry NGPU / ferry 1 as the median of the pairs'
#           ratios (>= 1.9; each pair's printed) and ferry NGPU (the median of its runs) / torch
#           NGPU (>= 2.5); --loader synthetic on NGPU
#           (the step's ceiling: ceiling / torch NGPU is the most any loader's ratio can be);
#           --loader dali on NGPU beside them where nvidia.dali imports (carried:
#           bench/dali_wheels.sh), no threshold
#   search  bench/gpu_multi_checks.sh: SEARCH_N random 64-bit codes, all pairs within 8 bits,
#           NGPU GPUs against one (>= 1.8), identical pairs; its tests and CLI check
# On a machine of one GPU (or NGPU=1) it says so and runs the mechanics only, NOT the
# acceptance figures: the loader with 1 rank and with 2 ranks both on cuda:0, training with one
# process (ferry and the DataLoader), the search on cuda:0,0.
# Every run has a timeout (the whole script: BUDGET seconds), every failure is reported; nothing
# it started is left running. Knobs (environment; the defaults: one call for PARTS="load train",
# one for PARTS=search, each within a 10-minute call):
#   SET_IMAGES=10000 distinct JPEGs, SET_REPEAT=4 names for each (hard links: a larger epoch,
#   the same files), SET_DIR=/tmp/x2set; BATCH=256 per GPU; LOAD_BATCHES=200 LOAD_WARMUP=20 (per
#   rank; the timing starts after the first epoch, which runs slower on a GPU while the JPEG
#   engine's states are set up), LOAD_ARGS (more dist_load.py options: --no-hw-decode;
#   "--warm-epochs 0" times from the warm-up on), LOAD_SHARE=1 (also one rank with 1/NGPU of
#   the cores, an informative second baseline), LOAD_VARIANTS (more informative runs:
#   "1x16 2x12 1x0:engine 2x0:cpu 2x0:always 2x0:pad16", part_load says how);
#   TRAIN_STEPS=220
#   TRAIN_WARMUP=60 (fewer: ferry's JPEG engine has not settled, 85 % of the ceiling at 45 timed
#   steps on an H200 against 99.4 % at 160); SEARCH_N=20000000 (0: the search's tests only);
#   PARTS="load train search"; BUDGET=570; TRAIN_LOADERS="ferry torch synthetic dali" (the
#   training runs beside ferry's, which always run: "ferry" alone repeats ferry 1 GPU / ferry n
#   GPUs, for the spread of that ratio);
#   PARTS=ab: training runs TRAIN_AB="1x0 2x0 2x6" interleaved, TRAIN_AB_ROUNDS=3 rounds, summed
#   up as ratios to 1x0 and as runs of the slow kind per variant (a rank's forward SLOW_FWD=1.5
#   % over the call's median; slow_summary, with :stages runs' gpu_caught_up for the slow ranks
#   beside the others). Each
#   is BASE[:FLAG]...; BASE: NPxW (ferry on NP GPUs, W workers per rank, 0: ferry's default),
#   "synthetic" (the step's ceiling on n GPUs), "synthetic1" (on 1 GPU). FLAGs: ferry's knobs
#   :park FERRY_WORKER_PARK=1, :nice FERRY_WORKER_NICE=10, :idle FERRY_WORKER_NICE=idle
#   (SCHED_IDLE workers), :next FERRY_GPU_LAUNCH=next (a batch's GPU work launched when the
#   consumer takes a batch), :lowprio FERRY_GPU_NO_PRIORITY=1 (the loader's stream at the
#   lowest priority instead of the highest), :pinlab FERRY_LABEL_COPY=pinned (labels to the GPU
#   through pinned memory, bench/label_copy.py), :expseg PyTorch's allocator on expandable
#   segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), :cpu no JPEG engine
#   (--no-hw-decode), :noahead no epoch made ahead (--no-epoch-ahead); the step's :ncclhp NCCL
#   on high-priority streams (--nccl-high-priority), DDP's BatchNorm statistics :nobb each
#   rank's own, never averaged (--ddp-bn local), :bcast rank 0's broadcast before every forward
#   (--ddp-bn broadcast, PyTorch's default; the example's own, with neither flag, averages them
#   at each epoch's end and had PyTorch's in the runs recorded up to 2026-11-28 12:37 UTC),
#   :bview gradients as views of DDP's buckets (--ddp-bucket-view), :cbquiet cuDNN's kernels timed
#   before the loader starts (--cudnn-benchmark quiet), :cboff cuDNN's heuristics
#   (--cudnn-benchmark off), :census each rank's step kernels listed (--kernel-census; summed
#   up after the ratios: the runs whose ranks used the same kernels), :stages the forward's
#   time per stage on each rank's GPU and where the GPU caught up with the host
#   (--forward-stages: forward_stages_ms, gpu_caught_up); the machine's :pin each
#   rank on its slice of the CPUs (bench/rank_pin.sh), :burn n CPU-only `ferry load` processes
#   beside the run, BURN_WORKERS=7 decode threads each (ferry's CPU load per rank in 2x0
#   without its GPU work); :prof a GPU trace of the last PROF_STEPS=8 steps per rank too (the
#   example's --profile, in $OUT/prof/, summed up by bench/trace_gaps.py: where the step's
#   stream waited). E.g. "2x0:lowprio:prof synthetic:nobb". Each run also lists the GPUs every process
#   holds a context on, sampled APPS_AT=20 s in (nvidia-smi). LOAD_VARIANTS take :park too.
#   CLOCKS=1: every GPU's SM clock, power, temperature and clock-event reasons sampled every
#   0.5 s over all parts (bench/gpu_clock_sampler.sh, $OUT/clocks.csv), summed up per training
#   run at the end (bench/clock_by_run.py): a slow run on a lower clock shows there.
# Out: $OUT/summary.txt (also printed last), load.log, train.log, search.log. Exit 0: every run
# ran (and, on several GPUs, every figure met its threshold); 1: a run failed or was not run;
# 3: all ran, a figure below its threshold.
set -u
D=${FERRY_DEVICE_DIR:-.device}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
SUM=$OUT/summary.txt
: > "$SUM"
BUDGET=${BUDGET:-570} SET_IMAGES=${SET_IMAGES:-10000} SET_REPEAT=${SET_REPEAT:-4}
SET=${SET_DIR:-/tmp/x2set} BATCH=${BATCH:-256}
LOAD_BATCHES=${LOAD_BATCHES:-200} LOAD_WARMUP=${LOAD_WARMUP:-20} LOAD_ARGS=${LOAD_ARGS:-}
LOAD_VARIANTS=${LOAD_VARIANTS:-}
TRAIN_STEPS=${TRAIN_STEPS:-220} TRAIN_WARMUP=${TRAIN_WARMUP:-60} TRAIN_PAIRS=${TRAIN_PAIRS:-3}
TRAIN_LOADERS=${TRAIN_LOADERS:-ferry torch synthetic dali}
TRAIN_AB=${TRAIN_AB:-1x0 2x0 2x6} TRAIN_AB_ROUNDS=${TRAIN_AB_ROUNDS:-3}
SEARCH_N=${SEARCH_N:-20000000} PARTS=${PARTS:-load train search}
export LD_LIBRARY_PATH=$PWD/$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# the caller's PYTHONPATH after the bundle's: DALI's /tmp/site (bench/dali_install.sh) stays
export PYTHONPATH=$PWD/$D/py${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
# NVLink multicast stays off on the shared hosts (the device tool's KINDS.md)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
t_start=$(date +%s)
tmp=$(mktemp -d)
token=x2-$$-$t_start # in the environment of every run, to find what a run left behind
bad=0 below=0

say() { echo "$*" | tee -a "$SUM"; }
# limit CAP: seconds for the next run: CAP, or what the budget has left less 15
limit() {
  local l=$((BUDGET - ($(date +%s) - t_start) - 15))
  if [ "$l" -lt "$1" ]; then echo "$l"; else echo "$1"; fi
}
# leftovers LOG: processes of the last run still alive (their environment holds the token):
# named in LOG, killed by their ids
leftovers() {
  local f p pids=""
  for f in /proc/[0-9]*/environ; do
    p=${f#/proc/}
    p=${p%/environ}
    if grep -qxzF "FERRY_X2_TOKEN=$token" "$f" 2>/dev/null; then
      pids="$pids $p"
    fi
  done
  if [ -n "$pids" ]; then
    echo "left running after the run:$pids: killed" | tee -a "$1"
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    sleep 2
  fi
}
# trun LOG SECONDS NPROC SCRIPT ARGS...: SCRIPT under torchrun with NPROC processes, killed after
# SECONDS; its output appended to LOG; the last JSON line it printed (rank 0's) in $last
trun() {
  local log=$1 t=$2 np=$3 rc
  shift 3
  last=""
  echo "\$ torchrun --standalone --nproc-per-node $np $* (timeout ${t} s)" >> "$log"
  if [ "$t" -lt 20 ]; then
    echo "not run: the budget is spent" | tee -a "$log"
    return 124
  fi
  # FERRY_X2_ENV: one more VAR=value for the run; FERRY_X2_PIN: the CPUs it may use (taskset);
  # FERRY_X2_RANKPIN=1: each rank on its own slice of them (bench/rank_pin.sh)
  local wrap=() t_run
  t_run=$(date +%s)
  [ "${FERRY_X2_RANKPIN:-0}" = 1 ] && wrap=(--no-python "$PWD/bench/rank_pin.sh" python3)
  env FERRY_X2_TOKEN="$token" ${FERRY_X2_ENV:-FERRY_X2_VARIANT=0} \
    ${FERRY_X2_PIN:+taskset -c "$FERRY_X2_PIN"} timeout -k 20 "$t" \
    python3 -m torch.distributed.run --standalone \
    --nproc-per-node "$np" "${wrap[@]}" "$@" > "$tmp/run.txt" 2>&1
  rc=$?
  cat "$tmp/run.txt" >> "$log"
  last=$(grep '^{' "$tmp/run.txt" | tail -1)
  [ "$rc" = 124 ] || [ "$rc" = 137 ] && echo "timed out after $t s" | tee -a "$log"
  echo "exit $rc after $(($(date +%s) - t_run)) s" >> "$log"
  leftovers "$log"
  return "$rc"
}
# jget JSON KEY: a field of a JSON line ('' when absent or null); KEY may be a dotted path into
# nested objects (ddp.bn_stats)
jget() {
  python3 -c 'import json, sys
try:
    v = json.loads(sys.argv[1])
    for k in sys.argv[2].split("."):  # a dotted path reads into nested objects: ddp.bn_stats
        v = v.get(k)
except Exception:
    v = None
print("" if v is None else v)' "$1" "$2"
}
# ratio A B [DIGITS]: A / B to DIGITS decimals, 2 by default ('' when either is missing)
ratio() {
  python3 -c 'import sys
a, b, n = sys.argv[1:4]
print(f"{float(a) / float(b):.{int(n)}f}" if a and b and float(b) > 0 else "")' "$1" "$2" "${3:-2}"
}
# verdict RATIO THRESHOLD: $vtext, PASS or BELOW (counted in $below)
verdict() {
  if [ -z "$1" ]; then
    vtext="not measured"
  elif python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)' \
    "$1" "$2"; then
    vtext="PASS (>= $2)"
  else
    below=1
    vtext="BELOW ($2 asked)"
  fi
}
# rate NAME JSON RC: $val, NAME's images/s; '' with a failure said and counted in $bad
rate() {
  val=$(jget "$2" images_per_s)
  if [ "$3" != 0 ] || [ -z "$val" ]; then
    bad=1
    val=""
    say "  $1: FAILED (exit $3)$([ -n "$2" ] && echo ": $(jget "$2" errors)")"
  fi
}
# ranks JSON: dist_load.py's line, rank by rank
ranks() {
  python3 - "$1" <<'EOF'
import json, sys
d = json.loads(sys.argv[1])
print(f"{d['world_size']} rank(s): {d['images_per_s']} images/s in all")
def per_chunk(r):  # the engine's images per chunk, and a chunk's ms in the engine's call
    c, s = r.get("gpu_chunks"), r.get("gpu_call_s")
    ms = f", {1e3 * s / c:.2f} ms in the engine" if c and s is not None else ""
    return f" ({r['gpu_decoded'] / c:.1f} a chunk{ms})" if c else ""
for r in d["ranks"]:
    print(f"    rank {r['rank']} on {r['device']}: {r.get('images_per_s')} images/s, "
          f"{r.get('workers')} workers, {r.get('gpu_decoded')} images on the engine"
          f"{per_chunk(r)}, "
          f"decode {r.get('decode_s')} s, idle {r.get('idle_s')} s, numa {r.get('numa')}")
    print(f"      cores busy {r.get('cores_busy')} (CPU s by thread: {r.get('cpu_s')})")
EOF
}
# controller_changes FILE: a FERRY_DEBUG run's changes of the engine controller (engine_ctl.h),
# every rank's together: how many, to how many contexts, and the last few
controller_changes() {
  local c
  c=$(grep -cE 'JPEG engine contexts [0-9]+ -> [0-9]+|CPU workers active' "$1")
  say "    the engine controller changed $c time(s); contexts reached: $(grep -oE \
    'JPEG engine contexts [0-9]+ -> [0-9]+' "$1" | awk '{print $NF}' | sort -n | uniq -c |
    awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')"
  grep -E 'JPEG engine contexts|CPU workers active' "$1" | tail -3 | cut -c1-160 | sed 's/^/      /' |
    tee -a "$SUM"
}

ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
n=${1:-$ngpu}
if ! [ "$n" -ge 1 ] 2>/dev/null || [ "$n" -gt "$ngpu" ]; then
  say "gpu_x2_checks: NGPU '$n' asked for, $ngpu GPU(s) here: FAILED"
  exit 1
fi
multi=1
[ "$n" -ge 2 ] || multi=0
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
say "== gpu_x2_checks: $n of $ngpu GPU(s) ($gpu_name), $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
say "   CPUs: $(lscpu | sed -n 's/^\(Thread(s) per core\|Core(s) per socket\|Socket(s)\|NUMA node(s)\|Model name\): *\(.*\)/\1 \2/p' | paste -sd ';')"
say "   bundle of commit $(cat "$D/COMMIT" 2>/dev/null || echo '? (no COMMIT in the bundle)'), torch $(python3 -c \
  'import torch; print(torch.__version__)' 2>&1 | tail -1), budget $BUDGET s"
if [ "$multi" = 0 ]; then
  say "   ONE GPU: mechanics only (2 ranks on cuda:0, one training process, search on cuda:0,0);"
  say "   NOT issue 21's acceptance figures, which need a machine of 2 GPUs (nvidia-h200-x2)"
fi

# the JPEG set: SET_IMAGES distinct files, each under SET_REPEAT names
if ! FERRY_DEVICE_DIR=$D bash "$(dirname "$0")/jpeg_set.sh" "$SET" "$SET_IMAGES" "$SET_REPEAT" \
  "$(limit 120)" 2> "$tmp/synth.txt"; then
  say "set: synth_imagenet.py failed or timed out: FAILED"
  tail -5 "$tmp/synth.txt" | tee -a "$SUM"
  exit 1
fi
files=$(find "$SET" -name '*.jpg' | wc -l)
say "set: $SET, $files JPEGs ($SET_IMAGES distinct x $SET_REPEAT names), $(du -sh "$SET" |
  cut -f1); made in $(($(date +%s) - t_start)) s"

part_load() {
  local log=$OUT/load.log rc j1 jn r1 rn q t a=()
  read -ra a <<< "$LOAD_ARGS"
  a=(bench/dist_load.py "$SET" --batch-size "$BATCH" --batches "$LOAD_BATCHES"
    --warmup "$LOAD_WARMUP" "${a[@]}")
  say "load: dist_load.py, batch $BATCH, $LOAD_WARMUP batches and the rest of the first epoch, then $LOAD_BATCHES timed, per rank, the JPEG engine on"
  t=$(limit 150)
  trun "$log" "$t" 1 "${a[@]}" --timeout $((t - 10)) --label "1 rank"
  rc=$?
  j1=$last
  rate "1 rank" "$j1" "$rc"
  r1=$val
  [ -n "$r1" ] && ranks "$j1" | sed 's/^/  /' | tee -a "$SUM"
  t=$(limit 150)
  if [ "$multi" = 1 ]; then
    trun "$log" "$t" "$n" "${a[@]}" --timeout $((t - 10)) --label "$n ranks"
    rc=$?
    rate "$n ranks" "$last" "$rc"
  else
    trun "$log" "$t" 2 "${a[@]}" --one-gpu --timeout $((t - 10)) --label "2 ranks on cuda:0"
    rc=$?
    rate "2 ranks on cuda:0" "$last" "$rc"
  fi
  jn=$last
  rn=$val
  [ -n "$rn" ] && ranks "$jn" | sed 's/^/  /' | tee -a "$SUM"
  q=$(ratio "$rn" "$r1")
  if [ "$multi" = 1 ]; then
    verdict "$q" 1.8
    say "  LOAD $n ranks / 1 rank: ${q:-?}x: $vtext"
    if [ "${LOAD_SHARE:-0}" = 1 ]; then
      # the other reading of "one rank": one rank on the share of the cores it has among n
      # (taskset: its default workers and engine threads are then those of a rank of n), the
      # scaling of one rank's own resources, beside the one rank with every core above
      local w=$(($(nproc) / n))
      t=$(limit 150)
      FERRY_X2_PIN=0-$((w - 1)) trun "$log" "$t" 1 "${a[@]}" --timeout $((t - 10)) \
        --label "1 rank on cores 0-$((w - 1))"
      rc=$?
      rate "1 rank on $w cores (1/$n of them)" "$last" "$rc"
      [ -n "$val" ] && ranks "$last" | sed 's/^/  /' | tee -a "$SUM"
      say "  load $n ranks / 1 rank with 1/$n of the cores: $(ratio "$rn" "$val")x (informative)"
    fi
  else
    say "  load 2 ranks on ONE GPU / 1 rank: ${q:-?}x (mechanics check, not the acceptance)"
  fi
  # LOAD_VARIANTS: more runs beside those, informative: NPxW[:engine|:cpu|:nice|:always|:padN|:shed|:debug]... is NP
  # ranks of W workers each (0: ferry's default); engine: the JPEG engine alone
  # (FERRY_BENCH_ENGINE_ONLY, the CPU workers leave every sample to it); cpu: the cores alone
  # (--no-hw-decode); nice: the workers at nice 10 (FERRY_WORKER_NICE), the engine's feeding
  # threads first; always: every engine context decoding whatever the controller measures
  # (FERRY_GPU_ENGINE_POLICY=always): whether it holds the engine back beside the workers;
  # padN: the engine's call size chosen per call from the start (FERRY_GPU_PAD=N, 0-63: a
  # chunk of at least 64 - N images as one padded call of 64, a smaller one as calls of 16 and
  # 4), not one size a context by the batch (the default, gpu.cu);
  # debug: FERRY_DEBUG=1, the engine controller's changes counted and the last few shown; shed: the
  # workers parked on trial while every context is on and the loader the limit
  # (FERRY_WORKER_SHED=1). Flags combine (2x0:always:nice, 2x0:shed:debug)
  local v vn vw vm va ve f
  for v in $LOAD_VARIANTS; do
    vn=${v%%x*} vw=${v#*x} vm="" va=() ve=FERRY_X2_VARIANT=1
    [ "$vw" != "${vw%%:*}" ] && vm=${vw#*:} vw=${vw%%:*}
    [ "$vw" != 0 ] && va+=(--workers "$vw")
    [ "$multi" = 0 ] && va+=(--one-gpu)
    for f in ${vm//:/ }; do # the flags combine: 2x0:always:nice
      case $f in
        engine) ve+=" FERRY_BENCH_ENGINE_ONLY=1" ;;
        nice) ve+=" FERRY_WORKER_NICE=10" ;;
        park) ve+=" FERRY_WORKER_PARK=1" ;;
        shed) ve+=" FERRY_WORKER_SHED=1" ;;
        always) ve+=" FERRY_GPU_ENGINE_POLICY=always" ;;
        pad[0-9]*) ve+=" FERRY_GPU_PAD=${f#pad}" ;;
        debug) ve+=" FERRY_DEBUG=1" ;;
        cpu) va+=(--no-hw-decode) ;;
        *) say "  variant $v: flag $f unknown: run without it" ;;
      esac
    done
    t=$(limit 120)
    FERRY_X2_ENV=$ve trun "$log" "$t" "$vn" "${a[@]}" "${va[@]}" --timeout $((t - 10)) \
      --label "variant $v"
    rc=$?
    rate "variant $v" "$last" "$rc"
    [ -n "$val" ] && say "  variant $v: $(ranks "$last" | head -1)" &&
      ranks "$last" | tail -n +2 | sed 's/^/  /' | tee -a "$SUM"
    [[ ":$vm:" == *:debug:* ]] && controller_changes "$tmp/run.txt"
  done
}

# The training script as every training run calls it (its --loader and the rest added)
train_cmd=(examples/train_imagenet.py "$SET" --arch resnet50 --batch-size "$BATCH" --steps
  "$TRAIN_STEPS" --warmup "$TRAIN_WARMUP" --epochs 1000 --log-every 0)
# train_one LOG CAP NP LABEL ARGS...: the training script under torchrun on NP GPUs, at most CAP
# seconds, with ARGS; $val its images/s ('' when it failed: said and counted), $last its line
train_one() {
  local log=$1 cap=$2 np=$3 label=$4 rc
  shift 4
  trun "$log" "$(limit "$cap")" "$np" "${train_cmd[@]}" "$@"
  rc=$?
  rate "$label" "$last" "$rc"
}
# train_wants NAME: NAME is among TRAIN_LOADERS
train_wants() { case " $TRAIN_LOADERS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# median DIGITS X...: the median of the non-empty Xs to DIGITS decimals ('' when there are none)
median() {
  python3 -c 'import statistics, sys
xs = [float(a) for a in sys.argv[2:] if a]
print(f"{statistics.median(xs):.{int(sys.argv[1])}f}" if xs else "")' "$@"
}

part_train() {
  local log=$OUT/train.log f1 fn tn sn qs="" qt bn="" np=$n k a b q a1=""
  local ones=() ns=() qs_all=() qtext=""
  say "train: ResNet-50, AMP fp16, batch $BATCH per GPU, $TRAIN_STEPS steps ($TRAIN_WARMUP untimed)"
  if [ "$multi" = 1 ]; then
    # ferry on 1 GPU and on n GPUs, TRAIN_PAIRS times interleaved: a single run can sit either
    # side of a threshold by the spread between runs (bench/RESULTS.md, 2026-11-28), so the
    # acceptance is the median of the pairs' ratios, and ferry's n-GPU rate below the median
    # of its runs
    say "  ferry on 1 GPU and on $n GPUs, $TRAIN_PAIRS pair(s) interleaved:"
    for k in $(seq 1 "$TRAIN_PAIRS"); do
      train_one "$log" 150 1 "ferry, 1 GPU (pair $k)" --loader ferry
      a=$val
      [ -n "$a" ] && ones+=("$a") && a1=$(jget "$last" gpu_util_mean)
      train_one "$log" 150 "$n" "ferry, $n GPUs (pair $k)" --loader ferry
      b=$val
      [ -n "$b" ] && ns+=("$b") && bn=$(jget "$last" ddp.bn_stats)
      q=$(ratio "$b" "$a" 3)
      [ -n "$q" ] && qs_all+=("$q")
      [ -n "$a" ] && [ -n "$b" ] && say "    pair $k: 1 GPU $a images/s (GPU busy $a1 %)," \
        "$n GPUs $b (rank 0's GPU busy $(jget "$last" gpu_util_mean) %): ${q}x"
    done
    f1=$(median 1 "${ones[@]}")
    fn=$(median 1 "${ns[@]}")
    [ -n "$fn" ] && say "  ferry, 1 GPU: median $f1 images/s; $n GPUs (DDP, BatchNorm" \
      "statistics ${bn:-not said}): median $fn images/s"
    if [ "${#qs_all[@]}" -gt 0 ]; then
      qs=$(median 3 "${qs_all[@]}")
      qtext=" (median of ${#qs_all[@]} pair(s): ${qs_all[*]}; $(python3 -c 'import sys
print(sum(float(a) >= 1.9 for a in sys.argv[1:]))' "${qs_all[@]}") of ${#qs_all[@]} >= 1.9)"
    fi
  else
    train_one "$log" 150 1 "ferry, 1 GPU" --loader ferry
    f1=$val
    [ -n "$f1" ] && say "  ferry, 1 GPU: $f1 images/s (GPU busy $(jget "$last" gpu_util_mean) %)"
    np=1
    fn=$f1
  fi
  tn=""
  if train_wants torch; then
    train_one "$log" 180 "$np" "DataLoader, $np GPU(s)" --loader torch
    tn=$val
  else
    say "  DataLoader: not run (TRAIN_LOADERS=$TRAIN_LOADERS)"
  fi
  [ -n "$tn" ] && say "  DataLoader, $np GPU(s): $tn images/s (rank 0's GPU busy $(jget "$last" gpu_util_mean) %)"
  qt=$(ratio "$fn" "$tn")
  # The step's own ceiling: one random batch on each GPU, reused (no loading at all). No loader
  # passes it, so ceiling / DataLoader is the most any loader's ratio to the DataLoader can be
  sn=""
  if train_wants synthetic; then
    train_one "$log" 150 "$np" "synthetic, $np GPU(s)" --loader synthetic
    sn=$val
  fi
  [ -n "$sn" ] && say "  synthetic data (the step's ceiling), $np GPU(s): $sn images/s; ferry at $(ratio "$fn" "$sn")x of it; ceiling / DataLoader: $(ratio "$sn" "$tn")x (the most any loader can reach)"
  # DALI beside them where it is carried (bench/dali_wheels.sh, bench/dali_install.sh: PYTHONPATH
  # /tmp/site); a peer for comparison, no threshold
  if ! train_wants dali; then
    :
  elif python3 -c "import nvidia.dali" > /dev/null 2>&1; then
    train_one "$log" 180 "$np" "DALI, $np GPU(s)" --loader dali
    [ -n "$val" ] && say "  DALI, $np GPU(s): $val images/s (rank 0's GPU busy $(jget "$last" gpu_util_mean) %); ferry / DALI: $(ratio "$fn" "$val")x"
  else
    say "  DALI: not run (nvidia.dali does not import here: carry it with bench/dali_wheels.sh)"
  fi
  if [ "$multi" = 1 ]; then
    verdict "$qs" 1.9
    say "  TRAIN ferry $n GPUs / ferry 1 GPU: ${qs:-?}x$qtext: $vtext"
    verdict "$qt" 2.5
    say "  TRAIN ferry $n GPUs / DataLoader $n GPUs: ${qt:-?}x: $vtext"
  else
    say "  train ferry / DataLoader on ONE GPU: ${qt:-?}x (mechanics check, not the acceptance)"
  fi
}

# part_ab: ferry's training with several worker counts, interleaved round by round so that the
# machine's drift falls on each alike; each line: images/s, data wait, workers, the engine's
# share of the images, rank 0's cores busy
part_ab() {
  local log=$OUT/ab.log r v vn vw va ve vp w e c d k burn vt vf vprof vbad sampler t_ab
  say "ab: ResNet-50 as in train, $TRAIN_AB_ROUNDS rounds of: $TRAIN_AB"
  for r in $(seq 1 "$TRAIN_AB_ROUNDS"); do
    for v in $TRAIN_AB; do
      # a variant: BASE[:FLAG]...; BASE NPxW (ferry) or synthetic (n GPUs) or synthetic1
      va=(--loader ferry) ve=FERRY_X2_VARIANT=1 vp=0 burn=() vprof="" vbad=""
      vt=${v%%:*} vf=${v#"$vt"}
      case $vt in
        synthetic) vn=$n va=(--loader synthetic) ;;
        synthetic1) vn=1 va=(--loader synthetic) ;;
        *x*) vn=${vt%%x*} vw=${vt#*x}
          [[ "$vn" =~ ^[0-9]+$ && "$vw" =~ ^[0-9]+$ ]] || vbad=1
          [ "$vw" != 0 ] && va+=(--workers "$vw") ;;
        *) vbad=1 ;;
      esac
      for k in ${vf//:/ }; do
        case $k in # ferry's knobs (environment), the example's options, the machine's setup
          park) ve="$ve FERRY_WORKER_PARK=1" ;;
          nice) ve="$ve FERRY_WORKER_NICE=10" ;;
          idle) ve="$ve FERRY_WORKER_NICE=idle" ;;
          next) ve="$ve FERRY_GPU_LAUNCH=next" ;;
          lowprio) ve="$ve FERRY_GPU_NO_PRIORITY=1" ;;
          pinlab) ve="$ve FERRY_LABEL_COPY=pinned" ;;
          expseg) ve="$ve PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" ;;
          pin) vp=1 ;;
          cpu) va+=(--no-hw-decode) ;;
          noahead) va+=(--no-epoch-ahead) ;;
          ncclhp) va+=(--nccl-high-priority) ;;
          nobb) va+=(--ddp-bn local) ;;
          bcast) va+=(--ddp-bn broadcast) ;;
          bview) va+=(--ddp-bucket-view) ;;
          cbquiet) va+=(--cudnn-benchmark quiet) ;;
          cboff) va+=(--cudnn-benchmark off) ;;
          census) va+=(--kernel-census) ;;
          stages) va+=(--forward-stages) ;;
          burn) burn=(start) ;;
          prof) vprof=$OUT/prof/r$r-${v//:/_} ;;
          *) vbad=1 ;;
        esac
      done
      if [ -n "$vbad" ]; then
        say "  ab: '$v': not NPxW|synthetic|synthetic1 with [:park|:nice|:idle|:next|:lowprio|:pinlab|:expseg|:pin|:cpu|:noahead|:ncclhp|:nobb|:bcast|:bview|:cbquiet|:cboff|:census|:stages|:burn|:prof]...: FAILED"
        bad=1
        continue
      fi
      if [ ${#burn[@]} -gt 0 ]; then
        burn=()
        for k in $(seq 1 "$n"); do # each one decodes without a pause until killed
          "$D/ferry" load "$SET" --device cpu --workers "${BURN_WORKERS:-7}" --crop random \
            --flip --epochs 100000 --seed "$k" > "$OUT/burn-$r-$k.log" 2>&1 &
          burn+=($!)
        done
      fi
      [ -n "$vprof" ] && va+=(--profile "$vprof" --profile-steps "${PROF_STEPS:-8}")
      # which GPUs each process holds a context on, sampled while the steps run: a rank with a
      # context on another rank's GPU would share that GPU with it
      rm -f "$tmp/apps.txt"
      (sleep "${APPS_AT:-20}" && nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory \
        --format=csv,noheader > "$tmp/apps.txt" 2>&1) &
      sampler=$!
      t_ab=$(date +%s)
      FERRY_X2_ENV=$ve FERRY_X2_RANKPIN=$vp train_one "$log" 100 "$vn" "ab round $r, $v" "${va[@]}"
      pkill -P "$sampler" 2> /dev/null # its sleep, if the run ended first
      kill "$sampler" 2> /dev/null
      wait "$sampler" 2> /dev/null
      if [ ${#burn[@]} -gt 0 ]; then
        kill "${burn[@]}" 2> /dev/null
        wait "${burn[@]}" 2> /dev/null
      fi
      [ -z "$val" ] && continue
      d=$(jget "$last" data_wait_ms_per_step) w=$(jget "$last" ferry_workers)
      [ -n "$w" ] && w="$w/$(jget "$last" ferry_workers_active)"
      e=$(jget "$last" ferry_engine_share) c=$(jget "$last" cores_busy)
      [ -n "$e" ] && e="$e (timed steps $(jget "$last" ferry_engine_share_timed))"
      say "  round $r, $v: $val images/s, data wait $d ms/step (in ferry $(jget "$last" ferry_wait_ms_per_step); epochs of $(jget "$last" steps_per_epoch) steps), workers/active ${w:--}, engine share ${e:--}, rank 0's cores busy $c, step ms $(jget "$last" step_ms)"
      say "$(ab_ranks "$last")"
      say "    seconds: $(jget "$last" seconds) (of the run's $(($(date +%s) - t_ab)) s)"
      say "    GPU contexts at ${APPS_AT:-20} s: $(apps_line "$tmp/apps.txt")"
      # one line per run that ran, for the ratios and the census summed up after the rounds
      printf '{"round": %s, "variant": "%s", "run": %s}\n' "$r" "$v" "$last" >> "$tmp/ab.jsonl"
      if [ -n "$vprof" ]; then # where each rank's stream waited (bench/trace_gaps.py)
        if ls "$vprof"/rank*.json > /dev/null 2>&1; then
          say "$(python3 bench/trace_gaps.py "$vprof"/rank*.json --steps "${PROF_STEPS:-8}" 2>&1 |
            sed "s|^$OUT/prof/|    trace |")"
          gzip -f "$vprof"/rank*.json
        else
          say "    $v: no trace written (see $log): FAILED"
          bad=1
        fi
      fi
    done
  done
  ab_summary "$tmp/ab.jsonl"
  slow_summary "$tmp/ab.jsonl"
  census_summary "$tmp/ab.jsonl"
}
# slow_summary FILE (a line per run: round, variant, its JSON line): the runs of the slow kind
# (bench/RESULTS.md, 2026-11-28): a rank whose forward on the GPU's clock is SLOW_FWD=1.5 %
# or more over the median of every rank of the call's runs (one slow rank sets the pace of a
# DDP run); per variant, how many runs had one and their images/s beside the others'
slow_summary() {
  [ -s "$1" ] || return 0
  SLOW_FWD=${SLOW_FWD:-1.5} python3 - "$1" <<'EOF2' | while IFS= read -r line; do say "$line"; done
import json, os, statistics, sys
runs, caught = [], []  # caught: (a rank's forward, its gpu_caught_up) where it has one
for line in open(sys.argv[1]):
    j = json.loads(line)
    d = j["run"]
    fwd = [((r.get("gpu_ms") or {}).get("forward") or {}).get("mean")
           for r in (d.get("ranks") or [d])]
    runs.append((j["variant"], d.get("images_per_s"), [f for f in fwd if f]))
    caught += [(f, r["gpu_caught_up"]) for f, r in zip(fwd, d.get("ranks") or [d])
               if f and r.get("gpu_caught_up")]
every = [f for _, _, fs in runs for f in fs]
if every:
    med = statistics.median(every)
    cut = med * (1 + float(os.environ["SLOW_FWD"]) / 100)
    print(f"  slow runs (a rank's forward >= {cut:.2f} ms on the GPU, {os.environ['SLOW_FWD']} %"
          f" over the median of the call's ranks, {med:.2f}):")
    for v in dict.fromkeys(v for v, _, _ in runs):
        mine = [(x, fs) for w, x, fs in runs if w == v and fs]
        slow = [x for x, fs in mine if max(fs) >= cut]
        fast = [x for x, fs in mine if max(fs) < cut]
        rate = lambda xs: (f"{min(xs):.0f}-{max(xs):.0f} images/s" if xs else "none")
        print(f"    {v}: {len(slow)} of {len(mine)} slow ({rate(slow)}; the others {rate(fast)})")
    # --forward-stages: how close behind the host the GPU ran, slow ranks against the others
    for name, group in (("slow ranks", [c for f, c in caught if f >= cut]),
                        ("the other ranks", [c for f, c in caught if f < cut])):
        if group:
            keys = dict.fromkeys(k for c in group for k in c)
            print(f"    GPU caught up (share of steps), {name} ({len(group)}): " + " ".join(
                f"{k} {statistics.mean(c[k] for c in group if k in c):.2f}" for k in keys))
EOF2
}
# census_summary FILE (a line per run: round, variant, its JSON line): for the variants run with
# :census, the kernels each rank's cuDNN settled on: in how many runs the ranks' kernels were
# the same (their digests), how many different sets the variant's processes used, and each
# set's kernel time per step
census_summary() {
  [ -s "$1" ] || return 0
  python3 - "$1" <<'EOF2' | while IFS= read -r line; do say "$line"; done
import json, sys
by = {}
for line in open(sys.argv[1]):
    run = json.loads(line)
    d = run["run"]
    ranks = [r.get("kernel_census") for r in (d.get("ranks") or [d])]
    if any(ranks):
        by.setdefault(run["variant"], []).append([c for c in ranks if c and "digest" in c])
for v, runs in by.items():
    sets = {}
    for run in runs:
        for c in run:
            sets.setdefault(c["digest"], []).append(c["kernel_ms_per_step"])
    same = sum(1 for run in runs if len(run) > 1 and len({c["digest"] for c in run}) == 1)
    several = sum(1 for run in runs if len(run) > 1)
    print(f"  census, {v}: {len(runs)} run(s)"
          + (f", the ranks' kernels the same in {same} of {several}" if several else "")
          + f"; {len(sets)} kernel set(s): " + ", ".join(
              f"{k} {min(ms):.2f}-{max(ms):.2f} ms/step x{len(ms)}" for k, ms in sets.items()))
EOF2
}
# apps_line FILE: nvidia-smi's compute processes as "pid on GPU(s) (MiB)"; a process on several
# GPUs is named
apps_line() {
  python3 - "$1" <<'EOF2'
import sys
try:
    rows = [l.split(", ") for l in open(sys.argv[1]) if l.count(",") >= 2]
except OSError:
    rows = []
if not rows:
    print("no sample (the run had ended, or nvidia-smi said nothing)")
    sys.exit()
by = {}
for pid, bus, mem in rows:
    by.setdefault(pid.strip(), []).append(f"{bus.strip()[-7:]} {mem.strip()}")
many = [p for p, g in by.items() if len(g) > 1]
print("; ".join(f"pid {p} on {', '.join(g)}" for p, g in sorted(by.items())) +
      (f"; ON SEVERAL GPUS: {' '.join(many)}" if many else "; one GPU each"))
EOF2
}
# ab_ranks JSON: each rank's own data wait (all of it / in ferry), engine share, cores and GPU
# busy, and the step's parts (one process: its own)
ab_ranks() {
  python3 - "$1" <<'EOF2'
import json, sys
def census(r):  # --kernel-census: the step stream's kernels over two warm-up steps
    c = r.get("kernel_census")
    if not c:
        return ""
    if "error" in c:
        return f", kernel census: {c['error']}"
    return (f", kernels {c['kernel_ms_per_step']} ms/step ({c['distinct']} distinct, "
            f"digest {c['digest']})")
def alloc(r):  # what PyTorch's CUDA allocator asked of the driver in the timed steps
    a = r.get("cuda_allocator_timed")
    if not a:
        return ""
    return (f", allocator in timed steps: {a['device_allocs']} cudaMalloc, "
            f"{a['device_frees']} cudaFree, {a['alloc_retries']} retries "
            f"({r.get('cuda_reserved_mib')} MiB reserved)")
def stages(r):  # --forward-stages: the forward's stages, mean GPU ms (host ms off CUDA)
    st = r.get("forward_stages_ms") or {}
    clk, v = next(((c, st[c]) for c in ("gpu", "host") if st.get(c)), (None, None))
    if not v:
        return ""
    return f", forward stages ({clk} ms) " + " ".join(f"{k} {x}" for k, x in v.items())
def caught_up(r):  # --forward-stages on CUDA: at each mark, the share of steps the GPU was close
    d = r.get("gpu_caught_up") or {}
    return (", GPU caught up (share of steps) " + " ".join(f"{k} {x}" for k, x in d.items())
            if d else "")
def parts(r):  # the step's parts (train_imagenet.py's gpu_ms, host_ms): mean/p90 in ms
    return "; ".join(f"{clk} ms (mean/p90) " + " ".join(
        f"{k} {v['mean']}/{v['p90']}" for k, v in (r.get(f"{key}_ms") or {}).items())
        for clk, key in (("GPU", "gpu"), ("host", "host")) if r.get(f"{key}_ms"))
d = json.loads(sys.argv[1])
print("    " + "; ".join(
    f"rank {r.get('rank', 0)}: wait {r.get('data_wait_ms_per_step')}/{r.get('ferry_wait_ms_per_step')} ms,"
    f" max {r.get('data_wait_ms_max')} ms, over 5 ms at steps {r.get('data_waits_over_5ms')},"
    f" engine {r.get('ferry_engine_share')} (timed {r.get('ferry_engine_share_timed')}),"
    f" cores {r.get('cores_busy')},"
    f" GPU busy {r.get('gpu_util_mean')} %, main thread preempted"
    f" {r.get('main_thread_preempted_per_step')}/step" + census(r) + alloc(r) + stages(r)
    + caught_up(r)
    + (", " + parts(r) if parts(r) else "")
    for r in d.get("ranks") or [d]))
EOF2
}
# ab_summary FILE (a line per run: round, variant, its JSON line): each several-GPU variant over
# the same round's 1x0 run, round by round, and the median of those ratios (the statistic
# quoted for each); then over the median of the call's runs of that 1x0 variant (a slow 1x0 run
# lifts its own round's ratio, not that median). The 1x0 run divided by is the one with the
# most of the variant's flags and no other (2x0:nobb:cbquiet over 1x0:cbquiet where the round
# has one, else over 1x0)
ab_summary() {
  [ -s "$1" ] || return 0
  python3 - "$1" <<'EOF2' | while IFS= read -r line; do say "$line"; done
import json, statistics, sys
rows = [(str(j["round"]), j["variant"], j["run"]["images_per_s"])
        for j in map(json.loads, open(sys.argv[1]))]
flags = lambda v: set(v.split(":")[1:])
ones = {}  # round -> {1x0 variant: images/s}
for r, v, x in rows:
    if v.split(":")[0] == "1x0":
        ones.setdefault(r, {})[v] = float(x)
# each 1x0 variant's median over the call's rounds: a second baseline that a slow 1x0 run
# (which lifts its own round's ratio) moves less
med1 = {}
for byv in ones.values():
    for b, x in byv.items():
        med1.setdefault(b, []).append(x)
med1 = {b: statistics.median(xs) for b, xs in med1.items()}
per, over, alone, vsmed = {}, {}, [], {}
for r, v, x in rows:
    if v.startswith("1x") or r not in ones:
        continue
    fit = [b for b in ones[r] if flags(b) <= flags(v)]
    if not fit:
        alone += [v] if v not in alone else []
        continue
    b = max(fit, key=lambda b: len(flags(b)))
    per.setdefault(v, []).append(float(x) / ones[r][b])
    over.setdefault(v, set()).add(b)
    vsmed.setdefault(v, []).append(float(x) / med1[b])
if not ones:
    print("  ab summary: no 1x0 run to divide by")
for v in alone:
    print(f"  ab summary, {v}: no ratio (no 1x0 run in its round with none but its flags)")
for v, q in per.items():
    print(f"  ab summary, {v} / the round's {' or '.join(sorted(over[v]))}: "
          + ", ".join(f"{x:.3f}" for x in q)
          + f"; median {statistics.median(q):.3f}, {sum(x >= 1.9 for x in q)} of {len(q)} >= 1.9")
    m = vsmed[v]
    print(f"    against the call's median {' or '.join(sorted(over[v]))} ("
          + ", ".join(f"{med1[b]:.1f}" for b in sorted(over[v]))
          + f" images/s): median {statistics.median(m):.3f}, "
          f"{sum(x >= 1.9 for x in m)} of {len(m)} >= 1.9")
EOF2
}

part_search() {
  local log=$OUT/search.log rc devs t q f
  if [ "$multi" = 1 ]; then devs=$(seq -s, 0 $((n - 1))); else devs=0,0; fi
  say "search: bench/gpu_multi_checks.sh $devs $SEARCH_N"
  t=$(limit 400)
  if [ "$t" -lt 20 ]; then
    bad=1
    say "  not run: the budget is spent"
    return
  fi
  mkdir -p "$tmp/search"
  env FERRY_X2_TOKEN="$token" OUT="$tmp/search" timeout -k 10 "$t" \
    bash bench/gpu_multi_checks.sh "$devs" "$SEARCH_N" > "$tmp/search.txt" 2>&1
  rc=$?
  { cat "$tmp/search.txt"
    for f in "$tmp"/search/*; do [ -f "$f" ] && { echo "== $(basename "$f")"; cat "$f"; }; done
    echo "exit $rc"; } >> "$log"
  leftovers "$log"
  grep -E '^(== [0-9]|1 device|[0-9]+ devices|same pairs|SKIPPED|test_[a-z_]+: exit|cli:|python:|gpu_multi_checks:)' \
    "$tmp/search.txt" | sed 's/^/  /' | tee -a "$SUM"
  if [ "$rc" != 0 ]; then
    bad=1
    say "  search: FAILED (exit $rc$([ "$rc" = 124 ] && echo ": timed out after $t s"))"
  fi
  if [ "$SEARCH_N" != 0 ]; then
    q=$(sed -n 's/.*; speed-up \([0-9.]*\)x.*/\1/p' "$tmp/search.txt" | tail -1)
    if [ "$multi" = 1 ]; then
      verdict "$q" 1.8
      say "  SEARCH $n GPUs / 1 GPU: ${q:-?}x: $vtext"
    else
      say "  search cuda:0,0 / cuda:0: ${q:-?}x (mechanics check, not the acceptance)"
    fi
  fi
}

clock_sampler=""
if [ "${CLOCKS:-0}" = 1 ]; then
  bash bench/gpu_clock_sampler.sh "$OUT/clocks.csv" 0.5 &
  clock_sampler=$!
  trap 'kill "$clock_sampler" 2> /dev/null' EXIT # stopped however the script ends
fi
for p in $PARTS; do
  case $p in
    load) part_load ;;
    train) part_train ;;
    ab) part_ab ;;
    search) part_search ;;
    *) say "unknown part '$p': FAILED"; bad=1 ;;
  esac
done
if [ -n "$clock_sampler" ]; then
  kill "$clock_sampler" 2> /dev/null
  wait "$clock_sampler" 2> /dev/null
  say "clocks per training run (busy GPUs; bench/clock_by_run.py $OUT/clocks.csv):"
  python3 bench/clock_by_run.py "$OUT/clocks.csv" 2>&1 | sed 's/^/  /' | tee -a "$SUM"
fi
rm -rf "$tmp"
status=ok
[ "$below" = 1 ] && status="ran; a figure BELOW its threshold"
[ "$bad" = 1 ] && status=FAILED
[ "$multi" = 0 ] && [ "$bad" = 0 ] && status="ok (mechanics on one GPU; NOT the acceptance)"
say "gpu_x2_checks: $status, $(($(date +%s) - t_start)) s"
echo "--- summary ($SUM)"
cat "$SUM"
[ "$bad" = 1 ] && exit 1
[ "$below" = 1 ] && exit 3
exit 0
