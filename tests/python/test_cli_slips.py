"""The `ferry` command's slips of issue 20, from the outside: optional values
as the next word (`--flip 0.7`), `ferry help CMD`, the output writer picked
by the extension (PNG, JPEG, PPM; others refused), the aspect ratio said
(or kept), still images refused by `ferry video`, --json summaries, `-` for
standard input, --gpu/--no-gpu, a pack loaded at its own size. Only the
binary (FERRY_BIN) is run."""
import json
import os
import stat
import subprocess

import pytest

from ferrylib import FERRY_BIN, ROOT

# some tests run in another working directory: a relative FERRY_BIN from here
if os.sep in FERRY_BIN:
    FERRY_BIN = os.path.abspath(FERRY_BIN)

SAMPLE = ROOT / "data" / "sample"
JPEG = SAMPLE / "class0" / "p0000.jpg"  # 702x712
VIDEO = ROOT / "tests" / "fixtures" / "video" / "vp9.webm"
GIF = ROOT / "tests" / "fixtures" / "codecs" / "two_frames.gif"

Image = pytest.importorskip("PIL.Image", reason="Pillow not importable")
np = pytest.importorskip("numpy", reason="numpy not importable")

pytestmark = pytest.mark.skipif(not SAMPLE.is_dir(), reason=f"{SAMPLE} absent")


def ferry(*args, **kw):
    return subprocess.run([FERRY_BIN, *map(str, args)], capture_output=True, text=True,
                          timeout=kw.pop("timeout", 120), **kw)


def video_built():
    return VIDEO.is_file() and ferry("video", VIDEO, "--quiet").returncode == 0


# ------------------------------------------------ 1: --flip 0.7, --flip DIR

def grid(tmp_path, name, *args):
    out = tmp_path / f"{name}.png"
    r = ferry("load", *args, "--size", "32", "--batch", "16", "--no-shuffle", "--workers", "2",
              "--save-grid", out, "--quiet")
    assert r.returncode == 3, r.stderr  # the sample's truncated file skipped
    return np.asarray(Image.open(out).convert("RGB"), dtype=np.int16)


def test_flip_value_as_next_word(tmp_path):
    plain = grid(tmp_path, "plain", SAMPLE)
    always = grid(tmp_path, "always", SAMPLE, "--flip", "1")  # refused before: two operands
    assert np.array_equal(always, grid(tmp_path, "always_eq", SAMPLE, "--flip=1"))
    assert not np.array_equal(always, plain)
    # the value is the probability given, not --flip alone's 0.5
    assert np.array_equal(grid(tmp_path, "never", SAMPLE, "--flip", "0"), plain)
    # after the operand, and before it: --flip DIR is the flag alone, DIR the source
    assert ferry("load", "--size", "16", "--flip", "0.7", SAMPLE, "--quiet").returncode == 3
    r = ferry("load", "--size", "16", "--flip", SAMPLE, "--quiet")
    assert r.returncode == 3, r.stderr
    # a number out of range is the option's error, not a second source
    r = ferry("load", SAMPLE, "--flip", "2")
    assert r.returncode == 2 and "--flip needs a number in 0..1, got '2'" in r.stderr, r.stderr


# ----------------------------------------------------------- 2: ferry help

@pytest.mark.parametrize("cmd", ["load", "info", "decode", "demo", "hash", "index", "dupes",
                                 "doctor", "pack", "video"])
def test_help_command(cmd):
    r = ferry("help", cmd)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ferry(cmd, "--help").stdout
    assert r.stdout.startswith(f"usage: ferry {cmd}"), r.stdout[:80]


def test_help_alone_and_unknown():
    r = ferry("help")
    assert r.returncode == 0 and "commands:" in r.stdout
    r = ferry("help", "nosuch")
    assert r.returncode == 2 and "unknown command 'nosuch'" in r.stderr
    assert r.stdout == ""


# ----------------------------------------- 3: the writer from the extension

