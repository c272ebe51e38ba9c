"""The examples run: dedup.py on edited copies; train_imagenet.py for two
steps with each loader (needs torch and torchvision; skipped otherwise)."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

import ferry

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.skipif(not hasattr(ferry, "find_duplicates"), reason="built without hashing")
def test_dedup(sample, tmp_path):
    from PIL import Image
    src = sample / "class0" / "p0000.jpg"
    im = Image.open(src).convert("RGB")
    im.save(tmp_path / "a.png")
    im.resize((im.width // 2, im.height // 2)).save(tmp_path / "a_small.jpg")
    Image.open(sample / "class1" / "p0001.jpg").save(tmp_path / "other.jpg")
    out = subprocess.run([sys.executable, str(EXAMPLES / "dedup.py"), str(tmp_path), "--json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    groups = json.loads(out.stdout)
    assert [[os.path.basename(m["path"]) for m in g] for g in groups] == [["a.png", "a_small.jpg"]]
    moved = subprocess.run([sys.executable, str(EXAMPLES / "dedup.py"), str(tmp_path),
                            "--move-to", str(tmp_path / "dupes")], capture_output=True,
                           text=True, timeout=60)
    assert moved.returncode == 0, moved.stderr
    assert (tmp_path / "dupes" / "a_small.jpg").exists() and (tmp_path / "a.png").exists()


@pytest.mark.parametrize("loader", ["ferry", "torch"])
def test_train_imagenet_two_steps(tiny, loader):
    pytest.importorskip("torch", reason="torch not importable")
    pytest.importorskip("torchvision", reason="torchvision not importable")
    out = subprocess.run([sys.executable, str(EXAMPLES / "train_imagenet.py"), str(tiny),
                          "--loader", loader, "--arch", "resnet18", "--batch-size", "4",
                          "--size", "32", "--steps", "3", "--warmup", "1", "--workers", "1",
                          "--device", "cpu", "--amp", "off", "--log-every", "0"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["loader"] == loader and result["steps"] == 3 and result["images_per_s"] > 0
