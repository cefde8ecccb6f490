"""The review Update: its validator, the revise loop, reject and the review timer.

Everything runs for real: the dev server, the worker with Pressroom's activities, the
SQLite store, document sources and the offline extractive provider.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from activities.runtime import ActivityRuntime, principal_of
from client import jobs
from client.errors import JobExists, JobNotWaiting, ReviewRejected
from contracts.job_spec import JobSpec
from tests.workflows.jobkit import (
    published_files,
    review,
    running_worker,
    start_job,
    update_events,
    wait_status,
)

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


async def _review_revisions(runtime: ActivityRuntime, spec: JobSpec) -> int:
    store = await runtime.store()
    return len(await store.history("review_decision", f"{spec.job_id}.review",
                                   principal=principal_of(spec)))


async def test_validator_rejects_stale_foreign_and_self_decisions(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec()
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        st = await wait_status(handle, {"awaiting_review"})
        draft = st.pending_draft
        assert draft is not None
        bad: list[tuple[dict[str, Any], str]] = [
            ({"draft_hash": "sha256:" + "0" * 64}, "stale decision: draft hash"),
            ({"draft_revision": draft.revision + 1}, "stale decision: it names draft revision"),
            ({"destination": spec.destination + "-elsewhere"}, "wrong destination"),
            ({"reviewer": "mallory"}, "reviewer 'mallory' is not allowed"),
            ({"reviewer": spec.principal.principal_id}, "can never review its own draft"),
        ]
        for change, message in bad:
            kw: dict[str, Any] = {"reviewer": "alice", "draft_revision": draft.revision,
                                  "draft_hash": draft.content_hash,
                                  "destination": spec.destination, **change}
            with pytest.raises(ReviewRejected, match=message):
                await review(client, spec.job_id, "approve", **kw)
        with pytest.raises(ReviewRejected, match="needs at least one comment"):
            await review(client, spec.job_id, "request_changes", reviewer="alice")
        with pytest.raises(ReviewRejected, match="review comments too large"):
            await review(client, spec.job_id, "request_changes", reviewer="alice",
                                  comments=["x" * 20_001])
        # nothing recorded: no update in history, no review decision in the store, no article
        assert await update_events(handle) == 0
        assert await _review_revisions(runtime, spec) == 0
        assert published_files(spec) == []
        assert (await jobs.view_job(client, spec.job_id)).summary == "awaiting_review"
        # a job id is never started twice
        with pytest.raises(JobExists):
            await start_job(client, spec, task_queue)
        await review(client, spec.job_id, "reject", reviewer="bob")
        result = await handle.result()
    assert result.status == "rejected"
    assert published_files(spec) == []


async def test_request_changes_then_approve(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec()
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        first = (await wait_status(handle, {"awaiting_review"})).pending_draft
        assert first is not None
        comment = "Please say what happens to the resume offset after a crash."
        await review(client, spec.job_id, "request_changes", reviewer="alice",
                              comments=[comment])
        st = await wait_status(handle, {"awaiting_review"})
        second = st.pending_draft
        assert second is not None and second.revision == first.revision + 1
        assert st.revision_round == 1
        # the stale first draft can no longer be approved
        with pytest.raises(ReviewRejected, match="stale decision"):
            await review(client, spec.job_id, "approve", reviewer="bob",
                                  draft_revision=first.revision, draft_hash=first.content_hash)
        # the comments entered the revise step as the reviewer's data
        store = await runtime.store()
        revise = [m for m in st.manifest_ids
                  if (await store.get_manifest(m, principal=principal_of(spec)))["stage"]
                  == "revise"]
        assert len(revise) == 1
        manifest = await store.get_manifest(revise[0], principal=principal_of(spec))
        comments = [e for e in manifest["included"] if e["item_id"].startswith("review_comments:")]
        # reviewer data, never task text (docs/architecture.md#revise-loop)
        assert comments and comments[0]["zone"] == "data"
        assert comments[0]["trust"] == "project_editable"
        assert comment in manifest["serialized_request"]["canonical_json"]
        await review(client, spec.job_id, "approve", reviewer="bob")
        result = await handle.result()
    assert result.status == "published" and result.receipt is not None
    files = published_files(spec)
    assert [f.name for f in files] == [f"{spec.job_id}.md"]
    receipt_review = json.loads((await store.get("review_decision", f"{spec.job_id}.review",
                                                 principal=principal_of(spec)))[1])
    assert receipt_review["decision"] == "approve"
    assert receipt_review["draft"]["revision"] == second.revision
    assert result.receipt.review_decision_id == receipt_review["decision_id"]


async def test_revision_rounds_are_bounded(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec(review={"reviewers": ["alice"], "timeout": "10m", "max_revisions": 1})
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"awaiting_review"})
        await review(client, spec.job_id, "request_changes", reviewer="alice",
                              comments=["tighten it"])
        await wait_status(handle, {"awaiting_review"})
        with pytest.raises(ReviewRejected, match="revision rounds are used"):
            await review(client, spec.job_id, "request_changes", reviewer="alice",
                                  comments=["again"])
        await review(client, spec.job_id, "reject", reviewer="alice")
        assert (await handle.result()).status == "rejected"


async def test_review_timeout_expires_unpublished(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec(review={"reviewers": ["alice"], "timeout": "2s"})
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        result = await handle.result()
        assert result.status == "expired"
        assert result.reason and "no review within" in result.reason
        with pytest.raises(JobNotWaiting):
            await review(client, spec.job_id, "approve", reviewer="alice")
    assert published_files(spec) == []
    assert await _review_revisions(runtime, spec) == 0
    store = await runtime.store()
    checkpoint = await store.latest_checkpoint(spec.job_id, principal=principal_of(spec))
    assert checkpoint is not None and checkpoint["status"] == "expired"