def test_decode_jpeg_output(tmp_path):
    out = tmp_path / "out.jpg"
    r = ferry("decode", JPEG, "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:3] == b"\xff\xd8\xff"  # a JPEG, not a PNG named .jpg
    im = Image.open(out)
    assert im.format == "JPEG" and im.size == (702, 712)
    ref = np.asarray(Image.open(JPEG).convert("RGB"), dtype=np.int16)
    assert np.abs(np.asarray(im.convert("RGB"), dtype=np.int16) - ref).mean() < 4
    small = tmp_path / "q.JPEG"
    assert ferry("decode", JPEG, "-o", small, "--quality", "40").returncode == 0
    assert Image.open(small).format == "JPEG"
    assert small.stat().st_size < out.stat().st_size  # quality 40 < the default 95
    gray = tmp_path / "g.jpeg"
    assert ferry("decode", JPEG, "-o", gray, "--gray").returncode == 0
    assert Image.open(gray).mode == "L"


def test_decode_ppm_and_png_outputs(tmp_path):
    ref = np.asarray(Image.open(JPEG).convert("RGB"))
    for name in ("out.ppm", "out.png"):
        assert ferry("decode", JPEG, "-o", tmp_path / name).returncode == 0
        got = Image.open(tmp_path / name)
        assert got.format == ("PPM" if name.endswith(".ppm") else "PNG")
        assert np.array_equal(np.asarray(got.convert("RGB")), ref)  # lossless both


def test_decode_unknown_extension_refused(tmp_path):
    for name in ("out.gif", "out.webp", "noext"):
        out = tmp_path / name
        r = ferry("decode", JPEG, "-o", out)
        assert r.returncode == 2, (name, r.stderr)
        assert str(out) in r.stderr and ".png, .jpg, .jpeg or .ppm" in r.stderr, r.stderr
        assert list(tmp_path.iterdir()) == [], name  # nothing written, no temporary left
    r = ferry("decode", JPEG, "-o", tmp_path / "x.png", "--quality", "80")
    assert r.returncode == 2 and "--quality is for a JPEG output" in r.stderr


def test_decode_into_a_pipe_is_written_not_replaced(tmp_path):
    """An output that is a FIFO (or a device: /dev/stdout, /dev/null) is
    written into, never replaced by a file renamed over it. (A FIFO, not
    /dev/null, stands for them here: a ferry with the slip, run as root,
    would put a regular file in /dev/null's place.)"""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    cat = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    try:
        r = ferry("decode", JPEG, "-o", fifo, "--size", "32", timeout=60)
        data, _ = cat.communicate(timeout=10)
    finally:
        if cat.poll() is None:  # the FIFO was replaced: cat still waits for a writer
            cat.kill()
            cat.wait()
    assert r.returncode == 0, r.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"  # no extension on a pipe: PNG
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_video_frame_and_grid_outputs(tmp_path):
    grid_jpg = tmp_path / "grid.jpg"
    r = ferry("load", SAMPLE, "--size", "32", "--save-grid", grid_jpg, "--quiet")
    assert r.returncode == 3, r.stderr
    assert Image.open(grid_jpg).format == "JPEG"
    r = ferry("load", SAMPLE, "--size", "32", "--save-grid", tmp_path / "grid.tif")
    assert r.returncode == 2 and "grid.tif" in r.stderr
    if not video_built():
        return
    r = ferry("video", VIDEO, "--frame", "3", "-o", tmp_path / "f.jpg")
    assert r.returncode == 0, r.stderr
    assert Image.open(tmp_path / "f.jpg").format == "JPEG"


# ------------------------------------------------------ 4: the aspect ratio

@pytest.fixture
def wide(tmp_path):
    p = tmp_path / "wide.jpg"
    Image.new("RGB", (640, 480), (200, 40, 10)).save(p, quality=95)
    return p


def test_decode_size_says_aspect_changes(tmp_path, wide):
    r = ferry("decode", wide, "-o", tmp_path / "a.png", "--size", "224")
    assert r.returncode == 0, r.stderr
    assert "640x480 resized to 224x224: aspect ratio not kept" in r.stderr, r.stderr
    assert "--keep-aspect" in r.stderr
    assert Image.open(tmp_path / "a.png").size == (224, 224)
    # WxH is asked for: nothing said; the same ratio: nothing said
    r = ferry("decode", wide, "-o", tmp_path / "b.png", "--size", "300x100")
    assert r.returncode == 0 and "aspect" not in r.stderr
    r = ferry("decode", tmp_path / "a.png", "-o", tmp_path / "c.png", "--size", "64")
    assert r.returncode == 0 and "aspect" not in r.stderr


def test_decode_keep_aspect(tmp_path, wide):
    r = ferry("decode", wide, "-o", tmp_path / "a.png", "--size", "224", "--keep-aspect")
    assert r.returncode == 0 and "aspect" not in r.stderr, r.stderr
    assert Image.open(tmp_path / "a.png").size == (299, 224)  # the short side is 224
    r = ferry("decode", wide, "-o", tmp_path / "b.png", "--size", "100x100", "--keep-aspect")
    assert r.returncode == 0
    assert Image.open(tmp_path / "b.png").size == (100, 75)  # fitted into the box
    # EXIF orientation 6: the upright image is 232x293
    r = ferry("decode", SAMPLE / "class0" / "exif_orient6.jpg", "-o", tmp_path / "o.png",
              "--size", "116", "--keep-aspect")
    assert r.returncode == 0
    assert Image.open(tmp_path / "o.png").size == (116, 147)  # 146.5 rounded
    r = ferry("decode", wide, "-o", tmp_path / "c.png", "--keep-aspect")
    assert r.returncode == 2 and "--keep-aspect goes with --size" in r.stderr


# --------------------------------------------- 5: still images and ferry video

def test_video_refuses_still_images(tmp_path):
    png = tmp_path / "x.png"
    Image.new("RGB", (32, 32)).save(png)
    for path, fmt in ((JPEG, "JPEG"), (png, "PNG")):
        r = ferry("video", path)
        assert r.returncode == 2, r.stderr
        assert f"{path}: a still image ({fmt}), not a video; use `ferry decode`" in r.stderr
        assert r.stdout == ""
    # among videos too, before any is decoded
    r = ferry("video", VIDEO, JPEG)
    assert r.returncode == 2 and "a still image (JPEG)" in r.stderr and r.stdout == ""


def test_video_still_takes_animations():
    if not video_built():
        pytest.skip("ferry built without video")
    r = ferry("video", GIF, "--quiet")  # libavformat reads GIF animations
    assert r.returncode == 0, r.stderr
    assert "still image" not in r.stderr


# --------------------------------------------------------------- 6: --json

def test_load_json(tmp_path):
    r = ferry("load", SAMPLE, "--size", "32", "--batch", "16", "--epochs", "2", "--json")
    assert r.returncode == 3, r.stderr
    d = json.loads(r.stdout)  # one object, nothing else on stdout
    assert d["command"] == "load" and d["source"] == str(SAMPLE)
    assert d["images"] == 96 and d["skipped"] == 2 and d["exit_code"] == 3  # once an epoch
    assert len(d["epochs"]) == 2 and d["epochs"][1]["images"] == 48
    assert d["epochs"][0]["images_per_s"] > 0 and "decode" in d["epochs"][0]["per_image_ms"]
    # on the CPU: no image, chunk or second on the GPU's JPEG engine
    assert all(e["gpu_decoded"] == e["gpu_chunks"] == 0 and e["gpu_call_s"] == 0
               for e in d["epochs"])
    (bad,) = d["skipped_files"]  # each file listed once
    assert bad["path"].endswith("truncated.jpg") and "truncated" in bad["error"]
    assert "skipped" in r.stderr and "truncated.jpg" in r.stderr  # messages stay on stderr


def test_hash_json(tmp_path):
    cat = tmp_path / "c.fidx"
    r = ferry("hash", SAMPLE, "-o", cat, "--json")
    assert r.returncode == 3, r.stderr
    d = json.loads(r.stdout)
    assert d["catalog"] == str(cat) and d["files"] == 49 and d["failed"] == 1
    (err,) = d["errors"]
    assert err["path"].endswith("truncated.jpg") and "truncated" in err["error"]
    assert "truncated.jpg" in r.stderr
    r = ferry("hash", SAMPLE, "-o", cat, "--json")  # nothing new
    d = json.loads(r.stdout)
    assert d["hashed"] == 0 and d["unchanged"] >= 48
    r = ferry("hash", SAMPLE, "--json")  # stdout is the CSV without -o
    assert r.returncode == 2 and "--json" in r.stderr


def test_doctor_json():
    r = ferry("doctor", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["cpu_cores"] >= 1 and d["backend"] in ("cpu", "gpu")
    assert isinstance(d["gpus"], list)
    assert (d["backend"] == "gpu") == bool(d["gpus"])
    # without nvJPEG, the whole list of places it was looked for (never cut)
    if d.get("cuda_runtime") and d["nvjpeg"] is None:
        assert d["nvjpeg_why"].startswith("libnvjpeg not found (looked for libnvjpeg.so.13")
        assert d["nvjpeg_why"].endswith(")"), d["nvjpeg_why"]


# ------------------------------------------------------- 7: - for stdin

def test_decode_from_stdin(tmp_path):
    out = tmp_path / "s.png"
    with open(JPEG, "rb") as f:
        r = subprocess.run([FERRY_BIN, "decode", "-", "-o", str(out)], stdin=f,
                           capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    ref = np.asarray(Image.open(JPEG).convert("RGB"))
    assert np.array_equal(np.asarray(Image.open(out).convert("RGB")), ref)
    r = subprocess.run([FERRY_BIN, "decode", "-", "-o", str(tmp_path / "t.png")],
                       input=(SAMPLE / "class3" / "truncated.jpg").read_bytes(),
                       capture_output=True, timeout=60)
    assert r.returncode == 1 and b"standard input: truncated JPEG" in r.stderr


def test_load_list_from_stdin():
    # relative paths from the working directory, as a shell user means them
    lines = "class0/p0000.jpg,1\n" f"{SAMPLE}/class1/p0001.jpg,0\n"
    r = subprocess.run([FERRY_BIN, "load", "-", "--size", "32", "--quiet"], input=lines,
                       cwd=SAMPLE, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "source standard input: 2 images, 2 classes" in r.stdout
    assert "epoch 0: 2 images, 0 skipped" in r.stdout
    r = subprocess.run([FERRY_BIN, "load", "-", "--size", "32", "--quiet"],
                       input="class0/p0000.jpg,x\n", cwd=SAMPLE, capture_output=True, text=True)
    assert r.returncode == 1
    assert "standard input:1: label 'x' is not an integer" in r.stderr, r.stderr


def test_hash_paths_from_stdin():
    lines = "class0/p0000.jpg\nclass1\n"
    r = subprocess.run([FERRY_BIN, "hash", "-"], input=lines, cwd=SAMPLE, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rows = r.stdout.splitlines()[1:]
    assert any(x.endswith("p0000.jpg") or "/class0/p0000.jpg," in x for x in rows)
    assert len(rows) == 1 + len([p for p in (SAMPLE / "class1").iterdir()
                                 if p.suffix.lower() in (".jpg", ".png", ".webp")])


# ------------------------------------------------------ 8: --gpu, --no-gpu

def test_gpu_shorthands_accepted(tmp_path):
    cat = tmp_path / "c.fidx"
    assert ferry("hash", SAMPLE, "-o", cat, "-q").returncode == 3
    runs = {
        "load": ["load", SAMPLE, "--size", "16", "--quiet"],
        "hash": ["hash", SAMPLE / "class0", "-q"],
        "dupes": ["dupes", cat, "-q"],
        "video": ["video", VIDEO, "--quiet"],
    }
    for name, args in runs.items():
        r = ferry(*args, "--no-gpu")
        assert "unknown" not in r.stderr, (name, r.stderr)
        if name != "video" or video_built():
            assert r.returncode in (0, 3), (name, r.stderr)
        r = ferry(*args, "--gpu")  # works, or says why the GPU cannot be used
        assert "unknown" not in r.stderr and r.returncode != 2, (name, r.stderr)


# -------------------------------------------------- 9: a pack at its own size

def test_pack_loaded_at_its_size(tmp_path):
    pk = tmp_path / "pk"
    assert ferry("pack", SAMPLE, "-o", pk, "--size", "40", "--quiet").returncode == 3
    g = tmp_path / "g.png"
    r = ferry("load", pk, "--batch", "8", "--save-grid", g)
    assert r.returncode == 0, r.stderr
    assert Image.open(g).size == (8 * 40, 40)  # not upscaled to 224
    assert "a pack of 40x40 samples" in r.stderr
    r = ferry("load", pk, "--batch", "8", "--size", "64", "--save-grid", g, "--quiet")
    assert r.returncode == 0 and Image.open(g).size == (8 * 64, 64)
