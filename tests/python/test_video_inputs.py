"""Hostile and odd inputs of `ferry video` and ferry.VideoReader (issue 52):
FIFOs and devices refused at once, never waited on (17); animation bombs
(a huge GIF canvas, frames x canvas) refused before any frame is decoded,
in bounded time and memory, while real animations still read (19); a file
that fails is named with its reason (25); a damaged MP4 index is not
blamed on a cut-off moov box (27); a still image named .mp4 refused alike
by the CLI and Python (29). Skips, saying why, without video support."""
import os
import re
import shutil
import struct
import subprocess
import sys
import time

import pytest

import ferry
from ferrylib import FERRY_BIN, ROOT

VIDEOS = ROOT / "tests" / "fixtures" / "video"
TESTSRC = VIDEOS / "testsrc_h264.mp4"  # 320x240, 50 frames
JPEG = ROOT / "data" / "sample" / "class0" / "p0000.jpg"
GIF2 = ROOT / "tests" / "fixtures" / "codecs" / "two_frames.gif"


def _video_support():
    try:
        ferry.VideoReader(str(TESTSRC)).close()
    except ferry.UnsupportedError as e:
        return str(e)
    return None


NO_VIDEO = _video_support()
pytestmark = pytest.mark.skipif(NO_VIDEO is not None, reason=f"ferry without video: {NO_VIDEO}")


def run(*args, timeout=60, env=None):
    """The ferry command: (CompletedProcess, seconds, peak RSS in MB of that
    process alone: os.wait4's rusage; RUSAGE_CHILDREN would give the largest
    child so far). Output goes through files (no pipe to fill); a hang is a
    failure, not a stuck test run."""
    import tempfile
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.monotonic()
        p = subprocess.Popen([FERRY_BIN, *map(str, args)], stdout=fo, stderr=fe,
                             env=None if env is None else {**os.environ, **env})
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > timeout:
                p.kill()
                os.wait4(p.pid, 0)
                pytest.fail(f"ferry {' '.join(map(str, args))}: still running after {timeout} s")
            time.sleep(0.005)
        secs = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read().decode(errors="replace"), fe.read().decode(errors="replace")
    return subprocess.CompletedProcess(p.args, p.returncode, out, err), secs, ru.ru_maxrss / 1024


def python_in_child(code, *args, timeout=60):
    """Python code in a child process (a read that blocks for ever would
    otherwise block the test run), args in its sys.argv[1:]."""
    try:
        return subprocess.run([sys.executable, "-c", code, *map(str, args)],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"python -c {code!r}: still running after {timeout} s")


# ------------------------------------------------------------- 17: FIFOs

def test_fifo_refused_by_the_command(tmp_path):
    fifo = tmp_path / "v.mp4"
    os.mkfifo(fifo)
    r, secs, _ = run("video", fifo, "--quiet", timeout=20)
    assert r.returncode == 1, r.stderr
    assert f"{fifo}: a FIFO, not a regular file" in r.stderr, r.stderr
    assert secs < 5, secs  # refused at once (it blocked in open() for ever)
    # among good files: only the FIFO fails, named (exit 3)
    r, _, _ = run("video", TESTSRC, fifo, "--quiet", timeout=20)
    assert r.returncode == 3 and f"{fifo}: a FIFO" in r.stderr, r.stderr
    assert "2 files (1 failed)" in r.stdout


def test_fifo_and_device_refused_by_python(tmp_path):
    fifo = tmp_path / "v.mp4"
    os.mkfifo(fifo)
    code = (
        "import ferry, sys\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n"
        "        ferry.VideoReader(p)\n"
        "    except ferry.Error as e:\n"
        "        print(type(e).__name__, e)\n"
        "    else:\n"
        "        print('opened', p)\n")
    r = python_in_child(code, fifo, "/dev/zero", timeout=20)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"InvalidArgument {fifo}: a FIFO, not a regular file (refused: ferry " \
                       "reads files only)", r.stdout
    assert lines[1].startswith("InvalidArgument /dev/zero: a character device"), r.stdout


def test_device_refused_by_the_command():
    r, secs, _ = run("video", "/dev/zero", "--quiet", timeout=20)
    assert r.returncode == 1 and "/dev/zero: a character device, not a regular file" in r.stderr
    assert secs < 5, secs


# ------------------------------------------------------ 19: animation bombs

