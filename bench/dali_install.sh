#!/usr/bin/env bash
# On the warm GPU machine: puts DALI together from the parts carried call by
# call (bench/dali_wheels.sh says how) and installs it and its wheels into
# /tmp/site; prints the PYTHONPATH entry. Never a dependency of ferry.
#   each transfer call:  mkdir -p /tmp/dali && cp .dali/* /tmp/dali/
#   then:                bash bench/dali_install.sh   (with .whl carried)
set -euo pipefail
name=$(cat /tmp/dali/name)
if ! [ -f "/tmp/dali/$name" ]; then
  n=$(ls /tmp/dali/part.* | wc -l)
  [ "$n" -ge 4 ] || { echo "dali_install: only $n of 4 parts in /tmp/dali" >&2; exit 1; }
  cat /tmp/dali/part.* > "/tmp/dali/$name"
fi
python3 -m pip install -q --no-index --no-deps --target /tmp/site "/tmp/dali/$name" .whl/*.whl \
  >/tmp/dali/pip.log 2>&1 || { tail -20 /tmp/dali/pip.log >&2; exit 1; }
PYTHONPATH=/tmp/site python3 -c "import nvidia.dali as d; print('DALI', d.__version__)" >&2
echo /tmp/site
