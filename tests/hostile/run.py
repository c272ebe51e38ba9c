#!/usr/bin/env python3
"""Hostile inputs through the `ferry` command, each in a bounded time and
memory: every one a clear error (or a named skip) that names the file, in at
most 2 s of CPU time and 512 MB (and 10 s of wall time: no wait), with nothing of the user's changed (every file the case
made is compared before and after, but the outputs it names).

    python3 tests/hostile/run.py path/to/ferry [--only NAME] [--list]

ctest runs it on the release build and on the ASan+UBSan build (`make
test`): the same bounds hold there. The kinds are those of the attack
reviews (issues 16 and 52); tests/hostile/inputs.py makes the files. Prints
one line a case and "N passed, N failed"."""
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import inputs

ROOT = inputs.ROOT
SAMPLE = ROOT / "data" / "sample"
CODECS = inputs.FIXTURES / "codecs"
VIDEO = inputs.FIXTURES / "video"
FUZZ = inputs.FIXTURES / "fuzz-regressions"
# each case's CPU time (user + system, all threads: what a busy machine does
# not inflate) and peak memory; WAIT_SECONDS of wall time catch a wait
SECONDS, MEGABYTES, WAIT_SECONDS = 2.0, 512, 10.0

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def two_classes(d):
    """S: two classes of ten JPEGs (the reviews' ImageFolder)."""
    s = d / "S"
    for i, j in enumerate(sorted(SAMPLE.glob("class*/p*.jpg"))[:20]):
        c = s / ("cat", "dog")[i % 2]
        c.mkdir(parents=True, exist_ok=True)
        shutil.copy(j, c / f"x{i:02d}.jpg")
    return s


def image_case(name, make, pattern, rc=(1,), info_rc=(0, 1)):
    """One crafted image through `ferry info` (which reads the header only:
    a whole header may pass, but the file is named either way) and `ferry
    decode` (which must fail as `rc` says, naming the file and `pattern`)."""
    for cmd in ("info", "decode"):
        def fn(d, cmd=cmd):
            f = make(d)
            if cmd == "info":
                return dict(argv=["info", f], rc=info_rc, pattern=re.escape(str(f)))
            return dict(argv=["decode", f, "-o", d / "out.png", "--size", "32"], rc=rc,
                        pattern=pattern.format(f=re.escape(str(f))), outputs={"out.png"})
        fn.__name__ = f"{name}-{cmd}"
        CASES.append(fn)


# ---------------------------------------------------------------- decoders
image_case("jpeg-scan-bomb", lambda d: inputs.scan_bomb(d / "bomb.jpg"), r"{f}: .*scans")
image_case("bmp-truncated", lambda d: inputs.bmp(d / "cut.bmp", 64, 64, keep_bytes=6000),
           r"{f}: .*(truncated|ends|short)")
image_case("bmp-13000x13000-in-54-bytes", lambda d: inputs.bmp(d / "huge.bmp", 13000, 13000, 0),
           r"{f}: ")
image_case("jpeg-truncated", lambda d: inputs.jpeg_truncated(d / "cut.jpg"), r"{f}: ",
           rc=(1,))
image_case("jpeg-lossless-sof3", lambda d: inputs.jpeg_sof(d / "sof3.jpg", 0xC3),
           r"{f}: .*(lossless|unsupported|not supported)")
image_case("png-inflate-bomb", lambda d: pathlib.Path(shutil.copy(CODECS / "inflate_bomb_1x1.png",
                                                                  d / "b.png")), r"",
           rc=(0, 1))  # decoded in bounded time, or refused
image_case("png-65500x65500", lambda d: pathlib.Path(shutil.copy(CODECS / "bomb_65500x65500.png",
                                                                 d / "b.png")), r"{f}: ")
image_case("png-idat-lies", lambda d: inputs.png(d / "lie.png", 4000, 4000, idat=b"\x78\x9c"),
           r"{f}: ")
image_case("tiff-strip-short", lambda d: inputs.tiff_bad_rows(d / "short.tif"),
           r"{f}: (?!.*scanline 4294967295)")
image_case("heic-garbled", lambda d: inputs.flipped(d / "bad.heic", CODECS / "rgb.heic"),
           r"{f}: ")
for f in sorted((FUZZ / "probe").glob("*")) if (FUZZ / "probe").is_dir() else []:
    image_case(f"raw-{f.name}", lambda d, f=f: pathlib.Path(shutil.copy(f, d / (f.name + ".dng"))),
               r"{f}", rc=(1,))


# ------------------------------------------------------- devices and FIFOs
@case
def info_dev_zero(d):
    return dict(argv=["info", "/dev/zero"], rc=(1,), pattern=r"/dev/zero: a character device")


@case
def decode_dev_zero(d):
    return dict(argv=["decode", "/dev/zero", "-o", d / "o.png"], rc=(1,),
                pattern=r"/dev/zero: a character device", outputs={"o.png"})


