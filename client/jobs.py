"""Client-side job operations: start, look at, review, resolve, cancel, list.

Runs outside any workflow (the CLI, the demo, tests, the benchmark). Each operation turns
Temporal's errors into the typed errors of ``client.errors`` so callers can print one
line. Starting is refused for an existing job id (the id is never reused), and a review is
sent as the ``review`` Update so the workflow's validator decides — a refused decision
comes back as ``ReviewRejected`` with the validator's reason and nothing recorded.
Reviews, resolutions and cancels are signed with the caller's Ed25519 key here
(contracts/signing.py); a refused resolution or cancel is ``CommandRefused``.
A job starts with its typed search attributes (workflows/visibility.py), and
``list_visible_jobs`` lists jobs by them from the visibility store: one list call per page,
no query to any job.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel, ConfigDict
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from client.errors import (
    CommandRefused,
    JobExists,
    JobNotFound,
    JobNotWaiting,
    ReviewRejected,
    SearchAttributesMissing,
)
from context import redact_secrets
from contracts.activity_messages import PathCheckInput, PathCheckResult
from contracts.errors import JobSpecError
from contracts.job_spec import JobSpec, recheck_job_spec
from contracts.mcp_servers import arguments_sha256
from contracts.signing import sign
from contracts.workflow_messages import (
    CancelInput,
    JobResult,
    JobState,
    JobStatus,
    PendingToolApproval,
    ResearchJobInput,
    ResolveInput,
    ReviewInput,
    ReviewResult,
    ToolApprovalInput,
    ToolRejectionInput,
)
from settings import DEFAULT_WORKER_GRACE_SECONDS
from workflows.path_check import CHECK_ID_PREFIX, CheckJobPathsWorkflow
from workflows.research_job import ResearchJobWorkflow
from workflows.temporal_config import WORKFLOW_TYPE
from workflows.visibility import (
    PRESSROOM_PROJECT,
    PRESSROOM_REASON,
    PRESSROOM_REVIEWERS,
    PRESSROOM_STAGE,
    PRESSROOM_STATUS,
    PRESSROOM_TENANT,
    PRESSROOM_TOKENS,
    PRESSROOM_TURN,
    SEARCH_ATTRIBUTE_TYPES,
    create_command,
    job_search_attributes,
    jobs_query,
)

Decision = Literal["approve", "request_changes", "reject"]
QUERY_TIMEOUT = timedelta(seconds=10)


@dataclass
class JobView:
    """What is known about a job: live status while running, result or failure after."""

    job_id: str
    execution: str  # RUNNING, COMPLETED, FAILED, CANCELED, TERMINATED, TIMED_OUT, ...
    live: JobStatus | None = None
    result: JobResult | None = None
    failure: str | None = None
    started: datetime | None = None
    no_worker: str | None = None  # the task queue nobody polls, when the query could not run
    #: the job's first run id as the server describes it: every signed command names it,
    #: so one signed for an earlier job with the same id is refused (SECURITY.md §1)
    first_run_id: str | None = None

    @property
    def summary(self) -> str:
        """``awaiting_review``, ``blocked: <reason>``, ``needs_operator: <reason>``,
        ``published``, ``failed: <reason>``…"""
        if self.no_worker is not None:
            return (f"running, but no worker answers on task queue {self.no_worker!r} — start "
                    "`pressroom worker` (or `pressroom dev`); its live status and reviews "
                    "need one")
        if self.live is not None:
            if self.live.status == "blocked":
                return f"blocked: {self.live.blocked_reason}"
            if self.live.status == "needs_operator":  # the reason starts "needs_operator: "
                return self.live.blocked_reason or "needs_operator"
            return self.live.status
        if self.result is not None:
            return self.result.status
        if self.failure is not None:
            return self.failure if self.failure.startswith("failed:") \
                else f"failed: {self.failure}"
        return self.execution.lower()


async def start_job(client: Client, spec: JobSpec, *, task_queue: str) -> WorkflowHandle[Any, Any]:
    """Start ``spec`` as workflow id = job id; an id used before is refused.

    Every reviewer and operator must carry a public key by now (``pressroom run`` pins
    name-only ones from the registry: ``cli.reviewer_keys.pin_reviewers``); a job whose
    decisions no one could sign is refused here, before it starts. The spec is validated
    again first (``recheck_job_spec``), so a spec changed in code since it was parsed —
    a reviewer name the store refuses, a blank topic term — is a ``JobSpecError`` here,
    not a job that retries on a worker.

    The job starts with its search attributes (``workflows.visibility``); a namespace that
    lacks them is a ``SearchAttributesMissing`` naming them and the command that adds them.
    """
    spec = recheck_job_spec(spec)
    unpinned = spec.review.unpinned()
    if unpinned:
        raise JobSpecError(f"job spec {spec.job_id}: field 'review.reviewers': no public key "
                           f"for {unpinned} (pin them: cli.reviewer_keys.pin_reviewers)")
    try:
        return await client.start_workflow(
            ResearchJobWorkflow.run, ResearchJobInput(spec=spec), id=spec.job_id,
            task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            search_attributes=job_search_attributes(spec, JobState()),
            static_summary=static_summary(spec),
        )
    except WorkflowAlreadyStartedError:
        raise JobExists(f"job {spec.job_id!r} already exists; a job id is never reused — "
                        f"see `pressroom status {spec.job_id}` or pick a new job_id") from None
    except RPCError as exc:
        missing = [name for name in SEARCH_ATTRIBUTE_TYPES if name in exc.message]
        if exc.status != RPCStatusCode.INVALID_ARGUMENT or not missing:
            raise
        raise SearchAttributesMissing(
            f"job {spec.job_id!r} not started: namespace {client.namespace!r} has no search "
            f"attribute {', '.join(missing)} (Pressroom's job list needs them); start a worker "
            "on it, which registers them, or have an operator run: "
            f"{create_command(None, client.namespace)}") from None


#: the longest static summary (``static_summary``)
SUMMARY_CHARS = 160


def static_summary(spec: JobSpec) -> str:
    """The job's one-line static summary in the Web UI and ``temporal workflow describe``:
    its question on one line, secrets the built-in detector finds redacted
    (``context.admission.security.redact_secrets``), cut to ``SUMMARY_CHARS``. Stored in the
    start event's metadata, not as a workflow command."""
    line = " ".join(redact_secrets(spec.question).split())
    return line if len(line) <= SUMMARY_CHARS else line[:SUMMARY_CHARS - 1] + "…"


