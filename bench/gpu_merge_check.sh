#!/usr/bin/env bash
# A catalog hashed one share per GPU under torchrun, then merged (issue 21, docs/DEDUP.md
# "Catalogs past one machine"), on the GPU machine from the device bundle (bench/device_bundle.sh
# makes .device/, named in the call's carry). Builds nothing:
#   bash bench/gpu_merge_check.sh [NPROC]
# NPROC processes (default: one per GPU nvidia-smi lists, or 2 on a machine of one GPU, both on
# cuda:0: the mechanics only) run `ferry hash --shard-from-env --mode compatible --device
# cuda:$LOCAL_RANK` over the bundle's photos (MERGE_SET to name another folder); `ferry index
# merge` makes one catalog of the parts, which must export the same CSV as one CPU run's
# catalog (compatible mode: the GPU's kernels give the CPU's bits). Exit 0: the same; 1 not.
set -u
D=${FERRY_DEVICE_DIR:-.device}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
F=$PWD/$D/ferry
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
np=${1:-$([ "$ngpu" -gt 1 ] && echo "$ngpu" || echo 2)}
one_gpu=$([ "$ngpu" -le 1 ] && echo 1 || echo 0)
SET=${MERGE_SET:-$PWD/$D/photos}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "gpu_merge_check: $np processes on $ngpu GPU(s)$([ "$one_gpu" = 1 ] && echo ', all on cuda:0 (mechanics only)'), set $SET ($(find "$SET" -type f | wc -l) files), $(nproc) cores, bundle of commit $(cat "$D/COMMIT" 2>/dev/null || echo unknown), $(date -u)"

t0=$(date +%s.%N)
timeout 300 "$F" hash "$SET" -o "$work/one.fidx" --mode compatible -q
rc=$?
echo "one CPU run: exit $rc, $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)") s"

export FERRY_BIN=$F MERGE_WORK=$work MERGE_SET=$SET MERGE_ONE_GPU=$one_gpu
t0=$(date +%s.%N)
# shellcheck disable=SC2016
timeout 300 torchrun --standalone --nproc-per-node "$np" --no-python sh -c '
  dev=$LOCAL_RANK; [ "$MERGE_ONE_GPU" = 1 ] && dev=0
  "$FERRY_BIN" hash "$MERGE_SET" -o "$MERGE_WORK/part-$RANK.fidx" --shard-from-env \
    --mode compatible --device "cuda:$dev" --json -q > "$MERGE_WORK/part-$RANK.json"' \
  > "$OUT/merge_torchrun.txt" 2>&1
rc=$?
echo "torchrun, $np shares: exit $rc, $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)") s"
[ "$rc" = 0 ] || [ "$rc" = 3 ] || tail -20 "$OUT/merge_torchrun.txt"
for j in "$work"/part-*.json; do
  python3 -c 'import json, sys
print("  rank %(rank)s of %(world_size)s: %(hashed)s hashed on %(device)s, %(other_ranks)s "
      "left to the other ranks, %(failed)s failed" % json.load(open(sys.argv[1])))' "$j"
done

"$F" index merge "$work/merged.fidx" "$work"/part-*.fidx 2>&1 | tail -3
"$F" index export "$work/one.fidx" --format csv -o "$work/one.csv"
"$F" index export "$work/merged.fidx" --format csv -o "$work/merged.csv"
if cmp -s "$work/one.csv" "$work/merged.csv"; then
  echo "merged catalog: the same export as one CPU run ($(($(wc -l < "$work/one.csv") - 1)) entries); catalog bytes $(cmp -s "$work/one.fidx" "$work/merged.fidx" && echo identical || echo differ)"
  exit 0
fi
echo "merged catalog: its export DIFFERS from one CPU run's"
diff "$work/one.csv" "$work/merged.csv" | head -10
exit 1
