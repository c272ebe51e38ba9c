# shellcheck shell=bash
# bench/probe_env.sh — sourced by the device probes that run the bundle's
# `ferry` (mix_probe.sh, epoch0_probe.sh, py_vs_cli.sh; device tool, .device/
# carried): $OUT made, the bundle's libraries and Python package found, and
#   probe_exec "NAME=V,NAME=V" CMD ARGS...
# which exports each NAME=V (a configuration's environment) and becomes CMD.
# Call it in a subshell: ( probe_exec "$envs" timeout 120 .device/ferry ... ).
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$PWD/.device/py
probe_exec() {
  local envs=$1 kv
  shift
  local IFS=','
  for kv in $envs; do
    [ -n "$kv" ] && export "${kv?}"
  done
  exec "$@"
}
