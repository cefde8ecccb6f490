"""A blocking topic without evidence blocks the job; adding a source that covers it resolves
it; and the policy's ``blocking.block_timeout`` bounds the wait (the spec may only shorten).

Real dev server, worker, activities and SQLite store; document sources on disk; the
offline extractive provider (no model API is faked).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from activities.runtime import ActivityRuntime, principal_of
from client import jobs
from context.policy import POLICY_DIR
from contracts.job_spec import JobSpec
from contracts.workflow_messages import ResolveInput
from tests.workflows.jobkit import (
    published_files,
    resolve,
    review,
    running_worker,
    start_job,
    wait_status,
)
from workflows.research_job import ResearchJobWorkflow

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

TOPICS = [
    {"name": "retries", "terms": ["retry", "backoff"]},
    {"name": "resume", "terms": ["resume"]},
    {"name": "quotas", "terms": ["quota"], "blocking": True},
]


def _quota_docs(root: Path) -> Path:
    extra = root / "quota-docs"
    extra.mkdir()
    (extra / "quota.md").write_text(
        "# Quotas\n\nEvery retry counts against the account's daily request quota.\n",
        encoding="utf-8")
    return extra


async def test_research_loop_blocks_a_finish_that_leaves_a_topic_uncovered(
        client: Any, runtime: ActivityRuntime, task_queue: str, tmp_path: Path,
        make_spec: Callable[..., JobSpec]) -> None:
    """The agent finds nothing on quotas and calls finish: finish is checked, not trusted,
    so the job blocks at research naming the topic; a source added by resolve re-opens the
    loop, the agent researches the topic there, notes it, and the job goes on to review."""
    spec = make_spec(topics=TOPICS)
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        st = await wait_status(handle, {"blocked"})
        assert st.stage == "research" and st.pending_draft is None
        assert st.blocked_reason == ("required_evidence_missing (no verified note for: "
                                     "quotas)")
        # the model did finish; the workflow refused to take its word for it
        assert st.research is not None and st.research.stop_reason == "finished"
        assert sorted(st.research.covered_topics) == ["resume", "retries"]
        await resolve(client, spec.job_id, ResolveInput(
            action="add_source", source={"kind": "document", "name": "quotas",
                                         "path": str(_quota_docs(tmp_path))}))
        st = await wait_status(handle, {"awaiting_review", "blocked"})
        assert st.status == "awaiting_review", st.blocked_reason
        assert st.research is not None and st.research.stop_reason == "finished"
        assert "quotas" in st.research.covered_topics
        store = await runtime.store()
        ready = await store.get_manifest(st.manifest_ids[-1], principal=principal_of(spec))
        assert ready["stage"] == "draft" and ready["missing_topics"] == []
        assert any(e["item_id"].startswith("note:quotas:") for e in ready["included"])
        await review(client, spec.job_id, "approve", reviewer="alice")
        result = await handle.result()
    assert result.status == "published"
    [article] = published_files(spec)
    assert "quota" in article.read_text(encoding="utf-8").lower()


def _policy_file(root: Path, timeout: str) -> Path:
    data = yaml.safe_load((POLICY_DIR / "default.yaml").read_text(encoding="utf-8"))
    data["policy"]["id"] = "short-block"
    data["blocking"]["block_timeout"] = timeout
    path = root / "short-block.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


async def _ended(client: Any, job_id: str) -> Any:
    for _ in range(150):
        view = await jobs.view_job(client, job_id)
        if view.execution != "RUNNING":
            return view
        await asyncio.sleep(0.2)
    raise AssertionError(f"job still running: {view.summary}")


async def test_policy_block_timeout_ends_a_blocked_job(
        client: Any, runtime: ActivityRuntime, task_queue: str, tmp_path: Path,
        make_spec: Callable[..., JobSpec]) -> None:
    """No spec override: the policy's 2s bound the wait (the default would be a day)."""
    policy = _policy_file(tmp_path, "2s")
    spec = make_spec(topics=TOPICS, policy=str(policy), block_timeout=None)
    assert spec.block_timeout is None
    async with running_worker(client, runtime, task_queue):
        await start_job(client, spec, task_queue)
        view = await _ended(client, spec.job_id)
    assert view.execution == "FAILED"
    assert view.summary.startswith("failed: required_evidence_missing")
    assert published_files(spec) == []


async def test_spec_block_timeout_cannot_extend_the_policys(
        client: Any, runtime: ActivityRuntime, task_queue: str, tmp_path: Path,
        make_spec: Callable[..., JobSpec]) -> None:
    """The spec asks for 10 minutes; the policy allows 2s: the policy's bound wins."""
    policy = _policy_file(tmp_path, "2s")
    spec = make_spec(topics=TOPICS, policy=str(policy), block_timeout="10m")
    async with running_worker(client, runtime, task_queue):
        await start_job(client, spec, task_queue)
        view = await _ended(client, spec.job_id)
    assert view.execution == "FAILED"
    assert view.summary.startswith("failed: required_evidence_missing")


async def test_refreshing_a_source_keeps_the_notes_taken_from_it(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    """Blocked for an uncovered topic, a human asks for a source the notes cite to be
    read again: research goes on over it, and every verified note stays."""
    from tests.workflows.jobkit import loop_notes

    spec = make_spec(topics=TOPICS)
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        first = await wait_status(handle, {"blocked"})
        notes = [r["item_id"] for r in await loop_notes(runtime, spec)]
        assert notes and first.research is not None
        await resolve(client, spec.job_id, ResolveInput(
            action="refresh_source", source_name="handbook"))
        for _ in range(100):  # research goes on, and the unchanged finish blocks again
            status = await handle.query(ResearchJobWorkflow.status)
            if status.research is not None and status.research.turn > first.research.turn \
                    and status.status == "blocked":
                break
            await asyncio.sleep(0.2)
        await handle.terminate("test over")
    after = [r["item_id"] for r in await loop_notes(runtime, spec)]
    assert after[:len(notes)] == notes  # every note kept, in order
    assert status.research is not None and status.research.turn > first.research.turn
    assert status.blocked_reason is not None and "quotas" in status.blocked_reason
