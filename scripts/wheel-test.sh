#!/usr/bin/env bash
# wheel-test.sh — `make test-wheel`: installs dist/ferry-*.whl (make wheel)
# into a clean venv with only NumPy and pytest beside it, and runs the Python
# tests (tests/python) against that installed package, from outside the
# checkout, so that the in-place python/ferry cannot be the one imported.
#
# The tests that need torch, imagehash or webdataset skip and say so (the
# venv has none of them); the tests of the ferry command and of libferry.so
# through ctypes use $FERRY_BIN / $FERRY_BUILD (default build/, `make` builds it).
#
# Environment: WHEEL_TEST_MARKERS (a pytest -m expression: `make test` runs the
# package's own tests, not the command line's nor the corpus's, which the
# checkout's build already ran), PYTHON (default python3, the wheel's version), WHEEL_TEST_VENV
# (default build-wheel/test-venv: one per checkout, so two checkouts testing at once do
# not remove each other's), BUILD (default build), PYTEST_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
py=${PYTHON:-python3}
venv=${WHEEL_TEST_VENV:-$root/build-wheel/test-venv}
build=$(cd "${BUILD:-build}" 2>/dev/null && pwd || echo "$root/${BUILD:-build}")
say() { echo "test-wheel: $*"; }

shopt -s nullglob
wheels=(dist/ferry-*.whl)
[ ${#wheels[@]} -eq 1 ] || { say "want one dist/ferry-*.whl (make wheel), found ${#wheels[@]}"; exit 1; }
whl=$root/${wheels[0]}

start=$(date +%s)
rm -rf "$venv"
"$py" -m venv "$venv"
# the wheel with NumPy and pytest only (issue 20's acceptance): tests that
# use Pillow, torch, imagehash, ... as references skip, naming the package
# (tests/python/conftest.py), or their modules are left out below, saying so
# (pytest-xdist, where it installs, runs them on every core: a test runner, not a need of ferry's)
"$venv/bin/python" -m pip install -q --disable-pip-version-check "$whl" numpy pytest ||
  { say "pip install $whl numpy pytest failed"; exit 1; }
xdist=()
if "$venv/bin/python" -m pip install -q --disable-pip-version-check pytest-xdist 2>/dev/null; then
  xdist=(-n "${JOBS:-$(nproc)}")
else
  say "pytest-xdist could not be installed: the tests run on one core"
fi
say "installed $(basename "$whl") into $venv in $(($(date +%s) - start)) s"

# A directory of its own, away from the checkout; no PYTHONPATH.
run=$(mktemp -d /tmp/ferry-wheel-test.XXXXXX)
trap 'rm -rf "$run"' EXIT
site=$(cd "$run" && env -u PYTHONPATH "$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
where=$(cd "$run" && env -u PYTHONPATH "$venv/bin/python" -c 'import ferry; print(ferry.__file__)')
case $where in
  "$site"/ferry/*) say "import ferry: $where" ;;
  *) say "import ferry gave $where, not the wheel's package in $site"; exit 1 ;;
esac
(cd "$run" && env -u PYTHONPATH "$venv/bin/python" -m ferry._build_info) | sed 's/^/test-wheel: built: /'

# conftest.py imports the package in $FERRY_PY_PATH first: the venv's.
pytest_in_venv() {
  (cd "$run" && env -u PYTHONPATH FERRY_PY_PATH="$site" FERRY_BIN="${FERRY_BIN:-$build/ferry}" \
    FERRY_BUILD="$build" "$venv/bin/python" -m pytest -p no:cacheprovider \
    --rootdir="$root/tests/python" "$@")
}
# A test module that imports Pillow or torch unguarded fails to be collected
# here, where neither is installed: it is left out, saying so (any other
# collection error fails the run below).
ignores=()
while read -r mod pkg; do
  say "SKIPPED $mod: it imports $pkg, which the wheel's test venv does not have"
  ignores+=("--ignore=$root/tests/python/$mod")
done < <(pytest_in_venv --collect-only -q "$root/tests/python" 2>&1 | "$venv/bin/python" -c '
import re, sys
mod = None
for line in sys.stdin:
    m = re.search(r"ERROR collecting (\S+\.py)", line)
    if m:
        mod = m.group(1).split("/")[-1]
    m = re.search(r"No module named .(PIL|torch)\b", line)
    if m and mod:
        print(mod, {"PIL": "Pillow"}.get(m.group(1), m.group(1)))
        mod = None
')
set +e
markers=()
if [ -n "${WHEEL_TEST_MARKERS:-}" ]; then
  markers=(-m "$WHEEL_TEST_MARKERS")
  say "the tests marked '$WHEEL_TEST_MARKERS' (make test-full runs them all)"
fi
pytest_in_venv -rs "${xdist[@]+"${xdist[@]}"}" "${markers[@]+"${markers[@]}"}" \
  "${ignores[@]+"${ignores[@]}"}" ${PYTEST_ARGS:-} "$root/tests/python" 2>&1 |
  tee "$run/pytest.log"
rc=${PIPESTATUS[0]}
set -e
# the header conftest.py prints says which ferry the tests imported
if ! grep -q "^ferry .* from $site/ferry/" "$run/pytest.log"; then
  say "the tests did not import the wheel's ferry (from $site): $(grep -m1 '^ferry ' "$run/pytest.log")"
  exit 1
fi
say "pytest exit $rc, $(($(date +%s) - start)) s in all"
exit "$rc"
