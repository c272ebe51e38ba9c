#!/usr/bin/env python3
"""Video sampling and random access on the CPU (issue 17).

    python3 bench/bench_video_access.py --ferry build/ferry FILE.mp4 [FILE...] \
        [--stride 25] [--repeat 3] [--frames 0,1,100,249,299] [--long]

For each file, best of --repeat runs (wall time of the `ferry video` process):
  all       `ferry video FILE --quiet`: every frame decoded and kept
  stride N  `ferry video FILE --quiet --stride N`
  frame k   random access: `ferry video FILE --frame K -o OUT.png` (one
            process: open + seek + decode, when the CLI has --frame), and,
            when the Python package imports, VideoReader.frame(k) on one open
            reader (the time of each call after the first open), against
            reading frames in order up to k (`--end` just after frame k).
--long first makes a 10-minute 1280x720 H.264 file (testsrc2, x264 superfast,
B-frames, keyframe interval 250) in /tmp and adds it to the files. Prints one
table; the machine and date go with the figures into bench/RESULTS.md.

Claims it proves (bench/CLAIMS.md): C41, C42.
"""
import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time


def run(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
    return dt, p.stdout


def best(cmd, repeat):
    return min(run(cmd)[0] for _ in range(repeat))


def decoded_of(out):
    m = re.search(r"(\d+) frames sampled, (\d+) decoded", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def has_frame_option(ferry):
    out = subprocess.run([ferry, "video", "--help"], capture_output=True, text=True).stdout
    return "--frame" in out


def probe(ferry, path):
    out = subprocess.run([ferry, "video", path, "--end", "0.0001", "--timestamps"],
                         capture_output=True, text=True).stdout
    m = re.search(r"([\d.]+) fps, ([\d.]+) s, (\d+) frames declared", out)
    return float(m.group(1)), float(m.group(2)), int(m.group(3))


def make_long(path):
    if os.path.exists(path):
        return path
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc2=size=1280x720:rate=30", "-t", "600", "-c:v", "libx264", "-preset",
                    "superfast", "-g", "250", "-bf", "3", "-pix_fmt", "yuv420p", path], check=True)
    return path


def python_frame_times(path, ks):
    try:
        import ferry
    except ImportError:
        return None
    if not hasattr(ferry.VideoReader, "frame"):
        return None
    r = ferry.VideoReader(path)
    r.frame(ks[0])  # the first access opens the decoder's state; not counted
    out = []
    for k in ks:
        t0 = time.perf_counter()
        r.frame(k)
        out.append((k, time.perf_counter() - t0))
    r.close()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferry", default="build/ferry")
    ap.add_argument("--stride", type=int, default=25)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--frames", default="")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--long", action="store_true")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    files = list(a.files)
    if a.long:
        files.append(make_long(os.path.join(tempfile.gettempdir(), "ferry_long_720p_h264.mp4")))
    print(f"# {platform.node()} {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}, "
          f"{platform.processor() or platform.machine()}")
    thr = ["--threads", str(a.threads)] if a.threads else []
    frame_cli = has_frame_option(a.ferry)
    for f in files:
        fps, dur, declared = probe(a.ferry, f)
        n = declared or int(round(fps * dur))
        name = os.path.basename(f)
        _, out = run([a.ferry, "video", f, "--quiet"] + thr)
        kept_all, dec_all = decoded_of(out)
        t_all = best([a.ferry, "video", f, "--quiet"] + thr, a.repeat)
        _, out = run([a.ferry, "video", f, "--quiet", "--stride", str(a.stride)] + thr)
        kept_s, dec_s = decoded_of(out)
        t_s = best([a.ferry, "video", f, "--quiet", "--stride", str(a.stride)] + thr, a.repeat)
        print(f"{name}: all {kept_all} frames {t_all:.3f} s ({kept_all / t_all:.0f} frames/s); "
              f"stride {a.stride}: {kept_s} kept, {dec_s} decoded, {t_s:.3f} s "
              f"({t_all / t_s:.2f}x faster)")
        ks = [int(x) for x in a.frames.split(",")] if a.frames else sorted(
            {0, n // 3, n // 2, n - 1})
        for k in ks:
            if k >= n:
                continue
            end = (k + 0.5) / fps
            t_seq = best([a.ferry, "video", f, "--quiet", "--stride", str(max(k, 1)), "--end",
                          f"{end:.6f}"] + thr, a.repeat)
            line = f"  frame {k}: in order from the start {t_seq * 1000:.0f} ms"
            if frame_cli:
                with tempfile.TemporaryDirectory() as td:
                    t_cli = best([a.ferry, "video", f, "--frame", str(k), "-o",
                                  os.path.join(td, "f.png")] + thr, a.repeat)
                line += f"; ferry video --frame {k} -o f.png {t_cli * 1000:.0f} ms"
            print(line)
        py = python_frame_times(f, [k for k in ks if k < n])
        if py:
            print("  VideoReader.frame(k) on an open reader: " +
                  ", ".join(f"k={k} {dt * 1000:.1f} ms" for k, dt in py))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
