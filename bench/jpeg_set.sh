#!/usr/bin/env bash
# The JPEG set of the GPU benchmarks, made on the GPU machine from the device bundle
# (bench/device_bundle.sh): N distinct ImageNet-like JPEGs (synth_imagenet.py over the corpus
# photos, 100 classes), each under REPEAT names (hard links: a larger epoch, the same files).
#   bash bench/jpeg_set.sh DIR [N=10000] [REPEAT=4] [SECONDS=120]
# Nothing to do when DIR exists; else made in DIR.tmp and renamed DIR once whole. Exit 1, with
# the end of what synth_imagenet.py printed on stderr, when it fails or runs over SECONDS.
# FERRY_DEVICE_DIR: the bundle (default .device).
set -u
dir=${1:?usage: jpeg_set.sh DIR [N] [REPEAT] [SECONDS]} n=${2:-10000} rep=${3:-4} t=${4:-120}
D=${FERRY_DEVICE_DIR:-.device}
[ -d "$dir" ] && exit 0
rm -rf "$dir.tmp"
if ! out=$(timeout -k 5 "$t" python3 "$D/synth_imagenet.py" "$D/photos" "$dir.tmp" "$n" \
  --classes 100 2>&1); then
  echo "jpeg_set: synth_imagenet.py failed or ran over $t s:" >&2
  echo "$out" | tail -5 >&2
  exit 1
fi
for k in $(seq 2 "$rep"); do
  for d in "$dir.tmp"/class_???; do cp -al "$d" "${d}_r$k"; done
done
mv "$dir.tmp" "$dir"
