"""bench/gpu_x2_checks.sh's ab mode, run against stand-ins for torchrun and nvidia-smi: the
options each variant's flags give the example, each ratio's 1-GPU baseline, the census summed up
per variant, and a bad variant reported. No GPU, no torch: the stand-in prints the JSON line
examples/train_imagenet.py would."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

# The stand-in python3: `-m torch.distributed.run ...` prints a run's JSON line, with images/s
# 1,000 per process (1,100 with --cudnn-benchmark quiet) and, with --kernel-census, each rank's
# census: the ranks' kernels differ unless cuDNN was tuned quietly; `-c '...import torch...'`
# prints a version; anything else runs the real interpreter.
FAKE_PYTHON = """#!/bin/bash
if [ "$1" = -m ] && [ "$2" = torch.distributed.run ]; then
  np=1; all="$*"
  for ((i = 1; i <= $#; i++)); do
    [ "${!i}" = --nproc-per-node ] && { j=$((i + 1)); np=${!j}; }
  done
  per=1000; [[ "$all" == *"--cudnn-benchmark quiet"* ]] && per=1100
  # FAKE_SLOW_FIRST: the first one-process run is slow (900), as a real 1x0 run can be
  if [ -n "${FAKE_SLOW_FIRST:-}" ] && [ "$np" = 1 ] && [ ! -e "$FAKE_SLOW_FIRST" ]; then
    : > "$FAKE_SLOW_FIRST"; per=900
  fi
  # FAKE_SLOW_TWO: the first run of several processes is slow (900 each), as a DDP run can be
  if [ -n "${FAKE_SLOW_TWO:-}" ] && [ "$np" -gt 1 ] && [ ! -e "$FAKE_SLOW_TWO" ]; then
    : > "$FAKE_SLOW_TWO"; per=900
  fi
  census=""; ranks=""
  c() { echo '{"steps": 2, "kernel_ms_per_step": '$1', "distinct": '$2', "digest": "'$3'"}'; }
  if [[ "$all" == *--kernel-census* ]]; then
    d1=aaaaaaaaaa; [[ "$all" == *"--cudnn-benchmark quiet"* ]] || d1=bbbbbbbbbb
    census=', "kernel_census": '$(c 41.0 70 aaaaaaaaaa)
    r0='{"rank": 0, "kernel_census": '$(c 41.0 70 aaaaaaaaaa)'}'
    r1='{"rank": 1, "kernel_census": '$(c 41.5 72 $d1)'}'
    [ "$np" -gt 1 ] && ranks=', "ranks": ['"$r0, $r1"']'
  fi
  if [[ "$all" == *dist_load.py* ]]; then  # the loader's benchmark: 30,000 images/s a rank
    echo "stand-in dist_load: $all (policy: ${FERRY_GPU_ENGINE_POLICY:-default}, engine only: ${FERRY_BENCH_ENGINE_ONLY:-0}, pad: ${FERRY_GPU_PAD:-default}, nice: ${FERRY_WORKER_NICE:-0}, shed: ${FERRY_WORKER_SHED:-0})" >&2
    if [ "${FERRY_DEBUG:-0}" = 1 ]; then  # the engine controller's lines (device.c)
      echo "ferry: debug: JPEG engine contexts 4 -> 3: the CPU workers keep up (90.0 batches/s, CPU workers idle 30 %)" >&2
      echo "ferry: debug: JPEG engine contexts 3 -> 4: the loader is the limit: one more on trial (91.0 batches/s, CPU workers idle 1 %)" >&2
      echo "ferry: debug: JPEG engine contexts 4 -> 3: the context on trial did not pay (90.5 batches/s, CPU workers idle 2 %)" >&2
    fi
    rk=""
    for ((r = 0; r < np; r++)); do
      rk="$rk${rk:+, }"'{"rank": '$r', "device": "cuda:'$r'", "images_per_s": 30000, "workers": 12, "gpu_decoded": 100, "gpu_chunks": 4, "gpu_call_s": 0.02, "decode_s": 1.0, "idle_s": 0.1, "numa": [-1, "unplaced"], "cores_busy": 14.0, "cpu_s": {"ferry-worker": 10.0}}'
    done
    echo '{"bench": "dist_load", "world_size": '$np', "ok": true, "images_per_s": '$((30000 * np))', "ranks": ['"$rk"']}'
    exit 0
  fi
  echo "stand-in torchrun: $all (allocator: ${PYTORCH_CUDA_ALLOC_CONF:-default})" >&2
  sleep "${FAKE_RUN_SLEEP:-0}"
  stages=""
  [[ "$all" == *--forward-stages* ]] && stages=', "forward_stages_ms": {"gpu": {"stem": 1.5, "layer1": 3.25}, "host": {"stem": 0.5}}'
  bn=epoch-mean; [[ "$all" =~ --ddp-bn[[:space:]]([a-z-]+) ]] && bn=${BASH_REMATCH[1]}
  [ "$np" -gt 1 ] && stages="$stages"', "ddp": {"bn_stats": "'$bn'"}'
  fwd=16.2; [ "$per" = 900 ] && fwd=16.6  # a slow run's forward is longer on the GPU
  # --forward-stages: how close behind the host the GPU ran, closer in a slow run
  caught=0.25; [ "$per" = 900 ] && caught=0.75
  [[ "$all" == *--forward-stages* ]] && stages="$stages"', "gpu_caught_up": {"prepare": 0.0, "layer4": '$caught'}'
  alloc="$stages"', "gpu_ms": {"forward": {"mean": '$fwd', "p90": '$fwd'}}, "cuda_allocator_timed": {"device_allocs": 0, "device_frees": 0, "alloc_retries": 0, "syncs_all_streams": 0}, "cuda_reserved_mib": 9000'
  echo '{"loader": "ferry", "world_size": '$np', "images_per_s": '$((per * np))\
', "data_wait_ms_per_step": 0.2'"$census$ranks$alloc"'}'
  exit 0
fi
if [ "$1" = -c ] && [[ "$2" == *"import torch"* ]]; then echo 0.stand-in; exit 0; fi
exec "$REAL_PYTHON" "$@"
"""

FAKE_SMI = """#!/bin/bash
case "$*" in
  -L) echo "GPU 0: Stand-in (UUID: a)"; echo "GPU 1: Stand-in (UUID: b)" ;;
  *compute-apps*) echo "101, 00000000:18:00.0, 1500 MiB"; echo "102, 00000000:2A:00.0, 1400 MiB" ;;
  *name*) echo "Stand-in GPU"; echo "Stand-in GPU" ;;
  *clocks.sm*) echo "0, 1980, 3201, 500, 50, 99, 0x0000000000000000"
    echo "1, 1800, 3201, 690, 82, 98, 0x0000000000000004" ;;
  *) echo stand-in ;;
