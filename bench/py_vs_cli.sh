#!/usr/bin/env bash
# Probe (device tool, .device/ carried): one GPU, one set, the same options, the
# loader driven four ways, ROUNDS times interleaved: `ferry load` (the CLI);
# ferry.Loader from Python without torch (output="tensor"); the same after
# `import torch` and torch.cuda.set_device (output still "tensor"); and with
# output="torch" (labels to the GPU per batch, as dist_load.py and the example
# take them). Per run: images/s over the warm epochs (2..EPOCHS), the engine's
# share, ms a call in the engine. Issue 21: the CLI's 43,847 images/s against
# dist_load's 26,662-34,286 on one rank (bench/RESULTS.md, tenth session).
#   bash bench/py_vs_cli.sh SET       (ROUNDS=2 EPOCHS=3 GPU=0)
set -u
# shellcheck source=bench/probe_env.sh
. "$(dirname "$0")/probe_env.sh"
set_dir=$1
rounds=${ROUNDS:-2} epochs=${EPOCHS:-3} gpu=${GPU:-0}
cli() {
  timeout 120 .device/ferry load "$set_dir" --device "cuda:$gpu" --crop random --dtype f16 \
    --flip --normalize --epochs "$epochs" --drop-last --json --quiet >"$OUT/cli.json" 2>"$OUT/cli.err" ||
    { echo "cli: failed ($?): $(tail -2 "$OUT/cli.err")"; return; }
  python3 - "$OUT/cli.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); ep = d["epochs"][1:]
img = sum(e["images"] for e in ep); s = sum(e["seconds"] for e in ep)
g = sum(e["gpu_decoded"] for e in ep); c = sum(e["gpu_chunks"] for e in ep)
call = sum(e.get("gpu_call_s", 0) for e in ep)
print(f"{'cli':>12}: {img / s:8.0f} images/s, {d['workers']} workers, engine {g / img:5.1%} "
      f"of images, {1e3 * call / max(c, 1):5.2f} ms a call, {g / max(c, 1):4.1f} a chunk")
PY
}
py() {
  timeout 120 python3 - "$set_dir" "$1" "$epochs" "$gpu" <<'PY' 2>"$OUT/py-$1.err" ||
import sys, time
set_dir, mode, epochs, gpu = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
torch = None
if mode != "tensor":
    import torch
    torch.cuda.set_device(gpu)
import ferry
L = ferry.Loader(set_dir, 256, 224, device=f"cuda:{gpu}", dtype="float16", crop="random",
                 flip=True, mean=ferry.IMAGENET_MEAN, std=ferry.IMAGENET_STD, shuffle=True,
                 seed=0, drop_last=True, output="torch" if mode == "torch" else "tensor")
img = sec = g = c = call = 0
for e in range(epochs):
    s0, t0, n = L.stats(), time.perf_counter(), 0
    for images, labels in L:
        n += int(images.shape[0])
    if torch is not None:
        torch.cuda.synchronize(gpu)
    t, s1 = time.perf_counter() - t0, L.stats()
    if e > 0:
        img += n; sec += t
        g += s1["gpu_decoded"] - s0["gpu_decoded"]; c += s1["gpu_chunks"] - s0["gpu_chunks"]
        call += s1["gpu_call_s"] - s0["gpu_call_s"]
print(f"{mode:>12}: {img / sec:8.0f} images/s, {L.workers} workers, engine {g / img:5.1%} "
      f"of images, {1e3 * call / max(c, 1):5.2f} ms a call, {g / max(c, 1):4.1f} a chunk")
PY
  echo "$1: failed: $(tail -2 "$OUT/py-$1.err")"
}
for r in $(seq 1 "$rounds"); do
  echo "-- round $r"
  cli
  py tensor
  py torch-imported
  py torch
done
