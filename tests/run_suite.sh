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
# tests/workflows is split by file name: alone it was the long pole (≈20 minutes with
# its waits, under one core busy once the other shards had ended). test_crash.py (≈2¼
# minutes alone, mostly waiting on SIGKILLed workers) runs in the main process instead,
# whose unit tests keep the CPU busy: with it, the a–m shard was the pole (532 s of a
# 604 s CI run; the others ended at 262–305 s).
# With the fork, MCP demo and approve-call tests added, a–m alone took 16.8 of a 20-minute
# run: it is split in two (a–f, g–m). Every process prints its 25 slowest tests
# (--durations), so the next split can be made from the CI log's figures.
crash=tests/workflows/test_crash.py
a_to_f=$(printf '%s\n' tests/workflows/test_[a-f]*.py | grep -vxF "$crash")
g_to_m=$(printf '%s\n' tests/workflows/test_[g-m]*.py)
shards=("tests/faults tests/scale tests/webconsole" "$a_to_f" "$g_to_m"
        "tests/workflows/test_[n-z]*.py")
ignores=()
pids=()
for i in "${!shards[@]}"; do
  # shellcheck disable=SC2086  # a shard is a list of folders
  "$PY" -m pytest --durations=25 ${shards[$i]} > "reports/pytest-shard-$i.log" 2>&1 &
  pids+=($!)
  for folder in ${shards[$i]}; do ignores+=("--ignore=$folder"); done
done
"$PY" -m pytest --durations=25 "${ignores[@]}" "$@"
status=$?
for i in "${!shards[@]}"; do
  wait "${pids[$i]}"
  shard_status=$?
  echo "==== shard $i: ${shards[$i]} (exit $shard_status) ===="
  cat "reports/pytest-shard-$i.log"
  [ "$shard_status" -eq 0 ] || status=1
done
exit "$status"
