"""Crash recovery: SIGKILL a real worker process mid-activity, start a fresh one, and the
job still completes with exactly one article in the destination.

The first worker runs with the documented test hook (``activities.runtime``):
``PRESSROOM_TEST_PAUSE_AT=<point>`` makes the activity write ``<point>.reached`` into
``PRESSROOM_TEST_PAUSE_DIR`` and wait (still heartbeating) until the test kills the process.
The job's heartbeat timeout is 3 s, so the server notices the dead worker quickly and
retries the activity on the second worker, which runs without the hook.
"""

from __future__ import annotations

import asyncio
import hashlib
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from activities.runtime import ActivityRuntime, principal_of
from contracts.job_spec import JobSpec
from tests.workflows.jobkit import (
    alive,
    loop_notes,
    loop_tool_history,
    published_files,
    review,
    start_job,
    start_worker_process,
    wait_status,
)
from worker import build_worker
from workflows.research_job import ResearchJobWorkflow
from workflows.temporal_config import (
    DATA_CONVERTER,
    WORKFLOW_FAILURE_EXCEPTION_TYPES,
    WORKFLOW_RUNNER,
)

pytestmark = [pytest.mark.temporal, pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]


async def _wait_for(path: Path, timeout: float = 60.0) -> None:
    for _ in range(int(timeout / 0.1)):
        if path.exists():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{path} never appeared")


#: where the first worker dies: in the research loop during ``decide``, during a tool call,
#: between the tool results and the next assembly (``record_turn``) and during a research
#: checkpoint; during the draft; after publishing wrote the file
POINTS = ["decide", "run_tool", "record_turn", "checkpoint_research", "draft",
          "publish_after_write"]
LOOP_POINTS = {"decide", "run_tool", "record_turn", "checkpoint_research"}


async def _loop_record(runtime: ActivityRuntime, spec: JobSpec) -> dict[str, Any]:
    """What the research loop left: the notes, and how often each exchange was written."""
    store = await runtime.store()
    principal = principal_of(spec)
    notes = sorted((tuple(r["topics"]), r["source_name"], r["path"], r["line_start"],
                    r["line_end"], r["content"], r["revision"])
                   for r in await loop_notes(runtime, spec) if r["tool_name"] == "note")
    tools = await loop_tool_history(runtime, spec)
    writes = {}
    for call in tools["calls"]:
        exchange = f"{spec.job_id}:tool:{call['call_id']}"
        writes[call["call_id"]] = len(await store.history("tool_record", exchange,
                                                          principal=principal))
    turns = tools["revisions"]
    return {"notes": notes, "writes": writes, "turns": turns,
            "calls": [c["call_id"] for c in tools["calls"]]}


async def _uninterrupted(client: Any, runtime: ActivityRuntime, task_queue: str,
                         make_spec: Callable[..., JobSpec]) -> dict[str, Any]:
    """The same job run without a crash, in this process, on the same store."""
    spec = make_spec()
    async with build_worker(client, runtime, task_queue=f"{task_queue}-reference"):
        handle = await start_job(client, spec, f"{task_queue}-reference")
        await wait_status(handle, {"awaiting_review"})
        await handle.terminate("reference run: only its research matters")
    return await _loop_record(runtime, spec)


@pytest.mark.parametrize("point", POINTS)
async def test_sigkill_worker_and_resume(
        temporal_env: WorkflowEnvironment, runtime: ActivityRuntime, store_url: str,
        task_queue: str, tmp_path: Path, make_spec: Callable[..., JobSpec], point: str) -> None:
    client = temporal_env.client
    address = client.service_client.config.target_host
    spec = make_spec()
    markers = tmp_path / "markers"
    log = tmp_path / "worker.log"
    first = start_worker_process({"PRESSROOM_TEST_PAUSE_AT": point,
                                  "PRESSROOM_TEST_PAUSE_DIR": str(markers)},
                                 address, task_queue, store_url, log)
    second = None
    try:
        handle = await start_job(client, spec, task_queue)
        if point == "publish_after_write":
            await wait_status(handle, {"awaiting_review"})
            await review(client, spec.job_id, "approve", reviewer="alice")
        await _wait_for(markers / f"{point}.reached")
        if point == "publish_after_write":
            assert [f.name for f in published_files(spec)] == [f"{spec.job_id}.md"]
        # the paused process: the worker itself, or its helper process for a draft with
        # the (CPU-bound) extractive provider (activities.offload)
        paused = int((markers / f"{point}.reached").read_text(encoding="utf-8"))
        first.send_signal(signal.SIGKILL)
        assert first.wait(10) == -signal.SIGKILL
        for _ in range(100):  # a helper dies with its worker: nothing paused lingers
            if not alive(paused):
                break
            await asyncio.sleep(0.1)
        assert not alive(paused), f"process {paused} outlived its killed worker"
        second = start_worker_process({}, address, task_queue, store_url, log)
        if point != "publish_after_write":
            await wait_status(handle, {"awaiting_review"}, timeout=180)
            await review(client, spec.job_id, "approve", reviewer="alice")
        result = await asyncio.wait_for(handle.result(), 180)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(10)
        # shown by pytest only when the test fails: what the worker processes said
        print(log.read_text(encoding="utf-8", errors="replace")[-4000:] if log.exists() else "")
    assert result.status == "published" and result.receipt is not None
    files = published_files(spec)
    assert [f.name for f in files] == [f"{spec.job_id}.md"]  # one copy, no temp files
    # the receipt describes exactly the bytes on disk, and is the one stored receipt
    assert result.receipt.content_hash == "sha256:" + hashlib.sha256(
        files[0].read_bytes()).hexdigest()
    store = await runtime.store()
    stored = await store.get_receipt(result.receipt.receipt_key, principal=principal_of(spec))
    assert stored == result.receipt.model_dump(mode="json")
    history = await handle.fetch_history()
    retried = [e for e in history.events
               if e.HasField("activity_task_started_event_attributes")
               and e.activity_task_started_event_attributes.attempt > 1]
    assert retried, "the killed activity should have been retried on the new worker"
    replayed = await Replayer(
        workflows=[ResearchJobWorkflow], data_converter=DATA_CONVERTER,
        workflow_runner=WORKFLOW_RUNNER,
        workflow_failure_exception_types=list(WORKFLOW_FAILURE_EXCEPTION_TYPES),
    ).replay_workflow(history)
    assert replayed.replay_failure is None
    if point in LOOP_POINTS:
        crashed = await _loop_record(runtime, spec)
        # no tool call ran twice (one stored exchange each), no turn was recorded twice,
        # and the notes are exactly those of a run nobody killed
        assert set(crashed["writes"].values()) == {1}, crashed["writes"]
        assert len(crashed["calls"]) == len(set(crashed["calls"]))
        reference = await _uninterrupted(client, runtime, task_queue, make_spec)
        assert crashed["notes"] == reference["notes"] and crashed["notes"]
        assert crashed["turns"] == reference["turns"]
