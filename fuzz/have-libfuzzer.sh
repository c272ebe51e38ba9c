#!/usr/bin/env bash
# Exit 0 when CC can link a libFuzzer target with ASan + UBSan; otherwise
# print "SKIPPED" with the reason and exit 1.
cc=${1:-clang}
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "SKIPPED fuzz: $cc not found (scripts/setup.sh installs clang-14)"
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n' >"$tmp/t.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$tmp/t.c" -o "$tmp/t" 2>"$tmp/err"; then
  echo "SKIPPED fuzz: $cc cannot link libFuzzer (install libclang-rt-14-dev): $(head -1 "$tmp/err")"
  exit 1
fi