esac
"""


@pytest.fixture
def harness(tmp_path):
    if not shutil.which("bash") or not shutil.which("lscpu"):
        pytest.skip("bash and lscpu are needed to run gpu_x2_checks.sh")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("python3", FAKE_PYTHON), ("nvidia-smi", FAKE_SMI)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "COMMIT").write_text("0000000\n")
    (tmp_path / "set").mkdir()

    def run(ab, rounds=1, **more):
        out = tmp_path / "out"
        env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", REAL_PYTHON=sys.executable,
                   FERRY_DEVICE_DIR=str(dev), OUT=str(out), SET_DIR=str(tmp_path / "set"),
                   PARTS="ab", APPS_AT="0", TRAIN_AB=ab, TRAIN_AB_ROUNDS=str(rounds),
                   BUDGET="300")
        env.update(more)  # PARTS among them
        p = subprocess.run(["bash", "bench/gpu_x2_checks.sh"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=240)
        log = out / {"ab": "ab.log", "load": "load.log"}.get(env["PARTS"], "train.log")
        return p, (out / "summary.txt").read_text(), log.read_text()
    return run


def test_ab_flags_baselines_and_census(harness):
    p, summary, log = harness("1x0 1x0:cbquiet:census 2x0:nobb 2x0:census "
                              "2x0:nobb:cbquiet:census synthetic:cboff", rounds=2)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    # each flag is the example's option
    assert "--ddp-bn local" in log and "--cudnn-benchmark quiet" in log
    assert "--cudnn-benchmark off" in log and "--kernel-census" in log
    # each variant over the 1x0 run with the most of its flags and no other
    assert "ab summary, 2x0:nobb / the round's 1x0: 2.000, 2.000" in summary
    assert "ab summary, 2x0:census / the round's 1x0: 2.000, 2.000" in summary
    assert ("ab summary, 2x0:nobb:cbquiet:census / the round's 1x0:cbquiet:census: "
            "2.000, 2.000") in summary
    assert "ab summary, synthetic:cboff / the round's 1x0: 2.000, 2.000" in summary
    # the census: ranks tuned beside the loader picked other kernels here, quietly the same
    assert ("census, 2x0:census: 2 run(s), the ranks' kernels the same in 0 of 2; 2 kernel "
            "set(s): aaaaaaaaaa 41.00-41.00 ms/step x2, bbbbbbbbbb 41.50-41.50 ms/step x2"
            ) in summary
    assert ("census, 2x0:nobb:cbquiet:census: 2 run(s), the ranks' kernels the same in 2 of 2; "
            "1 kernel set(s): aaaaaaaaaa 41.00-41.50 ms/step x4") in summary
    assert "census, 1x0:cbquiet:census: 2 run(s); 1 kernel set(s)" in summary
    assert "kernels 41.5 ms/step (72 distinct, digest bbbbbbbbbb)" in summary  # rank 1's line


def test_ab_allocator_flag_and_counts(harness):
    """:expseg runs PyTorch's allocator on expandable segments, :stages asks for the forward's
    stages; each run's allocator counts in the timed steps are shown, and its stages."""
    p, summary, log = harness("1x0 2x0:expseg:stages")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "(allocator: default)" in log
    assert "(allocator: expandable_segments:True)" in log
    assert ("allocator in timed steps: 0 cudaMalloc, 0 cudaFree, 0 retries (9000 MiB reserved)"
            in summary)
    assert "ab summary, 2x0:expseg:stages / the round's 1x0: 2.000" in summary
    # :stages: the forward's stages on the GPU's clock, for the runs that asked
    assert "--forward-stages" in log
    assert summary.count(", forward stages (gpu ms) stem 1.5 layer1 3.25") == 1
    assert summary.count(", GPU caught up (share of steps) prepare 0.0 layer4 0.25") == 1