def _failure_text(exc: BaseException) -> str:
    cause: BaseException | None = exc
    while cause is not None and getattr(cause, "cause", None) is not None:
        cause = cause.cause  # type: ignore[attr-defined]
    return str(getattr(cause, "message", None) or cause or exc)


async def view_job(client: Client, job_id: str, *,
                   worker_grace: float = DEFAULT_WORKER_GRACE_SECONDS) -> JobView:
    """What is known about ``job_id``; a running job's live status needs a worker, which is
    awaited up to ``worker_grace`` seconds (``Settings.worker_grace_seconds``)."""
    handle = client.get_workflow_handle(job_id, result_type=JobResult)
    try:
        desc = await handle.describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise JobNotFound(f"no job {job_id!r} on this Temporal namespace") from None
        raise
    status = desc.status or WorkflowExecutionStatus.RUNNING
    view = JobView(job_id=job_id, execution=status.name, started=desc.start_time,
                   first_run_id=desc.raw_description.workflow_execution_info.first_run_id
                   or None)
    if status == WorkflowExecutionStatus.RUNNING:
        # A query (and a review Update) waits for a worker; without one it would hang the
        # CLI instead of saying why. A worker re-polls a few seconds after a server
        # restart, hence the grace period; poller lists lag a crashed worker by minutes,
        # hence also the deadline on the query itself.
        if not await _await_pollers(client, desc.task_queue, worker_grace):
            view.no_worker = desc.task_queue
            return view
        view.live = await _query_status(client, handle, desc.task_queue)
        if view.live is None:
            view.no_worker = desc.task_queue
    elif status == WorkflowExecutionStatus.COMPLETED:
        view.result = await handle.result()
    elif status == WorkflowExecutionStatus.CONTINUED_AS_NEW:  # describe raced the new run
        return await view_job(client, job_id, worker_grace=worker_grace)
    else:
        try:
            await handle.result()
        except WorkflowFailureError as exc:
            view.failure = _failure_text(exc)
        except Exception as exc:  # canceled / terminated / timed out carry their own reason
            view.failure = f"{status.name.lower()}: {_failure_text(exc)}"
    return view


#: how many times the status query is sent while a worker polls the job's task queue
QUERY_TRIES = 2


