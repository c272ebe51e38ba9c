"""Builds ferry's Python package: the C extension ferry._ferry, linked with
the ferry C library built from this checkout.

How the library is built (FERRY_PY_LIB=auto|cmake|sources, default auto):

  cmake    CMake builds libferry.a (target ferry_static) and the ferry command
           (target ferry) in build/pip/, as `make` does but without -Werror,
           with the CUDA backend when CMake finds nvcc and
           nvJPEG. Its link dependencies come from the generated ferry.pc
           (`pkg-config --static`), plus the CUDA runtime when the archive
           needs it.
  sources  without CMake: src/**/*.c are compiled here (CPU only: CUDA
           sources are .cu files that only CMake builds).

The ferry command (tools/*.c, the same program as `make`'s) goes into the
package as ferry/_bin/ferry: the `ferry` entry point and `python -m ferry`
exec it (ferry/_cli.py). A missing development package stops the build
first, naming it (check_dev_packages).

`auto` takes cmake when a `cmake` command is found. Everything is built under
build/pip/ (beside `make`'s CMake files in build/; FERRY_PY_BUILD_BASE=DIR
names another, as `make wheel` does), unless
FERRY_PY_CMAKE_BUILD=DIR names a CMake build directory that `make` already
configured (`make test` passes its own, so the library is compiled once).

The CUDA backend: FERRY_CUDA=1 requires it (the build fails, saying why,
without it), FERRY_CUDA=0 leaves it out, unset builds it where nvcc is found
(python/build_backend/ferry_cuda.py). nvjpeg.h comes from the CUDA toolkit
or from an nvidia-nvjpeg wheel importable by the building Python (pip's build
environment gets one from python/build_backend/ferry_build.py).
FERRY_CMAKE_ARGS adds CMake options (e.g. -DFERRY_VIDEO=OFF,
-DFERRY_FFMPEG_PREFIX=DIR). The build prints which backends it built (CUDA,
video, HEIF) and why any was left out; a wheel also carries that summary in
ferry/_build_info.py (`python -m ferry._build_info`).
Needs the libjpeg, libpng, libwebp, libtiff, giflib, libheif, libde265, stb, LibRaw, zlib and jansson development packages (scripts/setup.sh
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

import setuptools
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# pyproject.toml's licence is an SPDX string (PEP 639), which setuptools reads
# from 77 on; older ones stop with a schema error that says nothing of this.
# pip's isolated builds get a new one themselves (build-system.requires).
if int(setuptools.__version__.split(".")[0]) < 77:
    sys.exit(f"ferry's build needs setuptools >= 77 (this Python, {sys.executable}, has "
             f"{setuptools.__version__}): python3 -m pip install -U 'setuptools>=77', "
             "or build with pip install . (which fetches it), or run scripts/setup.sh")

ROOT = os.path.dirname(os.path.abspath(__file__))
# under build/ (the checkout's one ignored folder of outputs), never beside
# the sources: `pip install .` leaves nothing else in the checkout
BUILD_BASE = os.environ.get("FERRY_PY_BUILD_BASE") or os.path.join("build", "pip")
sys.path.insert(0, os.path.join(ROOT, "python", "build_backend"))
import ferry_cuda  # noqa: E402  (FERRY_CUDA, nvcc and nvjpeg.h: shared with the PEP 517 backend)
# the libraries libferry links (pkg-config names), as CMakeLists.txt and ferry.pc.in have them
# and the Debian package that has each (scripts/setup.sh installs them all)
DEV_PKGS = {"libjpeg": "libjpeg62-turbo-dev", "libpng": "libpng-dev", "libwebp": "libwebp-dev",
            "libtiff-4": "libtiff-dev", "libgif": "libgif-dev", "libheif": "libheif-dev",
            "libde265": "libde265-dev", "stb": "libstb-dev", "libraw_r": "libraw-dev",
            "zlib": "zlib1g-dev", "jansson": "libjansson-dev"}
CODEC_PKGS = tuple(DEV_PKGS)
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
                         "ferry: the libjpeg, libpng, libwebp, libtiff, giflib, libheif, libde265, stb, LibRaw, zlib and jansson development packages and "
                         "pkg-config are needed (scripts/setup.sh installs them)")
    return shlex.split(out)


def check_dev_packages():
    """Stops the build before CMake or the compiler runs when a library
    libferry links has no development package, naming the ones missing."""
    if not shutil.which("pkg-config"):
        raise SystemExit("ferry: pkg-config is not installed; it and the development packages "
                         f"{' '.join(DEV_PKGS.values())} are needed to build ferry: "
                         "scripts/setup.sh installs them (Debian: apt-get install pkg-config)")
    missing = [name for name in DEV_PKGS
               if subprocess.run(["pkg-config", "--exists", name]).returncode != 0]
    if missing:
        raise SystemExit(
            "ferry: cannot build: pkg-config finds no " + ", ".join(missing) + ".\n"
            "ferry: install the development packages " +
            " ".join(DEV_PKGS[m] for m in missing) + " (Debian names; scripts/setup.sh "
            "installs every package ferry needs), or point PKG_CONFIG_PATH at their .pc files")


def cmake_cache(bdir):
    """NAME -> value of a CMake build directory's CMakeCache.txt."""
    cache = {}
    try:
        with open(os.path.join(bdir, "CMakeCache.txt")) as f:
            for line in f:
                m = re.match(r"^([A-Za-z0-9_.+-]+):[A-Z]+=(.*)$", line.rstrip("\n"))
                if m:
                    cache[m.group(1)] = m.group(2)
    except OSError:
        pass
    return cache


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

    def run(self):
        # setuptools' build_ext builds in build_lib and copies to the source
        # tree afterwards, clearing self.inplace meanwhile: remember it
        self.in_place = bool(self.inplace)
        super().run()

    def build_extension(self, ext):
        mode = os.environ.get("FERRY_PY_LIB", "auto")
        if mode == "auto":
            mode = "cmake" if shutil.which("cmake") else "sources"
        if mode not in ("cmake", "sources"):
            raise SystemExit(f"ferry: FERRY_PY_LIB must be auto, cmake or sources, not {mode}")
        want_cuda = ferry_cuda.requested()
        if mode == "sources" and want_cuda == "on":
            raise SystemExit("ferry: FERRY_CUDA=1 but the library is compiled without CMake "
                             "(FERRY_PY_LIB=sources, or no cmake command): only CMake builds "
                             "the CUDA sources. Install cmake, or unset FERRY_CUDA")
        check_dev_packages()
        bdir = None
        temp = os.path.abspath(self.build_temp)
        if mode == "cmake":
            given = os.environ.get("FERRY_PY_CMAKE_BUILD")
            if given and not os.path.exists(os.path.join(given, "CMakeCache.txt")):
                raise SystemExit(f"ferry: FERRY_PY_CMAKE_BUILD={given} is not a configured "
                                 "CMake build directory")
            bdir = os.path.abspath(given) if given else os.path.join(temp, "cmake")
            objects, link = self.library_cmake(bdir, configure=not given)
            command = os.path.join(bdir, "ferry")
        else:
            objects, link = self.library_sources(os.path.join(temp, "lib"))
            command = self.command_sources(os.path.join(temp, "lib"), objects, link)
        self.ship_command(command)
        defined, undefined = defined_symbols(objects)
        log("library: %s (%s CUDA)" % (
            mode, "with" if any(u.startswith("cuda") for u in undefined) else "no"))
        backends = self.backends(mode, bdir, defined | undefined)
        log("backends built into ferry._ferry:")
        for name, (built, why) in backends.items():
            log(f"  {name:<6}{'yes' if built else 'NO '}  {why}")
        if want_cuda == "on" and not backends["CUDA"][0]:
            raise SystemExit(f"ferry: FERRY_CUDA=1 but the CUDA backend was not built: "
                             f"{backends['CUDA'][1]}")
        if not backends["CUDA"][0] and want_cuda == "auto":
            log("the CUDA backend was left out (reason above): device='cuda' will raise "
                "'built without CUDA'; FERRY_CUDA=1 makes this an error")
        if not self.inplace:
            self.write_build_info(backends)
        if self.in_place:  # make's build: the project's checks; a user's compiler may warn more
            ext.extra_compile_args = ext.extra_compile_args + ["-Werror"]
        ext.extra_objects = objects
        # The library's internal symbols stay inside the extension.
        ext.extra_link_args = link + ["-Wl,--exclude-libs,ALL"]
        ext.depends = ext.depends + objects + self.headers()
        super().build_extension(ext)

    def ship_command(self, command):
        """The ferry command into the package, as ferry/_bin/ferry (run by
        the `ferry` entry point and `python -m ferry`: ferry/_cli.py)."""
        pkg = os.path.join(ROOT, "python", "ferry") if self.in_place else \
            os.path.join(self.build_lib, "ferry")
        dest = os.path.join(pkg, "_bin", "ferry")
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(command, dest)
        log(f"the ferry command: {dest}")

    def command_sources(self, odir, objects, link):
        """tools/*.c compiled and linked with the library's objects (the
        build without CMake): the same program as CMake's ferry target."""
        tools = sorted(glob.glob(os.path.join(ROOT, "tools", "*.c")))
        args = STRICT + ["-O2", "-D_GNU_SOURCE", "-I" + os.path.join(ROOT, "include"),
                         "-I" + os.path.join(ROOT, "src"), "-I" + os.path.join(ROOT, "tools")]
        tool_objects = self.compiler.compile(tools, output_dir=os.path.join(odir, "tools"),
                                             extra_postargs=args)
        self.compiler.link_executable(tool_objects + objects, "ferry", output_dir=odir,
                                      extra_postargs=link)
        return os.path.join(odir, "ferry")

    @staticmethod
    def headers():
        return (glob.glob(os.path.join(ROOT, "include", "*.h")) +
                glob.glob(os.path.join(ROOT, "python", "ferry", "_ext", "*.h")))

    @staticmethod
    def cuda_cmake_args(bdir):
        """CMake options for the CUDA backend: FERRY_CUDA, the nvcc found,
        and nvjpeg.h from an nvidia-nvjpeg wheel when the toolkit has none."""
        if ferry_cuda.requested() == "off":
            return ["-DFERRY_CUDA=OFF"]
        args = ["-DFERRY_CUDA=ON"]
        nvcc = ferry_cuda.find_nvcc()
        if not nvcc:
            return args
        cached = cmake_cache(bdir).get("CMAKE_CUDA_COMPILER", "")
        if cached and not cached.endswith("NOTFOUND") and not os.path.exists(cached):
            # the nvcc this directory was configured with is gone: start afresh
            log(f"{cached} is gone: {bdir} is configured anew")
            os.remove(os.path.join(bdir, "CMakeCache.txt"))
            shutil.rmtree(os.path.join(bdir, "CMakeFiles"), ignore_errors=True)
            cached = ""
        if not cached or os.path.realpath(cached) != nvcc:
            args.append("-DCMAKE_CUDA_COMPILER=" + nvcc)
        if ferry_cuda.toolkit_nvjpeg_header(nvcc):
            return args + ["-UNVJPEG_INCLUDE_DIR"]  # CMake finds the toolkit's
        header = ferry_cuda.wheel_nvjpeg_header()
        if not header:
            return args + ["-UNVJPEG_INCLUDE_DIR"]  # CMake looks again, and says so
        # pip's build environment is deleted after the build: a copy of the
        # header in the build directory keeps later rebuilds working.
        inc = os.path.join(bdir, "nvjpeg-include")
        os.makedirs(inc, exist_ok=True)
        copy = os.path.join(inc, "nvjpeg.h")
        with open(header, "rb") as f:
            new = f.read()
        old = None
        if os.path.exists(copy):
            with open(copy, "rb") as f:
                old = f.read()
        if old != new:
            with open(copy, "wb") as f:
                f.write(new)
        log(f"nvjpeg.h from {header}")
        return args + ["-DNVJPEG_INCLUDE_DIR=" + inc]

    def library_cmake(self, bdir, configure=True):
        """libferry.a from CMake; link flags from its ferry.pc. configure:
        (re)configure bdir with this build's options (not a directory `make`
        configured, FERRY_PY_CMAKE_BUILD, which is only built)."""
        if configure or not os.path.exists(os.path.join(bdir, "CMakeCache.txt")):
            extra = shlex.split(os.environ.get("FERRY_CMAKE_ARGS", ""))
            # a user's compiler may warn where ours does not: no -Werror here
            run(["cmake", "-S", ROOT, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release",
                 "-DFERRY_TESTS=OFF", "-DFERRY_WERROR=OFF", *self.cuda_cmake_args(bdir),
                 *extra])
        # the library, and the ferry command (tools/) linked with it
        run(["cmake", "--build", bdir, "--target", "ferry_static", "ferry", "-j",
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
        # what ferry.pc names itself: static archives (a static FFmpeg,
        # FERRY_FFMPEG_PREFIX; the CUDA runtime) and the plain flags of the
        # dependencies whose own static flags do not link (-lheif, say)
        private = self.pc_libs_private(os.path.join(bdir, "ferry.pc"), env)
        for flag in private + (pkg_config(["--libs", *reqs]) if reqs else []) + ["-lpthread",
                                                                                 "-lm"]:
            if flag == "-lferry" or flag.startswith("-L" + bdir):
                continue
            link.append(flag)
        _, undefined = defined_symbols([archive])
        if any(u.startswith("cuda") for u in undefined) and not any("cudart" in f for f in link):
            link += self.cuda_runtime(bdir)
        return [archive], link

    @staticmethod
    def pc_libs_private(pc, env):
        """The flags of a .pc file's Libs.private line (${variables} expanded
        by pkg-config); pkg-config prints them only together with every
        Requires.private module's static flags."""
        try:
            with open(pc) as f:
                m = re.search(r"^Libs\.private:(.*)$", f.read(), re.M)
        except OSError:
            raise SystemExit(f"ferry: {pc} is missing: the CMake build did not write it")
        if not m:
            return []
        line = re.sub(r"\$\{(\w+)\}", lambda v: " ".join(
            pkg_config([f"--variable={v.group(1)}", "ferry"], env=env)), m.group(1))
        return shlex.split(line)

    @staticmethod
    def backends(mode, bdir, symbols):
        """{"CUDA"|"video"|"HEIF": (built, why)} from the symbols libferry
        uses, and from CMake's cache for the reasons."""
        cache = cmake_cache(bdir) if bdir else {}
        notfound = lambda v: not v or v.endswith("NOTFOUND")  # noqa: E731
        out = {}
        if any(s.startswith("cuda") for s in symbols):
            nvcc = cache.get("CMAKE_CUDA_COMPILER", "nvcc")
            ver = ferry_cuda.nvcc_version(nvcc)
            out["CUDA"] = (True, "nvcc %s%s, nvjpeg.h in %s; CUDA runtime linked statically, "
                           "libcuda, nvJPEG and NVDEC loaded at run time" % (
                               nvcc, " (CUDA %d.%d)" % ver if ver else "",
                               cache.get("NVJPEG_INCLUDE_DIR", "?")))
        elif mode == "sources":
            out["CUDA"] = (False, "the library was compiled without CMake (FERRY_PY_LIB=sources "
                           "or no cmake command): only CMake builds the CUDA sources")
        elif cache.get("FERRY_CUDA", "ON").upper() in ("OFF", "0", "FALSE", "NO"):
            out["CUDA"] = (False, "FERRY_CUDA=0" if ferry_cuda.requested() == "off" else
                           f"FERRY_CUDA=OFF in the CMake build {bdir}")
        elif notfound(cache.get("CMAKE_CUDA_COMPILER")):
            out["CUDA"] = (False, "nvcc not found (not in $CUDACXX, on PATH or in "
                           "/usr/local/cuda/bin)")
        elif notfound(cache.get("NVJPEG_INCLUDE_DIR")):
            out["CUDA"] = (False, "nvjpeg.h not found: neither in the CUDA toolkit nor in an "
                           "nvidia-nvjpeg wheel (`pip install .` adds that wheel to its build "
                           "environment when it finds nvcc; `pip install nvidia-nvjpeg` for "
                           "`setup.py` builds)")
        elif notfound(cache.get("CUDA_cudart_static_LIBRARY")):
            out["CUDA"] = (False, "the CUDA toolkit has no libcudart_static.a")
        else:
            out["CUDA"] = (False, f"CMake left it out: see its 'ferry: CUDA backend' line "
                           f"({bdir})")
        if "avformat_open_input" in symbols:
            prefix = cache.get("FERRY_FFMPEG_PREFIX")
            out["video"] = (True, f"static FFmpeg from {prefix}" if prefix else
                            "libavcodec %s (shared)" % cache.get("AV_libavcodec_VERSION", "?"))
        elif mode == "sources":
            out["video"] = (False, "the library was compiled without CMake: only CMake "
                            "builds video")
        elif cache.get("FERRY_VIDEO", "ON").upper() in ("OFF", "0", "FALSE", "NO"):
            out["video"] = (False, "FERRY_VIDEO=OFF")
        else:
            out["video"] = (False, "libavformat/libavcodec/libswscale/libavutil not found by "
                            "pkg-config (Debian: libavformat-dev libavcodec-dev libswscale-dev)")
        if "heif_context_alloc" in symbols:
            ver = cache.get("HEIF_VERSION")
            out["HEIF"] = (True, f"libheif {ver}" if ver else "libheif")
        else:
            out["HEIF"] = (False, "FERRY_HEIF=OFF: HEIC and AVIF files are refused")
        return out

    def write_build_info(self, backends):
        """ferry/_build_info.py in the wheel (never in the checkout): what
        this build holds, for `python -m ferry._build_info`."""
        path = os.path.join(self.build_lib, "ferry", "_build_info.py")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write('"""Written by setup.py when this ferry was built: which backends it '
                    'holds.\n\n    python -m ferry._build_info\n"""\n')
            f.write("BACKENDS = {\n")
            for name, (built, why) in backends.items():
                f.write(f"    {name!r}: ({built!r}, {why!r}),\n")
            f.write("}\n\n\n")
            f.write("def summary():\n"
                    "    return \"\\n\".join(f\"{k:<6}{'yes' if v[0] else 'no '}  {v[1]}\"\n"
                    "                     for k, v in BACKENDS.items())\n\n\n"
                    "if __name__ == \"__main__\":\n"
                    "    print(summary())\n")

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

    def embedded_headers(self, odir):
        """The headers of the files embedded in the library, as CMakeLists.txt
        writes them (scripts/gen_embedded.py: the .cl kernels and the shared
        hash headers in opencl_src.h, the review page's style and script in
        review_page_src.h); the folder that holds them."""
        gen = os.path.join(odir, "generated")
        sys.path.insert(0, os.path.join(ROOT, "scripts"))
        import gen_embedded  # the one writer of those headers outside CMake
        for user in gen_embedded.write(gen):  # an embedded file changed: its user is rebuilt
            stale = os.path.join(odir, os.path.splitext(user)[0] + ".o")
            if os.path.exists(stale):
                os.remove(stale)
        return gen

    def library_sources(self, odir):
        """src/**/*.c compiled here (in parallel), CPU only."""
        sources = sorted(glob.glob(os.path.join(ROOT, "src", "**", "*.c"), recursive=True))
        cflags = []
        for pkg in CODEC_PKGS:
            cflags += pkg_config(["--cflags", pkg])
        args = STRICT + ["-O2", "-D_GNU_SOURCE", "-DFERRY_BUILDING", "-DFERRY_HAVE_HEIF",
                         "-I" + os.path.join(ROOT, "include"), "-I" + os.path.join(ROOT, "src"),
                         "-I" + self.embedded_headers(odir)]
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
    extra_compile_args=STRICT + ["-O2"],  # build_extension adds -Werror in place
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
