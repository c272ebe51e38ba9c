"""The loader's stall watchdog from Python: a decode made to stall (the C
library's FERRY_STALL_AT=N:MS fault point, read once per process, so each
case runs in a fresh interpreter) past stall_timeout raises ferry.StallError
(a TimeoutError) naming the stalled thread and file, instead of hanging;
stall_timeout=0 waits; bad values are refused."""
import os
import re
import subprocess
import sys
import textwrap

import pytest

import ferry

SCRIPT = textwrap.dedent("""
    import sys, time, warnings
    import ferry
    warnings.simplefilter("ignore")
    timeout = float(sys.argv[2])
    L = ferry.Loader(sys.argv[1], batch_size=4, size=32, workers=2, output="numpy",
                     stall_timeout=timeout)
    n = 0
    t0 = time.monotonic()
    try:
        for x, y in L:
            n += len(y)
    except ferry.StallError as e:
        assert isinstance(e, TimeoutError) and isinstance(e, ferry.Error)
        assert e.status == ferry._ferry.ETIMEOUT, e.status
        print("STALL", round(time.monotonic() - t0, 2), str(e))
        try:
            next(iter(L))
        except ferry.StallError:
            print("STILL FAILED")
        L.close()
        sys.exit(0)
    print("DONE", n)
""")


def run(sample, stall, timeout):
    env = dict(os.environ, FERRY_STALL_AT=stall)
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(sample), str(timeout)], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_stall_raises_stall_error(sample):
    out = run(sample, "5:4000", 0.3)
    assert out.startswith("STALL "), out
    seconds = float(out.split()[1])
    assert seconds < 3.5, out  # the error came before the 4 s stall ended
    # the time since the last sample: the 0.3 s timeout, or a little more on a busy machine
    assert re.search(r"loader: stalled: no sample finished for 0\.[3-9] s while waiting for batch",
                     out), out
    assert "worker " in out and ": decoding " in out and str(sample) in out
    # a fresh epoch on a stalled loader raises again (the loader stays failed)
    assert "STILL FAILED" in out


def test_stall_shorter_than_timeout_and_off(sample):
    assert run(sample, "3:400", 5).startswith("DONE 48"), "a short stall is only slow"
    assert run(sample, "3:600", 0).startswith("DONE 48"), "stall_timeout=0 waits"


@pytest.mark.parametrize("bad", [-1, "60", True, float("nan")])
def test_bad_stall_timeout(sample, bad):
    with pytest.raises(ferry.InvalidArgument, match="stall_timeout"):
        ferry.Loader(sample, batch_size=4, size=32, stall_timeout=bad)
