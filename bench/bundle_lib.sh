# bundle_lib.sh — what the device bundles (bench/device_bundle*.sh) share;
# sourced, not run. The GPU machine lacks some shared libraries and has
# Python 3.12 only.

# bundle_libs DIR: the codec libraries (and jansson, the JSON library) the GPU
# machine lacks, into DIR.
bundle_libs() {
  local l f
  for l in libjpeg.so.62 libpng16.so.16 libwebp.so.7 libsharpyuv.so.0 libtiff.so.6 libLerc.so.4 \
    libjbig.so.0 libdeflate.so.0 libgif.so.7 libstb.so.0 libraw_r.so.20 liblcms2.so.2 libjansson.so.4; do
    f=$(ldconfig -p | awk -v l="$l" '$1 == l && !f {print $NF; f = 1}')
    [ -n "$f" ] && cp -L "$f" "$1/"
  done
  return 0
}

# bundle_commit DIR: DIR/COMMIT, the commit the bundle was built from ("-dirty" with
# uncommitted changes): the device machine's copy of the tree has no reliable git state.
bundle_commit() {
  local c
  c=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  git diff --quiet HEAD -- 2>/dev/null || c="$c-dirty"
  echo "$c" > "$1/COMMIT"
}

# bundle_python BUILD DIR: the Python package for Python 3.12 (PY312, or
# pyenv's), its extension linked against CMake build BUILD (rebuilt: a
# stale extension of another build would be copied as it is), into DIR.
bundle_python() {
  local py=${PY312:-$(ls -d "$HOME"/.pyenv/versions/3.12*/bin/python3 2>/dev/null | head -1)}
  [ -x "$py" ] || { echo "$(basename "$0"): no Python 3.12 here (set PY312)" >&2; exit 1; }
  "$py" -c "import setuptools" 2>/dev/null || "$py" -m pip install -q setuptools
  FERRY_PY_CMAKE_BUILD="$1" "$py" setup.py -q build_ext --inplace --force >/dev/null
  cp python/ferry/*.py python/ferry/*.pyi python/ferry/py.typed "$2/"
  mv python/ferry/_ferry.cpython-312-*.so "$2/"
}
