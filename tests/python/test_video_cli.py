"""`ferry video` against ffprobe/ffmpeg: frame counts and timestamps of the
committed fixtures (tests/fixtures/video) and of ../shared/corpus/video, and
decoded pixels against ffmpeg's own RGB conversion (PSNR). Skips, saying why,
when ffprobe/ffmpeg, the corpus, or video support is absent."""
import math
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest
from PIL import Image

from ferrylib import CORPUS, FERRY_BIN, ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "video"
GOOD = ["testsrc_h264.mp4", "rot90_h264.mp4", "hevc10.mp4", "vp9.webm"]
CORPUS_VIDEOS = ["pan_1080p_h264.mp4", "pan_720p_hevc.mp4", "pan_720p_vp9.webm"]


def need_tools():
    for tool in ("ffprobe", "ffmpeg"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} not found (apt-get install ffmpeg)")
    r = subprocess.run([FERRY_BIN, "video", str(FIXTURES / GOOD[0]), "--quiet"],
                       capture_output=True, text=True, timeout=60)
    if "built without libavcodec" in r.stderr:
        pytest.skip("ferry built without libavcodec")


def ffprobe_times(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                          "frame=best_effort_timestamp_time", "-of", "csv=p=0", str(path)],
                         capture_output=True, text=True, timeout=120).stdout
    return [float(x.strip().rstrip(",")) for x in out.split() if x.strip().rstrip(",")]


def ferry_times(path, *extra):
    r = subprocess.run([FERRY_BIN, "video", str(path), "--size", "32", "--quiet",
                        "--timestamps", *extra], capture_output=True, text=True, timeout=120)
    frames = []
    for line in r.stdout.splitlines():
        if line.startswith("frame "):
            _, idx, t = line.split()
            frames.append((int(idx), float(t[2:])))
    return r, frames


def corpus_videos():
    d = CORPUS / "video"
    return [d / n for n in CORPUS_VIDEOS]


@pytest.mark.parametrize("name", GOOD + ["corpus:" + n for n in CORPUS_VIDEOS])
def test_frames_and_timestamps_match_ffprobe(name):
    need_tools()
    if name.startswith("corpus:"):
        path = CORPUS / "video" / name[7:]
        if not path.exists():
            pytest.skip(f"{path} not found (shared corpus absent)")
    else:
        path = FIXTURES / name
    want = ffprobe_times(path)
    r, got = ferry_times(path)
    assert r.returncode == 0, r.stderr
    assert len(got) == len(want), (len(got), len(want))
    assert [i for i, _ in got] == list(range(len(want)))
    worst = max(abs(a - b) for (_, a), b in zip(got, want))
    assert worst < 1e-5, worst


@pytest.mark.parametrize("name,frames", [("truncated_h264.mp4", 28), ("truncated_vp9.webm", 14)])
def test_truncated_gives_frames_then_error(name, frames):
    need_tools()
    path = FIXTURES / name
    want = ffprobe_times(path)
    r, got = ferry_times(path)
    assert len(got) == len(want) == frames
    assert r.returncode == 1
    assert f"{name}: truncated or damaged" in r.stderr


