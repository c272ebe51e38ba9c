"""The loader's option registry (src/pipeline/options_table.c) as Python sees
it: the stubs and docs/OPTIONS.md are in step with it, every option is a
keyword of ferry.Loader and of the extension, the C library checks the values
and words the message as `ferry load` does, and prefetch means one thing."""
import importlib.util
import os
import subprocess

import pytest

import ferry
from ferry import _ferry, _loader
from ferrylib import FERRY_BIN, ROOT


def gen_options():
    spec = importlib.util.spec_from_file_location("gen_options",
                                                  ROOT / "scripts" / "gen_options.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_stubs_and_docs_in_step_with_the_registry():
    assert gen_options().main(["--check"]) == 0, \
        "run python3 scripts/gen_options.py (the stubs or docs/OPTIONS.md are out of step)"


def test_registry_rows():
    rows = _ferry.loader_options()
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names)) >= 33
    for r in rows:
        assert r["type"] in ("int", "u64", "float", "bool", "choice", "device"), r
        assert r["help"] and r["default"], r
        assert (r["choices"] is not None) == (r["type"] == "choice"), r


def value(row):
    """A row's default as a Python value ferry.Loader takes."""
    d, t = row["default"], row["type"]
    if t == "float":
        v = tuple(float(x) for x in d.split(","))
        return v[0] if row["count"] == 1 else v
    if t == "bool":
        return d == "1"
    if t in ("choice", "device"):
        return d
    return int(d)


def test_every_option_is_a_keyword(sample):
    """Each option the package has no form of its own for goes through
    **options by its registry name; the extension takes them all."""
    import inspect
    own = set(inspect.signature(_loader.Loader.__init__).parameters) | set(_loader._PYTHON_NAMES)
    for row in _ferry.loader_options():
        name = row["name"]
        core = _ferry.Loader(str(sample), **{name: None})  # None: the default
        assert name in core.options
        core.close()
        if name in own:
            continue
        want = 5 if name == "prefetch" else value(row)  # prefetch's default is "unset"
        loader = ferry.Loader(sample, 4, 16, output="numpy", workers=1, **{name: want})
        got = loader._core.options[name]
        if row["type"] == "choice":
            want = row["choices"].index(want)
        if isinstance(want, tuple):
            assert got == pytest.approx(want), name
        else:
            assert got == want, name
        loader.close()
    with pytest.raises(TypeError, match="takes size=, not width="):
        ferry.Loader(sample, 4, 16, width=32)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nonsense'"):
        ferry.Loader(sample, 4, 16, nonsense=1)


def test_python_defaults_are_c_defaults(sample):
    """ferry.Loader without options opens the C library's defaults (its own
    forms aside: workers and the stall time-out in seconds)."""
    got = ferry.Loader(sample, output="numpy")._core.options
    want = _ferry.Loader(str(sample)).options
    for name in ("workers", "stall_timeout_ms"):
        del got[name], want[name]
    assert got == want


@pytest.mark.parametrize("kw,flag,text", [
    (dict(batch_size=0), "--batch", "0"),
    (dict(crop="top"), "--crop", "top"),
    (dict(scale=(0.5, 0.1)), "--scale", "0.5,0.1"),
    (dict(seed=-1), "--seed", "-1"),
    (dict(prefetch=65), "--prefetch", "65"),
    (dict(read_timeout_ms=2**31), "--read-timeout-ms", str(2**31)),
])
def test_python_and_cli_same_message(sample, kw, flag, text):
    """A refused value: the C library's message, naming the option as each
    front end names it (the keyword, the flag), the range and the value."""
    with pytest.raises(ferry.InvalidArgument) as e:
        ferry.Loader(sample, **{"output": "numpy", **kw})
    (name,) = kw
    r = subprocess.run([FERRY_BIN, "load", str(sample), flag, text], capture_output=True,
                       text=True)
    assert r.returncode == 2
    cli = r.stderr.strip()
    assert cli.startswith(f"ferry load: {flag} ") and cli.endswith(" (see `ferry load --help`)")
    cli = cli[len("ferry load: "):-len(" (see `ferry load --help`)")]
    assert str(e.value) == cli.replace(flag, name, 1), (str(e.value), cli)
    assert text in str(e.value)


def test_prefetch_is_the_ring_everywhere(sample):
    """prefetch is the ring's length in C (the extension), in ferry.Loader
    and in `ferry load --prefetch` (which takes the same range)."""
    assert _ferry.Loader(str(sample), prefetch=5).ring == 5
    assert ferry.Loader(sample, 4, 16, output="numpy", prefetch=5).ring == 5
    assert ferry.Loader(sample, 4, 16, output="numpy", prefetch=64).ring == 64
    r = subprocess.run([FERRY_BIN, "load", str(sample), "--size", "16", "--batch", "8",
                        "--prefetch", "64", "--quiet"], capture_output=True, text=True)
    assert r.returncode == 3, r.stderr  # finished, the truncated file skipped


def test_cli_help_lists_every_flag():
    out = subprocess.run([FERRY_BIN, "load", "--help"], capture_output=True, text=True).stdout
    for row in _ferry.loader_options():
        if row["flag"]:
            assert f"  {row['flag']}" in out, row["flag"]


def test_c_and_python_read_the_same_table():
    """The extension's table is the library's: the count the C API gives."""
    import ctypes
    lib = ctypes.CDLL(os.path.join(os.environ.get("FERRY_BUILD", ROOT / "build"), "libferry.so"))
    assert lib.ferry_loader_option_count() == len(_ferry.loader_options())
