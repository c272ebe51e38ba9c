"""Builds ferry's Python package: the C extension ferry._ferry, linked with
the ferry C library built from this checkout.

How the library is built (FERRY_PY_LIB=auto|cmake|sources, default auto):

  cmake    CMake builds libferry.a (target ferry_static) in build-py/, exactly
           as `make` does, with the CUDA backend when CMake finds nvcc and
           nvJPEG. Its link dependencies come from the generated ferry.pc
           (`pkg-config --static`), plus the CUDA runtime when the archive
           needs it.
  sources  without CMake: src/**/*.c are compiled here (CPU only: CUDA
           sources are .cu files that only CMake builds).

`auto` takes cmake when a `cmake` command is found. Everything is built under
build-py/ (never build/, which belongs to `make`), unless
FERRY_PY_CMAKE_BUILD=DIR names a CMake build directory that `make` already
configured (`make test` passes its own, so the library is compiled once).
Needs the libjpeg, libpng, libwebp, libtiff, giflib, libheif, stb, LibRaw and zlib development packages (scripts/setup.sh
installs them).

    pip install .            # a wheel
    pip install -e .         # editable, for development
    python3 setup.py build_ext --inplace   # what `make test` does
"""
import concurrent.futures
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD_BASE = "build-py"
# the libraries libferry links (pkg-config names), as CMakeLists.txt and ferry.pc.in have them
CODEC_PKGS = ("libjpeg", "libpng", "libwebp", "libtiff-4", "libgif", "libheif", "stb", "libraw_r", "zlib")
STRICT = ["-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"]


def read_version():
    with open(os.path.join(ROOT, "include", "ferry.h")) as f:
        return re.search(r'#define FERRY_VERSION_STRING "([^"]+)"', f.read()).group(1)


def log(msg):
    print(f"ferry: {msg}", flush=True)


def run(cmd, **kw):
    log("$ " + " ".join(shlex.quote(c) for c in cmd))
    subprocess.run(cmd, check=True, **kw)


def pkg_config(args, env=None):
    try:
        out = subprocess.run(["pkg-config", *args], check=True, capture_output=True, text=True,
                             env=env).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        stderr = getattr(e, "stderr", "") or str(e)
        raise SystemExit(f"ferry: pkg-config {' '.join(args)} failed: {stderr.strip()}\n"
                         "ferry: the libjpeg, libpng, libwebp, libtiff, giflib, libheif, stb, LibRaw and zlib development packages and "
                         "pkg-config are needed (scripts/setup.sh installs them)")
    return shlex.split(out)


