#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS on its corpus (fuzz/corpus/<t>)
# plus the regression inputs (tests/fixtures/fuzz-regressions/<t>), and
# prints the executions per target and in total. Crash inputs go to
# BUILD/crashes/. Usage: run.sh BUILD SECONDS [TARGET...]
set -uo pipefail
build=$1
secs=$2
shift 2
targets=("$@")
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ${#targets[@]} -eq 0 ]; then # every fuzz/fuzz_<target>.c but the helpers
  for f in "$root"/fuzz/fuzz_*.c; do
    t=${f##*/fuzz_} t=${t%.c}
    [ "$t" = util ] || targets+=("$t")
  done
fi
corpus=${FUZZ_CORPUS:-$root/fuzz/corpus}
mkdir -p "$build/crashes" "$build/logs"
total=0
fail=0
for t in "${targets[@]}"; do
  mkdir -p "$corpus/$t"
  dirs=("$corpus/$t")
  [ -d "$root/tests/fixtures/fuzz-regressions/$t" ] && dirs+=("$root/tests/fixtures/fuzz-regressions/$t")
  log="$build/logs/$t.log"
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
  LSAN_OPTIONS=suppressions="$root/tests/lsan.supp" \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -max_len=262144 -print_final_stats=1 -artifact_prefix="$build/crashes/$t-" \
    "${dirs[@]}" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  execs=${execs:-0}
  total=$((total + execs))
  if [ $rc -ne 0 ]; then
    fail=1
    echo "fuzz_$t: FAILED (exit $rc) after $execs executions; log: $log"
    grep -m5 -E "ERROR|SUMMARY|runtime error|Test unit written" "$log" || tail -20 "$log"
  else
    echo "fuzz_$t: $execs executions in ${secs}s, no crash"
  fi
done
echo "fuzz: $total executions in total"
exit $fail