@case
def list_of_devices(d):
    lst = d / "list.txt"
    lst.write_text("/dev/zero,0\n/dev/urandom,1\n")
    return dict(argv=["load", lst, "--size", "16", "--quiet"], rc=(1, 3),
                pattern=r"(?s)(?=.*/dev/zero: a character device)(?=.*/dev/urandom: a character device)")


@case
def hash_list_of_devices(d):
    return dict(argv=["hash", "/dev/zero", "/dev/urandom"], rc=(1, 3),
                pattern=r"/dev/(zero|urandom)")


@case
def merge_dev_zero(d):
    return dict(argv=["index", "merge", d / "o.fidx", "/dev/zero"], rc=(1,),
                pattern=r"/dev/zero: a character device", outputs={"o.fidx"})


@case
def fifo_image_in_a_folder(d):
    s = two_classes(d)
    os.mkfifo(s / "cat" / "hung.jpg")
    return dict(argv=["load", s, "--size", "16", "--quiet"], rc=(3,),
                pattern=re.escape(str(s / "cat" / "hung.jpg")) + r": a FIFO")


@case
def fifo_list(d):
    os.mkfifo(d / "list.txt")
    return dict(argv=["load", d / "list.txt", "--size", "16"], rc=(1,),
                pattern=r"list.txt: a FIFO")


@case
def fifo_shard(d):
    os.mkfifo(d / "f.tar")
    return dict(argv=["load", d / "f.tar", "--size", "16", "--quiet"], rc=(1,),
                pattern=r"f.tar: a FIFO")


@case
def fifo_video(d):
    os.mkfifo(d / "v.mp4")
    return dict(argv=["video", d / "v.mp4"], rc=(1,), pattern=r"v.mp4: a FIFO")


@case
def fifo_catalog(d):
    os.mkfifo(d / "c.fidx")
    return dict(argv=["dupes", d / "c.fidx"], rc=(1,), pattern=r"c.fidx: a FIFO")


# ------------------------------------------------------------------ video
@case
def gif_canvas_bomb(d):
    f = inputs.gif_frames(d / "bomb.gif", 10000, 30)
    return dict(argv=["video", f], rc=(1,), pattern=re.escape(str(f)))


@case
def gif_frames_bomb(d):
    f = inputs.gif_frames(d / "bomb.gif", 10000, 3000)
    return dict(argv=["video", f], rc=(1,), pattern=re.escape(str(f)))


@case
def video_garbled(d):
    f = pathlib.Path(shutil.copy(VIDEO / "garbled_h264.mp4", d / "g.mp4"))
    return dict(argv=["video", f, "--batch", "8"], rc=(3,), pattern=re.escape(str(f)))


@case
def video_truncated(d):
    f = pathlib.Path(shutil.copy(VIDEO / "truncated_h264.mp4", d / "t.mp4"))
    return dict(argv=["video", f, "--batch", "8"], rc=(1, 3), pattern=re.escape(str(f)))


@case
def video_bad_stsz(d):
    f = inputs.mp4_bad_stsz(d / "stsz.mp4", VIDEO / "testsrc_h264.mp4")
    return dict(argv=["video", f], rc=(1,),
                pattern=re.escape(str(f)) + r": (?!.*moov box.*cut off)")


@case
def jpeg_named_mp4(d):
    f = pathlib.Path(shutil.copy(inputs.SAMPLE_JPEG, d / "clip.mp4"))
    return dict(argv=["video", f], rc=(1, 2), pattern=re.escape(str(f)))


# ------------------------------------------------- catalogs, shards, lists
for f in sorted((FUZZ / "catalog").glob("*")) if (FUZZ / "catalog").is_dir() else []:
    def fn(d, f=f):
        c = pathlib.Path(shutil.copy(f, d / "c.fidx"))
        return dict(argv=["dupes", c], rc=(1,), pattern=re.escape(str(c)))
    fn.__name__ = f"catalog-{f.name}"
    CASES.append(fn)


@case
def catalog_garbage(d):
    c = d / "c.fidx"
    c.write_bytes(b"FIDX" + os.urandom(4000))
    return dict(argv=["index", "info", c], rc=(1,), pattern=re.escape(str(c)))


@case
def shard_garbage(d):
    t = d / "s.tar"
    t.write_bytes(b"x.jpg".ljust(100, b"\0") + b"\xff" * 412 + os.urandom(2048))
    return dict(argv=["load", t, "--size", "16", "--quiet"], rc=(1,), pattern=re.escape(str(t)))


@case
def list_label_overflow(d):
    lst = d / "l.txt"
    lst.write_text(f"{inputs.SAMPLE_JPEG},2147483647\n{inputs.SAMPLE_JPEG},0\n")
    return dict(argv=["load", lst, "--size", "16", "--quiet"], rc=(1,),
                pattern=r"l.txt:1: .*label", forbid=r"-2147483648")


@case
def list_long_line(d):
    lst = d / "l.txt"
    lst.write_bytes(b"a" * 200000 + b"\n")
    return dict(argv=["load", lst, "--size", "16"], rc=(1,), pattern=r"l.txt:1: a line of more")


