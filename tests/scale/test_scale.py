"""Scale: many research jobs on three ``pressroom worker`` processes sharing one PostgreSQL
store on one Temporal dev server, one worker SIGKILLed mid-run.

Every job runs the research loop (``research: {mode: agent}``: decide, tool calls, record
turns) with the offline ``extractive`` provider, and is approved by a test reviewer through
the real signed review Update (``jobkit.review``) as soon as it waits. Worker ``doomed``
starts with the crash-test hook (``PRESSROOM_TEST_PAUSE_AT=run_tool``): it runs every other
activity normally and holds each tool call it takes, heartbeating, so when it is SIGKILLed
(once it has completed activities of its own and holds at least one tool call) it surely
dies mid-activity; those tool calls time out on their heartbeat and are retried on the two
survivors. Each worker is started with ``--identity <name>``, so every
``ActivityTaskStarted`` event names the process that ran the activity.

Checked: every job published exactly once (one receipt, one file, the receipt describing
its bytes), no revision lost or written twice and no tool side effect duplicated (the fault
matrix's read-back, ``tests.faults.matrix.inspect_job``, which also replays each history),
every activity ran in one of the three workers, all three ran some, and the killed worker's
tool calls were retried on the survivors. The table of who ran what is printed.

Size: ``PRESSROOM_SCALE=full`` runs 30 jobs (about 3 minutes on 2 cores); by default 6
(under a minute), which keeps CI's time.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from contracts.job_spec import parse_job_spec
from tests.artifacts.conftest import postgres_url
from tests.faults.matrix import Row, inspect_job
from tests.waiting import wait_for
from tests.workflows.clusterkit import (
    ActivityRun,
    WorkerProcess,
    activity_runs,
    approve_when_waiting,
    fresh_database,
    run_cli,
    spawn_worker,
    wait_polling,
)
from tests.workflows.jobkit import job_dict, published_files, start_job

pytestmark = [pytest.mark.postgres, pytest.mark.temporal, pytest.mark.slow,
              pytest.mark.asyncio(loop_scope="session")]

SCALE_ENV = "PRESSROOM_SCALE"
FULL = os.environ.get(SCALE_ENV, "").strip().lower() == "full"
JOBS = 30 if FULL else 6
WORKERS = ("doomed", "w1", "w2")
#: a job's deadline from its start to its end, on a loaded two-core machine
JOB_DEADLINE = 420.0 if FULL else 240.0


@pytest_asyncio.fixture(loop_scope="session")
async def scale_store_url() -> AsyncIterator[str]:
    async with fresh_database(postgres_url()) as url:
        yield url


async def _doomed_ran_something(handles: list[WorkflowHandle[Any, Any]]) -> bool:
    for handle in handles:
        if any(r.identity == "doomed" for r in await activity_runs(handle)):
            return True
    return False


async def test_jobs_on_three_workers_one_killed(
        temporal_env: WorkflowEnvironment, scale_store_url: str, task_queue: str,
        tmp_path: Path, docs: Path) -> None:
    client = temporal_env.client
    address = client.service_client.config.target_host
    url = scale_store_url
    upgraded = await run_cli("db", "upgrade", "--url", url)
    assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr

    specs = [parse_job_spec(job_dict(tmp_path, docs, research={"mode": "agent"},
                                     destination=str(tmp_path / "published" / f"job{i:02d}")))
             for i in range(JOBS)]
    markers = tmp_path / "markers"
    root = tmp_path / "workers"
    workers: list[WorkerProcess] = []
    started = time.monotonic()
    try:
        workers = [spawn_worker(
            name, root, address=address, task_queue=task_queue, store_url=url, identity=True,
            extra_env={"PRESSROOM_TEST_PAUSE_AT": "run_tool",
                       "PRESSROOM_TEST_PAUSE_DIR": str(markers)} if name == "doomed" else None)
            for name in WORKERS]
        doomed = workers[0]
        await wait_polling(client, task_queue, workers)
        handles = [await start_job(client, s, task_queue) for s in specs]
        finishing = [asyncio.create_task(approve_when_waiting(client, h, s))
                     for h, s in zip(handles, specs, strict=True)]

        await wait_for((markers / "run_tool.reached").exists, 120,
                       "the doomed worker holding a tool call")
        await wait_for(lambda: _doomed_ran_something(handles), 120,
                       "an activity completed by the doomed worker", interval=0.5)
        doomed.proc.send_signal(signal.SIGKILL)  # mid tool call, the others mid-run
        assert doomed.proc.wait(10) == -signal.SIGKILL
        killed_at = time.monotonic() - started

        results = await asyncio.wait_for(asyncio.gather(*finishing), JOB_DEADLINE)
        wall = time.monotonic() - started
        runs = {s.job_id: await activity_runs(h) for h, s in zip(handles, specs, strict=True)}
    finally:
        for w in workers:
            w.stop()
        for w in workers:  # shown by pytest only when the test fails
            print(w.tail(2000))

    all_runs: list[ActivityRun] = [r for job_runs in runs.values() for r in job_runs]
    table = Counter((r.identity, r.name) for r in all_runs)
    per_worker = Counter(r.identity for r in all_runs)
    print(f"{JOBS} jobs on {len(WORKERS)} workers, doomed SIGKILLed at {killed_at:.1f} s, "
          f"all published at {wall:.1f} s ({JOBS / wall * 60:.1f} jobs/min)")
    print("activities per worker:", dict(per_worker))
    for name in sorted({n for _i, n in table}):
        print(f"  {name:18}", "  ".join(f"{w}={table[(w, name)]}" for w in WORKERS))

    # every activity ran in one of our three processes; all three ran some
    assert set(per_worker) <= set(WORKERS), per_worker
    assert all(per_worker[w] > 0 for w in WORKERS), per_worker
    # the killed worker's tool calls were retried on a survivor after a heartbeat timeout
    retried = [r for r in all_runs if r.name == "run_tool" and r.attempt > 1]
    assert retried, "no tool call of the killed worker was retried"
    for run in retried:
        assert run.identity in ("w1", "w2") and "heartbeat" in run.last_failure.lower(), run
    assert not [r for r in all_runs if r.name == "run_tool" and r.identity == "doomed"]

    # every job published exactly once, described byte for byte by its receipt; nothing
    # lost or written twice in the store
    for spec, result in zip(specs, results, strict=True):
        assert result.status == "published" and result.receipt is not None, result
        files = published_files(spec)
        assert [f.name for f in files] == [f"{spec.job_id}.md"]
        assert result.receipt.content_hash == "sha256:" + hashlib.sha256(
            files[0].read_bytes()).hexdigest()
    for spec, result, handle in zip(specs, results, handles, strict=True):
        row = Row(cell=f"scale:{spec.job_id}", fault="SIGKILL one of three", nodeid="",
                  finished=True)
        await inspect_job(row, url, spec, result, handle)
        row.check()
