#!/usr/bin/env bash
# `cmake --install` puts libferry (.so and .a), ferry.h, ferry.pc and the CMake
# package (lib/cmake/ferry) in a prefix. Programs built against them run:
# with `pkg-config --cflags --libs ferry` (shared), with `pkg-config --static`
# against libferry.a alone, and through find_package(ferry CONFIG) with
# ferry::ferry and ferry::ferry_static, the prefix moved after installing.
set -u
BUILD=${1:?usage: install.sh BUILD_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
JPEG=$(find "$HERE/../../data/sample" -name '*.jpg' | sort | head -1)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
ok() { echo "ok: $1"; pass=$((pass + 1)); }
bad() { echo "FAILED: $1"; fail=$((fail + 1)); }
finish() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }

if ! cmake --install "$BUILD" --prefix "$TMP/prefix" > "$TMP/install.log" 2>&1; then
  cat "$TMP/install.log"; bad "cmake --install"; finish
fi
lib=$(ls -d "$TMP"/prefix/lib*/ | head -1)
lib=${lib%/}
libdir=${lib##*/} # lib, lib64, ...

# 1. shared, through pkg-config
cat > "$TMP/hello.c" <<'C'
#include <ferry.h>
#include <stdio.h>
int main(void) {
  printf("ferry %s: %s\n", ferry_version(), ferry_strerror(FERRY_ECORRUPT));
  return 0;
}
C
out=$(cc "$TMP/hello.c" $(PKG_CONFIG_PATH="$lib/pkgconfig" pkg-config --cflags --libs ferry) \
        -o "$TMP/hello" && LD_LIBRARY_PATH="$lib" "$TMP/hello")
echo "$out"
case $out in "ferry 0."*"corrupt"*) ok "pkg-config, shared: hello" ;; *) bad "pkg-config, shared: hello" ;; esac
# internal symbols stay private
if nm -D --defined-only "$lib/libferry.so" | grep -q " fy_"; then
  bad "internal fy_ symbols exported"
else
  ok "no internal fy_ symbols exported"
fi

# The decoding program every build below runs: the sample's first JPEG, its
# size (upright), channels and a hash of its pixels; then a video open of a
# missing file (an error), which links the archive's video and CUDA members
# (libav*, cudart_static, the C++ runtime) into the static builds.
cat > "$TMP/decode.c" <<'C'
#include <ferry.h>
#include <stdint.h>
#include <stdio.h>
int main(int argc, char **argv) {
  static unsigned char bytes[1 << 22];
  FILE *f = argc == 2 ? fopen(argv[1], "rb") : NULL;
  if (!f) return 2;
  size_t n = fread(bytes, 1, sizeof bytes, f);
  fclose(f);
  ferry_decode_options options;
  ferry_decode_options_default(&options);
  ferry_image im;
  if (ferry_decode(bytes, n, argv[1], &options, &im) != FERRY_OK) {
    fprintf(stderr, "%s\n", ferry_last_error());
    return 1;
  }
  uint64_t h = 14695981039346656037u; /* FNV-1a */
  for (int y = 0; y < im.height; y++)
    for (int x = 0; x < im.width * im.channels; x++)
      h = (h ^ im.data[(size_t)y * im.stride + x]) * 1099511628211u;
  ferry_video_options vo;
  ferry_video_options_default(&vo);
  ferry_video_reader *reader;
  int st = ferry_video_open("/nonexistent/ferry.mp4", &vo, &reader);
  printf("%dx%dx%d %016llx video %s\n", im.width, im.height, im.channels,
         (unsigned long long)h, st == FERRY_OK ? "opened?" : ferry_strerror(st));
  ferry_image_free(&im);
  return st == FERRY_OK;
}
C
# what `ferry info` says the upright size is
info=$("$TMP/prefix/bin/ferry" info "$JPEG")
wh=$(echo "$info" | sed -n 's/.*JPEG \([0-9]*\)x\([0-9]*\),.*/\1 \2/p')
orient=$(echo "$info" | sed -n 's/.*orientation \([0-9]\).*/\1/p')
set -- $wh
w=${1:-?} h=${2:-?}
if [ "${orient:-1}" -ge 5 ]; then size="${h}x${w}x3"; else size="${w}x${h}x3"; fi
cc -std=c11 -Wall -Wextra -Werror "$TMP/decode.c" \
   $(PKG_CONFIG_PATH="$lib/pkgconfig" pkg-config --cflags --libs ferry) -o "$TMP/decode_so"
ref=$(LD_LIBRARY_PATH="$lib" "$TMP/decode_so" "$JPEG")
echo "$JPEG: $ref"
case $ref in "$size "????????????????" video "*) ok "pkg-config, shared: decodes $size" ;;
  *) bad "pkg-config, shared: decode gave '$ref', ferry info says $size" ;; esac

# needed(BINARY): does it load libferry.so?
needs_so() { readelf -d "$1" | grep -q 'NEEDED.*libferry\.so'; }
# check NAME BINARY STATIC(0|1): runs, decodes like the shared build, links libferry as said
check() {
  local got
  if [ ! -x "$2" ]; then bad "$1: not built"; return; fi
  got=$(env -u LD_LIBRARY_PATH "$2" "$JPEG" 2>&1)
  if [ -z "$ref" ] || [ "$got" != "$ref" ]; then bad "$1: gave '$got', expected '$ref'"; return; fi
  if [ "$3" = 1 ] && needs_so "$2"; then bad "$1: needs libferry.so"; return; fi
  if [ "$3" = 0 ] && ! needs_so "$2"; then bad "$1: does not need libferry.so"; return; fi
  ok "$1"
}

# The prefix moves: ferry.pc and the CMake package find it from where they are.
mv "$TMP/prefix" "$TMP/moved"

# 2. static, through pkg-config --static, with only libferry.a in the prefix
cp -a "$TMP/moved" "$TMP/static"
rm -f "$TMP/static/$libdir"/libferry.so*
flags=$(PKG_CONFIG_PATH="$TMP/static/$libdir/pkgconfig" pkg-config --static --cflags --libs ferry)
echo "pkg-config --static --cflags --libs ferry: $flags"
if cc -std=c11 -Wall -Wextra -Werror "$TMP/decode.c" $flags -o "$TMP/decode_a" 2> "$TMP/cc.log"; then
  check "pkg-config --static: libferry.a" "$TMP/decode_a" 1
else
  cat "$TMP/cc.log"; bad "pkg-config --static: link"
fi

# 3. CMake: find_package(ferry CONFIG REQUIRED), ferry::ferry and ferry::ferry_static
mkdir "$TMP/user"
cp "$TMP/decode.c" "$TMP/user/"
cat > "$TMP/user/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.18)
project(uses_ferry LANGUAGES C)
find_package(ferry CONFIG REQUIRED)
add_executable(decode_shared decode.c)
target_link_libraries(decode_shared PRIVATE ferry::ferry)
add_executable(decode_static decode.c)
target_link_libraries(decode_static PRIVATE ferry::ferry_static)
CMAKE
if cmake -S "$TMP/user" -B "$TMP/user/build" -DCMAKE_PREFIX_PATH="$TMP/moved" \
     -DCMAKE_BUILD_TYPE=Release > "$TMP/user.log" 2>&1 &&
   cmake --build "$TMP/user/build" >> "$TMP/user.log" 2>&1; then
  :
else
  cat "$TMP/user.log"; bad "CMake project with find_package(ferry): configure and build"
fi
check "CMake ferry::ferry" "$TMP/user/build/decode_shared" 0
check "CMake ferry::ferry_static" "$TMP/user/build/decode_static" 1
finish
