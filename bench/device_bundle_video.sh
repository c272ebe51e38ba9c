#!/usr/bin/env bash
# Prepares .devv/ (git-ignored) for video runs on a GPU machine through the
# device tool (no libavformat there): ferry and test_video_gpu built with CUDA
# and a static minimal FFmpeg (scripts/build-ffmpeg-min.sh, FFMPEG_MIN, default
# /work/ffmpeg-min), the shared libraries that machine lacks, the corpus'
# video clips (FERRY_CORPUS=$PWD/.devv/corpus there) and two re-encodes of
# pan_1080p_h264.mp4 with other bitrates, GOPs and B-frames (made here with
# the system's ffmpeg, once); .devl/: a 10-minute file for random access;
# .devw/: NVIDIA's PyNvVideoCodec wheel when .whl-nv/ has it (the peer of
# bench/bench_video.py). Carry .devv with one of the others (64 MiB a call);
# bench/gpu_video_checks.sh uses what it finds.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/bundle_lib.sh
B=${FERRY_GPUV_BUILD:-build-gpuv}
FF=${FFMPEG_MIN:-/work/ffmpeg-min}
SHARED=${FERRY_SHARED:-../shared}
D=.devv
[ -d "$FF/lib" ] || scripts/build-ffmpeg-min.sh "$FF"
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DFERRY_HEIF=OFF -DFERRY_FFMPEG_PREFIX="$FF" >/dev/null
cmake --build "$B" -j "$(nproc)" --target ferry test_video_gpu bench_video_seek >/dev/null
mkdir -p .devv-enc
src=$SHARED/corpus/video/pan_1080p_h264.mp4
# libx264 without B-frames, GOP 30, 4 Mbit/s; libx265 with B-frames, GOP 250, 3 Mbit/s
[ -f .devv-enc/enc_nob_4m.mp4 ] || ffmpeg -v error -y -i "$src" -c:v libx264 -bf 0 -g 30 \
  -b:v 4M -maxrate 4M -bufsize 8M .devv-enc/enc_nob_4m.mp4
[ -f .devv-enc/enc_hevc_3m.mp4 ] || ffmpeg -v error -y -i "$src" -c:v libx265 -x265-params \
  log-level=error:keyint=250 -b:v 3M -tag:v hvc1 .devv-enc/enc_hevc_3m.mp4
# a 10-minute 1280x720 H.264 file for random access (testsrc2, x264 superfast,
# B-frames, keyframe interval 250; 300 kbit/s to fit a call)
[ -f .devv-enc/long_720p_300k.mp4 ] || ffmpeg -v error -y -f lavfi -i testsrc2=size=1280x720:rate=30 \
  -t 600 -c:v libx264 -preset superfast -g 250 -bf 3 -b:v 300k -maxrate 400k -bufsize 800k \
  -pix_fmt yuv420p .devv-enc/long_720p_300k.mp4
rm -rf "$D" .devl .devw
mkdir -p "$D/lib" "$D/vid" "$D/corpus/video" .devl .devw
cp "$B/ferry" "$B/test_video_gpu" "$B/bench_video_seek" "$D/"
strip "$D/ferry" "$D/test_video_gpu" "$D/bench_video_seek"
cp .devv-enc/long_720p_300k.mp4 .devl/
bundle_libs "$D/lib"
cp "$SHARED"/corpus/video/* "$D/corpus/video/"
cp .devv-enc/enc_*.mp4 "$D/vid/"
cp "$src" "$D/vid/"
ls .whl-nv/*.whl >/dev/null 2>&1 && cp .whl-nv/*.whl .devw/
du -sh "$D" .devl .devw