def test_ab_against_the_calls_median_1x0(harness, tmp_path):
    """A slow 1x0 run lifts its own round's ratio; the summary also divides by the median of
    the call's 1x0 runs, which that one run does not move."""
    p, summary, _ = harness("1x0 2x0", rounds=3, FAKE_SLOW_FIRST=str(tmp_path / "slow"))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert ("ab summary, 2x0 / the round's 1x0: 2.222, 2.000, 2.000; median 2.000, "
            "3 of 3 >= 1.9") in summary
    assert ("    against the call's median 1x0 (1000.0 images/s): median 2.000, 3 of 3 >= 1.9"
            in summary)
    # the slow kind by the forward's GPU time: the first 1x0 run, 16.6 ms against 16.2
    assert ("  slow runs (a rank's forward >= 16.44 ms on the GPU, 1.5 % over the median of the "
            "call's ranks, 16.20):") in summary, summary
    assert "    1x0: 1 of 3 slow (900-900 images/s; the others 1000-1000 images/s)" in summary
    assert "    2x0: 0 of 3 slow (none; the others 2000-2000 images/s)" in summary
    assert "GPU caught up" not in summary  # no run asked for --forward-stages


def test_ab_slow_ranks_caught_up(harness, tmp_path):
    """:stages runs: how close behind the host the GPU ran (gpu_caught_up), the slow ranks'
    mean beside the other ranks'."""
    p, summary, _ = harness("1x0:stages 2x0:stages", rounds=2,
                            FAKE_SLOW_FIRST=str(tmp_path / "slow"))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "    1x0:stages: 1 of 2 slow" in summary, summary
    assert ("    GPU caught up (share of steps), slow ranks (1): prepare 0.00 layer4 0.75"
            in summary)
    assert ("    GPU caught up (share of steps), the other ranks (3): prepare 0.00 layer4 0.25"
            in summary)


def test_train_part_names_the_ddp_setting(harness):
    """PARTS=train: the 2-GPU ferry line says how DDP handled the BatchNorm statistics."""
    p, summary, _ = harness("", PARTS="train", TRAIN_LOADERS="ferry", TRAIN_PAIRS="1")
    assert "    pair 1: 1 GPU 1000 images/s" in summary, summary
    assert ("ferry, 1 GPU: median 1000.0 images/s; 2 GPUs (DDP, BatchNorm statistics "
            "epoch-mean): median 2000.0 images/s") in summary
    assert "TRAIN ferry 2 GPUs / ferry 1 GPU: 2.000x (median of 1 pair(s): 2.000; 1 of 1" in summary


