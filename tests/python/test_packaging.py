"""The package's own ferry command (ferry/_bin/ferry, run by the `ferry`
entry point and `python -m ferry`: ferry/_cli.py) and the build's message
for missing development packages (setup.py: check_dev_packages).

Not in CLI_MODULES on purpose: these tests run the command the package
ships, not $FERRY_BIN, so they belong to the wheel's tier (make test-wheel
runs them against the installed wheel)."""
import importlib.util
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

import ferry
from ferry import _cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
PKG_COMMAND = pathlib.Path(_cli.command_path())


def ways():
    """The ways a user runs the package's command: python -m ferry, and the
    console script where the package is installed with one."""
    out = [[sys.executable, "-m", "ferry"]]
    script = pathlib.Path(sys.executable).parent / "ferry"
    if script.exists() and "site-packages" in ferry.__file__:
        out.append([str(script)])
    return out


@pytest.fixture(scope="module")
def command():
    assert PKG_COMMAND.exists(), (f"{PKG_COMMAND}: the package has no ferry command "
                                  "(setup.py ships it in every build)")
    return PKG_COMMAND


def test_installed_wheel_has_the_console_script():
    if "site-packages" not in ferry.__file__:
        print(f"SKIPPED: the ferry console script: ferry is imported from {ferry.__file__}, "
              "not installed (make test-wheel checks it)")
        pytest.skip("ferry is not installed")
    script = pathlib.Path(sys.executable).parent / "ferry"
    assert script.exists(), f"{script}: pip installed no ferry command"


def test_version_equals_the_library(command):
    for argv in ways():
        r = subprocess.run(argv + ["--version"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, (argv, r.stderr)
        assert ferry.__version__ in r.stdout, (argv, r.stdout)


def test_hash_and_dupes_html(command, sample, tmp_path):
    for i, argv in enumerate(ways()):
        cat = tmp_path / f"c{i}.fidx"
        r = subprocess.run(argv + ["hash", str(sample), "-o", str(cat)], capture_output=True,
                           text=True, timeout=60)
        # the sample's one truncated file is named; the run goes on
        assert "truncated.jpg" in r.stderr, r.stderr
        assert cat.exists() and cat.stat().st_size > 0, r.stderr
        r = subprocess.run(argv + ["dupes", str(cat), "--format", "html"], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("<!DOCTYPE html>"), r.stdout[:200]


def test_exit_code_and_stderr_pass_through(command, tmp_path):
    missing = str(tmp_path / "nothing-here")
    for argv in ways():
        r = subprocess.run(argv + ["hash", missing], capture_output=True, text=True, timeout=30)
        assert r.returncode == 1, (argv, r.returncode)
        assert missing in r.stderr and "No such file" in r.stderr, r.stderr
        assert r.stdout == ""
        r = subprocess.run(argv + ["no-such-command"], capture_output=True, text=True, timeout=30)
        direct = subprocess.run([str(command), "no-such-command"], capture_output=True, text=True,
                                timeout=30)
        assert (r.returncode, r.stderr) == (direct.returncode, direct.stderr)


def test_the_python_process_becomes_the_command(command):
    """os.execv: the process started is the C program itself, so a signal
    sent to it (kill, Ctrl-C) reaches ferry, and its status is ferry's."""
    p = subprocess.Popen([sys.executable, "-m", "ferry", "hash", "-"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 20
        exe = ""
        while time.time() < deadline:
            exe = os.readlink(f"/proc/{p.pid}/exe")
            if os.path.basename(exe) == "ferry":
                break
            time.sleep(0.05)
        assert os.path.realpath(exe) == os.path.realpath(command), exe
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=20)
        assert p.returncode == -signal.SIGTERM
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_missing_dev_package_named(tmp_path):
    """A build where pkg-config finds none of the codecs' .pc files stops
    before CMake, naming the packages and scripts/setup.sh, without a traceback."""
    if importlib.util.find_spec("setuptools") is None or not (ROOT / "setup.py").exists():
        print(f"SKIPPED: the missing-packages message: {sys.executable} has no setuptools "
              "or the checkout has no setup.py")
        pytest.skip("cannot run setup.py here")
    import setuptools
    if int(setuptools.__version__.split(".")[0]) < 77:
        # setup.py stops first, naming the setuptools it needs (tested below)
        print(f"SKIPPED: the missing-packages message: {sys.executable} has setuptools "
              f"{setuptools.__version__}; the build needs >= 77")
        pytest.skip("setuptools < 77")
    if not shutil.which("pkg-config"):
        print("SKIPPED: the missing-packages message: no pkg-config on PATH")
        pytest.skip("no pkg-config")
    empty = tmp_path / "no-pc-files"
    empty.mkdir()
    env = dict(os.environ, PKG_CONFIG_LIBDIR=str(empty), PKG_CONFIG_PATH="",
               FERRY_PY_BUILD_BASE=str(tmp_path / "b"), FERRY_PY_CMAKE_BUILD="",
               FERRY_CUDA="0")
    r = subprocess.run([sys.executable, "setup.py", "build_ext"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "libjpeg62-turbo-dev" in out and "libjansson-dev" in out, out
    assert "scripts/setup.sh" in out, out
    assert "Traceback" not in out and "CMake Error" not in out, out
    assert not any((tmp_path / "b").rglob("CMakeCache.txt")), "CMake ran"


def test_old_setuptools_named(tmp_path):
    """setup.py under a setuptools older than 77 (which cannot read the
    licence string) stops naming the version it needs and how to get it."""
    import setuptools
    if not (ROOT / "setup.py").exists():
        print("SKIPPED: the old-setuptools message: the checkout has no setup.py")
        pytest.skip("no setup.py")
    shim = tmp_path / "shim" / "setuptools"
    shim.mkdir(parents=True)
    # a stand-in package reporting an old version, in front of the real one
    (shim / "__init__.py").write_text(
        "import sys, importlib\n__version__ = '65.5.0'\n"
        "Extension = setup = None\n")
    (shim / "command").mkdir()
    (shim / "command" / "__init__.py").write_text("")
    (shim / "command" / "build_ext.py").write_text("build_ext = object\n")
    env = dict(os.environ, PYTHONPATH=str(shim.parent))
    r = subprocess.run([sys.executable, "setup.py", "build_ext"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "needs setuptools >= 77" in out and "65.5.0" in out, out
    assert "Traceback" not in out, out
    del setuptools
