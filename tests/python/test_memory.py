"""Memory stays flat over epochs: peak RSS after epoch 5 within 5% of
after epoch 1 (the loader allocates nothing per image once warmed up)."""
import re
import subprocess

import pytest

from ferrylib import CORPUS, FERRY_BIN, ROOT


def peak_rss(source, *extra):
    r = subprocess.run([FERRY_BIN, "load", str(source), "--epochs", "5", "--quiet", "--workers",
                        "2", "--batch", "16", *extra], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode in (0, 3), r.stderr
    rss = [float(x) for x in re.findall(r"peak RSS ([0-9.]+) MiB", r.stdout)]
    assert len(rss) == 5, r.stdout
    return rss


@pytest.mark.parametrize("extra", [(), ("--crop", "random", "--flip", "--dtype", "f32",
                                        "--normalize")])
def test_flat_on_sample(extra):
    rss = peak_rss(ROOT / "data" / "sample", *extra)
    assert rss[4] <= rss[0] * 1.05, rss


@pytest.mark.skipif(not (CORPUS / "photos").is_dir(), reason=f"shared corpus not found at {CORPUS}")
def test_flat_on_corpus():
    rss = peak_rss(CORPUS / "photos", "--crop", "random")
    assert rss[4] <= rss[0] * 1.05, rss