def gif(frames, width, height):
    """A GIF of a width x height logical screen (the canvas) and `frames`
    frames of 1x1 pixel each (the review's bomb: 729 bytes at 30 frames)."""
    b = bytearray(b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80, 0, 0))
    b += bytes([0, 0, 0, 255, 255, 255])  # global colour table of 2
    b += b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"  # loop for ever
    for _ in range(frames):
        b += b"\x21\xf9\x04\x04\x01\x00\x00\x00"  # graphic control: 10 ms
        b += b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0)  # a 1x1 image at 0,0
        b += b"\x02\x02\x4c\x01\x00"  # LZW (codes of 3 bits): clear, 1, end
    return bytes(b + b"\x3b")


NO_ANIMATIONS = "this build's FFmpeg reads no such animation"


def python_reads_gif():
    """Whether the Python package's FFmpeg has a GIF demuxer (the wheel's
    minimal FFmpeg has none: there every GIF is refused as unsupported, so
    no bomb costs anything and its limits are not reached)."""
    try:
        ferry.VideoReader(GIF2).close()
        return True
    except ferry.UnsupportedError as e:
        assert NO_ANIMATIONS in str(e), e
        return False


@pytest.mark.parametrize("frames", [30, 3000])
def test_gif_bomb_refused_quickly(tmp_path, frames):
    """A 10000x10000 canvas (under the image decoders' 178,956,970-pixel
    limit) and 1x1 frames: 30 frames cost 16 s and 724 MB, 3,000 frames 27
    minutes, before. Refused before any frame is decoded."""
    bomb = tmp_path / f"bomb{frames}.gif"
    bomb.write_bytes(gif(frames, 10000, 10000))
    if frames == 30:
        assert bomb.stat().st_size == 729  # the review's file
    r, secs, mb = run("video", bomb, "--quiet", timeout=120)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert f"{bomb}: a GIF animation of at least " in r.stderr, r.stderr
    assert re.search(r"at least \d+ frames? of 10000x10000: \d+ pixels to decode", r.stderr)
    assert "refused before decoding" in r.stderr
    assert secs < 2.0 and mb < 512, (secs, mb)
    t0 = time.monotonic()
    want = ferry.TooLargeError if python_reads_gif() else ferry.UnsupportedError
    with pytest.raises(want, match=re.escape(str(bomb))):
        ferry.VideoReader(bomb)
    assert time.monotonic() - t0 < 2.0


def test_gif_canvas_over_the_pixel_limit_refused(tmp_path):
    big = tmp_path / "wide.gif"
    big.write_bytes(gif(1, 20000, 10000))  # 2e8 pixels, over 178,956,970
    r, secs, mb = run("video", big, "--quiet", timeout=120)
    assert r.returncode == 1, r.stderr
    assert f"{big}: GIF is 20000x10000 (200000000 pixels), over the 178956970-pixel limit" \
        in r.stderr, r.stderr
    assert secs < 2.0 and mb < 512, (secs, mb)


def test_real_animations_still_read(tmp_path):
    """GIF and APNG animations (Pillow's), the committed two-frame GIF, a
    larger GIF whose frames cover its canvas, and the video fixtures."""
    from PIL import Image
    import numpy as np
    frames = [Image.fromarray(np.full((48, 64, 3), 20 * i, np.uint8)) for i in range(12)]
    for ext in ("gif", "png"):
        p = tmp_path / f"anim.{ext}"
        frames[0].save(p, save_all=True, append_images=frames[1:], duration=40, loop=0)
        r, _, _ = run("video", p, "--quiet")
        assert r.returncode == 0 and "12 frames sampled" in r.stdout, (ext, r.stdout, r.stderr)
        if not python_reads_gif():
            continue  # the Python package's FFmpeg reads no animations (said there)
        with ferry.VideoReader(p) as vr:
            assert sum(b.count for b in vr) == 12
    rng = np.random.default_rng(0)
    big = []  # palette images: Pillow's quantizer would take seconds a frame
    for _ in range(3):
        im = Image.fromarray(rng.integers(0, 256, (300, 400), dtype=np.uint8), mode="P")
        im.putpalette(list(range(256)) * 3)
        big.append(im)
    p = tmp_path / "big.gif"
    big[0].save(p, save_all=True, append_images=big[1:] * 10, duration=40, loop=0)
    r, _, _ = run("video", p, "--quiet", "--size", "32")
    assert r.returncode == 0 and "21 frames sampled" in r.stdout, (r.stdout, r.stderr)
    r, _, _ = run("video", GIF2, *[VIDEOS / n for n in ("testsrc_h264.mp4", "hevc10.mp4",
                                                          "vp9.webm", "rot90_h264.mp4")],
                  "--quiet")
    assert r.returncode == 0 and "5 files (0 failed)" in r.stdout, (r.stdout, r.stderr)


