#!/usr/bin/env bash
# examples/video_infer.py on the GPU machine: its tests with torch and a GPU,
# then the end-to-end comparison of the issue (ferry's NVDEC batches against
# PyAV-decoded frames resized on the GPU, the same model, the same files, one
# script). Carry .devi (bench/device_bundle_infer.sh) and run:
#   bash bench/video_infer_checks.sh
# TESTS=1|0; MODELS (comma list, video_infer.py --model values; default the
# torch module of the tests, a stand-in for a model cheaper than the decode,
# then torchvision's two lightest detectors); STREAMS (default 1,4,8);
# DECODERS (default ferry,pyav); COPIES of pan_1080p_h264.mp4 (default 12:
# 3,600 1080p frames); SIZE (default 640); BATCH (default 16).
# Output: a line per run, then one JSON line per run (bench summaries).
# Claims it proves (bench/CLAIMS.md): C43.
set -u
V=$PWD/.devi
export LD_LIBRARY_PATH=$PWD/.devi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ ! -d /tmp/site/av ]; then
  python3 -m pip install -q --no-deps --target /tmp/site .devi/whl/*.whl 2>&1 | tail -2
fi
export PYTHONPATH=$PWD/.devi/py:/tmp/site:$PWD/tests/python PYTHONUNBUFFERED=1
export FERRY_PY_PATH=$PWD/.devi/py
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
python3 -c "import av, torch, torchvision, ferry; print('PyAV', av.__version__, 'torch', \
torch.__version__, 'torchvision', torchvision.__version__)"
if [ "${TESTS:-1}" = 1 ]; then
  timeout 400 python3 -m pytest -q -p no:cacheprovider tests/python/test_video_infer.py 2>&1 |
    tail -4
fi
[ "${BENCH:-1}" = 1 ] || exit 0
mkdir -p /tmp/vi
files=()
for i in $(seq 1 "${COPIES:-12}"); do
  ln -sf "$V/vid/pan_1080p_h264.mp4" "/tmp/vi/pan$i.mp4"
  files+=("/tmp/vi/pan$i.mp4")
done
models=${MODELS:-infer_detectors:torch_grid,torchvision:ssdlite320_mobilenet_v3_large,torchvision:fasterrcnn_mobilenet_v3_large_320_fpn}
IFS=, read -ra ms <<< "$models"
IFS=, read -ra ss <<< "${STREAMS:-1,4,8}"
IFS=, read -ra ds <<< "${DECODERS:-ferry,pyav}"
: > /tmp/vi/summaries.jsonl
for m in "${ms[@]}"; do
  for d in "${ds[@]}"; do
    for s in "${ss[@]}"; do
      timeout 300 python3 examples/video_infer.py "${files[@]}" --model "$m" --weights none \
        --score 0.5 --device cuda:0 --size "${SIZE:-640}" --batch "${BATCH:-16}" \
        --dtype float16 --decoder "$d" --streams "$s" -o /dev/null --quiet \
        --json /tmp/vi/one.json 2> /tmp/vi/err.txt
      rc=$?
      if [ -s /tmp/vi/one.json ] && [ $rc = 0 ]; then
        python3 -c "import json; d = json.load(open('/tmp/vi/one.json')); print(json.dumps(d))" \
          >> /tmp/vi/summaries.jsonl
        tail -1 /tmp/vi/err.txt
      else
        echo "FAILED (exit $rc): $m $d streams $s: $(tail -3 /tmp/vi/err.txt)"
      fi
      rm -f /tmp/vi/one.json
    done
  done
done
cat /tmp/vi/summaries.jsonl
