"""Finds the ferry package under test and the data the tests use.

The package is the one in $FERRY_PY_PATH if set, else the one built in this
checkout (python/ferry, after `python3 setup.py build_ext --inplace`, which
`make test` runs), else an installed one (`pip install .`). Subprocesses get
the same through PYTHONPATH."""
import glob
import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
IN_TREE = ROOT / "python"

if os.environ.get("FERRY_PY_PATH"):  # a package built elsewhere (an ASan build, say)
    sys.path.insert(0, os.environ["FERRY_PY_PATH"])
elif glob.glob(str(IN_TREE / "ferry" / "_ferry*.so")):
    sys.path.insert(0, str(IN_TREE))
sys.path.insert(0, str(HERE))

try:
    import ferry  # noqa: E402
except ImportError as e:  # pragma: no cover - a clear message instead of 20 errors
    raise pytest.UsageError(
        f"cannot import ferry ({e}): build it with `python3 setup.py build_ext --inplace` "
        "(or `pip install .`) first") from e

PKG_PARENT = str(pathlib.Path(ferry.__file__).resolve().parents[1])
os.environ["PYTHONPATH"] = os.pathsep.join(
    [PKG_PARENT, str(HERE)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])


def pytest_report_header(config):
    try:
        import torch
        t = f"torch {torch.__version__}"
    except ImportError:
        t = "torch not importable: torch tests skip"
    return [f"ferry {ferry.__version__} from {ferry.__file__}", t]


@pytest.fixture(scope="session")
def sample():
    """data/sample: 4 classes, 49 files, one of them truncated."""
    return ROOT / "data" / "sample"


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """An ImageFolder of 64 small images (3 classes; JPEG, PNG, WebP),
    cheap to decode: for the tests that run thousands of batches."""
    from PIL import Image
    import numpy as np
    root = tmp_path_factory.mktemp("tiny")
    rng = np.random.default_rng(1)
    for i in range(64):
        cls = root / f"c{i % 3}"
        cls.mkdir(exist_ok=True)
        h, w = 24 + (i % 5) * 4, 32 + (i % 7) * 4
        arr = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        ext = ("jpg", "png", "webp")[i % 3]
        Image.fromarray(arr).save(cls / f"img{i:03d}.{ext}")
    return root


@pytest.fixture(scope="session")
def fixtures():
    return ROOT / "tests" / "fixtures" / "codecs"


# The tiers (docs/TESTING.md), as ctest's labels (tests/tiers.cmake): every
# test gets markers here. `make check` runs -m "not slow and not corpus",
# `make test` adds "corpus and not slow", `make test-full` adds "slow".
MARKERS = {
    "unit": "a test of the Python package",
    "cli": "runs the ferry command",
    "threads": "runs threads, processes or signals against ferry's",
    "corpus": "reads ../shared/corpus (skipped, saying so, when absent)",
    "gpu": "needs a GPU (skipped, saying so, without one)",
    "slow": "a proof too long for make test: runs in make test-full",
}
CLI_MODULES = {"test_cli_png.py", "test_cli_slips.py", "test_hash_cli.py", "test_video_cli.py",
               "test_examples.py", "test_catalog_merge.py", "test_pack_kill.py", "test_moves.py",
               "test_wds_pack.py", "test_codec_limits.py", "test_video_inputs.py",
               "test_catalog_shares.py", "test_outputs.py", "test_hostile.py",
               "test_readme_c.py", "test_demo.py", "test_info_video.py",
               "test_dupes_links.py", "test_review_page.py"}
THREAD_MODULES = {"test_threads.py", "test_watchdog.py", "test_lifetime.py", "test_distributed.py",
                  "test_leak.py"}
GPU_MODULES = {"test_gpu.py", "test_torch.py"}
CORPUS_MODULES = {"test_corpus.py", "test_dupes_hardset.py"}
# module::test (parameters aside): over 20 s on 2 cores
SLOW_TESTS = {"test_dupes_hardset.py::test_hard_set_default_settings"}


def _reads_corpus(item):
    """The test's own source (decorators included) or its parameters name the corpus."""
    import inspect
    if "corpus" in item.name.lower():
        return True
    try:
        src = inspect.getsource(item.function)
    except (OSError, TypeError, AttributeError):
        return False
    return "CORPUS" in src


def pytest_collection_modifyitems(config, items):
    for item in items:
        mod = item.path.name
        name = f"{mod}::{item.originalname if hasattr(item, 'originalname') else item.name}"
        marks = {"unit"}
        if mod in CLI_MODULES:
            marks.add("cli")
        if mod in THREAD_MODULES:
            marks.add("threads")
        if mod in GPU_MODULES:
            marks.add("gpu")
        if mod in CORPUS_MODULES or _reads_corpus(item):
            marks.add("corpus")
        if name in SLOW_TESTS:
            marks.add("slow")
        for m in sorted(marks):
            item.add_marker(getattr(pytest.mark, m))


def pytest_configure(config):
    # data/sample holds one truncated JPEG on purpose; test_errors.py checks
    # the warning it gives.
    config.addinivalue_line("filterwarnings", "ignore::ferry.SkippedFileWarning")
    for name, what in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {what}")


# Packages some tests use as references (never ferry's own needs). Where one
# is not installed (a wheel's clean venv has only NumPy and pytest), a test
# that imports it inside its body is reported as skipped, naming the package,
# instead of failing; a module that imports one at its top is left out of
# collection by scripts/wheel-test.sh, saying so.
OPTIONAL_PACKAGES = {"PIL": "Pillow", "torch": "torch", "torchvision": "torchvision",
                     "imagehash": "imagehash", "webdataset": "webdataset", "scipy": "scipy",
                     "pywt": "PyWavelets", "faiss": "faiss-cpu", "cv2": "opencv"}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    exc = call.excinfo
    if exc is None or not exc.errisinstance(ModuleNotFoundError):
        return
    name = (getattr(exc.value, "name", "") or "").split(".")[0]
    if name not in OPTIONAL_PACKAGES:
        return
    import importlib.util
    if importlib.util.find_spec(name) is not None:
        return  # installed: a real failure stays one
    rep.outcome = "skipped"
    rep.longrepr = (str(item.path), item.location[1] or 0,
                    f"{OPTIONAL_PACKAGES[name]} not installed: this test uses it as a reference")
