"""The Temporal wiring: a deterministic workflow bug fails the workflow (it is not retried
forever), the pydantic converter round-trips our models, and cancelling a job ends it
without publishing. Real dev server throughout.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import WorkflowFailureError
from temporalio.worker import Worker

from activities.runtime import ActivityRuntime
from client import jobs
from contracts.job_spec import JobSpec
from contracts.workflow_messages import PendingDraft
from tests.workflows.jobkit import published_files, running_worker, start_job, wait_status
from workflows.temporal_config import (
    DATA_CONVERTER,
    WORKFLOW_FAILURE_EXCEPTION_TYPES,
    WORKFLOW_RUNNER,
)

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


@workflow.defn(name="BuggyWorkflow", sandboxed=False)  # module does no I/O; kept simple
class BuggyWorkflow:
    """Raises the same KeyError on every replay: a deterministic bug."""

    @workflow.run
    async def run(self, draft: PendingDraft) -> str:
        return {"known": "x"}[draft.artifact_id]


async def test_deterministic_bug_fails_the_workflow_instead_of_retrying(client: Any) -> None:
    queue = f"buggy-{uuid.uuid4().hex[:8]}"
    draft = PendingDraft(revision=1, content_hash="sha256:x", summary="s", artifact_id="nope")
    async with Worker(client, task_queue=queue, workflows=[BuggyWorkflow],
                      workflow_runner=WORKFLOW_RUNNER,
                      workflow_failure_exception_types=list(WORKFLOW_FAILURE_EXCEPTION_TYPES)):
        with pytest.raises(WorkflowFailureError) as err:
            # without the failure types this would retry the workflow task forever
            await asyncio.wait_for(client.execute_workflow(
                BuggyWorkflow.run, draft, id=f"buggy-{uuid.uuid4()}", task_queue=queue), 30)
    assert "nope" in str(err.value.cause)


async def test_converter_round_trips_job_models(make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec()
    payloads = DATA_CONVERTER.payload_converter.to_payloads([spec])
    [back] = DATA_CONVERTER.payload_converter.from_payloads(payloads, [JobSpec])
    assert back == spec


async def test_cancel_ends_the_job_unpublished(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    """Temporal's own cancel (anyone with namespace access can send it) stops the job and
    can never publish; Pressroom's signed ``cancel`` is in tests/workflows/test_signed_review.py."""
    spec = make_spec()
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"awaiting_review"})
        await handle.cancel()
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        view = await jobs.view_job(client, spec.job_id)
    assert view.execution == "CANCELED"
    assert published_files(spec) == []


async def test_misconfigured_provider_stops_the_job_with_its_reason(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    """No paid API is called: without a key the OpenAI provider refuses before any request.
    The refusal is not retried (one attempt) and the research turn blocks the job with its
    reason — an operator can set the key and resolve — instead of failing it outright."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = make_spec(model={"provider": "openai", "name": "gpt-test"})
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        status = await wait_status(handle, {"blocked", "failed", "awaiting_review"}, timeout=60)
        history = await handle.fetch_history()
        await handle.terminate("test over")
    assert status.status == "blocked" and status.stage == "research"
    assert status.blocked_reason is not None
    assert status.blocked_reason.startswith("model_call_failed (")
    assert "OPENAI_API_KEY is not set" in status.blocked_reason
    attempts = [e.activity_task_started_event_attributes.attempt for e in history.events
                if e.HasField("activity_task_started_event_attributes")]
    assert max(attempts) == 1  # not retried: ProviderConfigError is non-retryable
    assert published_files(spec) == []
