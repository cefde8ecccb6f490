"""Bounded, classified retries and the ``needs_operator`` state, on a real worker.

Every activity gets a bound (workflows/temporal_config.py ``ACTIVITY_LIMITS``); an error no
retry can fix gets exactly one attempt wherever it was raised (contracts/failures.py); and
when an activity fails for good the job does not fail silently or hang: it shows
``needs_operator: <reason>`` until a signed ``retry`` runs the step again or a signed
``abandon`` ends it ``failed``, nothing published. Failures are injected with the test hook
``PRESSROOM_TEST_FAIL_AT=<activity>:<kind>`` (activities/fail_hook.py), except the publish
into a folder nobody may write, which is real.

Everything runs for real: the dev server, the worker with Pressroom's activities and its
interceptors, the SQLite store, document sources and the offline providers. Waiting is on
observable conditions (status, history, pending activities) with deadlines.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError, WorkflowHandle

from activities.fail_hook import FAIL_ENV, PERMANENT_KINDS
from activities.registry import ACTIVITY_NAMES
from activities.runtime import ActivityRuntime
from client import jobs
from client.errors import CommandRefused, ReviewRejected
from contracts.job_spec import JobSpec
from contracts.workflow_messages import JobResult, JobStatus, ResolveInput
from tests.activities.test_error_classes import EXPECTED_TYPE
from tests.waiting import wait_for
from tests.workflows.jobkit import (
    REPO_ROOT,
    published_files,
    resolve,
    review,
    reviewer_key,
    running_worker,
    start_job,
    wait_status,
)
from workflows.research_job import ResearchJobWorkflow
from workflows.temporal_config import ACTIVITY_LIMITS, RETIRED_ACTIVITIES

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

#: reviewers and an operator for every job here (the operator signs retry and abandon)
REVIEW = {"reviewers": ["alice", "bob"], "operators": ["ops"], "timeout": "10m",
          "max_revisions": 2}
RETRY = ResolveInput(action="retry", note="fixed")


#: the history events that end an activity run, by the outcome they record
_ENDED = {f"activity_task_{outcome}_event_attributes": outcome
          for outcome in ("completed", "failed", "timed_out")}


async def activity_runs(handle: WorkflowHandle[Any, Any], activity: str) -> list[
        tuple[str, int]]:
    """Each finished run of ``activity`` in the job's history: (outcome, attempts)."""
    history = await handle.fetch_history()
    kinds: dict[int, str] = {}
    attempts: dict[int, int] = {}
    runs: list[tuple[str, int]] = []
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            kinds[event.event_id] = \
                event.activity_task_scheduled_event_attributes.activity_type.name
        elif event.HasField("activity_task_started_event_attributes"):
            started = event.activity_task_started_event_attributes
            attempts[started.scheduled_event_id] = started.attempt
        field = event.WhichOneof("attributes") or ""
        outcome = _ENDED.get(field)
        if outcome is not None:
            scheduled = getattr(event, field).scheduled_event_id
            if kinds.get(scheduled) == activity:
                runs.append((outcome, attempts.get(scheduled, 0)))
    return runs


async def failed_runs(handle: WorkflowHandle[Any, Any], activity: str) -> list[int]:
    return [attempt for outcome, attempt in await activity_runs(handle, activity)
            if outcome != "completed"]


async def wait_parked(handle: WorkflowHandle[Any, Any], activity: str, *, more_than: int,
                      status: str, timeout: float = 60.0) -> tuple[JobStatus, list[int]]:
    """Wait until ``activity`` failed more than ``more_than`` times, the job shows
    ``status`` and no activity is in flight (every failed step waits for an operator)."""
    async def parked() -> tuple[JobStatus, list[int]] | None:
        failed = await failed_runs(handle, activity)
        current = await handle.query(ResearchJobWorkflow.status)
        if len(failed) <= more_than or current.status != status:
            return None
        if (await handle.describe()).raw_description.pending_activities:
            return None
        return current, failed

    return await wait_for(parked, timeout, f"{activity} failed into {status}")


@contextlib.contextmanager
def failing(monkeypatch: pytest.MonkeyPatch, activity: str, kind: str) -> Iterator[None]:
    monkeypatch.setenv(FAIL_ENV, f"{activity}:{kind}")
    try:
        yield
    finally:
        monkeypatch.delenv(FAIL_ENV, raising=False)


async def test_every_activity_has_a_bound() -> None:
    assert set(ACTIVITY_LIMITS) == set(ACTIVITY_NAMES) | RETIRED_ACTIVITIES
    for name, limit in ACTIVITY_LIMITS.items():
        assert limit.max_attempts is None or 1 <= limit.max_attempts <= 50, name
        # a model call takes the spec's model.max_attempts (1..50) and an hour at most
        assert limit.max_attempts is not None or limit.schedule_to_close is not None, name
        assert limit.reason and limit.on_exhausted, name


