"""No output over an input (core/user_file.c, fy_out_guard), from the
outside: `ferry load --save-grid/--save` and `ferry decode -o` refuse an
output that is one of their inputs (the same file through a symbolic or
hard link) or lies inside the folder they walk, before writing anything;
`--save` checks the free space first; a list file that is a FIFO or a
device is refused at once. Only the binary (FERRY_BIN) is run."""
import hashlib
import os
import shutil
import subprocess

import pytest

from ferrylib import FERRY_BIN, ROOT

if os.sep in FERRY_BIN:
    FERRY_BIN = os.path.abspath(FERRY_BIN)

SAMPLE = ROOT / "data" / "sample"
JPEG = SAMPLE / "class0" / "p0000.jpg"

pytestmark = pytest.mark.skipif(not SAMPLE.is_dir(), reason=f"{SAMPLE} absent")


def ferry(*args, timeout=120):
    return subprocess.run([FERRY_BIN, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def tree_digest(root):
    """Every file under root: its name, kind and bytes."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            p = os.path.join(dirpath, name)
            if os.path.islink(p) or not os.path.isfile(p):
                out[os.path.relpath(p, root)] = os.path.islink(p) and os.readlink(p)
            else:
                with open(p, "rb") as f:
                    out[os.path.relpath(p, root)] = hashlib.sha256(f.read()).hexdigest()
    return out


@pytest.fixture
def folder(tmp_path):
    """S: an ImageFolder of two classes of ten JPEGs."""
    s = tmp_path / "S"
    jpegs = sorted(SAMPLE.glob("class*/p*.jpg"))[:20]
    assert len(jpegs) == 20
    for i, j in enumerate(jpegs):
        d = s / ("cat", "dog")[i % 2]
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(j, d / f"x{i:02d}.jpg")
    return s


def test_save_grid_inside_the_walked_folder_is_refused(folder):
    before = tree_digest(folder)
    target = folder / "cat" / "x00.jpg"
    r = ferry("load", folder, "--size", "32", "--save-grid", target, "--quiet")
    assert r.returncode == 2, r.stderr
    assert f"{target}: is the input" in r.stderr or "inside the input folder" in r.stderr, r.stderr
    r = ferry("load", folder, "--size", "32", "--save-grid", folder / "new" / "grid.png",
              "--quiet")
    assert r.returncode == 2 and "inside the input folder" in r.stderr, r.stderr
    assert tree_digest(folder) == before  # the photo kept, nothing made inside S


def test_save_grid_over_a_listed_file_is_refused(folder, tmp_path):
    """A list names files anywhere: an output that is one of them (by a
    hard link or a symbolic link too) is refused."""
    photo = folder / "dog" / "x01.jpg"
    lst = tmp_path / "list.txt"
    lst.write_text(f"{photo},1\n{folder / 'cat' / 'x00.jpg'},0\n")
    os.link(photo, tmp_path / "hard.jpg")
    os.symlink(photo, tmp_path / "soft.jpg")
    before = tree_digest(folder)
    for out in (photo, tmp_path / "hard.jpg", tmp_path / "soft.jpg"):
        r = ferry("load", lst, "--size", "32", "--save-grid", out, "--quiet")
        assert r.returncode == 2 and "is the input" in r.stderr, (out, r.stderr)
    assert tree_digest(folder) == before
    assert os.path.islink(tmp_path / "soft.jpg")
    # a new file beside them is written as before
    r = ferry("load", lst, "--size", "32", "--save-grid", tmp_path / "grid.png", "--quiet")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "grid.png").stat().st_size > 0


def test_save_npy_over_the_list_or_its_labels_is_refused(folder, tmp_path):
    """`--save L.npy` writes L.npy and L.labels.npy: neither may be the list."""
    body = f"{folder / 'cat' / 'x00.jpg'},0\n{folder / 'dog' / 'x01.jpg'},1\n"
    for listname, save in (("L.npy", "L.npy"), ("L.labels.npy", "L.npy")):
        lst = tmp_path / listname
        lst.write_text(body)
        r = ferry("load", lst, "--size", "16", "--save", tmp_path / save, "--quiet")
        assert r.returncode == 2 and "is the input" in r.stderr, (listname, r.stderr)
        assert lst.read_text() == body
        lst.unlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["S"]  # no temporary left


def test_save_npy_checks_the_free_space_first(folder, tmp_path):
    """A --save larger than its file system's free space is refused before a
    byte is written (it used to fill the disk, then remove the temporary)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (not root?): {r.stderr.strip()}")
    try:
        # 20 samples of 96x96x3 float32: 2.2 MB, far over 256 KiB
        r = ferry("load", folder, "--size", "96", "--dtype", "float32", "--save",
                  mnt / "out.npy", "--quiet")
        assert r.returncode == 1, r.stderr
        assert f"{mnt / 'out.npy'}: needs 3 MB" in r.stderr and "MB free" in r.stderr, r.stderr
        assert os.listdir(mnt) == []
        # one that fits is written
        r = ferry("load", folder, "--size", "8", "--save", mnt / "ok.npy", "--quiet")
        assert r.returncode == 0, r.stderr
        assert sorted(os.listdir(mnt)) == ["ok.labels.npy", "ok.npy"]
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_decode_over_its_input_by_any_name_is_refused(tmp_path):
    src = tmp_path / "p.jpg"
    shutil.copy(JPEG, src)
    os.link(src, tmp_path / "hard.png")
    os.symlink(src, tmp_path / "soft.png")
    data = src.read_bytes()
    for out in (src, tmp_path / "hard.png", tmp_path / "soft.png"):
        r = ferry("decode", src, "-o", out, "--size", "32")
        assert r.returncode == 2 and "is the input" in r.stderr, (out, r.stderr)
    assert src.read_bytes() == data and os.path.islink(tmp_path / "soft.png")


def test_a_list_that_is_a_fifo_or_device_is_refused_at_once(tmp_path):
    fifo = tmp_path / "list.txt"
    os.mkfifo(fifo)
    for src, kind in ((fifo, "a FIFO"), ("/dev/zero", "a character device")):
        r = ferry("load", src, "--size", "16", timeout=30)  # a wait would time out here
        assert r.returncode == 1, r.stderr
        assert f"{src}: {kind}, not a folder or a list file" in r.stderr, r.stderr
        assert "standard input" in r.stderr  # what to do instead


def test_reports_and_exports_replace_their_file_whole(folder, tmp_path):
    """`ferry dupes -o` and `ferry index export -o` write a temporary and
    rename it over the output once complete: a run killed or failed half-way
    leaves the old file as it was (an in-place rewrite would have cut it).
    Seen from outside: a hard link to the old output keeps the old bytes."""
    cat = tmp_path / "c.fidx"
    r = ferry("hash", folder, "-o", cat)
    assert r.returncode == 0, r.stderr
    for argv in (["dupes", cat, "--format", "html"], ["index", "export", cat]):
        out, old = tmp_path / "out.txt", tmp_path / "old.txt"
        out.write_text("the previous report\n")
        os.link(out, old)
        r = ferry(*argv, "-o", out)
        assert r.returncode == 0, (argv, r.stderr)
        assert old.read_text() == "the previous report\n", argv
        assert out.read_text() != old.read_text() and out.stat().st_ino != old.stat().st_ino
        assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name], list(tmp_path.iterdir())
        out.unlink(), old.unlink()


def test_video_frames_never_over_the_video(tmp_path):
    """`ferry video --save-frames DIR`: a frame's file that is the video
    itself (a hard link named as the frame) is refused, the video kept."""
    video = ROOT / "tests" / "fixtures" / "video" / "testsrc_h264.mp4"
    src = tmp_path / "a.mp4"
    shutil.copy(video, src)
    (tmp_path / "f").mkdir()
    os.link(src, tmp_path / "f" / "a.mp4_000000.png")
    r = ferry("video", src, "--save-frames", tmp_path / "f", "--batch", "8")
    assert r.returncode == 1 and "a.mp4_000000.png: is the input" in r.stderr, r.stderr
    assert src.read_bytes() == video.read_bytes()
