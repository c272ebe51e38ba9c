#!/usr/bin/env bash
# build-ffmpeg-min.sh PREFIX — a minimal, dependency-free static FFmpeg for
# machines that have no libavformat (the GPU test machine: no apt there).
#
# ferry's video module needs libavformat (demuxing, all builds), libavcodec
# (bitstream filters; decoders for the CPU path), libavutil and libswscale.
# A normal install links Debian's shared libraries (scripts/setup.sh). This
# builds the same FFmpeg release Debian ships (so headers and ABI match),
# from Debian's source package, with only what ferry uses: MP4/MOV, Matroska/
# WebM, raw H.264/HEVC and IVF demuxers; H.264/HEVC/VP9 parsers, decoders and
# the Annex-B bitstream filters; file protocol. No external libraries, no
# network, position-independent static archives in PREFIX/lib.
#
# Then: cmake -DFERRY_FFMPEG_PREFIX=PREFIX ... links them statically.
set -euo pipefail
prefix=${1:?usage: build-ffmpeg-min.sh PREFIX}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
work=${FFMPEG_MIN_WORK:-$prefix/src}
mkdir -p "$work"
cd "$work"

if ! ls ffmpeg_*.orig.tar.xz >/dev/null 2>&1; then
  # Debian's source package, through a private apt state (no change to the
  # machine's sources.list).
  . /etc/os-release
  mkdir -p apt/lists/partial parts
  cat >parts/src.sources <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: ${VERSION_CODENAME:-bookworm}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian
Suites: ${VERSION_CODENAME:-bookworm}
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$work/parts"
    -o "Dir::State::Lists=$work/apt/lists")
  apt-get "${opts[@]}" update >/dev/null
  apt-get "${opts[@]}" source --download-only ffmpeg >/dev/null 2>&1
fi
tarball=$(ls ffmpeg_*.orig.tar.xz | head -1)
ver=${tarball#ffmpeg_}
ver=${ver%.orig.tar.xz}
dir=ffmpeg-$ver
[ -d "$dir" ] || tar -xJf "$tarball"
cd "$dir"

./configure --prefix="$prefix" --enable-static --disable-shared --enable-pic \
  --disable-programs --disable-doc --disable-network --disable-autodetect \
  --disable-everything --disable-x86asm --disable-avdevice --disable-avfilter \
  --disable-swresample --disable-postproc \
  --enable-protocol=file \
  --enable-demuxer=mov,matroska,h264,hevc,ivf \
  --enable-parser=h264,hevc,vp9 \
  --enable-decoder=h264,hevc,vp9 \
  --enable-bsf=h264_mp4toannexb,hevc_mp4toannexb,vp9_superframe_split,extract_extradata \
  --enable-swscale >"$prefix/configure.log"
make -j"$(nproc)" >"$prefix/make.log" 2>&1
make install >/dev/null
echo "ffmpeg (minimal, static) in $prefix"
