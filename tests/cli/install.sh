#!/usr/bin/env bash
# `cmake --install` puts libferry, ferry.h and ferry.pc in a prefix; a
# program built with `pkg-config --cflags --libs ferry` against them runs.
set -eu
BUILD=${1:?usage: install.sh BUILD_DIR}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cmake --install "$BUILD" --prefix "$TMP/prefix" > "$TMP/install.log"
lib=$(ls -d "$TMP"/prefix/lib*/ | head -1)
export PKG_CONFIG_PATH="$lib/pkgconfig"
cat > "$TMP/hello.c" <<'C'
#include <ferry.h>
#include <stdio.h>
int main(void) {
  printf("ferry %s: %s\n", ferry_version(), ferry_strerror(FERRY_ECORRUPT));
  return 0;
}
C
cc "$TMP/hello.c" $(pkg-config --cflags --libs ferry) -o "$TMP/hello"
out=$(LD_LIBRARY_PATH="$lib" "$TMP/hello")
echo "$out"
case $out in "ferry 0."*"corrupt"*) echo "1 passed, 0 failed" ;; *) echo "0 passed, 1 failed"; exit 1 ;; esac
# internal symbols stay private
if nm -D --defined-only "$lib/libferry.so" | grep -q " fy_"; then
  echo "internal fy_ symbols exported"; exit 1
fi
