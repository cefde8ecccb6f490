"""Graceful drain: SIGTERM a real worker process while it holds a running activity; it stops
polling, keeps the activity heartbeating for its drain period, hands it back, closes its
helper processes and exits 0 — and the job finishes on another worker process, published
once, with no revision written twice.

The first worker holds the activity with the crash-test hook (``activities.runtime``
``pause_point``): ``PRESSROOM_TEST_PAUSE_AT`` makes it wait, heartbeating, until released —
which nobody does, so the drain period always runs out and the hand-back is what is
tested. ``run_tool`` pauses in the worker process itself; ``draft`` (the CPU-bound
extractive provider) pauses in its helper process, which the worker must kill to exit.

The drain period (4 s) is longer than the job's heartbeat timeout (3 s): the retried
attempt's recorded failure is the hand-back, not a heartbeat timeout, so the beats went on
while the worker drained. Nothing here sleeps for time: each wait is on an observable
condition (a marker file, the task queue's pollers, the process's exit) with a deadline.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from activities.runtime import WORKER_SHUTDOWN
from contracts.job_spec import JobSpec
from tests.faults.matrix import Row, inspect_job
from tests.waiting import wait_for
from tests.workflows.clusterkit import activity_runs, poller_identities
from tests.workflows.jobkit import (
    alive,
    published_files,
    review,
    start_job,
    start_worker_process,
    wait_status,
)
from workflows.temporal_config import ACTIVITY_NON_RETRYABLE_ERROR_TYPES

pytestmark = [pytest.mark.temporal, pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]

DRAIN = 4.0
#: from the drain's end to the process's exit: the worker's own shutdown, and a helper
#: still busy with the handed-back attempt given its 5 s before it is killed
MARGIN = 10.0


@pytest.mark.parametrize("point", ["run_tool", "draft"])
async def test_sigterm_drains_and_another_worker_finishes_the_job(
        temporal_env: WorkflowEnvironment, store_url: str, task_queue: str, tmp_path: Path,
        make_spec: Callable[..., JobSpec], point: str) -> None:
    client = temporal_env.client
    address = client.service_client.config.target_host
    spec = make_spec()
    markers = tmp_path / "markers"
    log = tmp_path / "worker.log"
    first = start_worker_process({"PRESSROOM_TEST_PAUSE_AT": point,
                                  "PRESSROOM_TEST_PAUSE_DIR": str(markers),
                                  "PRESSROOM_WORKER_DRAIN_SECONDS": str(DRAIN)},
                                 address, task_queue, store_url, log,
                                 args=["--identity", "first"])
    second = None
    try:
        handle = await start_job(client, spec, task_queue)
        reached = markers / f"{point}.reached"
        await wait_for(reached.exists, 90, f"the first worker pausing in {point}")
        paused = int(reached.read_text(encoding="utf-8"))
        assert (paused == first.pid) == (point == "run_tool")  # a draft pauses in a helper

        second = start_worker_process({}, address, task_queue, store_url, log,
                                      args=["--identity", "second"])
        await wait_for(lambda: _polls(client, task_queue), 45, "the second worker polling")
        first.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        code = await wait_for(lambda: first.poll() is not None and (first.returncode,),
                              DRAIN + MARGIN, "the drained worker exiting")
        took = time.monotonic() - sent
        print(f"drained worker exited after {took:.1f} s")
        assert code == (0,), log.read_text(errors="replace")
        # it waited for the paused activity (the drain period), and not much longer
        assert DRAIN - 0.5 <= took <= DRAIN + MARGIN, took
        assert not alive(paused), f"process {paused} outlived its drained worker"
        text = log.read_text(encoding="utf-8", errors="replace")
        assert "SIGTERM: draining" in text and "drained; closing helper processes" in text

        await wait_status(handle, {"awaiting_review"}, timeout=120)
        await review(client, spec.job_id, "approve", reviewer="alice")
        result = await handle.result()
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(10)
        print(log.read_text(encoding="utf-8", errors="replace")[-4000:] if log.exists() else "")

    assert result.status == "published"
    assert [f.name for f in published_files(spec)] == [f"{spec.job_id}.md"]
    runs = await activity_runs(handle)
    assert {r.identity for r in runs} <= {"first", "second"}, runs
    assert WORKER_SHUTDOWN not in ACTIVITY_NON_RETRYABLE_ERROR_TYPES  # a hand-back is retried
    handed_back = [r for r in runs if r.name == point and r.attempt > 1]
    assert handed_back, runs
    for run in handed_back:  # retried on the other worker, after the hand-back
        assert run.identity == "second", run
        assert "handed back" in run.last_failure and "heartbeat" not in run.last_failure, run
    assert {r.identity for r in runs if r.name in ("draft", "publish")} == {"second"}
    # the store: no revision lost or written twice, one receipt, one file, the history
    # replays (the fault matrix's read-back, tests/faults/matrix.py)
    row = Row(cell=f"drain:{point}", fault="SIGTERM", nodeid="", finished=True)
    await inspect_job(row, store_url, spec, result, handle)
    row.check()


async def _polls(client: Client, task_queue: str) -> bool:
    return "second" in await poller_identities(client, task_queue)
