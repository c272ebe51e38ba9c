#!/usr/bin/env bash
# One call on the GPU machine with .devv/ (bench/device_bundle_video.sh)
# carried, and .devl/ or .devw/ beside it:
#   TESTS=1: test_video_gpu (with the corpus clips);
#   SEEK=1 (needs .devl): bench_video_seek, random access on the 10-minute
#     file on NVDEC and on the CPU (open once, 40 random frames + chosen ones);
#   BENCH=1: bench/bench_video.py on FILES (default .devv/vid/*.mp4): ferry
#     every frame and --stride 25, and PyNvVideoCodec (threads and processes)
#     when .devw/ or /tmp/nvc has it.
#   bash bench/gpu_video_checks.sh [ROUNDS] [FILES...]
# Claims it proves (bench/CLAIMS.md): C37, C38, C41, C42.
set -u
rounds=${1:-1}
shift 2>/dev/null || true
export LD_LIBRARY_PATH=$PWD/.devv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FERRY_CORPUS=$PWD/.devv/corpus PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
if [ ! -d /tmp/nvc ] && ls .devw/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-deps --target /tmp/nvc .devw/*.whl 2>&1 | tail -2
fi
[ -d /tmp/nvc ] && export PYTHONPATH=/tmp/nvc${PYTHONPATH:+:$PYTHONPATH}
if [ "${TESTS:-1}" = 1 ]; then
  timeout 300 .devv/test_video_gpu > /tmp/tvg.txt 2>&1
  echo "test_video_gpu exit $?"
  grep -E "stride|frame_at|garbled|FAIL|passed" /tmp/tvg.txt | tail -14
fi
if [ "${SEEK:-0}" = 1 ] && [ -f .devl/long_720p_300k.mp4 ]; then
  for dev in 0 -1; do
    timeout 250 .devv/bench_video_seek .devl/long_720p_300k.mp4 --device $dev \
      --frames 0,249,250,9000,17999,125 --random 40 --seed 7 2>&1 | tail -"${SEEK_LINES:-3}"
  done
fi
[ "${BENCH:-1}" = 1 ] || exit 0
files=("$@")
[ ${#files[@]} = 0 ] && files=(.devv/vid/*.mp4)
for f in "${files[@]}"; do
  echo "== $f"
  timeout 560 python3 bench/bench_video.py --ferry .devv/ferry "$f" --repeat 40 \
    --jobs "${JOBS:-16}" --stride "${STRIDES:-1,25}" --nvc-procs "${NVC_PROCS-8}" \
    --nvc-threads "${NVC_THREADS-8,16}" --skip-opencv --rounds "$rounds" ${DALI:+--dali --dali-files ${DALI_FILES:-8}} 2>&1 | tail -18
done
