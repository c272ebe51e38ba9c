#!/usr/bin/env bash
# bench_hash_engine.sh — photos/s of `ferry hash` in fast mode: every core
# alone against every core plus the GPU's JPEG engine (--device cuda), side
# by side, interleaved round by round, page cache warm, process start
# included. The issue-7 figure: aHash, dHash, pHash, wHash of 12 MP JPEGs.
#
#   bench/bench_hash_engine.sh FERRY PHOTO_DIR [COPIES] [ROUNDS]
#
# PHOTO_DIR's JPEGs are hard-linked COPIES times (default 400) into a
# scratch directory (BENCH_SCRATCH, default a new one under /tmp; symbolic
# links where hard links cannot be made), so that a few photos make a
# large run without gigabytes of copies. BENCH_AT_ONCE=1 also times the
# engine started at once (--engine-min-s 0) beside the default, which keeps
# a job the cores finish in under 2.5 s on the cores (C46).
# Claims it proves (bench/CLAIMS.md): C44, C45, C46.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n 2,14p "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
FERRY=$1 SRC=$2 COPIES=${3:-400} ROUNDS=${4:-3}
HASHES="--hashes ahash,dhash,phash,whash --hash-size 8"
[ -x "$FERRY" ] || { echo "bench_hash_engine: $FERRY: not an executable" >&2; exit 2; }
shopt -s nullglob nocaseglob
photos=("$SRC"/*.jpg "$SRC"/*.jpeg)
shopt -u nocaseglob
[ ${#photos[@]} -gt 0 ] || { echo "bench_hash_engine: $SRC: no JPEG files" >&2; exit 2; }
DIR=${BENCH_SCRATCH:-$(mktemp -d /tmp/ferry-bench-hash.XXXXXX)}
mkdir -p "$DIR"
trap '[ -z "${BENCH_SCRATCH:-}" ] && rm -rf "$DIR"' EXIT
for i in $(seq 1 "$COPIES"); do
  for f in "${photos[@]}"; do
    b=$(basename "$f")
    ln -f "$f" "$DIR/${b%.*}_$i.jpg" 2>/dev/null || ln -sf "$(realpath "$f")" "$DIR/${b%.*}_$i.jpg"
  done
done
n=$(find "$DIR" -name '*.jpg' | wc -l)
cat "${photos[@]}" >/dev/null
echo "bench_hash_engine: $n files ($COPIES x ${#photos[@]} photos of $SRC), $(nproc) cores," \
  "$(date -u +%Y-%m-%dT%H:%MZ)"
"$FERRY" info "${photos[0]}" 2>/dev/null | sed 's/^/  /' || true

# one timed run: prints "photos/s seconds" and keeps the engine's count
run() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>/tmp/ferry-bench-hash.err || {
    echo "bench_hash_engine: failed: $*" >&2
    cat /tmp/ferry-bench-hash.err >&2
    return 1
  }
  t1=$(date +%s.%N)
  awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f %.2f", n / (b - a), b - a }'
}

declare -A best
labels=("cpu" "engine")
[ "${BENCH_AT_ONCE:-0}" = 1 ] && labels+=("at-once")
for r in $(seq 1 "$ROUNDS"); do
  for l in "${labels[@]}"; do
    case $l in
    cpu) out=$(run "$FERRY" hash "$DIR" --mode fast $HASHES -q) ;;
    engine) out=$(run "$FERRY" hash "$DIR" --device cuda --mode fast $HASHES) ;;
    at-once) out=$(run "$FERRY" hash "$DIR" --device cuda --mode fast --engine-min-s 0 $HASHES) ;;
    esac
    rate=${out%% *}
    extra=$(grep -o "decoded [0-9]* of [0-9]*" /tmp/ferry-bench-hash.err || true)
    printf "  round %d %-8s %6s photos/s (%s s) %s\n" "$r" "$l" "$rate" "${out##* }" "$extra"
    [ "${best[$l]:-0}" -lt "$rate" ] && best[$l]=$rate
  done
done
echo "best of $ROUNDS rounds (photos/s):"
for l in "${labels[@]}"; do
  awk -v l="$l" -v x="${best[$l]}" -v c="${best[cpu]}" \
    'BEGIN { printf "  %-8s %6d  %.2fx the CPU alone\n", l, x, x / c }'
done