def defined_symbols(paths):
    """Global symbols defined in object files or archives (nm)."""
    syms, undefined = set(), set()
    for chunk in range(0, len(paths), 200):
        out = subprocess.run(["nm", "-g", *paths[chunk:chunk + 200]], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBRWVi":
                syms.add(parts[2])
            elif len(parts) == 2 and parts[0] == "U":
                undefined.add(parts[1])
    return syms, undefined


class BuildExt(build_ext):
    """build_ext that first builds (or finds) the ferry C library."""

    def initialize_options(self):
        super().initialize_options()
        self.parallel = os.cpu_count() or 1

    def build_extension(self, ext):
        mode = os.environ.get("FERRY_PY_LIB", "auto")
        if mode == "auto":
            mode = "cmake" if shutil.which("cmake") else "sources"
        if mode not in ("cmake", "sources"):
            raise SystemExit(f"ferry: FERRY_PY_LIB must be auto, cmake or sources, not {mode}")
        temp = os.path.abspath(self.build_temp)
        if mode == "cmake":
            given = os.environ.get("FERRY_PY_CMAKE_BUILD")
            if given and not os.path.exists(os.path.join(given, "CMakeCache.txt")):
                raise SystemExit(f"ferry: FERRY_PY_CMAKE_BUILD={given} is not a configured "
                                 "CMake build directory")
            bdir = os.path.abspath(given) if given else os.path.join(temp, "cmake")
            objects, link = self.library_cmake(bdir)
        else:
            objects, link = self.library_sources(os.path.join(temp, "lib"))
        _, undefined = defined_symbols(objects)
        log("library: %s (%s CUDA)" % (
            mode, "with" if any(u.startswith("cuda") for u in undefined) else "no"))
        ext.extra_objects = objects
        # The library's internal symbols stay inside the extension.
        ext.extra_link_args = link + ["-Wl,--exclude-libs,ALL"]
        ext.depends = ext.depends + objects + self.headers()
        super().build_extension(ext)

    @staticmethod
    def headers():
        return (glob.glob(os.path.join(ROOT, "include", "*.h")) +
                glob.glob(os.path.join(ROOT, "python", "ferry", "_ext", "*.h")))

    def library_cmake(self, bdir):
        """libferry.a from CMake; link flags from its ferry.pc."""
        if not os.path.exists(os.path.join(bdir, "CMakeCache.txt")):
            run(["cmake", "-S", ROOT, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release",
                 "-DFERRY_TESTS=OFF"])
        run(["cmake", "--build", bdir, "--target", "ferry_static", "-j",
             str(os.cpu_count() or 1)])
        archive = os.path.join(bdir, "libferry.a")
        env = dict(os.environ, PKG_CONFIG_PATH=bdir + os.pathsep +
                   os.environ.get("PKG_CONFIG_PATH", ""))
        link = []
        # ferry.pc's libdir is its install prefix's: only the other flags.
        # The codec and video libraries are linked as shared objects, so
        # their own private dependencies (`--static`) are not needed: only
        # ferry's direct requirements and its Libs.private.
        reqs = [r.split()[0] for r in pkg_config(["--print-requires-private", "ferry"], env=env)
                if r.strip() and not r[0] in "<>=!0123456789"]
        # static archives ferry.pc names itself (a static FFmpeg, FERRY_FFMPEG_PREFIX)
        archives = [f for f in pkg_config(["--libs", "--static", "ferry"], env=env)
                    if f.endswith(".a")]
        for flag in archives + (pkg_config(["--libs", *reqs]) if reqs else []) + ["-lpthread",
                                                                                  "-lm"]:
            if flag == "-lferry" or flag.startswith("-L" + bdir):
                continue
            link.append(flag)
        _, undefined = defined_symbols([archive])
        if any(u.startswith("cuda") for u in undefined) and not any("cudart" in f for f in link):
            link += self.cuda_runtime(bdir)
        return [archive], link

    @staticmethod
    def cuda_runtime(bdir):
        """The CUDA runtime CMake found, for an archive whose ferry.pc does
        not name it."""
        with open(os.path.join(bdir, "CMakeCache.txt")) as f:
            cache = f.read()
        m = re.search(r"^CUDA_cudart_static_LIBRARY:FILEPATH=(.+)$", cache, re.M)
        if not m:
            raise SystemExit("ferry: libferry.a needs the CUDA runtime but CMakeCache.txt does "
                             "not say where libcudart_static.a is")
        return [m.group(1).strip(), "-ldl", "-lrt", "-lpthread", "-lstdc++"]

    def library_sources(self, odir):
        """src/**/*.c compiled here (in parallel), CPU only."""
        sources = sorted(glob.glob(os.path.join(ROOT, "src", "**", "*.c"), recursive=True))
        cflags = []
        for pkg in CODEC_PKGS:
            cflags += pkg_config(["--cflags", pkg])
        args = STRICT + ["-O2", "-D_GNU_SOURCE", "-DFERRY_BUILDING", "-DFERRY_HAVE_HEIF",
                         "-I" + os.path.join(ROOT, "include"), "-I" + os.path.join(ROOT, "src")]
        args += cflags
        newest_header = max(os.path.getmtime(h) for h in
                            glob.glob(os.path.join(ROOT, "src", "**", "*.h"), recursive=True) +
                            glob.glob(os.path.join(ROOT, "include", "*.h")))

        def compile_one(src):
            rel = os.path.relpath(src, ROOT)
            obj = os.path.join(odir, os.path.splitext(rel)[0] + ".o")
            if (os.path.exists(obj) and os.path.getmtime(obj) >= os.path.getmtime(src) and
                    os.path.getmtime(obj) >= newest_header):
                return obj
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            self.compiler.compile([src], output_dir=odir, extra_postargs=args)
            # distutils names the object after the source path relative to /.
            built = self.compiler.object_filenames([src], output_dir=odir)[0]
            if built != obj:
                os.replace(built, obj)
            return obj

        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            objects = list(pool.map(compile_one, sources))
        link = []
        for pkg in CODEC_PKGS:
            link += pkg_config(["--libs", pkg])
        return objects, link + ["-lpthread", "-lm"]


os.makedirs(os.path.join(ROOT, BUILD_BASE), exist_ok=True)

ferry_ext = Extension(
    "ferry._ferry",
    # one file per type (python/ferry/_ext/ferry_py.h says which)
    sources=sorted(os.path.relpath(p, ROOT) for p in
                   glob.glob(os.path.join(ROOT, "python", "ferry", "_ext", "*.c"))),
    include_dirs=[os.path.join(ROOT, "include"), os.path.join(ROOT, "python", "ferry", "_ext")],
    define_macros=[("_GNU_SOURCE", None)],
    extra_compile_args=STRICT + ["-Werror", "-O2"],
)

setup(
    version=read_version(),
    packages=["ferry"],
    package_dir={"": "python"},
    package_data={"ferry": ["py.typed", "*.pyi"]},
    include_package_data=False,
    ext_modules=[ferry_ext],
    cmdclass={"build_ext": BuildExt},
    options={"build": {"build_base": BUILD_BASE}, "egg_info": {"egg_base": BUILD_BASE}},
)
