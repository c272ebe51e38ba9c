#!/usr/bin/env python3
"""Writes opencl_src.h into DIR: each src/opencl/NAME.cl and the hash headers
the CPU and CUDA share (src/hash/{fp,dct,haar}_core.h, hash_jobs.h) as the bytes
FY_CL_<NAME>_BYTES that src/opencl/cl_sources.c embeds, so the .cl files stay
real OpenCL C files. setup.py and fuzz/fuzz.mk call this; CMakeLists.txt
writes the same header with file(READ ... HEX) (no Python at configure time).
The file is rewritten only when its text changes (dependent objects rebuild
only then). Prints the folder.

    python3 scripts/gen_opencl_src.py DIR
"""
import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def header_text():
    text = "/* generated from the OpenCL C files in src/opencl by scripts/gen_opencl_src.py */\n"
    shared = [os.path.join(ROOT, "src", "hash", h) for h in ("fp_core.h", "dct_core.h",
                                                               "haar_core.h", "hash_jobs.h")]
    for path in sorted(glob.glob(os.path.join(ROOT, "src", "opencl", "*.cl"))) + shared:
        name = os.path.splitext(os.path.basename(path))[0].upper()
        with open(path, "rb") as f:
            data = f.read()
        text += "#define FY_CL_%s_BYTES %s\n" % (name, ",".join("0x%02x" % b for b in data))
    return text


def write(folder):
    """opencl_src.h in folder; True when it was (re)written."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "opencl_src.h")
    text = header_text()
    old = None
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
    if old == text:
        return False
    tmp = path + ".tmp%d" % os.getpid()
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return True


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    write(sys.argv[1])
    print(sys.argv[1])