async def _query_status(client: Client, handle: WorkflowHandle[Any, Any],
                        task_queue: str) -> JobStatus | None:
    """The job's live status, or ``None`` when no worker answered.

    A query goes first to the sticky queue of the worker that ran the job's last workflow
    task; if that worker was just killed, the server waits for it (the sticky
    schedule-to-start timeout, as long as ``QUERY_TIMEOUT``) before it drops the
    stickiness, so the first query can time out while another worker polls the job's task
    queue. The next one then goes to that queue and is answered: a query is tried again
    while the poller list still shows a worker, and only then is it "no worker"."""
    for _ in range(QUERY_TRIES):
        try:
            live: JobStatus = await handle.query(ResearchJobWorkflow.status,
                                                 rpc_timeout=QUERY_TIMEOUT)
            return live
        except RPCError as exc:
            if exc.status not in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
                raise
        if not await has_pollers(client, task_queue):
            break
    return None


async def job_spec_of(client: Client, job_id: str) -> JobSpec:
    """The spec a job was started with, read from its first history event (any state)."""
    handle = client.get_workflow_handle(job_id)
    try:
        async for event in handle.fetch_history_events():
            attrs = event.workflow_execution_started_event_attributes
            [inp] = await client.data_converter.decode(attrs.input.payloads, [ResearchJobInput])
            spec: JobSpec = inp.spec
            return spec
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise JobNotFound(f"no job {job_id!r} on this Temporal namespace") from None
        raise
    raise JobNotFound(f"job {job_id!r} has no history")


async def _waiting(client: Client, job_id: str, want: str, worker_grace: float,
                   *also: str) -> JobView:
    view = await view_job(client, job_id, worker_grace=worker_grace)
    if view.live is None or view.live.status not in (want, *also):
        raise JobNotWaiting(f"job {job_id!r} is {view.summary}, not {' or '.join((want, *also))}")
    return view


async def review_job(client: Client, job_id: str, decision: Decision, *, reviewer: str,
                     key: Ed25519PrivateKey, draft_revision: int, draft_hash: str,
                     destination: str, comments: list[str] | None = None,
                     worker_grace: float = DEFAULT_WORKER_GRACE_SECONDS) -> ReviewResult:
    """Sign and send a decision on the draft the reviewer saw (revision, hash, destination).

    Nothing is filled in from the server's pending draft: a decision names what its
    reviewer judged, or the workflow refuses it as stale.
    """
    view = await _waiting(client, job_id, "awaiting_review", worker_grace)
    unsigned = ReviewInput(decision=decision, reviewer=reviewer, comments=comments or [],
                           draft_revision=draft_revision, draft_hash=draft_hash,
                           destination=destination, first_run_id=view.first_run_id)
    decision_input = unsigned.model_copy(update={"signature": sign(
        key, "review", job_id, unsigned.signed_body(), signer=reviewer)})
    handle = client.get_workflow_handle(job_id)
    try:
        return await handle.execute_update(ResearchJobWorkflow.review, decision_input)
    except WorkflowUpdateFailedError as exc:
        text = _failure_text(exc)  # the validator's own words may already say so
        raise ReviewRejected(text if text.startswith("review refused")
                             else f"review refused: {text}") from None


async def resolve_job(client: Client, job_id: str, resolution: ResolveInput, *,
                      signer: str, key: Ed25519PrivateKey,
                      worker_grace: float = DEFAULT_WORKER_GRACE_SECONDS) -> None:
    """Sign ``resolution`` as ``signer`` (a listed reviewer or operator) and send it: a
    blocked job's resolution, or ``retry``/``abandon`` for one that needs an operator.

    It names the job's first run and the block it resolves — ``resolution.block``, or the
    one the live status shows now — so it can resolve nothing else, later (SECURITY.md §1)."""
    view = await _waiting(client, job_id, "blocked", worker_grace, "needs_operator")
    assert view.live is not None
    resolution = resolution.model_copy(update={
        "first_run_id": view.first_run_id, "block": resolution.block or view.live.block})
    signed = resolution.model_copy(update={"signature": sign(
        key, "resolve", job_id, resolution.signed_body(), signer=signer)})
    await _signed_update(client, job_id, ResearchJobWorkflow.resolve_blocked, signed)


