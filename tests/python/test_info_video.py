"""`ferry info` describes videos (issue 53, item 9): codec, size, rate,
frames, duration, rotation, chroma and NVDEC's verdict, checked against
ffprobe; a cut-off video and a text file are errors naming the file."""
import json
import shutil
import subprocess

import pytest

from ferrylib import FERRY_BIN, ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "video"
CLIPS = ["testsrc_h264.mp4", "rot90_h264.mp4", "hevc10.mp4", "vp9.webm"]


def info(*args):
    return subprocess.run([FERRY_BIN, "info", *map(str, args)], capture_output=True, text=True,
                          timeout=30)


def ffprobe(path):
    r = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_streams",
                        "-show_format", "-of", "json", str(path)], capture_output=True,
                       text=True, check=True)
    return json.loads(r.stdout)


@pytest.mark.parametrize("clip", CLIPS)
def test_info_video_json_matches_ffprobe(clip):
    if not shutil.which("ffprobe"):
        pytest.skip("SKIPPED: ffprobe: not installed, nothing to check the figures against")
    r = info("--json", FIXTURES / clip)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    p = ffprobe(FIXTURES / clip)
    s = p["streams"][0]
    assert got["format"] == "video"
    assert got["codec"] == s["codec_name"]
    assert (got["width"], got["height"]) == (s["width"], s["height"])
    num, den = map(int, s["avg_frame_rate"].split("/"))
    assert got["fps"] == pytest.approx(num / den, rel=1e-6)
    assert got["frames"] == int(s.get("nb_frames", 0))
    dur = float(s.get("duration", p["format"]["duration"]))
    assert got["duration_s"] == pytest.approx(dur, abs=1e-3)
    rot = 0
    for sd in s.get("side_data_list", []):
        if "rotation" in sd:
            rot = (-int(sd["rotation"])) % 360
    assert got["rotation"] == rot
    if rot % 180:
        assert (got["upright_width"], got["upright_height"]) == (s["height"], s["width"])
    assert got["subsampling"] == "4:2:0"
    assert got["nvdec"] is True
    assert got["nvdec_why"].endswith("-bit 4:2:0")


def test_info_video_text_line():
    r = info(FIXTURES / "hevc10.mp4", FIXTURES / "rot90_h264.mp4")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2
    assert "hevc 192x128, 10-bit 4:2:0, 24.000 fps, 12 frames" in lines[0]
    assert lines[0].endswith("NVDEC: yes (HEVC 10-bit 4:2:0)")
    assert "rotation 90 (upright 96x160)" in lines[1]


def test_info_cut_video_and_text_file_name_the_file(tmp_path):
    # testsrc_h264.mp4 has its index (moov) first: cut in the index, and
    # after it, where the header reads but the frames' data is gone
    whole = (FIXTURES / "testsrc_h264.mp4").read_bytes()
    in_index, in_data = tmp_path / "in_index.mp4", tmp_path / "in_data.mp4"
    in_index.write_bytes(whole[:1000])
    in_data.write_bytes(whole[:5000])
    text = tmp_path / "notes.txt"
    text.write_text("not a picture\n")
    r = info(in_index, in_data, FIXTURES / "vp9.webm", text, FIXTURES / "truncated_h264.mp4")
    assert r.returncode == 1
    # the good file among the bad ones is still described
    assert r.stdout.count("\n") == 1 and "vp9.webm: video" in r.stdout
    errs = r.stderr.splitlines()
    assert len(errs) == 4, r.stderr
    assert str(in_index) in errs[0] and "cut off: its header declares 50 frames" in errs[0]
    assert str(in_data) in errs[1] and "cut off: its index lists 50 frames" in errs[1]
    assert "file ends at byte 5000 (the data of 1 of them)" in errs[1]
    assert str(text) in errs[2] and "unsupported format" in errs[2]
    assert "truncated_h264.mp4" in errs[3] and "not a readable video" in errs[3]


@pytest.mark.parametrize("args, why", [
    (["-c:v", "libx264", "-pix_fmt", "yuv444p"], "NVDEC decodes 4:2:0 YUV; this H.264 stream is yuv444p"),
    (["-c:v", "libx264", "-pix_fmt", "yuv420p10le"], "NVDEC decodes H.264 up to 8-bit; this is 10-bit"),
    (["-c:v", "mpeg4"], "NVDEC does not decode mpeg4 video"),
])
def test_info_video_nvdec_no(tmp_path, args, why):
    if not shutil.which("ffmpeg"):
        pytest.skip("SKIPPED: ffmpeg: not installed, no clip to make")
    clip = tmp_path / "clip.mp4"
    made = subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10",
                           "-frames:v", "3", *args, "-y", str(clip)], capture_output=True, text=True)
    if made.returncode:
        pytest.skip(f"SKIPPED: ffmpeg {' '.join(args)}: this ffmpeg cannot: {made.stderr[-200:]}")
    r = info("--json", clip)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["nvdec"] is False and got["nvdec_why"] == why
    assert (got["width"], got["height"], got["frames"]) == (64, 48, 3)