@case
def walk_symlink_loop(d):
    s = d / "S" / "cat"
    s.mkdir(parents=True)
    shutil.copy(inputs.SAMPLE_JPEG, s / "a.jpg")
    os.symlink("..", s / "loop")
    s = s.parent
    return dict(argv=["hash", s], rc=(0, 3), pattern=r"", outputs=set())


# ------------------------------------------------------- outputs, inputs
@case
def decode_over_input(d):
    f = pathlib.Path(shutil.copy(inputs.SAMPLE_JPEG, d / "p.jpg"))
    return dict(argv=["decode", f, "-o", f, "--size", "32"], rc=(2,), pattern=r"is the input")


@case
def save_grid_over_input(d):
    s = two_classes(d)
    return dict(argv=["load", s, "--size", "16", "--save-grid", s / "cat" / "x00.jpg"], rc=(2,),
                pattern=r"(is the input|inside the input folder)")


@case
def pack_inside_its_source(d):
    s = two_classes(d)
    return dict(argv=["pack", s, "-o", s / "aaa", "--size", "16"], rc=(1, 2),
                pattern=r"inside the input folder")


@case
def dupes_output_over_catalog(d):
    s = two_classes(d)
    c = d / "c.fidx"
    subprocess.run([FERRY, "hash", s, "-o", c], capture_output=True, check=True)
    return dict(argv=["dupes", c, "-o", c], rc=(2,), pattern=r"is the input")


@case
def hash_output_inside_walk(d):
    s = two_classes(d)
    return dict(argv=["hash", s, "-o", s / "c.fidx"], rc=(1, 2), pattern=r"inside the input folder")


# ------------------------------------------------------------------ runner
def digest(root, skip):
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = pathlib.Path(dirpath) / name
            rel = str(p.relative_to(root))
            if rel in skip or rel.split(os.sep)[0] in skip:
                continue
            st = os.lstat(p)
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_file():
                out[rel] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
            else:
                out[rel] = ("other", st.st_mode)
    return out


def run_one(fn, scratch):
    d = pathlib.Path(tempfile.mkdtemp(dir=scratch, prefix=fn.__name__[:40] + "-"))
    c = fn(d)
    outputs = c.get("outputs", set())
    before = digest(d, outputs)
    argv = [FERRY] + [str(a) for a in c["argv"]]
    limit = 30
    fo = open(pathlib.Path(scratch) / "stdout", "w+b")
    fe = open(pathlib.Path(scratch) / "stderr", "w+b")
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, cwd=d)
    timer = threading.Timer(limit, p.kill)
    timer.start()
    _, status, usage = os.wait4(p.pid, 0)  # this child's own peak memory
    took = time.monotonic() - t0
    timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    fo.seek(0), fe.seek(0)
    out, err = fo.read(), fe.read()
    fo.close(), fe.close()
    if took >= limit:
        return f"did not end in {limit:.0f} s (killed): {' '.join(argv)}"
    rss_mb = usage.ru_maxrss / 1024
    err = err.decode(errors="replace")
    problems = []
    if p.returncode not in c["rc"]:
        problems.append(f"exit {p.returncode}, want {' or '.join(map(str, c['rc']))}")
    said = err + out.decode(errors="replace")
    if c["pattern"] and not re.search(c["pattern"], said):
        problems.append(f"output lacks /{c['pattern']}/")
    if c.get("forbid") and re.search(c["forbid"], said):
        problems.append(f"output has /{c['forbid']}/")
    cpu = usage.ru_utime + usage.ru_stime
    if cpu > SECONDS:
        problems.append(f"took {cpu:.2f} s of CPU time (limit {SECONDS:.0f} s)")
    if took > WAIT_SECONDS:
        problems.append(f"took {took:.2f} s (limit {WAIT_SECONDS:.0f} s: a wait)")
    if rss_mb > MEGABYTES:
        problems.append(f"peak memory {rss_mb:.0f} MB (limit {MEGABYTES} MB)")
    after = digest(d, outputs)
    if after != before:
        changed = sorted(set(before.items()) ^ set(after.items()))
        problems.append(f"the user's files changed: {changed[:4]}")
    shutil.rmtree(d, ignore_errors=True)
    if problems:
        tail = "\n      ".join(err.strip().splitlines()[-4:])
        return "; ".join(problems) + f"\n    {' '.join(argv)}\n      {tail}"
    return None, took, cpu, rss_mb


def main():
    global FERRY
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    FERRY = os.path.abspath(args[0])
    only = args[args.index("--only") + 1] if "--only" in args else None
    if "--list" in args:
        print("\n".join(fn.__name__ for fn in CASES))
        return 0
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="ferry-hostile-") as scratch:
        for fn in CASES:
            if only and only not in fn.__name__:
                continue
            r = run_one(fn, scratch)
            if isinstance(r, tuple):
                passed += 1
                _, took, cpu, rss = r
                print(f"ok   {fn.__name__}: {took:.2f} s ({cpu:.2f} s CPU), {rss:.0f} MB")
            else:
                failed += 1
                print(f"FAIL {fn.__name__}: {r}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


FERRY = None
if __name__ == "__main__":
    sys.exit(main())
