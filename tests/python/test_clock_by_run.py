"""bench/gpu_clock_sampler.sh and bench/clock_by_run.py: the sampler, against a stand-in
nvidia-smi and a process that looks like torchrun, writes one line per GPU naming the run; the
summary splits the samples into runs, keeps the busy GPUs, and says what is wrong with a bad file."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLER = ROOT / "bench" / "gpu_clock_sampler.sh"
SUMMARY = ROOT / "bench" / "clock_by_run.py"

FAKE_SMI = """#!/bin/sh
case "$*" in
  *clocks_event_reasons.active*noheader,nounits*)
    echo "0, 1980, 3201, 500.5, 50, 99, 0x0000000000000000"
    echo "1, 1755, 3201, 699.0, 81, 97, 0x0000000000000004" ;;
  *) exit 0 ;;
esac
"""

HEAD = "t,gpu,sm_mhz,mem_mhz,power_w,temp_c,util_pct,reasons,run\n"


def summary(path, *extra):
    return subprocess.run([sys.executable, str(SUMMARY), str(path), *extra],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("launcher", [["torchrun"], ["-m", "torch.distributed.run"]])
def test_sampler_names_the_run_and_every_gpu(tmp_path, launcher):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "nvidia-smi").write_text(FAKE_SMI)
    (bin_ / "nvidia-smi").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_}:{os.environ['PATH']}")
    # a process whose command line reads like the harness's torchrun
    fake = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", *launcher,
                             "--standalone", "--nproc-per-node", "2", "examples/train_imagenet.py",
                             "/tmp/set", "--arch", "resnet50", "--loader", "ferry",
                             "--ddp-bn", "local"])
    out = tmp_path / "smi.csv"
    sampler = subprocess.Popen(["bash", str(SAMPLER), str(out), "0.1"], env=env)
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            if out.exists() and len(out.read_text().splitlines()) >= 5:
                break
            time.sleep(0.1)
    finally:
        sampler.kill()
        sampler.wait()
        fake.kill()
        fake.wait()
    lines = out.read_text().splitlines()
    assert lines[0] == HEAD.strip()
    assert len(lines) >= 5, lines
    row = lines[1].split(",", 8)
    assert row[1:8] == ["0", "1980", "3201", "500.5", "50", "99", "0x0000000000000000"]
    assert row[8] == '"np=2 --arch resnet50 --loader ferry --ddp-bn local"', row
    assert lines[2].split(",", 8)[1:3] == ["1", "1755"]
    r = summary(out)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("run 1 (np=2 --loader ferry --ddp-bn local): GPU 0: ")
    assert "SM 1755 MHz" in r.stdout and "0x0000000000000004 x" in r.stdout


def test_summary_splits_runs_and_keeps_busy_gpus(tmp_path):
    rows = [
        '1.0,0,345,3201,77,37,0,0x1,"-"',
        '2.0,0,1980,3201,500,50,99,0x0,"np=1 --loader ferry"',
        '2.5,0,1980,3201,510,51,98,0x0,"np=1 --loader ferry"',
        '2.5,1,345,3201,77,37,0,0x1,"np=1 --loader ferry"',
        '3.0,0,345,3201,77,40,0,0x1,"-"',
        '4.0,0,1900,3201,480,52,99,0x0,"np=2 --loader ferry --ddp-bn local"',
        '4.0,1,1700,3201,690,80,95,0x4,"np=2 --loader ferry --ddp-bn local"',
        '5.0,0,1980,3201,[N/A],50,99,0x0,"np=1 --loader ferry"',
    ]
    p = tmp_path / "smi.csv"
    p.write_text(HEAD + "\n".join(rows) + "\n")
    r = summary(p)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert len(out) == 3, out  # the same command after an idle stretch is another run
    assert out[0].startswith("run 1 (np=1 --loader ferry): GPU 0: 2 samples, SM 1980 MHz")
    assert "GPU 1" not in out[0]  # idle: left out
    assert "GPU 0: 1 samples, SM 1900" in out[1] and "GPU 1: 1 samples, SM 1700" in out[1]
    assert "0x4 x1" in out[1] and "up to 80 C" in out[1]
    assert out[2].startswith("run 3 ") and "SM 1980 MHz" in out[2] and "? W" in out[2]
    r = summary(p, "--busy", "99.5")
    assert r.stdout.splitlines()[0].endswith("no GPU busy")


def test_summary_errors_name_the_file(tmp_path):
    r = summary(tmp_path / "absent.csv")
    assert r.returncode == 2 and "absent.csv" in r.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    r = summary(bad)
    assert r.returncode == 2 and "bad.csv" in r.stderr and "not gpu_clock_sampler" in r.stderr
    idle = tmp_path / "idle.csv"
    idle.write_text(HEAD + '1.0,0,345,3201,77,37,0,0x1,"-"\n')
    r = summary(idle)
    assert r.returncode == 1 and "no sample names a torchrun command" in r.stderr