def limits_rows() -> list[str]:
    """``ACTIVITY_LIMITS`` as the rows of docs/architecture.md's table."""
    def duration(value: Any) -> str:
        if value is None:
            return "—"
        seconds = int(value.total_seconds())
        return f"{seconds // 3600} h" if seconds % 3600 == 0 else f"{seconds // 60} min"

    return [f"| `{name}` | "
            f"{limit.max_attempts or '`model.max_attempts` (default 5)'} | "
            f"{duration(limit.schedule_to_close)} | {limit.on_exhausted} | {limit.reason} |"
            for name, limit in ACTIVITY_LIMITS.items()]


async def test_the_docs_show_the_limits_table() -> None:
    text = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    header = "| Activity | Max attempts | Schedule-to-close | When it fails for good | Why |"
    rows = text.split(header, 1)[1].split("\n\n", 1)[0].strip().splitlines()[1:]
    assert rows == limits_rows()


#: the activities a job reaches in the default (agent) research mode, and what a job that
#: fails in them shows (``refresh_web_page`` runs only when ``resolve`` refreshes a live web
#: page: tests/workflows/test_live_web_page.py parks a job on its permanent error;
#: ``fork_state`` runs only as a forked job's first step: tests/workflows/test_fork.py)
MATRIX = [name for name in ACTIVITY_NAMES
          if name not in ("record_review", "refresh_web_page", "fork_state")]