def test_damaged_frames_exit_3_or_strict_fails():
    """A file whose frames the decoder conceals errors in (issue 16 item 19):
    every frame, a line naming the file, the count and the first frame, exit
    3; --strict: an error at the first such frame, exit 1."""
    need_tools()
    path = FIXTURES / "garbled_h264.mp4"
    r = subprocess.run([FERRY_BIN, "video", str(path), "--quiet"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 3, r.stderr
    assert re.search(r"garbled_h264.mp4: at least \d+ frames? decoded with errors .* the first "
                     r"at frame \d+", r.stderr), r.stderr
    assert "50 decoded" in r.stdout
    r = subprocess.run([FERRY_BIN, "video", str(path), "--quiet", "--strict"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "strict decoding stops here" in r.stderr, r.stderr
    r = subprocess.run([FERRY_BIN, "video", str(FIXTURES / "testsrc_h264.mp4"), "--quiet",
                        "--strict"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "decoded with errors" not in r.stderr, r.stderr


def test_corpus_truncated_without_index():
    need_tools()
    path = CORPUS / "video" / "truncated_h264.mp4"
    if not path.exists():
        pytest.skip(f"{path} not found (shared corpus absent)")
    r, got = ferry_times(path)
    assert r.returncode == 1 and not got
    assert "truncated_h264.mp4" in r.stderr and "moov" in r.stderr


def test_sampling_options():
    need_tools()
    path = FIXTURES / "testsrc_h264.mp4"
    _, got = ferry_times(path, "--stride", "10")
    assert [i for i, _ in got] == [0, 10, 20, 30, 40]
    _, got = ferry_times(path, "--rate", "5")
    assert [i for i, _ in got] == [0, 5, 10, 15, 20, 25, 30, 35, 40, 45]
    _, got = ferry_times(path, "--start", "1", "--end", "1.2")
    assert [i for i, _ in got] == [25, 26, 27, 28, 29]
    r = subprocess.run([FERRY_BIN, "video", str(path), "--stride", "2", "--rate", "3"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "exclude" in r.stderr


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return math.inf if mse == 0 else 10 * math.log10(255 ** 2 / mse)


@pytest.mark.parametrize("name", GOOD + ["corpus:pan_1080p_h264.mp4"])
def test_pixels_match_ffmpeg(name):
    """Full-size frame 0, upright, against ffmpeg's decode + rgb24 (which
    also applies the rotation): PSNR >= 40 dB."""
    need_tools()
    path = CORPUS / "video" / name[7:] if name.startswith("corpus:") else FIXTURES / name
    if not path.exists():
        pytest.skip(f"{path} not found (shared corpus absent)")
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([FERRY_BIN, "video", str(path), "--end", "0.01", "--layout", "hwc",
                            "--save-frames", d, "--quiet"], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        ours = np.asarray(Image.open(os.path.join(d, f"{path.name}_000000.png")).convert("RGB"))
        ref_png = os.path.join(d, "ref.png")
        subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-frames:v", "1",
                        "-pix_fmt", "rgb24", ref_png], check=True, timeout=60)
        ref = np.asarray(Image.open(ref_png).convert("RGB"))
    assert ours.shape == ref.shape
    p = psnr(ours, ref)
    print(f"{name}: PSNR {p:.1f} dB")
    assert p >= 40, p


def test_jobs_decode_files_at_once():
    """--jobs N: several files decoded at once, the same frames in total as one at a
    time; --cpu-jobs needs a GPU device; a bad file among good ones fails only itself."""
    files = [str(FIXTURES / n) for n in GOOD]
    one = subprocess.run([FERRY_BIN, "video", *files, "--size", "32", "--quiet"],
                         capture_output=True, text=True, timeout=120)
    many = subprocess.run([FERRY_BIN, "video", *files, "--size", "32", "--quiet", "--jobs", "3"],
                          capture_output=True, text=True, timeout=120)
    assert one.returncode == 0 and many.returncode == 0, (one.stderr, many.stderr)
    count = re.compile(r"(\d+) frames sampled, (\d+) decoded")
    assert count.search(one.stdout).groups() == count.search(many.stdout).groups()
    assert "3 at a time on the CPU" in many.stdout
    bad = subprocess.run([FERRY_BIN, "video", *files, str(FIXTURES / "truncated_h264.mp4"),
                          "--size", "32", "--quiet", "--jobs", "2"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 3 and "truncated_h264.mp4" in bad.stderr, bad
    r = subprocess.run([FERRY_BIN, "video", files[0], "--cpu-jobs", "2"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--device cuda" in r.stderr


@pytest.mark.parametrize("name,k", [("testsrc_h264.mp4", 13), ("hevc10.mp4", 11),
                                    ("vp9.webm", 29)])
def test_frame_random_access(name, k, tmp_path):
    """`ferry video FILE --frame K -o OUT.png` writes the frame that
    --save-frames writes for frame K when every frame is read in order."""
    need_tools()
    path = FIXTURES / name
    saved = tmp_path / "all"
    r = subprocess.run([FERRY_BIN, "video", str(path), "--save-frames", str(saved), "--quiet"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "f.png"
    r = subprocess.run([FERRY_BIN, "video", str(path), "--frame", str(k), "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"frame {k} " in r.stdout
    want = np.asarray(Image.open(saved / f"{name}_{k:06d}.png"))
    assert np.array_equal(np.asarray(Image.open(out)), want)
    r = subprocess.run([FERRY_BIN, "video", str(path), "--frame", "100000", "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "out of range" in r.stderr and name in r.stderr
    r = subprocess.run([FERRY_BIN, "video", str(path), "--frame", "1"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "-o" in r.stderr
