"""An activity error never carries a secret into workflow history (SECURITY.md, promise 4).

A real dev server and a real worker with Pressroom's ``RedactingInterceptor``: a test
activity fails with a message quoting a database URL with its password and an AWS key (as a
driver's or git's error would); the workflow's failure, read back from history, names the
kind of secret and the original error type, never the value, and the retry decision by
type name is unchanged.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporalio import activity, workflow
from temporalio.client import WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import Worker

from activities.error_redaction import RedactingInterceptor, redacted_error
from workflows.temporal_config import WORKFLOW_RUNNER

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

PASSWORD = "hunter2-Kq9vXw"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


class DriverError(Exception):
    """Stands in for a library's error type whose message quotes its input."""


@activity.defn(name="leaky")
async def leaky(kind: str) -> str:
    if kind == "app":
        raise ApplicationError(f"cannot use key {AWS_KEY}", type="PolicyError",
                               non_retryable=True)
    if kind == "cause":  # a clean message over a driver error quoting the URL
        try:
            raise DriverError(f"connect to postgresql://app:{PASSWORD}@db.internal/x failed")
        except DriverError as exc:
            raise ApplicationError("store write failed", type="StoreUnavailable",
                                   non_retryable=True) from exc
    raise DriverError(f"connect to postgresql://app:{PASSWORD}@db.internal/pressroom failed")


@activity.defn(name="clean")
async def clean(kind: str) -> str:
    raise DriverError("nothing secret here")


@workflow.defn(name="LeakyWorkflow", sandboxed=False)  # no I/O; kept simple
class LeakyWorkflow:
    @workflow.run
    async def run(self, activity_name: str, kind: str) -> str:
        result: str = await workflow.execute_activity(
            activity_name, kind, start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(maximum_attempts=3, initial_interval=timedelta(
                milliseconds=50), non_retryable_error_types=["DriverError"]))
        return result


async def _fail(client: Any, queue: str, name: str, kind: str) -> tuple[str, Any, int]:
    """The failed run's history as JSON, the activity's failure, and its last attempt."""
    workflow_id = f"leaky-{uuid.uuid4().hex[:8]}"
    with pytest.raises(WorkflowFailureError) as err:
        await client.execute_workflow(LeakyWorkflow.run, args=[name, kind], id=workflow_id,
                                      task_queue=queue)
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    attempts = [e.activity_task_started_event_attributes.attempt for e in history.events
                if e.HasField("activity_task_started_event_attributes")]
    activity_failure = err.value.cause
    assert isinstance(activity_failure, ActivityError)
    return history.to_json(), activity_failure.cause, max(attempts)


async def test_activity_errors_reach_history_redacted_with_their_type(client: Any) -> None:
    queue = f"leaky-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=queue, workflows=[LeakyWorkflow],
                      activities=[leaky, clean], workflow_runner=WORKFLOW_RUNNER,
                      interceptors=[RedactingInterceptor()]):
        text, failure, attempts = await _fail(client, queue, "leaky", "driver")
        assert PASSWORD not in text and "[REDACTED:" in text
        # still the library's type, so the policy's "DriverError" stays non-retryable
        assert failure.type == "DriverError" and attempts == 1
        text, failure, attempts = await _fail(client, queue, "leaky", "app")
        assert AWS_KEY not in text and failure.type == "PolicyError" and failure.non_retryable
        assert attempts == 1
        # a secret one link down the cause chain is redacted too; the chain keeps its types
        text, failure, attempts = await _fail(client, queue, "leaky", "cause")
        assert PASSWORD not in text and "[REDACTED:" in text and attempts == 1
        assert failure.type == "StoreUnavailable" and failure.non_retryable
        assert failure.message == "store write failed"
        assert failure.cause.type == "DriverError" and "[REDACTED:" in failure.cause.message
        text, failure, attempts = await _fail(client, queue, "clean", "driver")
        assert "nothing secret here" in text  # untouched when there is nothing to redact
        assert failure.type == "DriverError" and attempts == 1


async def test_redacted_error_keeps_type_and_retry_flags() -> None:
    assert redacted_error(ValueError("plain")) is None
    app = redacted_error(ApplicationError(f"token {AWS_KEY}", type="X", non_retryable=True))
    assert app is not None and AWS_KEY not in app.message
    assert app.type == "X" and app.non_retryable


async def test_the_whole_cause_chain_is_scanned_and_rebuilt_with_its_types() -> None:
    def chained() -> BaseException:
        try:
            try:
                raise DriverError(f"token {AWS_KEY}")
            except DriverError as inner:
                raise OSError("clean middle") from inner
        except OSError as middle:  # implicit context under an ApplicationError is sent too
            try:
                raise ApplicationError("clean top", type="Top", non_retryable=True)
            except ApplicationError as top:
                assert top.__context__ is middle
                return top

    rebuilt = redacted_error(chained())
    assert rebuilt is not None and rebuilt.type == "Top" and rebuilt.non_retryable
    middle = rebuilt.__cause__
    assert isinstance(middle, ApplicationError) and middle.type == "OSError"
    assert middle.message == "clean middle"
    bottom = middle.__cause__
    assert isinstance(bottom, ApplicationError) and bottom.type == "DriverError"
    assert AWS_KEY not in bottom.message and "[REDACTED:" in bottom.message
    assert bottom.__cause__ is None
    # a plain error's implicit context is not sent by Temporal: not scanned, not kept
    try:
        try:
            raise DriverError(f"token {AWS_KEY}")
        except DriverError:
            raise ValueError("clean") from None
    except ValueError as suppressed:
        assert redacted_error(suppressed) is None
    # a cycle or a very long chain ends
    loop = ValueError(f"token {AWS_KEY}")
    loop.__cause__ = ValueError("b")
    loop.__cause__.__cause__ = loop
    assert redacted_error(loop) is not None
    from activities.error_redaction import MAX_CHAIN

    def chain_of(length: int) -> BaseException:
        top: BaseException = ValueError(f"token {AWS_KEY}")
        for _ in range(length - 1):
            link = ValueError("clean")
            link.__cause__ = top
            top = link
        return top

    def types(error: BaseException | None) -> list[str]:
        found = []
        while error is not None:
            assert isinstance(error, ApplicationError)
            found.append(error.type or "")
            error = error.__cause__
        return found

    exact = types(redacted_error(chain_of(MAX_CHAIN)))
    assert exact == ["ValueError"] * MAX_CHAIN  # all kept, no note
    longer = redacted_error(chain_of(MAX_CHAIN + 5))  # the secret is in a link left out:
    assert longer is not None  # rebuilt anyway, or Temporal would send the unscanned tail
    assert types(longer) == ["ValueError"] * MAX_CHAIN + ["TruncatedCause"]
    secret_on_top = chain_of(MAX_CHAIN + 5)
    secret_on_top.args = (f"token {AWS_KEY}",)
    assert types(redacted_error(secret_on_top)) == ["ValueError"] * MAX_CHAIN + [
        "TruncatedCause"]