async def cancel_job(client: Client, job_id: str, *, signer: str, key: Ed25519PrivateKey,
                     reason: str = "",
                     worker_grace: float = DEFAULT_WORKER_GRACE_SECONDS) -> None:
    """Ask the job to stop, signed as ``signer``; it ends ``cancelled``, nothing published."""
    view = await view_job(client, job_id, worker_grace=worker_grace)
    if view.execution != "RUNNING":
        raise JobNotWaiting(f"job {job_id!r} already ended ({view.summary})")
    request = CancelInput(reason=reason, first_run_id=view.first_run_id)
    signed = request.model_copy(update={"signature": sign(
        key, "cancel", job_id, request.signed_body(), signer=signer)})
    await _signed_update(client, job_id, ResearchJobWorkflow.cancel, signed)


async def pending_call(client: Client, job_id: str, call_id: str, *,
                       worker_grace: float = DEFAULT_WORKER_GRACE_SECONDS,
                       ) -> tuple[JobView, PendingToolApproval]:
    """The job's view and its call ``call_id`` waiting for a signed approval (an
    ``effect: write`` MCP call, docs/mcp.md); ``JobNotWaiting`` in one line when that call
    is not waiting — naming the calls that are, if any."""
    view = await view_job(client, job_id, worker_grace=worker_grace)
    waiting = view.live.pending_tool_approvals if view.live is not None else []
    found = next((p for p in waiting if p.call_id == call_id), None)
    if found is None:
        others = ", ".join(f"{p.call_id} ({p.tool_name})" for p in waiting) or "none"
        raise JobNotWaiting(f"call {call_id[:200]!r} of job {job_id!r} is not waiting for "
                            f"approval (job {view.summary}; calls waiting: {others}); "
                            "nothing signed or sent")
    return view, found


def _shown_digest(job_id: str, pending: PendingToolApproval) -> str:
    """The sha256 of the arguments ``pending`` shows, computed here; refused when it is not
    the one the job states (what is signed is what was shown)."""
    digest = arguments_sha256(pending.arguments)
    if digest != pending.arguments_sha256:
        raise JobNotWaiting(f"call {pending.call_id!r} of job {job_id!r}: its arguments do "
                            f"not hash to the sha256 the job states ({pending.arguments_sha256}"
                            "); nothing signed or sent")
    return digest


async def approve_tool_call(client: Client, job_id: str, pending: PendingToolApproval, *,
                            first_run_id: str | None, signer: str,
                            key: Ed25519PrivateKey) -> ToolApprovalInput:
    """Sign, as ``signer``, an approval of exactly the call ``pending`` shows — its call
    id, server, tool and the sha256 of the arguments shown — and send it
    (``approve_tool_call``)."""
    unsigned = ToolApprovalInput(call_id=pending.call_id, server=pending.server,
                                 tool=pending.tool,
                                 arguments_sha256=_shown_digest(job_id, pending),
                                 first_run_id=first_run_id)
    signed = unsigned.model_copy(update={"signature": sign(
        key, "tool_approval", job_id, unsigned.signed_body(), signer=signer)})
    await _signed_update(client, job_id, ResearchJobWorkflow.approve_tool_call, signed)
    return signed


async def reject_tool_call(client: Client, job_id: str, pending: PendingToolApproval, *,
                           first_run_id: str | None, signer: str, key: Ed25519PrivateKey,
                           reason: str = "") -> ToolRejectionInput:
    """Sign, as ``signer``, a refusal of exactly the call ``pending`` shows and send it
    (``reject_tool_call``): the call is refused at once and never runs."""
    unsigned = ToolRejectionInput(call_id=pending.call_id, server=pending.server,
                                  tool=pending.tool,
                                  arguments_sha256=_shown_digest(job_id, pending),
                                  reason=reason, first_run_id=first_run_id)
    signed = unsigned.model_copy(update={"signature": sign(
        key, "tool_rejection", job_id, unsigned.signed_body(), signer=signer)})
    await _signed_update(client, job_id, ResearchJobWorkflow.reject_tool_call, signed)
    return signed


async def _signed_update(client: Client, job_id: str, update: Any, signed: Any) -> None:
    """Send a signed command Update; the validator's refusal becomes ``CommandRefused``."""
    try:
        await client.get_workflow_handle(job_id).execute_update(update, signed)
    except WorkflowUpdateFailedError as exc:
        raise CommandRefused(_failure_text(exc)) from None


async def _await_pollers(client: Client, task_queue: str, worker_grace: float) -> bool:
    deadline = time.monotonic() + worker_grace
    while not await has_pollers(client, task_queue):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.25)
    return True


