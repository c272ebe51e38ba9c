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


def pytest_configure(config):
    # data/sample holds one truncated JPEG on purpose; test_errors.py checks
    # the warning it gives.
    config.addinivalue_line("filterwarnings", "ignore::ferry.SkippedFileWarning")
