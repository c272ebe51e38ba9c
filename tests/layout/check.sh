#!/usr/bin/env bash
# The layering rules of docs/ARCHITECTURE.md that a grep can hold (issue 18):
#  - the library says things only through src/core/log.c (ferry_set_log):
#    no other file of src/ writes to stderr, or prints (data written to a
#    FILE the caller chose, stdout included, is not a message);
#  - src/jobs/ is the layer above the pipeline: nothing else in src/ includes it;
#  - tools/ and bench/ use src/ only through src/tools_tier.h (beside ferry.h); bench/ may
#    include the tests' fixture writers (tests/unit/*_write.h).
#  - every test with a full-tier twin (tests/tiers.cmake) has a part only that tier runs.
# Prints each breach with its file and line; exit 1 if any.
set -u
cd "$(dirname "$0")/../.."
bad=0
hits=$(grep -rnE '\bstderr\b|[^a-z_]printf\(|[^a-z_]puts\(' src --include='*.c' --include='*.cu' \
  --include='*.h' | grep -v '^src/core/log\.c:' | grep -vE '^[^:]+:[0-9]+:\s*(/?\*|//)' || true)
if [ -n "$hits" ]; then
  echo "layout: the library writes messages outside src/core/log.c (use fy_log):"
  echo "$hits"
  bad=1
fi
hits=$(grep -rn '#include "jobs/' src | grep -v '^src/jobs/' || true)
if [ -n "$hits" ]; then
  echo "layout: src/jobs/ is above the pipeline; these include it from below:"
  echo "$hits"
  bad=1
fi
# tools' own headers (tools/*.h) and bench's (bench/*.h) are theirs to include
own=$(cd tools && ls *.h; cd ../bench && ls *.h 2>/dev/null)
own=$(echo $own | sed 's/\./\\./g; s/ /|/g')
# (bench/ may also share the tests' fixture writers: ../tests/unit/*_write.h, not src/)
hits=$(grep -n '#include "' tools/*.c tools/*.h bench/*.c |
  grep -vE "#include \"(ferry\.h|tools_tier\.h|$own)\"" |
  grep -vE '^bench/[^:]+:[0-9]+:#include "\.\./tests/unit/[a-z_]+_write\.h"' || true)
if [ -n "$hits" ]; then
  echo "layout: tools/ and bench/ reach into src/ past src/tools_tier.h:"
  echo "$hits"
  bad=1
fi
# every test with a full-tier twin (tests/tiers.cmake's FERRY_FULL_TESTS) has a part that only
# the full tier runs (check.h's check_full, check_full_only; file_list.h's list_corpus): else
# NAME.full would run the same test twice
full=$(sed -n '/^set(FERRY_FULL_TESTS/,/)/p' tests/tiers.cmake | tr -d '()' | tr ' ' '\n' |
  grep '^test_' || true)
[ -n "$full" ] || { echo "layout: tests/tiers.cmake lists no FERRY_FULL_TESTS"; bad=1; }
for t in $full; do
  f=tests/unit/$t.c
  [ -f "$f" ] || { echo "layout: $t of FERRY_FULL_TESTS has no $f"; bad=1; continue; }
  srcs="$f $(sed -n 's/^#include "\(test_[a-z_]*\.c\)"/tests\/unit\/\1/p' "$f")"
  if ! grep -qE 'check_full|list_corpus' $srcs; then
    echo "layout: $t is in FERRY_FULL_TESTS but has no part only the full tier runs ($srcs)"
    bad=1
  fi
done
[ "$bad" = 0 ] && echo "layout: ok (messages only through core/log.c; nothing below includes jobs/; tools and bench through tools_tier.h; every full-tier twin has a full-tier part)"
exit "$bad"