@pytest.mark.parametrize("activity", MATRIX)
async def test_each_permanent_error_in_each_activity_gets_one_attempt_then_an_operator(
        activity: str, client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kind of permanent error the hook raises (validation, a pydantic-wrapped
    ``InvalidArtifact``, integrity, scope, a refused path, permission, a directory in the
    way, a read-only or full disk, an encoding error, a wrapped ``PermissionError``, a
    rejected model request) fails the activity after exactly one attempt, and the job
    waits for an operator naming the activity and the error; a signed ``retry`` after the
    cause is gone (the hook removed) carries the job on to publish, once. The model call
    (``decide``) blocks as ``model_call_failed`` instead (its own resolutions apply)."""
    spec = make_spec(review=REVIEW)
    want = "blocked" if activity == "decide" else "needs_operator"
    async with running_worker(client, runtime, task_queue):
        monkeypatch.setenv(FAIL_ENV, f"{activity}:{PERMANENT_KINDS[0]}")
        handle = await start_job(client, spec, task_queue)
        if activity == "publish":
            await wait_status(handle, {"awaiting_review"})
            await review(client, spec.job_id, "approve", reviewer="alice")
        seen = 0
        for index, kind in enumerate(PERMANENT_KINDS):
            monkeypatch.setenv(FAIL_ENV, f"{activity}:{kind}")
            if index:
                await resolve(client, spec.job_id, RETRY, signer="ops")
            status, failed = await wait_parked(handle, activity, more_than=seen, status=want)
            assert failed and all(attempt == 1 for attempt in failed), (kind, failed)
            reason = status.blocked_reason or ""
            if activity == "decide":
                assert reason.startswith("model_call_failed ("), reason
            else:
                assert reason.startswith(f"needs_operator: {activity} failed (a permanent "
                                         f"error): {EXPECTED_TYPE[kind]}: "), (kind, reason)
            seen = len(failed)
        assert seen >= len(PERMANENT_KINDS)
        monkeypatch.delenv(FAIL_ENV)
        # every failed step waits (none in flight): one signed retry runs them all again
        await resolve(client, spec.job_id, RETRY, signer="ops")
        if activity != "publish":
            await wait_status(handle, {"awaiting_review"})
            await review(client, spec.job_id, "approve", reviewer="alice")
        result = await handle.result()
    assert result.status == "published"
    assert [p.name for p in published_files(spec)] == [f"{spec.job_id}.md"]
    assert [outcome for outcome, _ in await activity_runs(handle, activity)][-1] == "completed"


async def test_a_retryable_error_is_retried_up_to_its_bound_then_needs_an_operator(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    """An overloaded model (HTTP 503, retryable) is tried ``model.max_attempts`` times —
    each attempt may be billed — then the job needs an operator; a retry once it answers
    drafts and the job goes on."""
    spec = make_spec(review=REVIEW, model={"max_attempts": 3})
    async with running_worker(client, runtime, task_queue):
        with failing(monkeypatch, "draft", "ProviderBusy"):
            handle = await start_job(client, spec, task_queue)
            status, failed = await wait_parked(handle, "draft", more_than=0,
                                               status="needs_operator")
        assert failed == [3]
        assert status.blocked_reason == (
            "needs_operator: draft failed (gave up after 3 attempts): "
            "ProviderCallError: HTTP 503: overloaded")
        view = await jobs.view_job(client, spec.job_id)
        assert view.summary == status.blocked_reason
        await resolve(client, spec.job_id, RETRY, signer="ops")
        await wait_status(handle, {"awaiting_review"})
        await review(client, spec.job_id, "approve", reviewer="alice")
        result = await handle.result()
    assert result.status == "published"
    assert [outcome for outcome, _ in await activity_runs(handle, "draft")] == [
        "failed", "completed"]


@contextlib.contextmanager
def unwritable(folder: Path) -> Iterator[None]:
    """``folder`` nobody may create anything in — root included (an immutable folder)."""
    if os.geteuid() == 0:
        chattr = shutil.which("chattr")
        if chattr is None:
            pytest.skip("running as root without chattr: cannot make a folder unwritable")
        subprocess.run([chattr, "+i", str(folder)], check=True)
        try:
            yield
        finally:
            subprocess.run([chattr, "-i", str(folder)], check=True)
    else:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)


async def test_publish_into_an_unwritable_folder_waits_for_an_operator_then_publishes_once(
        client: Any, runtime: ActivityRuntime, task_queue: str, tmp_path: Path,
        make_spec: Callable[..., JobSpec]) -> None:
    """After approval, the destination refuses writes (EPERM/EACCES): one attempt, then
    ``needs_operator: publish failed … PermissionError``, not a retry every 30 s for
    ever. The operator fixes the folder and retries (signed): published exactly once."""
    destination = tmp_path / "published"
    destination.mkdir()
    spec = make_spec(review=REVIEW, destination=str(destination))
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"awaiting_review"})
        with unwritable(destination):
            await review(client, spec.job_id, "approve", reviewer="alice")
            status, failed = await wait_parked(handle, "publish", more_than=0,
                                               status="needs_operator")
            assert failed == [1]
            assert status.stage == "publish"
            reason = status.blocked_reason or ""
            assert reason.startswith("needs_operator: publish failed (a permanent error): "
                                     "PermissionError: "), reason
            assert published_files(spec) == []
            # only retry or abandon answer a step that needs an operator
            with pytest.raises(CommandRefused, match="resolve it with retry or abandon"):
                await resolve(client, spec.job_id,
                              ResolveInput(action="raise_budget", context_limit=64000),
                              signer="ops")
            # and only a listed reviewer or operator may answer
            with pytest.raises(CommandRefused):
                await resolve(client, spec.job_id, RETRY, signer="mallory")
        await resolve(client, spec.job_id, RETRY, signer="ops")
        result = await handle.result()
    assert result.status == "published" and result.receipt is not None
    assert [p.name for p in published_files(spec)] == [f"{spec.job_id}.md"]
    assert [outcome for outcome, _ in await activity_runs(handle, "publish")] == [
        "failed", "completed"]


async def test_abandon_ends_the_job_failed_and_publishes_nothing(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    spec = make_spec(review=REVIEW)
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"awaiting_review"})
        with failing(monkeypatch, "publish", "NoSpaceLeft"):
            await review(client, spec.job_id, "approve", reviewer="alice")
            await wait_parked(handle, "publish", more_than=0, status="needs_operator")
            await resolve(client, spec.job_id,
                          ResolveInput(action="abandon", note="disk replaced next week"),
                          signer="ops")
            with pytest.raises(WorkflowFailureError):
                await handle.result()
        view = await jobs.view_job(client, spec.job_id)
    assert view.execution == "FAILED"
    assert view.summary.startswith(
        "failed: abandoned by ops — disk replaced next week: needs_operator: publish failed "
        "(a permanent error): OSError: [Errno 28] No space left on device"), view.summary
    assert published_files(spec) == []


async def test_abandon_also_ends_a_blocked_job(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec(review=REVIEW, model={"context_limit": 5000})
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        status = await wait_status(handle, {"blocked"})
        await resolve(client, spec.job_id, ResolveInput(action="abandon"), signer="alice")
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        view = await jobs.view_job(client, spec.job_id)
    assert view.execution == "FAILED"
    assert view.summary == f"failed: abandoned by alice: {status.blocked_reason}"
    assert published_files(spec) == []


async def test_a_decision_that_cannot_be_recorded_never_wedges_the_review(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    """``record_review`` failing permanently — a reviewer named ``ops/alice``, whose name
    the store refuses as a principal (a pydantic ``ValidationError`` around the store's
    ``InvalidArtifact``; such a spec is refused at submit now, a job started before is
    not), and every other permanent kind — refuses that decision after one attempt; the
    review handler's busy flag does not outlive the failure, so the job still waits for a
    decision and another reviewer's is accepted."""
    spec = make_spec(review=REVIEW)
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"awaiting_review"})
        with failing(monkeypatch, "record_review", "ValidationError"):
            for reviewer in ("alice", "bob"):
                with pytest.raises(ReviewRejected, match=r"decision not recorded, the job still "
                                   r"waits for one: record_review failed \(a permanent "
                                   r"error\): ValidationError: .*path separator"):
                    await review(client, spec.job_id, "approve", reviewer=reviewer)
        for kind in PERMANENT_KINDS:
            with failing(monkeypatch, "record_review", kind), \
                    pytest.raises(ReviewRejected, match=f": {EXPECTED_TYPE[kind]}: "):
                await review(client, spec.job_id, "approve", reviewer="alice")
        assert await failed_runs(handle, "record_review") == [1] * (2 + len(PERMANENT_KINDS))
        assert (await handle.query(ResearchJobWorkflow.status)).status == "awaiting_review"
        await review(client, spec.job_id, "approve", reviewer="bob")
        result = await handle.result()
    assert result.status == "published"


