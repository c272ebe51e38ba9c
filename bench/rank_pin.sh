#!/usr/bin/env bash
# rank_pin.sh CMD ARGS...: run CMD on this local rank's share of the CPUs this process may use
# (LOCAL_RANK of LOCAL_WORLD_SIZE, as torchrun sets them: rank r takes the r-th equal slice of
# the allowed CPUs in order). An experiment of bench/gpu_x2_checks.sh's ":pin" variant: does a
# rank whose threads stay off the other rank's cores train faster beside it?
set -eu
l=${LOCAL_WORLD_SIZE:-1} r=${LOCAL_RANK:-0}
read -r -a cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)))')
per=$(( ${#cpus[@]} / l ))
if [ "$l" -le 1 ] || [ "$per" -lt 1 ] || [ "$r" -ge "$l" ]; then exec "$@"; fi
list=$(IFS=,; echo "${cpus[*]:$((r * per)):$per}")
echo "rank_pin: local rank $r of $l on CPUs $list" >&2
exec taskset -c "$list" "$@"
