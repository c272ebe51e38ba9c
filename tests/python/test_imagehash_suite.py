"""imagehash's own test suite run against ferry.imagehash.

The tests come from imagehash's PyPI sdist (ImageHash-4.3.2.tar.gz, which
scripts/setup.sh downloads into .cache/imagehash/; or FERRY_IMAGEHASH_SDIST
names a tarball) or from a checkout of its repository
(FERRY_IMAGEHASH_TESTS=DIR, the folder holding tests/, README.rst). They
run in a subprocess where the module `imagehash` is ferry.imagehash
(imagehash_suite/imagehash_shim.py); the sdist lacks tests/utils.py, so
ferry's own helper (imagehash_suite/utils.py) stands in for it. Tests that
need a data file the sdist does not ship (peppers.png) are skipped with
that reason; every other test must pass. Without the tests at hand the
suite is skipped, saying why."""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SUITE = HERE / "imagehash_suite"
SDIST = "ImageHash-4.3.2.tar.gz"


def _source(tmp: pathlib.Path) -> pathlib.Path:
    """A folder with imagehash's tests/ (and README.rst), in tmp."""
    tree = os.environ.get("FERRY_IMAGEHASH_TESTS")
    if tree:
        src = pathlib.Path(tree)
        if not (src / "tests").is_dir():
            pytest.fail(f"FERRY_IMAGEHASH_TESTS={tree}: no tests/ folder there")
        dst = tmp / "imagehash-src"
        shutil.copytree(src / "tests", dst / "tests")
        if (src / "README.rst").exists():
            shutil.copy(src / "README.rst", dst / "README.rst")
        return dst
    tarball = pathlib.Path(os.environ.get("FERRY_IMAGEHASH_SDIST", ROOT / ".cache" / "imagehash" / SDIST))
    if not tarball.is_file():
        pytest.skip(f"imagehash's sdist not found at {tarball} (scripts/setup.sh downloads it: "
                    f"pip download --no-deps --no-binary :all: imagehash==4.3.2): its test suite "
                    "was not run")
    with tarfile.open(tarball) as tf:
        tf.extractall(tmp, filter="data") if sys.version_info >= (3, 12) else tf.extractall(tmp)
    return next(tmp.glob("ImageHash-*"))


def test_imagehash_own_tests(tmp_path):
    pytest.importorskip("PIL", reason="Pillow is needed by imagehash's tests")
    for mod in ("six", "packaging"):
        pytest.importorskip(mod, reason=f"imagehash's tests import {mod}")
    src = _source(tmp_path)
    # imagehash's own code (the sdist has it) must not shadow the shim
    shutil.rmtree(src / "imagehash", ignore_errors=True)
    tests = src / "tests"
    ours = []
    if not (tests / "utils.py").exists():  # the sdist: ferry's helper stands in
        shutil.copy(SUITE / "utils.py", tests / "utils.py")
        ours.append("utils.py")
    if not (tests / "__init__.py").exists() or "TestImageHash" not in (
            tests / "__init__.py").read_text():
        shutil.copy(SUITE / "__init__.py", tests / "__init__.py")
        ours.append("__init__.py")
    shim = tmp_path / "shim"
    shim.mkdir()
    shutil.copy(SUITE / "imagehash_shim.py", shim / "imagehash.py")
    deselect = []
    if not (tests / "data" / "peppers.png").exists():
        # test_readme runs README.rst's examples, which open peppers.png
        deselect = ["--deselect", "tests/test_readme.py::test_run"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(shim), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                        "tests", *deselect], cwd=src, env=env, capture_output=True, text=True,
                       timeout=1200)
    out = r.stdout + r.stderr
    print(out[-6000:])
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|error|errors|skipped)", out)}
    passed, failed = counts.get("passed", 0), counts.get("failed", 0)
    errors = counts.get("error", 0) + counts.get("errors", 0)
    skipped = counts.get("skipped", 0)
    print(f"imagehash's own tests against ferry.imagehash: {passed} passed, {failed} failed, "
          f"{errors} errors, {skipped} skipped (data the sdist lacks), {len(deselect) // 2} "
          f"deselected (README.rst's examples need peppers.png); ferry's stand-ins: "
          f"{', '.join(ours) or 'none'}")
    assert r.returncode == 0 and failed == 0 and errors == 0, out[-4000:]
    # every test of the suite ran except those needing data the sdist lacks
    assert passed >= 30, out[-2000:]