async def has_pollers(client: Client, task_queue: str) -> bool:
    """Whether any worker polled ``task_queue`` for workflow tasks recently."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    resp = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
        namespace=client.namespace, task_queue=TaskQueue(name=task_queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW))
    return len(resp.pollers) > 0


#: how long ``pressroom run`` waits for a worker's answer to its path check
PATH_CHECK_SECONDS = 10.0


async def check_paths_on_worker(client: Client, spec: JobSpec, *, task_queue: str,
                                timeout: float = PATH_CHECK_SECONDS) -> PathCheckResult | None:
    """A worker's verdict on ``spec``'s paths (``workflows.path_check``), or ``None`` when
    no worker answers within ``timeout`` seconds — nobody polls ``task_queue``, or the
    workers there predate the check. ``None`` invents nothing: the job's paths are then
    checked where a worker first stores its spec (``store_job_spec``)."""
    if not await has_pollers(client, task_queue):
        return None
    handle = await client.start_workflow(
        CheckJobPathsWorkflow.run, PathCheckInput(spec=spec),
        id=f"{CHECK_ID_PREFIX}{uuid.uuid4().hex}", task_queue=task_queue,
        # the server ends a check nobody answered; a worker that comes later never runs it
        execution_timeout=timedelta(seconds=timeout + 5))
    try:
        return await asyncio.wait_for(handle.result(), timeout)
    except (TimeoutError, WorkflowFailureError):
        with contextlib.suppress(RPCError):
            await handle.terminate("pressroom run stopped waiting for the path check")
        return None


class VisibleJob(BaseModel):
    """One job as the visibility store lists it (``list_visible_jobs``): its search
    attributes (workflows/visibility.py) and its execution's start and close times. A field
    is ``None`` (or empty) for a job started before the attributes existed.

    ``status`` is the workflow's own last status; a job stopped from outside Pressroom
    (``temporal workflow terminate``) keeps the one it had, so ``execution`` (Temporal's:
    ``RUNNING``, ``COMPLETED``, ``FAILED``, ``TERMINATED``, …) says whether it still runs."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    execution: str = "RUNNING"
    stage: str | None = None
    status: str | None = None
    tenant: str | None = None
    project: str | None = None
    reviewers: list[str] = []
    turn: int | None = None
    tokens: int | None = None
    #: a ``blocked`` or ``needs_operator`` job's reason code (``workflows.visibility.
    #: reason_code``: e.g. ``budget_exhausted``, ``publish:PublishError``, ``other``);
    #: ``None`` in every other status and for a job started before the attribute existed
    reason: str | None = None
    started_at: datetime | None = None
    closed_at: datetime | None = None


async def list_visible_jobs(client: Client, *, reviewer: str | None, status: str | None = None,
                            tenant: str | None = None, limit: int = 100) -> list[VisibleJob]:
    """Up to ``limit`` jobs from the visibility store (in its order: running ones first,
    newest first, then closed ones by close time), those listing
    ``reviewer`` (any, when ``None``), in ``status`` and of ``tenant`` when given
    (``workflows.visibility.jobs_query``). Each job is one row, its latest run's: the runs
    it continued as new from are left out, so ``status`` is the job's current one. One
    ``ListWorkflowExecutions`` call per page of
    ``limit``; no job is described or queried. Visibility is eventually consistent: a
    change shows here shortly after it happened. A value a query cannot carry (a quote) is
    a ``ValueError``."""
    query = jobs_query(reviewer=reviewer, status=status, tenant=tenant,
                       workflow_type=WORKFLOW_TYPE)
    jobs: list[VisibleJob] = []
    async for wf in client.list_workflows(query, limit=limit, page_size=max(1, min(limit, 1000))):
        attrs = wf.typed_search_attributes
        jobs.append(VisibleJob(
            job_id=wf.id, execution=wf.status.name if wf.status else "RUNNING",
            stage=attrs.get(PRESSROOM_STAGE), status=attrs.get(PRESSROOM_STATUS),
            tenant=attrs.get(PRESSROOM_TENANT), project=attrs.get(PRESSROOM_PROJECT),
            reviewers=list(attrs.get(PRESSROOM_REVIEWERS) or []),
            turn=attrs.get(PRESSROOM_TURN), tokens=attrs.get(PRESSROOM_TOKENS),
            reason=attrs.get(PRESSROOM_REASON) or None,
            started_at=wf.start_time, closed_at=wf.close_time))
    return jobs
