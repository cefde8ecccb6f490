"""Workflow history holds references only, and long jobs continue-as-new.

* A job over ~1 KB of sources and the same job over ~20 MB of sources have histories
  within 10% of each other: content lives in the artifact store, never in history.
* With a low ``runtime.continue_as_new_events`` the job continues-as-new (carrying only
  references), keeps answering queries and updates, and still publishes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from activities.runtime import ActivityRuntime
from contracts.job_spec import JobSpec
from contracts.workflow_messages import JobResult
from settings import Settings
from tests.workflows.jobkit import (
    history_bytes,
    published_files,
    review,
    roots_for,
    running_worker,
    start_job,
    wait_status,
)

#: what source-location placeholders stand for here (as a worker started now is told)
LOCAL = Settings.from_env(os.environ).locations

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

FILLER = "".join(f"filler line {i:07d} with nothing relevant in it at all\n" for i in range(4000))


def _big_docs(root: Path, total_bytes: int) -> Path:
    """Documents totalling ``total_bytes``, each under the reader's 2 MB per-file limit."""
    root.mkdir()
    per_file = 1_900_000
    n = 0
    written = 0
    while written < total_bytes:
        body = ["# Retries and resume\n\nThe client retries with exponential backoff.\n"
                "A download can resume from its stored offset.\n"]
        size = len(body[0])
        while size < per_file:
            body.append(FILLER)
            size += len(FILLER)
        text = "".join(body)
        (root / f"part-{n:02d}.md").write_text(text, encoding="utf-8")
        written += len(text)
        n += 1
    return root


async def _run_to_publish(client: Any, runtime: ActivityRuntime, task_queue: str,
                          spec: JobSpec) -> tuple[int, int, str]:
    """The published job's history: its size in bytes, its events, and its JSON."""
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"awaiting_review"}, timeout=120)
        await review(client, spec.job_id, "approve", reviewer="alice")
        assert (await handle.result()).status == "published"
        history = await handle.fetch_history()
        return await history_bytes(handle), len(history.events), history.to_json()


async def test_history_size_does_not_grow_with_source_size(
        client: Any, store_url: str, tmp_path: Path, docs: Path,
        make_spec: Callable[..., JobSpec]) -> None:
    # the same research over a 2 KB folder and a 20 MB one: history holds references and
    # sizes, never what the tools read (the loop's history per turn: test_research_loop.py)
    small = make_spec(job_id="size-small-0001")
    big_docs = _big_docs(tmp_path / "big", 20 * 1024 * 1024)
    assert sum(p.stat().st_size for p in big_docs.iterdir()) >= 20 * 1024 * 1024
    assert sum(p.stat().st_size for p in docs.iterdir()) < 2048
    big = make_spec(job_id="size-large-0001",
                    sources=[{"kind": "document", "name": "handbook", "path": str(big_docs)}])
    roots = roots_for(tmp_path)
    small_bytes, small_events, _ = await _run_to_publish(
        client, ActivityRuntime(store_url, locations=LOCAL, roots=roots),
        "q-small-" + small.job_id, small)
    big_bytes, big_events, big_history = await _run_to_publish(
        client, ActivityRuntime(store_url, locations=LOCAL, roots=roots),
        "q-large-" + big.job_id, big)
    # over more hits the agent may make a few more calls (≈ 220 events against 235): the
    # same step costs the same history whatever it read, so compare bytes per event
    ratio = (big_bytes / big_events) / (small_bytes / small_events)
    assert 0.9 <= ratio <= 1.1, (small_bytes, small_events, big_bytes, big_events)
    assert big_bytes / big_events < 2_000  # references and sizes, never what was read
    assert "filler line" not in big_history and "stored offset" not in big_history


async def test_continue_as_new_carries_references_and_publishes(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec(runtime={"heartbeat_timeout": "3s", "continue_as_new_events": 50})
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        first_run = handle.first_execution_run_id or handle.result_run_id
        st = await wait_status(handle, {"awaiting_review"})
        await review(client, spec.job_id, "request_changes", reviewer="alice",
                              comments=["add the maximum delay"])
        st = await wait_status(handle, {"awaiting_review"})
        assert st.revision_round == 1 and st.pending_draft is not None
        assert st.pending_draft.revision == 2
        desc = await client.get_workflow_handle(spec.job_id).describe()
        assert desc.run_id != first_run  # at least one continue-as-new happened
        await review(client, spec.job_id, "approve", reviewer="bob")
        result = await client.get_workflow_handle(spec.job_id, result_type=JobResult).result()
    assert result.status == "published"
    assert len(published_files(spec)) == 1
    # every run stayed small: no run's history approaches the configured event budget much
    latest = await client.get_workflow_handle(spec.job_id).fetch_history()
    assert len(latest.events) < 120
