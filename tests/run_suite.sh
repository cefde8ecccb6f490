#!/usr/bin/env bash
# The whole test suite as parallel pytest processes (`make pytest` / `make test`).
#
# Most tests wait on Temporal, worker processes and timers, not on the CPU (the load stays
# under 2 on two cores), and one pytest process in a row took CI past 20 minutes. Each
# shard below runs in its own process beside the main one, which takes everything else.
# A shard holds folders that start their own servers and processes and never touch the
# shared PostgreSQL test database that tests/artifacts drops and re-migrates (they make
# databases of their own), so the shards cannot disturb each other. Each shard's output is
# printed when it ends (also reports/pytest-shard-N.log); any shard failing fails the run.
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
mkdir -p reports
# tests/workflows is split in two by file name: alone it was the long pole (≈20 minutes with
# its waits, under one core busy once the other shards had ended). test_crash.py (≈2¼
# minutes alone, mostly waiting on SIGKILLed workers) runs in the main process instead,
# whose unit tests keep the CPU busy: with it, the a–m shard was the pole (532 s of a
# 604 s CI run; the others ended at 262–305 s).
crash=tests/workflows/test_crash.py
a_to_m=$(printf '%s\n' tests/workflows/test_[a-m]*.py | grep -vxF "$crash")
shards=("tests/faults tests/scale tests/webconsole" "$a_to_m" "tests/workflows/test_[n-z]*.py")
ignores=()
pids=()
for i in "${!shards[@]}"; do
  # shellcheck disable=SC2086  # a shard is a list of folders
  "$PY" -m pytest ${shards[$i]} > "reports/pytest-shard-$i.log" 2>&1 &
  pids+=($!)
  for folder in ${shards[$i]}; do ignores+=("--ignore=$folder"); done
done
"$PY" -m pytest "${ignores[@]}" "$@"
status=$?
for i in "${!shards[@]}"; do
  wait "${pids[$i]}"
  shard_status=$?
  echo "==== shard $i: ${shards[$i]} (exit $shard_status) ===="
  cat "reports/pytest-shard-$i.log"
  [ "$shard_status" -eq 0 ] || status=1
done
exit "$status"