# ------------------------------------------------- 25: a failure is named

def test_every_failed_file_is_named_with_its_reason():
    """An allocation that fails at open, or later while decoding (it gave
    "1 files (1 failed)" alone): the file named with the reason."""
    seen = 0
    for n in range(1, 6):
        r, _, _ = run("video", TESTSRC, "--quiet", env={"FERRY_FAIL_ALLOC": str(n)})
        if "(1 failed)" not in r.stdout:
            assert r.returncode == 0, (n, r.stdout, r.stderr)
            continue
        seen += 1
        assert r.returncode == 1, (n, r.stderr)
        assert f"ferry video: {TESTSRC}: " in r.stderr and "out of memory" in r.stderr, \
            (n, r.stdout, r.stderr)
    assert seen >= 2  # at open and after the first batch


# ------------------------------------------- 27: a damaged MP4 index named

def mp4_with(tmp_path, name, patch):
    d = bytearray(TESTSRC.read_bytes())
    i = d.index(b"stsz")
    patch(d, i)
    p = tmp_path / name
    p.write_bytes(bytes(d))
    return p


@pytest.mark.parametrize("how", ["count", "entries"])
def test_corrupt_stsz_not_blamed_on_a_cut_off_moov(tmp_path, how):
    def count(d, i):  # stsz: size 4, version/flags 4, sample size 4, count 4
        d[i + 12:i + 16] = struct.pack(">I", 1000)

    def entries(d, i):
        d[i + 16:i + 56] = b"\xff" * 40

    p = mp4_with(tmp_path, f"stsz_{how}.mp4", count if how == "count" else entries)
    r, _, _ = run("video", p, "--quiet")
    assert r.returncode == 1, r.stderr
    assert f"{p}: " in r.stderr and "cut off" not in r.stderr, r.stderr
    assert "stsz" in r.stderr and "damaged" in r.stderr, r.stderr
    with pytest.raises(ferry.CorruptError, match="stsz") as e:
        ferry.VideoReader(p)
    assert str(p) in str(e.value) and "cut off" not in str(e.value)


def test_cut_off_moov_still_says_so(tmp_path):
    """A file whose moov box, at its end, is cut off keeps that reason."""
    d = TESTSRC.read_bytes()
    # testsrc_h264.mp4 has its moov first (faststart): the file as written
    # without it, ftyp then mdat, cut inside the mdat before the moov came
    i = d.index(b"moov") - 4
    size = struct.unpack(">I", d[i:i + 4])[0]
    rest = d[:i] + d[i + size:]
    p = tmp_path / "cut.mp4"
    p.write_bytes(rest[:len(rest) * 3 // 5])
    r, _, _ = run("video", p, "--quiet")
    assert r.returncode == 1 and "moov" in r.stderr and "cut off" in r.stderr, r.stderr


# ------------------------------------- 29: a still image named .mp4, one rule

def test_still_image_named_mp4_refused_by_both(tmp_path):
    p = tmp_path / "photo.mp4"
    shutil.copyfile(JPEG, p)
    r, _, _ = run("video", p)
    assert r.returncode == 2 and f"{p}: a still image (JPEG), not a video" in r.stderr, r.stderr
    with pytest.raises(ferry.UnsupportedError, match=r"a still image \(JPEG\), not a video") as e:
        ferry.VideoReader(p)
    assert str(p) in str(e.value)
    png = tmp_path / "still.webm"
    from PIL import Image
    Image.new("RGB", (16, 16)).save(png, format="PNG")
    with pytest.raises(ferry.UnsupportedError, match=r"a still image \(PNG\)"):
        ferry.VideoReader(png)


def test_animation_libavcodec_cannot_decode_is_an_error():
    """An animated WebP where libavcodec skips the animation chunks (5.x:
    "image data not found"): 0 frames with exit 0 before; now frames, or an
    error naming the file and why."""
    anim = ROOT / "tests" / "fixtures" / "codecs" / "anim.webp"
    r, _, _ = run("video", anim, "--quiet")
    if r.returncode == 0:
        assert "0 frames sampled" not in r.stdout, r.stdout
        return
    assert r.returncode == 1 and f"{anim}: " in r.stderr, r.stderr
    assert "frame size unknown" in r.stderr, r.stderr
    with pytest.raises(ferry.UnsupportedError, match="frame size unknown|" + NO_ANIMATIONS):
        ferry.VideoReader(anim)
