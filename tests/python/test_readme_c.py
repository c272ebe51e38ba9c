"""README.md's C example ("## The C library"), extracted from the README
and built against the checkout's libferry.so (FERRY_BUILD, default build/),
so that the documented program is the tested one: it compiles with the
house's warnings as errors, runs epochs over data/sample and tells the end
of an epoch (FERRY_END) from an error."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("FERRY_BUILD", ROOT / "build"))


def readme_c_example():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## The C library"):]
    m = re.search(r"```c\n(.*?)```", section, re.S)
    assert m, "README.md's 'The C library' has no ```c block"
    return m.group(1)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    lib = BUILD / "libferry.so"
    cc = shutil.which("cc") or shutil.which("gcc")
    if not lib.exists() or not cc:
        why = f"{lib} not built (make build, or FERRY_BUILD=dir)" if cc else "no C compiler"
        print(f"SKIPPED: README's C example: {why}")
        pytest.skip(why)
    d = tmp_path_factory.mktemp("readme_c")
    src = d / "app.c"
    src.write_text(readme_c_example())
    exe = d / "app"
    r = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", str(src), "-o", str(exe),
                        f"-I{ROOT / 'include'}", f"-L{BUILD}", "-lferry",
                        f"-Wl,-rpath,{BUILD}"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"README's C example does not build:\n{r.stderr}"
    return exe


def test_example_checks_the_end_of_the_epoch():
    code = readme_c_example()
    assert "FERRY_END" in code, "the loop must tell FERRY_END from an error"
    assert "while (ferry_loader_next(L, &b) == FERRY_OK)" not in code


def test_example_runs_epochs(program, sample):
    r = subprocess.run([str(program), str(sample), "2"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    counts = [int(line.split()[0]) for line in r.stdout.splitlines()]
    assert counts and all(c > 0 for c in counts), r.stdout
    # two epochs of the same images
    assert sum(counts) % 2 == 0 and len(counts) % 2 == 0, r.stdout


def test_example_reports_a_missing_source(program, tmp_path):
    missing = tmp_path / "nothing-here"
    r = subprocess.run([str(program), str(missing), "1"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1
    assert str(missing) in r.stderr, r.stderr
