#!/usr/bin/env bash
# Prepares .devi/ (git-ignored) for examples/video_infer.py on a GPU machine
# of the device tool (Python 3.12, torch and torchvision there; no PyAV, no
# libavformat): the Python package built for Python 3.12 with CUDA and the
# static minimal FFmpeg of bench/device_bundle_video.sh's build (build-gpuv),
# the shared libraries that machine lacks, and PyAV's wheel (the baseline
# decoder; AV_WHEEL, or .whl-av/ when it has one) and the corpus' 1080p clip.
# On the machine: bash bench/video_infer_checks.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/bundle_lib.sh
B=${FERRY_GPUV_BUILD:-build-gpuv}
FF=${FFMPEG_MIN:-/work/ffmpeg-min}
D=.devi
SHARED=${FERRY_SHARED:-../shared}
[ -d "$FF/lib" ] || scripts/build-ffmpeg-min.sh "$FF"
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DFERRY_HEIF=OFF -DFERRY_FFMPEG_PREFIX="$FF" >/dev/null
cmake --build "$B" -j "$(nproc)" --target ferry_static >/dev/null
rm -rf "$D"
mkdir -p "$D/lib" "$D/py/ferry" "$D/whl" "$D/vid"
cp "$SHARED/corpus/video/pan_1080p_h264.mp4" "$D/vid/"
bundle_libs "$D/lib"
bundle_python "$B" "$D/py/ferry"
strip "$D"/py/ferry/*.so
AV=${AV_WHEEL:-$(ls .whl-av/av-*.whl 2>/dev/null | head -1)}
if [ -z "$AV" ]; then
  mkdir -p .whl-av
  pip download -q --no-deps --only-binary=:all: --python-version 3.12 --platform \
    manylinux_2_28_x86_64 -d .whl-av av==18.1.0
  AV=$(ls .whl-av/av-*.whl | head -1)
fi
cp "$AV" "$D/whl/"
du -sh "$D"