async def test_the_review_timer_fires_after_a_decision_that_failed(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    spec = make_spec(review={**REVIEW, "timeout": "20s"})
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"awaiting_review"})
        with failing(monkeypatch, "record_review", "InvalidArtifact"):
            with pytest.raises(ReviewRejected, match="decision not recorded"):
                await review(client, spec.job_id, "approve", reviewer="alice")
            result = await asyncio.wait_for(handle.result(), 120)
    assert result.status == "expired"
    assert published_files(spec) == []


async def test_a_job_blocked_and_resolved_many_times_continues_as_new(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    """Continue-as-new is checked after each resolution, not only between stages: a step
    that blocks again and again rolls over into a fresh history while still blocked, and
    the job goes on from there."""
    spec = make_spec(review=REVIEW, model={"context_limit": 5000},
                     runtime={"heartbeat_timeout": "3s", "activity_timeout": "2m",
                              "continue_as_new_events": 50})
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        first = await wait_status(handle, {"blocked"})
        first_run = (await handle.describe()).run_id
        latest = client.get_workflow_handle(spec.job_id, result_type=JobResult)
        for _ in range(10):
            await resolve(client, spec.job_id, RETRY, signer="ops")
            status = await wait_status(latest, {"blocked"})
            if (await latest.describe()).run_id != first_run:
                break
        else:
            raise AssertionError("ten resolutions later the job still ran in its first run")
        assert status.stage == first.stage and status.blocked_reason == first.blocked_reason
        await resolve(client, spec.job_id,
                      ResolveInput(action="raise_budget", context_limit=32000), signer="ops")
        await wait_status(latest, {"awaiting_review"})
        await review(client, spec.job_id, "approve", reviewer="alice")
        result = await latest.result()
    assert result.status == "published"


async def test_a_signed_cancel_stops_a_job_that_needs_an_operator(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    spec = make_spec(review=REVIEW)
    async with running_worker(client, runtime, task_queue):
        with failing(monkeypatch, "write_plan", "ScopeDenied"):
            handle = await start_job(client, spec, task_queue)
            await wait_parked(handle, "write_plan", more_than=0, status="needs_operator")
            await jobs.cancel_job(client, spec.job_id, signer="ops", key=reviewer_key("ops"))
            result = await handle.result()
    assert result.status == "cancelled"



async def test_a_file_name_that_is_not_utf8_is_an_exclusion_not_a_failure(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec], docs: Path) -> None:
    """A Latin-1 file name in a source folder (surrogate-escaped by Python, then a
    ``UnicodeEncodeError`` when it is hashed or recorded) used to fail research on every
    retry, every 30 s; then it stopped the job for an operator. Now the folder listing
    records it as an exclusion (``caf\\xe9.md: name is not valid UTF-8``) and the job goes
    on to its draft without a single failed attempt (tests/hostile has the unit cases)."""
    bad = os.path.join(os.fsencode(docs), b"caf\xe9.md")
    with open(bad, "wb") as file:
        file.write(b"# Retries\n\nretry with backoff\n")
    spec = make_spec(review=REVIEW)
    activity = "run_tool"
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        status = await wait_status(handle, {"awaiting_review"})
        assert status.pending_draft is not None
        assert await failed_runs(handle, activity) == []
        await handle.terminate("enough: the job went on")