def test_train_part_judges_the_median_of_pairs(harness, tmp_path):
    """PARTS=train runs ferry on 1 and 2 GPUs TRAIN_PAIRS times interleaved and judges the
    median of the pairs' ratios: one slow DDP run (1.8x) is reported, not the verdict."""
    p, summary, log = harness("", PARTS="train", TRAIN_LOADERS="ferry synthetic",
                              TRAIN_PAIRS="3", FAKE_SLOW_TWO=str(tmp_path / "slow2"))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    runs = [x for x in log.splitlines() if x.startswith("$ torchrun")]
    # interleaved: 1, 2, 1, 2, 1, 2 processes, then the synthetic ceiling
    assert [r.split("--nproc-per-node ")[1].split()[0] for r in runs] == list("1212122"), runs
    assert "    pair 1: 1 GPU 1000 images/s (GPU busy  %), 2 GPUs 1800" in summary, summary
    assert summary.count("): 2.000x") == 2
    assert "median 2000.0 images/s" in summary  # the slow run is not the 2-GPU rate
    assert ("TRAIN ferry 2 GPUs / ferry 1 GPU: 2.000x (median of 3 pair(s): 1.800 2.000 "
            "2.000; 2 of 3 >= 1.9): PASS (>= 1.9)") in summary
    assert "ferry at 1.00x of it" in summary  # against the synthetic ceiling, the median rate
    # a median below the threshold is BELOW, and the exit says so
    p, summary, _ = harness("", PARTS="train", TRAIN_LOADERS="ferry", TRAIN_PAIRS="1",
                            FAKE_SLOW_TWO=str(tmp_path / "slow2b"))
    assert "TRAIN ferry 2 GPUs / ferry 1 GPU: 1.800x (median of 1 pair(s): 1.800; 0 of 1" in summary
    assert "BELOW (1.9 asked)" in summary and p.returncode == 3


def test_ab_bad_variant_and_no_baseline(harness):
    p, summary, _ = harness("1x0:census 2x0 2x0:bogus")
    assert p.returncode == 1, p.stdout[-3000:]  # a variant not run is a failure
    assert "ab: '2x0:bogus': not NPxW|synthetic|synthetic1 with" in summary
    assert "FAILED" in summary
    # 2x0 has no flag, 1x0:census one it lacks: no ratio, said so
    assert "ab summary, 2x0: no ratio (no 1x0 run in its round with none but its flags)" in summary


def test_clocks_sampled_per_run(harness):
    """CLOCKS=1: the GPUs' clocks sampled over the runs and summed up per run at the end."""
    p, summary, _ = harness("1x0 2x0:nobb", CLOCKS="1", FAKE_RUN_SLEEP="1.5")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "clocks per training run (busy GPUs; bench/clock_by_run.py" in summary
    lines = [x for x in summary.splitlines() if x.startswith("  run ")]
    assert len(lines) == 2, summary
    assert lines[0].startswith("  run 1 (np=1 --loader ferry): GPU 0: ")
    assert lines[1].startswith("  run 2 (np=2 --loader ferry --ddp-bn local): GPU 0: ")
    assert "GPU 1: " in lines[1] and "SM 1800 MHz" in lines[1] and "0x0000000000000004" in lines[1]


def test_load_part_ratio_share_and_variants(harness):
    """PARTS=load: 1 rank then 2, the ratio against 1.8, one rank on its share of the cores,
    and the informative variants with the environment or options each names."""
    p, summary, log = harness("", PARTS="load", LOAD_SHARE="1",
                              LOAD_VARIANTS="2x0:always 2x8:engine 2x0:cpu 2x0:pad48 "
                                            "2x0:nice:always:debug 2x0:bogus 2x0:shed")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "  LOAD 2 ranks / 1 rank: 2.00x: PASS (>= 1.8)" in summary, summary
    assert "load 2 ranks / 1 rank with 1/2 of the cores: 2.00x (informative)" in summary
    runs = [x for x in log.splitlines() if x.startswith("stand-in dist_load")]
    assert len(runs) == 10, runs  # 1 rank, 2 ranks, 1 rank on its share, 7 variants
    always, engine, cpu, pad, full, bogus, shed = runs[3:]
    assert "shed: 1" in shed and "shed: 0" in always
    assert "pad: 48" in pad and "pad: default" in always
    # flags combine; FERRY_DEBUG's controller lines are counted and the last shown
    assert "nice: 10" in full and "policy: always" in full and "nice: 0" in pad
    assert "the engine controller changed 3 time(s); contexts reached: 3 x2, 4 x1" in summary
    assert "      ferry: debug: JPEG engine contexts 4 -> 3: the context on trial" in summary
    assert "variant 2x0:bogus: flag bogus unknown: run without it" in summary
    assert "policy: default" in bogus and "nice: 0" in bogus
    assert "policy: always" in always and "engine only: 0" in always
    assert "--workers 8" in engine and "engine only: 1" in engine and "policy: default" in engine
    assert "--no-hw-decode" in cpu
    assert "  variant 2x0:always: 2 rank(s): 60000 images/s in all" in summary
    assert ("rank 1 on cuda:1: 30000 images/s, 12 workers, 100 images on the engine (25.0 a "
            "chunk, 5.00 ms in the engine), decode 1.0 s") in summary
