#!/usr/bin/env bash
# gpu_clock_sampler.sh OUT.csv [PERIOD_S]: until killed, appends every PERIOD_S (default 0.5) one
# line per GPU: unix time, GPU index, SM MHz, memory MHz, power W, temperature C, utilisation %,
# the active clock-event (throttle) reasons as nvidia-smi prints them, and the running
# torchrun's --nproc-per-node and train_imagenet.py options (or "-"), so that a slow run of
# gpu_x2_checks' ab mode can be matched with its GPUs' clocks (bench/clock_by_run.py).
set -u
out=${1:?usage: gpu_clock_sampler.sh OUT.csv [PERIOD_S]}
period=${2:-0.5}
fields=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu
reasons=clocks_event_reasons.active
nvidia-smi --query-gpu=$reasons --format=csv,noheader >/dev/null 2>&1 || reasons=clocks_throttle_reasons.active
echo "t,gpu,sm_mhz,mem_mhz,power_w,temp_c,util_pct,reasons,run" >"$out"
while :; do
  t=$(date +%s.%N)
  # torchrun's line, as `torchrun` or `python3 -m torch.distributed.run` (this loop's own sed
  # holds the option's name, so the pattern is the launcher's)
  run=$(pgrep -af 'torchrun|torch[.]distributed[.]run' | grep -e --nproc-per-node | head -1 |
    sed -E 's/.*--nproc-per-node ([0-9]+).*train_imagenet\.py [^ ]+ /np=\1 /; s/[,"]/ /g' |
    cut -c1-300)
  nvidia-smi --query-gpu=$fields,$reasons --format=csv,noheader,nounits 2>/dev/null |
    while IFS= read -r l; do echo "$t,${l// /},\"${run:--}\""; done >>"$out"
  sleep "$period"
done
