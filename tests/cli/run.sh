#!/usr/bin/env bash
# Command-line integration tests for `ferry`: help, exit codes, messages,
# load/info/decode/demo on the bundled sample. Prints "N passed, N failed".
set -u
FERRY=$(realpath "${1:?usage: run.sh path/to/ferry}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SAMPLE=$ROOT/data/sample
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0

check() { # check NAME EXPECTED_RC GREP_PATTERN -- command...
  local name=$1 want=$2 pat=$3; shift 4
  "$@" >"$TMP/out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; sed 's/^/    /' "$TMP/out" | head -20; fail=$((fail+1)); return
  fi
  if [ -n "$pat" ] && ! grep -qE -- "$pat" "$TMP/out"; then
    echo "FAIL $name: output lacks /$pat/"; sed 's/^/    /' "$TMP/out" | head -20; fail=$((fail+1)); return
  fi
  pass=$((pass+1))
}

check help 0 "commands:" -- "$FERRY" --help
check no-args 2 "usage" -- "$FERRY"
check unknown-cmd 2 "unknown command 'frobnicate'" -- "$FERRY" frobnicate
for c in load info decode demo; do
  check "help-$c" 0 "usage: ferry $c" -- "$FERRY" $c --help
done
check version 0 "ferry 0\." -- "$FERRY" --version
# output that cannot be written (a full disk) is a failure, never exit 0
if [ -w /dev/full ]; then
  check stdout-full 1 "writing standard output failed" -- \
    sh -c '"$0" hash "$1/class0" > /dev/full' "$FERRY" "$SAMPLE"
  check stdout-full-info 1 "writing standard output failed" -- \
    sh -c '"$0" info "$1/class0/p0000.jpg" > /dev/full' "$FERRY" "$SAMPLE"
else
  echo "SKIPPED stdout-full: /dev/full is not writable here"
fi

# info
check info-jpeg 0 "JPEG 702x712, 3 channels, 8-bit YCbCr, 4:4:4, baseline, orientation 1" -- \
  "$FERRY" info "$SAMPLE/class0/p0000.jpg"
check info-orient 0 "orientation 6" -- "$FERRY" info "$SAMPLE/class0/exif_orient6.jpg"
check info-png 0 "PNG" -- "$FERRY" info "$SAMPLE/class2/p0100.png"
# chroma sampled more finely than luma (Cb 2x2 under Y 1x1): no J:a:b name, the factors as they are
python3 -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); i = d.index(b"\xff\xc0") + 14; d[i] = 0x22; open(sys.argv[2], "wb").write(d)' \
  "$SAMPLE/class0/p0000.jpg" "$TMP/odd_sampling.jpg"
check info-odd-sampling 0 "8-bit YCbCr, 1x1,2x2,1x1, baseline" -- "$FERRY" info "$TMP/odd_sampling.jpg"
check info-webp 0 "WebP .*lossy" -- "$FERRY" info "$SAMPLE/class3/p0101.webp"
check info-json 0 '"format": "JPEG", "width": 702' -- "$FERRY" info --json "$SAMPLE/class0/p0000.jpg"
# a name that is not UTF-8: strict UTF-8 JSON, the byte as U+FFFD in "file" and the exact
# bytes in "file_b64" (a UTF-8 name has no "file_b64")
cp "$SAMPLE/class0/p0000.jpg" "$TMP/$(printf 'caf\xe9.jpg')"
check info-json-latin1 0 $'"file": "[^"]*caf\xef\xbf\xbd\\.jpg", "file_b64": "' -- "$FERRY" info --json "$TMP/$(printf 'caf\xe9.jpg')"
check info-json-latin1-b64 0 "" -- bash -o pipefail -c '"$0" info --json "$1" "$2" | python3 -c "
import base64, json, os, sys
lines = sys.stdin.buffer.read().splitlines()
odd, ok = (json.loads(l.decode(\"utf-8\")) for l in lines)
assert len(lines) == 2 and odd[\"file\"] == os.fsencode(sys.argv[1]).decode(\"utf-8\", \"replace\"), odd
assert base64.b64decode(odd[\"file_b64\"]) == os.fsencode(sys.argv[1]), odd
assert ok[\"file\"] == sys.argv[2] and \"file_b64\" not in ok, ok
" "$1" "$2"' "$FERRY" "$TMP/$(printf 'caf\xe9.jpg')" "$SAMPLE/class0/p0000.jpg"
check info-missing 1 "nope.jpg: cannot open" -- "$FERRY" info "$TMP/nope.jpg"
printf 'GIF89a\x01\x00\x01\x00' > "$TMP/x.jpg"
check info-gif 1 "x.jpg: GIF: No screen descriptor detected" -- "$FERRY" info "$TMP/x.jpg"
: > "$TMP/empty.jpg"
check info-empty 1 "empty.jpg: empty file" -- "$FERRY" info "$TMP/empty.jpg"
check info-mixed 1 "p0000.jpg: JPEG" -- "$FERRY" info "$SAMPLE/class0/p0000.jpg" "$TMP/empty.jpg"
check info-bad-opt 2 "unknown option" -- "$FERRY" info --frob x

# decode
check decode 0 "-> $TMP/a.png" -- "$FERRY" decode "$SAMPLE/class0/p0000.jpg" -o "$TMP/a.png"
check decode-roundtrip 0 "PNG 702x712" -- "$FERRY" info "$TMP/a.png"
check decode-size 0 "224x224" -- "$FERRY" decode "$SAMPLE/class0/p0000.jpg" -o "$TMP/b.png" --size 224
check decode-crop 0 "100x50" -- "$FERRY" decode "$SAMPLE/class0/p0000.jpg" -o "$TMP/c.png" --crop 10,20,100,50
check decode-gray 0 "1 channel" -- "$FERRY" decode "$SAMPLE/class0/p0000.jpg" -o "$TMP/d.png" --gray
check decode-trunc 1 "truncated.jpg: truncated JPEG" -- "$FERRY" decode "$SAMPLE/class3/truncated.jpg" -o "$TMP/e.png"
[ -e "$TMP/e.png" ] && { echo "FAIL decode-trunc left an output file"; fail=$((fail+1)); }
check decode-no-out 2 "needs -o" -- "$FERRY" decode "$SAMPLE/class0/p0000.jpg"
check decode-bad-size 2 "--size needs" -- "$FERRY" decode "$SAMPLE/class0/p0000.jpg" -o "$TMP/f.png" --size 0
check decode-max-pixels 1 "over the 1000-pixel limit" -- "$FERRY" decode "$SAMPLE/class0/p0000.jpg" -o "$TMP/g.png" --max-pixels 1000
check decode-bad-dir 1 "cannot" -- "$FERRY" decode "$SAMPLE/class0/p0000.jpg" -o "$TMP/no/such/dir/x.png"
# an output that is the input (itself, or through a link) is refused, the input kept
cp "$SAMPLE/class0/p0000.jpg" "$TMP/self.jpg"; ln -s self.jpg "$TMP/self-link.png"
check decode-self 2 "is the input .*refusing to overwrite" -- "$FERRY" decode "$TMP/self.jpg" -o "$TMP/self.jpg" --size 32
check decode-self-link 2 "is the input .*refusing to overwrite" -- "$FERRY" decode "$TMP/self.jpg" -o "$TMP/self-link.png"
check decode-self-kept 0 "JPEG 702x712" -- "$FERRY" info "$TMP/self.jpg"
# the writer comes from the output's extension (issue 20): JPEG, PPM, PNG; others refused
check decode-jpg 0 "-> $TMP/out.jpg" -- "$FERRY" decode "$SAMPLE/class0/p0000.jpg" -o "$TMP/out.jpg" --quality 90
check decode-jpg-is-jpeg 0 "out.jpg: JPEG 702x712" -- "$FERRY" info "$TMP/out.jpg"
check decode-ppm 0 "P6" -- sh -c '"$0" decode "$1" -o "$2" >/dev/null && head -c 2 "$2"' "$FERRY" "$SAMPLE/class0/p0000.jpg" "$TMP/out.ppm"
check decode-bad-ext 2 "out.gif: cannot tell which format to write.*\.png, \.jpg, \.jpeg or \.ppm" -- \
  "$FERRY" decode "$SAMPLE/class0/p0000.jpg" -o "$TMP/out.gif"
[ -e "$TMP/out.gif" ] && { echo "FAIL decode-bad-ext left an output file"; fail=$((fail+1)); }
# --size N on a picture that is not square says the aspect ratio changes; --keep-aspect keeps it
check decode-aspect 0 "702x712 resized to 224x224: aspect ratio not kept" -- \
  "$FERRY" decode "$SAMPLE/class0/p0000.jpg" -o "$TMP/sq.png" --size 224
check decode-keep-aspect 0 "exif_orient6.jpg: 100x126" -- \
  "$FERRY" decode "$SAMPLE/class0/exif_orient6.jpg" -o "$TMP/ka.png" --size 100 --keep-aspect
# - reads the image from standard input
check decode-stdin 0 "standard input: 702x712" -- \
  sh -c '"$0" decode - -o "$1" < "$2"' "$FERRY" "$TMP/stdin.png" "$SAMPLE/class0/p0000.jpg"
check decode-stdin-bad 1 "standard input: truncated JPEG" -- \
  sh -c '"$0" decode - -o "$1" < "$2"' "$FERRY" "$TMP/stdin2.png" "$SAMPLE/class3/truncated.jpg"
# ferry help CMD is CMD's help
check help-cmd 0 "usage: ferry decode FILE" -- "$FERRY" help decode
check help-nosuch 2 "unknown command 'nosuch'" -- "$FERRY" help nosuch
# ferry video refuses a still image, naming it
check video-still 2 "p0000.jpg: a still image \(JPEG\), not a video; use .ferry decode." -- \
  "$FERRY" video "$SAMPLE/class0/p0000.jpg"
# --json: one JSON object on stdout (bash: pipefail keeps ferry's exit code)
check doctor-json 0 "" -- bash -o pipefail -c '"$0" doctor --json | python3 -c "import json,sys; json.load(sys.stdin)"' "$FERRY"
# issue 51: the test controls (core/testctl.h) and deployment paths that are set, named by
# doctor; a bad value warned about in the one wording; -v/--verbose for any command, anywhere
check doctor-testctl 0 "^FERRY_ISA=scalar: a test control, not for production" -- \
  env FERRY_ISA=scalar FERRY_OPENCL_LIBRARY=/nonexistent/libOpenCL.so "$FERRY" doctor
check doctor-deploy 0 "^FERRY_OPENCL_LIBRARY=/nonexistent/libOpenCL.so: " -- \
  env FERRY_OPENCL_LIBRARY=/nonexistent/libOpenCL.so "$FERRY" doctor
check doctor-testctl-json 0 "" -- bash -o pipefail -c 'FERRY_GPU_PAD=48 FERRY_STALL_AT=5:300 "$0" doctor --json | python3 -c "import json,sys; d = json.load(sys.stdin); assert d[\"test_controls\"] == {\"FERRY_GPU_PAD\": \"48\", \"FERRY_STALL_AT\": \"5:300\"} and d[\"deployment_env\"] == {}, d"' "$FERRY"
check testctl-bad 0 "FERRY_GPU_PAD=99 is not a whole number 0\.\.63 \(a test control: .*\): ignored" -- \
  env FERRY_GPU_PAD=99 "$FERRY" doctor
check verbose-video 0 "^stages, seconds summed over files" -- \
  "$FERRY" video --quiet -v "$ROOT/tests/fixtures/video/testsrc_h264.mp4"
check quiet-video-no-stages 0 "" -- bash -c '! "$0" video --quiet "$1" 2>&1 | grep -q "^stages"' \
  "$FERRY" "$ROOT/tests/fixtures/video/testsrc_h264.mp4"
check verbose-ffmpeg-log 3 "^\[h264 @ " -- "$FERRY" --verbose video --quiet "$ROOT/tests/fixtures/video/garbled_h264.mp4"
check verbose-after-dashdash 1 "ferry decode: -v: cannot open" -- "$FERRY" decode -o "$TMP/v.png" -- -v
check nvdec-keep-range 2 "--nvdec-keep needs an integer in 0\.\.64" -- \
  "$FERRY" video --nvdec-keep 65 "$ROOT/tests/fixtures/video/testsrc_h264.mp4"
check hash-engine-min-s 2 "--engine-min-s" -- "$FERRY" hash --engine-min-s soon "$SAMPLE"
check load-park-workers 3 "epoch 0: 48 images" -- "$FERRY" load "$SAMPLE" --size 16 --park-workers --quiet

# load
check load 3 "epoch 1: 48 images, 1 skipped" -- "$FERRY" load "$SAMPLE" --size 64 --batch 16 --epochs 2 --workers 2 --quiet
check load-skip-msg 3 "skipped .*truncated.jpg: truncated JPEG" -- "$FERRY" load "$SAMPLE" --size 32 --batch 8 --quiet
check load-fail 1 "truncated.jpg" -- "$FERRY" load "$SAMPLE" --size 32 --on-error fail --quiet
check load-random 3 "images/s" -- "$FERRY" load "$SAMPLE" --size 96x64 --crop random --flip --dtype f16 --normalize --layout hwc --quiet
# an optional value as the next word; --flip DIR is the flag alone (issue 20)
check load-flip-word 3 "epoch 0: 48 images" -- "$FERRY" load "$SAMPLE" --size 16 --flip 0.7 --quiet
check load-flip-dir 3 "epoch 0: 48 images" -- "$FERRY" load --size 16 --flip "$SAMPLE" --quiet
check load-flip-range 2 "--flip needs a number in 0..1, got '2'" -- "$FERRY" load "$SAMPLE" --flip 2
check load-no-gpu 3 "epoch 0: 48 images" -- "$FERRY" load "$SAMPLE" --size 16 --no-gpu --quiet
# fixed-shape batches: skipped files' places take the next samples (49 files + 8 broken
# copies in a row, 9 bad: 48 good); every batch full but the last, with --drop-last all
mkdir -p "$TMP/holes" && cp -r "$SAMPLE"/class* "$TMP/holes/"
for i in 0 1 2 3 4 5 6 7; do head -c 3000 "$SAMPLE/class1/p0001.jpg" > "$TMP/holes/class1/q$i.jpg"; done
check load-full-batches 3 "^epoch 0 batches: 10 10 10 10 8\$" -- "$FERRY" load "$TMP/holes" --size 16 --batch 10 --batch-sizes --quiet --no-shuffle
check load-full-batches-shuffled 3 "^epoch 1 batches: 10 10 10 10 8\$" -- "$FERRY" load "$TMP/holes" --size 16 --batch 10 --batch-sizes --quiet --epochs 2 --workers 3
check load-full-batches-drop 3 "^epoch 0 batches: 10 10 10 10\$" -- "$FERRY" load "$TMP/holes" --size 16 --batch 10 --batch-sizes --quiet --drop-last
check load-full-batches-named 3 "epoch 0: 48 images, 9 skipped, 6 batches in" -- "$FERRY" load "$TMP/holes" --size 16 --batch 8 --quiet --no-shuffle
check load-full-batches-8 3 "^epoch 0 batches: 8 8 8 8 8 8\$" -- "$FERRY" load "$TMP/holes" --size 16 --batch 8 --batch-sizes --quiet --no-shuffle
check load-json 3 "" -- bash -o pipefail -c '"$0" load "$1" --size 16 --json | python3 -c "import json,sys; d = json.load(sys.stdin); assert d[\"skipped\"] == 1, d"' "$FERRY" "$SAMPLE"
check hash-json 3 "" -- bash -o pipefail -c '"$0" hash "$1" -o "$2" --json | python3 -c "import json,sys; d = json.load(sys.stdin); assert d[\"failed\"] == 1, d"' "$FERRY" "$SAMPLE" "$TMP/json.fidx"
# - reads a list from standard input, relative paths from the working directory
check load-stdin 0 "source standard input: 2 images" -- \
  sh -c 'cd "$1" && printf "class0/p0000.jpg,1\nclass1/p0001.jpg,0\n" | "$0" load - --size 16 --quiet' "$FERRY" "$SAMPLE"
check hash-stdin 0 "class1/p0001.jpg,585,533" -- \
  sh -c 'cd "$1" && printf "class0/p0000.jpg\nclass1/p0001.jpg\n" | "$0" hash -' "$FERRY" "$SAMPLE"
check load-shard 0 "this rank: 16 images" -- "$FERRY" load "$SAMPLE" --size 32 --world-size 3 --rank 2 --drop-last --batch 8 --quiet
check load-grid 3 "wrote $TMP/grid.png" -- "$FERRY" load "$SAMPLE" --size 64 --save-grid "$TMP/grid.png"
check load-grid-file 0 "PNG 512x" -- "$FERRY" info "$TMP/grid.png"
check load-bad-dtype 2 "--dtype must be" -- "$FERRY" load "$SAMPLE" --dtype f64
# the stall watchdog: the 5th decode sleeps 3 s, the time-out is 0.3 s
check load-stall 1 "stalled: no sample finished for 0\.[3-9] s .*worker [0-9]+: decoding .*\.jpg for" -- \
  env FERRY_STALL_AT=5:3000 "$FERRY" load "$SAMPLE" --size 32 --batch 4 --workers 2 --stall-timeout 0.3 --quiet
check load-stall-close 1 "loader closed with 1 thread still blocked" -- \
  env FERRY_STALL_AT=5:3000 "$FERRY" load "$SAMPLE" --size 32 --batch 4 --workers 2 --stall-timeout 0.3 --quiet
check load-stall-off 3 "epoch 0: 48 images" -- \
  env FERRY_STALL_AT=5:500 "$FERRY" load "$SAMPLE" --size 32 --batch 4 --workers 2 --stall-timeout 0 --quiet
# ferry dupes given a folder says how to make its catalog; an empty catalog has no groups
check dupes-folder 2 "ferry hash .*/sample -o .*/sample.fidx" -- \
  "$FERRY" dupes "$SAMPLE"
mkdir -p "$TMP/allbad" && echo junk > "$TMP/allbad/x.jpg"
"$FERRY" hash "$TMP/allbad" -o "$TMP/allbad.fidx" >/dev/null 2>&1
check dupes-no-hashes 0 "0 groups, 0 files, 0 pairs" -- "$FERRY" dupes "$TMP/allbad.fidx"
# --device opencl[:N]: a bad value is a usage error; a device that is not there fails naming why
check dupes-opencl-usage 2 "--device opencl:N needs an integer" -- \
  "$FERRY" dupes "$TMP/allbad.fidx" --device opencl:x
"$FERRY" hash "$SAMPLE/class0" -o "$TMP/class0.fidx" >/dev/null 2>&1
check dupes-opencl-missing 1 "OpenCL device 999 does not exist|no OpenCL" -- \
  "$FERRY" dupes "$TMP/class0.fidx" --device opencl:999
check doctor-opencl 0 "^OpenCL: " -- "$FERRY" doctor
# NVIDIA's OpenCL installed but not registered with the ICD loader: doctor says how to name it
# (a stand-in library with the driver's ICD entry point)
if command -v cc > /dev/null; then
  mkdir -p "$TMP/fakecl"
  echo 'int clIcdGetPlatformIDsKHR(unsigned n, void **p, unsigned *k) { (void)n, (void)p; if (k) *k = 0; return -1001; }' > "$TMP/fakecl/icd.c"
  cc -shared -fPIC -o "$TMP/fakecl/libnvidia-opencl.so.1" "$TMP/fakecl/icd.c"
  check doctor-opencl-unregistered 0 "NVIDIA's OpenCL driver is installed \(.*fakecl/libnvidia-opencl.so.1\) but not registered.*OCL_ICD_FILENAMES=" -- \
    env LD_LIBRARY_PATH="$TMP/fakecl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$FERRY" doctor
else
  echo "SKIPPED doctor-opencl-unregistered: no C compiler to build the stand-in library"
fi
check hash-opencl-usage 2 "--device opencl:N needs an integer" -- \
  "$FERRY" hash "$SAMPLE/class0" --device opencl:x
check hash-opencl-fast 2 "--device opencl hashes in compatible mode only" -- \
  "$FERRY" hash "$SAMPLE/class0" --device opencl --mode fast
check hash-opencl-missing 1 "cannot hash on opencl:999: .*(OpenCL device 999 does not exist|no OpenCL)" -- \
  "$FERRY" hash "$SAMPLE/class0" --device opencl:999 -o "$TMP/ocl999.fidx"
# on an OpenCL device (PoCL in CI) the groups are the CPU's, byte for byte
if "$FERRY" doctor 2>/dev/null | grep -q '^opencl:0: '; then
  mkdir -p "$TMP/twice/a" "$TMP/twice/b"
  cp "$SAMPLE"/class0/*.jpg "$TMP/twice/a/" && cp "$SAMPLE"/class0/*.jpg "$TMP/twice/b/"
  "$FERRY" hash "$TMP/twice" -o "$TMP/twice.fidx" >/dev/null 2>&1
  check dupes-opencl 0 "groups, .* \(OpenCL," -- "$FERRY" dupes "$TMP/twice.fidx" --device opencl \
    --format csv -o "$TMP/twice-ocl.csv"
  "$FERRY" dupes "$TMP/twice.fidx" --format csv -o "$TMP/twice-cpu.csv" >/dev/null 2>&1
  if [ "$(wc -l < "$TMP/twice-cpu.csv")" -gt 2 ] && cmp -s "$TMP/twice-cpu.csv" "$TMP/twice-ocl.csv"; then
    pass=$((pass+1))
  else
    echo "FAIL dupes-opencl-same: the OpenCL groups differ from the CPU's (or none were found)"
    fail=$((fail+1))
  fi
  # the hashes on OpenCL are compatible mode's, byte for byte
  "$FERRY" hash "$SAMPLE" --device opencl > "$TMP/hash-ocl.csv" 2>/dev/null
  "$FERRY" hash "$SAMPLE" --mode compatible > "$TMP/hash-cpu.csv" 2>/dev/null
  if [ "$(wc -l < "$TMP/hash-cpu.csv")" -gt 40 ] && cmp -s "$TMP/hash-cpu.csv" "$TMP/hash-ocl.csv"; then
    pass=$((pass+1))
  else
    echo "FAIL hash-opencl-same: ferry hash --device opencl differs from --mode compatible"
    fail=$((fail+1))
  fi
else
  echo "SKIPPED dupes-opencl: no OpenCL device ($("$FERRY" doctor 2>&1 | grep '^OpenCL'))"
fi
# --device cuda:LIST (the search shared among GPUs): a bad part is named; on a GPU, device 0
# listed twice (two threads on it) writes the CPU's groups byte for byte
check dupes-cuda-list-usage 2 "--device cuda:0,x: 'x' is not a device number \(0..255\)" -- \
  "$FERRY" dupes "$TMP/class0.fidx" --device cuda:0,x
check dupes-cuda-list-empty 2 "--device cuda:0,,1: an empty device number" -- \
  "$FERRY" dupes "$TMP/class0.fidx" --device cuda:0,,1
check dupes-cuda-list-long 2 "--device cuda:0,0,0,0,0,0,0,0,0: at most 8 devices" -- \
  "$FERRY" dupes "$TMP/class0.fidx" --device cuda:0,0,0,0,0,0,0,0,0
if "$FERRY" doctor 2>/dev/null | grep -q '^cuda:0: '; then
  mkdir -p "$TMP/twice2/a" "$TMP/twice2/b"
  cp "$SAMPLE"/class0/*.jpg "$TMP/twice2/a/" && cp "$SAMPLE"/class0/*.jpg "$TMP/twice2/b/"
  "$FERRY" hash "$TMP/twice2" -o "$TMP/twice2.fidx" >/dev/null 2>&1
  check dupes-cuda-list 0 "groups, .* \(GPUs," -- "$FERRY" dupes "$TMP/twice2.fidx" \
    --device cuda:0,0 --format csv -o "$TMP/twice2-gpus.csv"
  "$FERRY" dupes "$TMP/twice2.fidx" --format csv -o "$TMP/twice2-cpu.csv" >/dev/null 2>&1
  if [ "$(wc -l < "$TMP/twice2-cpu.csv")" -gt 2 ] && cmp -s "$TMP/twice2-cpu.csv" "$TMP/twice2-gpus.csv"; then
    pass=$((pass+1))
  else
    echo "FAIL dupes-cuda-list-same: the groups of cuda:0,0 differ from the CPU's (or none were found)"
    fail=$((fail+1))
  fi
else
  echo "SKIPPED dupes-cuda-list: no CUDA device ($("$FERRY" doctor 2>&1 | grep -m1 'CUDA driver' | sed 's/^ *//'))"
fi
check load-bad-stall 2 "--stall-timeout" -- "$FERRY" load "$SAMPLE" --stall-timeout -1
check load-bad-batch 2 "--batch needs" -- "$FERRY" load "$SAMPLE" --batch 0
check load-bad-rank 1 "rank 5 not in" -- "$FERRY" load "$SAMPLE" --rank 5 --world-size 2
check load-missing 1 "nowhere: No such file" -- "$FERRY" load "$TMP/nowhere"
mkdir -p "$TMP/emptydir"
check load-empty 1 "no images found" -- "$FERRY" load "$TMP/emptydir"
check hash-no-images-at-all 1 "no image files found .ferry reads JPEG, PNG, WebP, TIFF, GIF, HEIF .HEIC, AVIF., BMP and camera raw: .jpg .jpeg .jpe .jfif .png .webp .tif .tiff .gif .heic .heif .hif .avif .bmp .dng .cr2 .cr3 .nef .arw .orf .rw2 .raf .pef; Photoshop files are not read" -- \
  "$FERRY" hash "$TMP/emptydir"
# a folder of formats ferry does not read says which it saw and which it reads
touch "$TMP/emptydir/a.psd" "$TMP/emptydir/b.PSD"
check hash-no-images 1 "no image files ferry reads: found 2 Photoshop file.s., formats ferry does not read yet .it reads JPEG, PNG, WebP, TIFF, GIF, HEIF .HEIC, AVIF., BMP and camera raw: .jpg .jpeg .jpe .jfif .png .webp .tif .tiff .gif .heic .heif .hif .avif .bmp .dng .cr2 .cr3 .nef .arw .orf .rw2 .raf .pef" -- \
  "$FERRY" hash "$TMP/emptydir"
check load-no-images 1 "no images ferry reads: found 2 Photoshop file.s., formats ferry does not read yet .it reads JPEG, PNG, WebP, TIFF, GIF, HEIF .HEIC, AVIF., BMP and camera raw: .jpg .jpeg .jpe .jfif .png .webp .tif .tiff .gif .heic .heif .hif .avif .bmp .dng .cr2 .cr3 .nef .arw .orf .rw2 .raf .pef" -- \
  "$FERRY" load "$TMP/emptydir"
mkdir -p "$TMP/emptydir2/cls"
touch "$TMP/emptydir2/cls/notes.txt"
check load-no-images-none-seen 1 "no images found .looked for .jpg .jpeg .jpe .jfif .png .webp .tif .tiff .gif .heic .heif .hif .avif .bmp .dng .cr2 .cr3 .nef .arw .orf .rw2 .raf .pef in it" -- \
  "$FERRY" load "$TMP/emptydir2"
printf '%s\n' "$SAMPLE/class0/p0000.jpg,1" "$SAMPLE/class1/p0001.jpg,0" > "$TMP/list.txt"
check load-list 0 "2 images, 0 skipped" -- "$FERRY" load "$TMP/list.txt" --size 32 --quiet
# a UTF-8 byte order mark before the first path is not part of it
printf '\xEF\xBB\xBF%s\n%s\n' "$SAMPLE/class0/p0000.jpg,1" "$SAMPLE/class1/p0001.jpg,0" > "$TMP/bom.txt"
check load-list-bom 0 "2 images, 0 skipped" -- "$FERRY" load "$TMP/bom.txt" --size 32 --quiet
# a label past the int range is refused, naming the line (no signed overflow)
printf '%s\n' "$SAMPLE/class0/p0000.jpg,2147483647" > "$TMP/biglabel.txt"
check load-list-big-label 1 "biglabel.txt:1: label '2147483647' is not an integer in 0..2147483646" -- \
  "$FERRY" load "$TMP/biglabel.txt" --size 32 --quiet
# a device is never read as a list file; a line past 64 KiB ends the list, in bounded memory
check load-dev-zero 1 "/dev/zero: a character device, not a folder or a list file" -- "$FERRY" load /dev/zero --size 32
head -c 200000 /dev/zero | tr '\0' a > "$TMP/longline.txt"
check load-long-line 1 "longline.txt:1: a line of more than 65536 bytes" -- "$FERRY" load "$TMP/longline.txt"
# pack says it left bad files out, and exits 3 as load and hash do
check pack-skip 3 "skipped .*truncated.jpg.*|1 bad files left out" -- "$FERRY" pack "$SAMPLE" -o "$TMP/pk" --size 32 --quiet
check pack-skip-count 3 "1 bad files left out" -- "$FERRY" pack "$SAMPLE" -o "$TMP/pk2" --size 32 --quiet
# any byte a name can hold survives packing: a newline, a comma
mkdir -p "$TMP/odd/c0"
cp "$SAMPLE/class0/p0000.jpg" "$TMP/odd/c0/$(printf 'new\nline.jpg')"
cp "$SAMPLE/class0/p0004.jpg" "$TMP/odd/c0/root,comma.jpg"
cp "$SAMPLE/class0/p0000.jpg" "$TMP/odd/c0/plain.jpg"
check pack-odd-names 0 "packed" -- "$FERRY" pack "$TMP/odd" -o "$TMP/oddpk" --size 32 --quiet
check pack-odd-names-load 0 "epoch 0: 3 images, 0 skipped" -- "$FERRY" load "$TMP/oddpk" --size 32 --quiet
# a pack loads at its own size (here 32), not resampled to the default 224
check load-pack-size 0 "a pack of 32x32 samples" -- "$FERRY" load "$TMP/oddpk" --save-grid "$TMP/pkgrid.png"
check load-pack-grid 0 "PNG 96x32" -- "$FERRY" info "$TMP/pkgrid.png"

# demo
(cd "$TMP" && "$FERRY" demo --epochs 1 --grid "$TMP/demo.png" > "$TMP/demo.out" 2>&1)
rc=$?
if [ $rc = 0 ] && grep -q "images/s" "$TMP/demo.out" && [ -s "$TMP/demo.png" ]; then pass=$((pass+1));
else echo "FAIL demo: exit $rc"; cat "$TMP/demo.out"; fail=$((fail+1)); fi

echo "$pass passed, $fail failed"
[ $fail = 0 ]
