"""The bodies of the job commands of ``pressroom`` (client side; never workflow code).

``pressroom.py`` parses arguments and calls these with its ``Settings`` (Temporal address and
namespace, store URL, worker grace period; an ``address`` argument is the ``--address``
flag, which wins over the settings); they talk to Temporal through
``client.jobs`` and to the artifact store for what the workflow only references (the
draft text, manifests). Every expected failure is a ``JobError`` or a ``StoreError`` that
the CLI prints as one line.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from temporalio.client import Client
from temporalio.converter import decode_typed_search_attributes

import artifacts
from cli.pins import pin_refs, pin_resolution
from cli.resolution import build_resolution
from cli.reviewer_keys import check_reviewers, pin_reviewers, signing_key
from client import connection, jobs
from client.errors import JobExists, JobNotFound, JobNotWaiting, ReviewRejected
from contracts.errors import JobSpecError, PathOutsideRoots, PathRefused
from contracts.job_spec import JobSpec, load_job_spec
from contracts.ownership import check_manifest, check_owned, check_record
from contracts.path_check import allow_hint
from contracts.path_safety import (
    PathRoots,
    article_path,
    check_source,
    is_remote,
    read_policy,
)
from contracts.pricing import format_usd, spent_usd
from contracts.signing import normalize_name, public_key_text
from contracts.spec_check import SpecProblem, check_spec_file, context_for
from contracts.workflow_messages import (
    JobResult,
    JobStatus,
    ResolveInput,
    ToolApprovalInput,
    ToolRejectionInput,
)
from presentation.explain import (
    Notes,
    flagged_items,
    inherited_entries,
    render_manifest,
    render_manifests,
)
from presentation.turns import TraceTurn, argument_line, cache_line, research_turns
from settings import DEFAULT_WORKER_GRACE_SECONDS, Settings
from workflows.visibility import PRESSROOM_STAGE, PRESSROOM_STATUS

CLI_PRINCIPAL = "pressroom-cli"
WAIT_STATES = {"awaiting_review", "blocked", "needs_operator"}

# The exit codes of `pressroom status` and `pressroom run --wait` (README.md, "Scripting"):
#: published, or still running (a state nobody needs to act on yet)
EXIT_OK = 0
#: an expected error (bad input, unknown job, Temporal unreachable): one line on stderr
EXIT_ERROR = 1
#: a usage error: an unknown option or a bad value (typer's own code)
EXIT_USAGE = 2
EXIT_BLOCKED = 3
EXIT_AWAITING_REVIEW = 4
#: failed, rejected, expired, cancelled, or stopped from outside (terminated, timed out)
EXIT_ENDED = 5
EXIT_NEEDS_OPERATOR = 6
#: running, but no worker polls its task queue (``run --wait`` waited for one until
#: ``--timeout``): nothing moves until one is started
EXIT_NO_WORKER = 7
_STATUS_EXIT = {"blocked": EXIT_BLOCKED, "awaiting_review": EXIT_AWAITING_REVIEW,
                "needs_operator": EXIT_NEEDS_OPERATOR, "published": EXIT_OK,
                "running": EXIT_OK, "rejected": EXIT_ENDED, "expired": EXIT_ENDED,
                "failed": EXIT_ENDED, "cancelled": EXIT_ENDED}


def exit_code(view: jobs.JobView) -> int:
    """The exit code for a job in ``view``'s state (the table above)."""
    if view.no_worker is not None:
        return EXIT_NO_WORKER
    if view.live is not None:
        return _STATUS_EXIT.get(view.live.status, EXIT_OK)
    if view.result is not None:
        return _STATUS_EXIT.get(view.result.status, EXIT_ENDED)
    if view.failure is not None or view.execution not in ("RUNNING", "COMPLETED"):
        return EXIT_ENDED
    return EXIT_OK


class JobReport(BaseModel):
    """``pressroom status --json``: what is known about a job, with Pressroom's status
    line (``status``: ``published``, ``awaiting_review``, ``blocked: <reason>``…) and the
    exit code the command leaves with."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    execution: str
    status: str
    exit_code: int
    started: datetime | None = None
    live: JobStatus | None = None
    result: JobResult | None = None
    failure: str | None = None
    no_worker: str | None = None


def job_report(view: jobs.JobView) -> JobReport:
    return JobReport(job_id=view.job_id, execution=view.execution, status=view.summary,
                     exit_code=exit_code(view), started=view.started, live=view.live,
                     result=view.result, failure=view.failure, no_worker=view.no_worker)


class StageStep(BaseModel):
    """One stage/status a job passed through, as its history records it (the upsert of
    its search attributes), with how long it stayed (``None``: it still is there)."""

    model_config = ConfigDict(extra="forbid")

    stage: str
    status: str
    at: datetime
    seconds: float | None = None


class ItemSecurity(BaseModel):
    """One item a manifest's security screening flagged, wherever it entered
    (``presentation.explain.flagged_items``): ``entered`` is ``source``, ``workspace``,
    ``tool_result``, ``review_comment``…; ``detail`` a tool result's tool and turn."""

    model_config = ConfigDict(extra="forbid")

    step_id: str
    item_id: str
    entered: str
    included: bool
    flags: list[str]
    detail: str = ""


class RepeatedNote(BaseModel):
    """A note (cache line, tool anomaly) and the manifests that carry it."""

    model_config = ConfigDict(extra="forbid")

    text: str
    steps: list[str]


class InheritedItem(BaseModel):
    """An item or tool call of a fork's manifest that came from its parent
    (``presentation.explain.inherited_entries``): ``kind`` ``item`` or ``tool_call``,
    ``inherited_from`` ``<parent>@turn N``, ``placed`` where it is in that request."""

    model_config = ConfigDict(extra="forbid")

    step_id: str
    kind: str
    item_id: str
    inherited_from: str
    placed: str


class ExplainReport(BaseModel):
    """``pressroom explain --json``: the manifests shown (as stored), every flagged item,
    the notes they share, and a fork's inherited items and tool calls."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    manifests: list[dict[str, Any]]
    security: list[ItemSecurity]
    notes: list[RepeatedNote]
    inherited: list[InheritedItem] = []


def explain_report(job_id: str, manifests: list[dict[str, Any]],
                   notes: Notes) -> ExplainReport:
    flagged = [ItemSecurity(**dataclasses.asdict(item))
               for m in manifests for item in flagged_items(m)]
    return ExplainReport(job_id=job_id, manifests=manifests, security=flagged,
                         notes=[RepeatedNote(text=text, steps=steps)
                                for text, (_, steps) in notes.seen.items()],
                         inherited=[InheritedItem(**dataclasses.asdict(entry))
                                    for m in manifests for entry in inherited_entries(m)])


class TraceReport(BaseModel):
    """``pressroom trace --json``: every research turn and its tool calls, and what the
    priced turns cost together (whole micro-dollars; docs/configuration.md#cost-in-money)."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    turns: list[TraceTurn]
    cost_micro_usd: int = 0


class RunReport(BaseModel):
    """``pressroom run --json``: the job started, and with ``--wait`` every stage it passed
    and where it stopped (``job``; its ``exit_code`` is the command's)."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    stages: list[StageStep] = []
    job: JobReport | None = None


async def connect(settings: Settings, address: str | None = None) -> Client:
    """A client on ``address`` (the ``--address`` flag) or the connection the settings
    name (``client.connection``: ``PRESSROOM_TEMPORAL_*``, then Temporal's own
    ``TEMPORAL_*`` variables and profile — API key, TLS — then the defaults)."""
    return await connection.connect(settings, address=address)


async def _store(settings: Settings) -> Any:
    return await artifacts.open_store(settings.store_url)


def _principal(tenant: str, project: str) -> Any:
    return artifacts.Principal(principal_id=CLI_PRINCIPAL, tenant=tenant, project=project)


async def refuse_known_job(spec: JobSpec, settings: Settings) -> None:
    """The store remembers every job id it saw; a reused id is refused before Temporal."""
    store = await _store(settings)
    try:
        head = await store.head("job_spec", spec.job_id,
                                principal=_principal(spec.scope.tenant, spec.scope.project))
    finally:
        await store.close()
    if head is not None:
        raise JobExists(f"job {spec.job_id!r} already exists in the artifact store; a job id "
                        "is never reused — pick a new job_id")


def check_policy(spec: JobSpec, settings: Settings) -> None:
    """A policy file the job names, read and validated now, its errors quoting nothing it
    holds (``contracts.path_safety.read_policy``; never Pressroom's own state, a kernel
    file or a FIFO). Where a job may read is the worker's to say (``check_on_worker``), so
    the file is read where it is, not inside roots of this client's."""
    read_policy(spec.policy, PathRoots.of(settings, sources=(Path(spec.policy).parent,)))


async def check_on_worker(client: Client, spec: JobSpec, *,
                          task_queue: str, job_file: Path) -> bool:
    """Refuse ``spec`` unless a worker on ``task_queue`` allows every path it names with
    its own roots (``workflows.path_check``: the check its ``store_job_spec`` runs): one
    line naming the paths and, for a path outside the roots, the flag and folder that would
    allow it — the job file's folder for a source inside it. Whether a worker answered: when
    none does within ``jobs.PATH_CHECK_SECONDS`` nothing is assumed about roots; the job
    starts and its paths are checked when a worker first stores its spec."""
    found = await jobs.check_paths_on_worker(client, spec, task_queue=task_queue)
    if found is None:
        return False
    if found.refusal is not None:
        line = f"{found.refusal} on task queue {task_queue!r}"
        if found.outside:
            prefer = Path(os.path.realpath(job_file.resolve().parent))
            raise PathOutsideRoots(f"{line}; {allow_hint(found.outside, prefer=prefer)}")
        raise PathRefused(line)
    return True


def checked_source(resolution: ResolveInput, settings: Settings) -> ResolveInput:
    """``resolve --add-source``: a relative (or ``~``) location made absolute against the
    current folder — what a path typed on a command line means — then checked against this
    client's roots (the settings' roots; ``contracts.path_safety``). The worker checks
    again with its own before the job uses it."""
    source = resolution.source
    if source is None:
        return resolution
    named = source.local_path()  # None: a live web page (a URL, no path)
    field = source.location_field
    value = named[1] if named is not None else None
    if value is not None and not is_remote(value) and "${" not in value \
            and "://" not in value:
        absolute = Path(value).expanduser()
        absolute = absolute if absolute.is_absolute() else absolute.resolve()
        if str(absolute) != value:
            source = source.model_copy(update={field: str(absolute)})
            resolution = resolution.model_copy(update={"source": source})
    check_source(source, PathRoots.of(settings), settings.locations)
    return resolution


class SpecCheckFailed(JobSpecError):
    """``pressroom run``: the spec has problems ``pressroom check`` would report."""


class CheckReport(BaseModel):
    """``pressroom check --json``: the spec checked and one entry per problem found."""

    model_config = ConfigDict(extra="forbid")

    job_file: str
    ok: bool
    problems: list[SpecProblem]


def check_job_file(settings: Settings, job_file: Path,
                   environ: Mapping[str, str]) -> CheckReport:
    """``pressroom check``: every check of ``contracts.spec_check``, the paths against the
    roots ``settings`` name (the operator's: ``PRESSROOM_*_ROOTS`` or the flags), the keys
    against ``environ``. Offline: no Temporal, nothing written."""
    ctx, problems = context_for(settings, roots=PathRoots.of(settings), environ=environ,
                                reviewers=lambda spec: check_reviewers(spec, settings))
    _spec, found = check_spec_file(job_file, ctx)
    problems += found
    return CheckReport(job_file=str(job_file), ok=not problems, problems=problems)


def preflight(console: Console, settings: Settings, job_file: Path,
              environ: Mapping[str, str]) -> JobSpec:
    """``pressroom run``'s first step: ``pressroom check``'s checks before anything
    connects, except the two a worker answers for (``check_on_worker``: whether its roots
    allow the paths; the policy file is read once they do). A missing model key is a
    warning here, not a refusal: the key the job uses is the worker's, in its
    environment."""
    ctx, problems = context_for(settings, roots=None, environ=environ,
                                reviewers=lambda spec: check_reviewers(spec, settings))
    spec, found = check_spec_file(job_file, ctx)
    if spec is None:
        load_job_spec(job_file)  # the schema's own error, as it always read
    problems += [p for p in found if p.kind != "policy"]
    for problem in problems:
        if problem.kind == "key":
            console.print(f"[yellow]warning:[/yellow] {problem.line()} here (the worker "
                          "needs it in its environment)", highlight=False, soft_wrap=True)
    refused = [p.line() for p in problems if p.kind != "key"]
    if refused:
        raise SpecCheckFailed(f"job spec {job_file}: " + "; ".join(refused))
    assert spec is not None
    return spec


async def run(console: Console, settings: Settings, job_file: Path, *, wait: bool,
              task_queue: str, address: str | None = None,
              timeout: float | None = None, live_view: bool = True) -> RunReport:
    """Start the job in ``job_file``; with ``wait``, follow it (``follow``) until it needs a
    human, ends, or ``timeout`` seconds have passed (``None``: no limit), waiting through a
    worker outage with a line on stderr when it starts and when a worker is back.
    ``live_view``: on a terminal, show ``pressroom watch``'s view instead of stage lines —
    off for ``--json``, whose report lists every stage the job passed."""
    spec = preflight(console, settings, job_file, os.environ)
    client = await connect(settings, address)
    await refuse_known_job(spec, settings)
    # the worker's roots first: nothing reads a path (a policy, a repository to pin) that
    # the worker would refuse
    checked = await check_on_worker(client, spec, task_queue=task_queue, job_file=job_file)
    check_policy(spec, settings)
    spec = await pin_refs(spec, settings.locations,
                          lambda line: console.print(line, highlight=False))
    spec, pinned = pin_reviewers(spec, settings)
    for line in pinned:
        console.print(line, highlight=False)
    handle = await jobs.start_job(client, spec, task_queue=task_queue)
    console.print(f"started job [bold]{spec.job_id}[/bold] (workflow id = job id)")
    if not checked:
        polled = await jobs.has_pollers(client, task_queue)
        console.print(("[yellow]no worker answered the path check on task queue "
                       f"{task_queue!r} within {jobs.PATH_CHECK_SECONDS:g}s[/yellow]"
                       if polled else
                       f"[yellow]no worker is polling task queue {task_queue!r} yet[/yellow]: "
                       "start one with `pressroom dev` or `pressroom worker`")
                      + "; the job's paths will be checked against its roots when a worker "
                      "picks it up", highlight=False, soft_wrap=True)
    if not wait:
        return RunReport(job_id=spec.job_id)
    steps: list[StageStep] = []
    if live_view and console.is_terminal:  # the live view (cli/watch.py); stage lines otherwise
        from cli.watch import watch

        view = await watch(console, client, spec.job_id,
                           worker_grace=settings.worker_grace_seconds, live_view=True,
                           timeout=timeout)
    else:
        view = await follow(console, client, spec.job_id,
                            worker_grace=settings.worker_grace_seconds,
                            run_id=handle.first_execution_run_id or handle.result_run_id,
                            from_start=True, steps_out=steps, timeout=timeout)
    if view.no_worker is not None:
        console.print(f"no worker polled task queue {view.no_worker!r} within --timeout "
                      f"{timeout:g}s; the job waits for one: start `pressroom worker` (or "
                      f"`pressroom dev`), then `pressroom status {spec.job_id}`",
                      highlight=False)
    elif view.live is not None and view.live.status == "awaiting_review":
        console.print(f"draft ready: `pressroom approve {spec.job_id}` / `request-changes` / "
                      "`reject`")
    elif view.live is not None and view.live.status == "blocked":
        console.print(f"blocked: see `pressroom explain {spec.job_id}`, then "
                      f"`pressroom resolve {spec.job_id} …`")
    elif view.live is not None and view.live.status == "needs_operator":
        console.print(f"{view.summary}\nfix the cause, then `pressroom resolve {spec.job_id}` "
                      f"(retry the step) or `pressroom resolve {spec.job_id} --abandon`",
                      highlight=False)
    return RunReport(job_id=spec.job_id, stages=steps, job=job_report(view))


async def _run_steps(client: Client, job_id: str,
                     run_id: str | None) -> tuple[list[StageStep], str | None]:
    """The stage/status pairs run ``run_id`` of ``job_id`` went through, from its history:
    the start event's search attributes and each upsert of them (the workflow upserts on
    every stage or status change: ``ResearchJobWorkflow._sync_visibility``), and the next
    run's id when this one continued as new. Empty for a job started without them."""
    steps: list[StageStep] = []
    stage = status = None
    next_run: str | None = None
    handle = client.get_workflow_handle(job_id, run_id=run_id)
    async for event in handle.fetch_history_events():
        kind = event.WhichOneof("attributes")
        if kind == "workflow_execution_started_event_attributes":
            found = event.workflow_execution_started_event_attributes.search_attributes
        elif kind == "upsert_workflow_search_attributes_event_attributes":
            found = event.upsert_workflow_search_attributes_event_attributes.search_attributes
        elif kind == "workflow_execution_continued_as_new_event_attributes":
            next_run = event.workflow_execution_continued_as_new_event_attributes \
                .new_execution_run_id or None
            continue
        else:
            continue
        attrs = decode_typed_search_attributes(found)
        stage = attrs.get(PRESSROOM_STAGE) or stage
        status = attrs.get(PRESSROOM_STATUS) or status
        if stage is None or status is None:
            continue
        if not steps or (steps[-1].stage, steps[-1].status) != (stage, status):
            steps.append(StageStep(stage=stage, status=status,
                                   at=event.event_time.ToDatetime().astimezone()))
    return steps, next_run


def _timed(steps: list[StageStep]) -> list[StageStep]:
    """``steps`` without repeats (a continued run starts where the last one stopped), each
    with the seconds until the next."""
    kept: list[StageStep] = []
    for step in steps:
        if kept and (kept[-1].stage, kept[-1].status) == (step.stage, step.status):
            continue
        if kept:
            kept[-1].seconds = round((step.at - kept[-1].at).total_seconds(), 3)
        kept.append(step.model_copy())
    return kept


async def follow(console: Console, client: Client, job_id: str,
                 until: set[str] = WAIT_STATES, *,
                 worker_grace: float = DEFAULT_WORKER_GRACE_SECONDS,
                 run_id: str | None = None, from_start: bool = False,
                 steps_out: list[StageStep] | None = None,
                 timeout: float | None = None) -> jobs.JobView:
    """Print each stage/status the job passes until it needs a human or ends, or until
    ``timeout`` seconds have passed (``None``: no limit; the view then is the job's as it
    is, ``no_worker`` set when nobody polls its task queue).

    A worker outage is waited through, not taken for an answer: while nobody polls the
    job's task queue a line on stderr says so (and the spinner), and another says when a
    worker polls again; only at ``timeout`` does it end the wait (``EXIT_NO_WORKER``).

    The stages come from the job's history (``_run_steps``), not from what each poll
    happened to see, so a stage quicker than the poll is printed too. ``run_id``: the run
    to read first (default: the latest; continued runs are followed); ``from_start``:
    print the stages from that run's start, else from the one the job is in now.
    ``steps_out`` receives every stage printed. A job started without search attributes
    has no stages in its history: then what each poll saw is printed."""
    t0 = time.monotonic()
    finished: list[StageStep] = []
    polled: list[StageStep] = []
    printed = 0
    skip = not from_start
    if run_id is None:
        run_id = (await client.get_workflow_handle(job_id).describe()).run_id

    async def stages() -> list[StageStep]:
        nonlocal finished, run_id
        while True:
            found, next_run = await _run_steps(client, job_id, run_id)
            if next_run is None:
                return _timed(finished + found) if finished or found else _timed(polled)
            finished, run_id = finished + found, next_run

    def show(steps: list[StageStep], upto: int) -> None:
        nonlocal printed, skip
        if skip:  # not from the start: only from the stage the job is in now
            printed, skip = max(len(steps) - 1, 0), False
        for step in steps[printed:upto]:
            took = f"{step.seconds:6.2f}s" if step.seconds is not None else ""
            console.print(f"  {step.stage:<9} {step.status:<16} {took}", highlight=False)
            if steps_out is not None:
                steps_out.append(step)
        printed = max(printed, upto)

    deadline = None if timeout is None else t0 + timeout
    notices = Console(stderr=True, highlight=False, soft_wrap=True)
    outage: tuple[float, str] | None = None  # when the outage was first seen, on which queue

    def left() -> float:
        return float("inf") if deadline is None else max(deadline - time.monotonic(), 0.0)

    with console.status("running…") as spinner:
        while True:
            view = await jobs.view_job(client, job_id, worker_grace=min(worker_grace, left()))
            if view.no_worker is not None:
                if outage is None:
                    outage = (time.monotonic(), view.no_worker)
                    bound = "" if deadline is None else f" (up to --timeout {timeout:g}s)"
                    notices.print(f"  no worker is polling task queue {view.no_worker!r}; "
                                  f"waiting for one{bound} — start `pressroom worker` or "
                                  "`pressroom dev`")
                spinner.update(f"waiting for a worker on task queue {view.no_worker!r}…")
                if left() <= 0:
                    steps = await stages()
                    show(steps, len(steps))
                    console.print(f"  → {view.summary} after {time.monotonic() - t0:.2f}s",
                                  highlight=False)
                    return view
                await asyncio.sleep(min(1.0, left()))
                continue
            if outage is not None:
                notices.print(f"  a worker is polling task queue {outage[1]!r} again, after "
                              f"{time.monotonic() - outage[0]:.1f}s without one")
                outage = None
            if view.live is not None:
                polled.append(StageStep(stage=view.live.stage, status=view.live.status,
                                        at=datetime.now().astimezone()))
            steps = await stages()
            if steps:
                spinner.update(f"{steps[-1].stage}: {steps[-1].status}")
            if view.live is None or view.live.status in until or left() <= 0:
                show(steps, len(steps))
                console.print(f"  → {view.summary} after {time.monotonic() - t0:.2f}s",
                              highlight=False)
                return view
            show(steps, len(steps) - 1)
            await asyncio.sleep(min(0.25, left()))


async def show_status(console: Console, settings: Settings, job_id: str,
                      address: str | None = None) -> jobs.JobView:
    view = await jobs.view_job(await connect(settings, address), job_id,
                               worker_grace=settings.worker_grace_seconds)
    console.print(f"[bold]{job_id}[/bold]: {view.summary}")
    live = view.live
    if live is not None:
        console.print(f"  stage {live.stage}, revision round {live.revision_round}, "
                      f"destination {live.destination} (the article goes to "
                      f"{article_path(live.destination, job_id)})")
        if live.pending_draft:
            pending = live.pending_draft
            console.print(f"  pending draft r{pending.revision} {pending.content_hash}\n"
                          f"  {pending.summary}")
        for waiting in live.pending_tool_approvals:  # an effect: write call (docs/mcp.md)
            arguments = json.dumps(waiting.arguments, sort_keys=True, ensure_ascii=True)
            console.print(f"  waiting for a reviewer's signed approval: {waiting.tool_name} "
                          f"call {waiting.call_id} arguments {arguments[:1000]} "
                          f"(sha256 {waiting.arguments_sha256})\n"
                          f"    approve it: pressroom approve-call {job_id} {waiting.call_id}",
                          markup=False, highlight=False)
        if live.research is not None and live.research.turn:
            show_research(console, live)
        console.print(f"  manifests: {', '.join(live.manifest_ids) or '-'}")
    receipt = (live.receipt if live else None) or (view.result.receipt if view.result else None)
    if receipt is not None:
        console.print(f"  published {receipt.location} ({receipt.content_hash}) "
                      f"review {receipt.review_decision_id} at {receipt.published_at}")
    if view.result and view.result.reason:
        console.print(f"  {view.result.reason}")
    return view


def show_research(console: Console, live: JobStatus) -> None:
    """The research loop's line in ``status``: turn, tokens against budget, last calls."""
    research = live.research
    assert research is not None
    budget = f"/{research.token_budget}" if research.token_budget else ""
    stopped = f", stopped: {research.stop_reason}" if research.stop_reason else ""
    cost = spent_usd(research.cost_micro_usd, research.unpriced_calls) + (
        f"/{format_usd(research.cost_budget_micro_usd)}" if research.cost_budget_micro_usd
        else "")
    console.print(f"  research turn {research.turn}{stopped}; tokens {research.tokens_used}"
                  f"{budget}; cost {cost}; topics with a verified note: "
                  f"{', '.join(research.covered_topics) or '-'}; refused calls "
                  f"{research.rejected_calls}")
    for call in research.last_calls:
        why = f" ({call.rejection})" if call.rejection else ""
        console.print(f"    t{call.turn} {call.call_id} {call.tool_name:<11} {call.status}{why}"
                      f" {call.result_chars} chars")


async def _scope(settings: Settings, job_id: str, view: jobs.JobView,
                 address: str | None) -> tuple[str, str, list[str]]:
    """The job's tenant, project and manifest ids (from its status, result or spec)."""
    if view.live is not None:
        return view.live.tenant, view.live.project, list(view.live.manifest_ids)
    if view.result is not None:
        return view.result.tenant, view.result.project, list(view.result.manifest_ids)
    spec = await jobs.job_spec_of(await connect(settings, address), job_id)
    return spec.scope.tenant, spec.scope.project, []


async def trace(console: Console, settings: Settings, job_id: str,
                address: str | None = None) -> TraceReport:
    view = await jobs.view_job(await connect(settings, address), job_id,
                               worker_grace=settings.worker_grace_seconds)
    tenant, project, _ = await _scope(settings, job_id, view, address)
    principal = _principal(tenant, project)
    store = await _store(settings)
    try:
        turns = await research_turns(store, job_id, principal)
    finally:
        await store.close()
    if not turns:
        raise JobNotFound(f"job {job_id!r} has no research turns ({view.summary})")
    for turn in turns:
        cost = "" if turn.cost_micro_usd is None else f" {format_usd(turn.cost_micro_usd)}"
        console.print(f"[bold]turn {turn.turn}[/bold] {turn.model} "
                      f"in {turn.input_tokens} out {turn.output_tokens} tokens{cost} "
                      f"{cache_line(turn)}(manifest {turn.manifest_id})")
        for call in turn.calls:
            shown = "not run yet" if call.status is None else (
                f"{call.status}{' ' + call.rejection if call.rejection else ''}"
                f" {call.result_chars} chars")
            console.print(f"  {call.call_id:<9} {call.tool_name:<11} "
                          f"{argument_line(call.arguments)[:80]:<80} → {shown}")
    total = sum(t.cost_micro_usd or 0 for t in turns)
    console.print(f"cost {format_usd(total)} over {len(turns)} turns"
                  + ("" if all(t.cost_micro_usd is not None for t in turns)
                     else " (turns without a price count nothing)"))
    return TraceReport(job_id=job_id, turns=turns, cost_micro_usd=total)


def visible_status(job: jobs.VisibleJob) -> str:
    """Pressroom's status of a listed job: ``published``, ``awaiting_review``,
    ``blocked: <reason code>``, ``needs_operator: <reason code>``…; Temporal's own
    (``terminated``…) only for a job stopped from outside Pressroom or started before its
    search attributes existed."""
    if job.status is None:
        return job.execution.lower()
    shown = f"{job.status}: {job.reason}" if job.reason else job.status
    if job.execution not in ("RUNNING", "COMPLETED") and job.status in (
            "running", "blocked", "awaiting_review", "needs_operator"):
        return f"{job.execution.lower()} (was {shown})"
    return shown


async def list_all(console: Console, settings: Settings, address: str | None = None, *,
                   status: str | None = None, reviewer: str | None = None,
                   tenant: str | None = None, limit: int = 100) -> list[jobs.VisibleJob]:
    """One visibility query (``jobs.list_visible_jobs``): no job is described or queried,
    so a job's row is as fresh as the visibility store (a moment behind)."""
    from rich.table import Table

    client = await connect(settings, address)
    found = await jobs.list_visible_jobs(client, reviewer=reviewer, status=status,
                                         tenant=tenant, limit=limit)
    table = Table(title="Pressroom jobs")
    for col in ("job", "status", "stage", "tenant", "reviewers", "turn", "started"):
        table.add_column(col, overflow="fold")
    for v in found:
        table.add_row(v.job_id, visible_status(v), v.stage or "", v.tenant or "",
                      ", ".join(v.reviewers), str(v.turn or ""),
                      v.started_at.isoformat(timespec="seconds") if v.started_at else "")
    console.print(table)
    return found


async def pending_draft_body(live: JobStatus, settings: Settings) -> bytes:
    assert live.pending_draft is not None
    # the status names the draft: it must be the job's own (contracts/ownership.py)
    check_owned(live.job_id, "article_draft", live.pending_draft.artifact_id)
    store = await _store(settings)
    try:
        rec, body = await store.get("article_draft", live.pending_draft.artifact_id,
                                    principal=_principal(live.tenant, live.project),
                                    revision=live.pending_draft.revision)
        check_record(live.job_id, live.tenant, live.project, rec)
    finally:
        await store.close()
    return bytes(body)


async def show_draft(console: Console, client: Client, job_id: str,
                     settings: Settings) -> tuple[JobStatus, str]:
    """Print the pending draft; returns the job's status and the hash of the text shown."""
    view = await jobs.view_job(client, job_id, worker_grace=settings.worker_grace_seconds)
    if view.live is None or view.live.pending_draft is None:
        raise JobNotFound(f"job {job_id!r} has no draft waiting for review ({view.summary})")
    pending = view.live.pending_draft
    body = await pending_draft_body(view.live, settings)
    shown_hash = "sha256:" + hashlib.sha256(body).hexdigest()
    if shown_hash != pending.content_hash:
        raise JobNotWaiting(f"job {job_id!r}: the stored draft r{pending.revision} does not "
                            f"match the pending draft's hash; nothing sent")
    title = f"{job_id} draft r{pending.revision} {pending.content_hash[:19]}…"
    console.print(Panel(Markdown(body.decode("utf-8")), title=title,
                        subtitle=f"destination {view.live.destination}"))
    return view.live, shown_hash


def check_reviewer(spec: JobSpec, reviewer: str, key: Ed25519PrivateKey,
                   what: str = "review") -> None:
    """Refuse, before a draft is shown, a decision the workflow would refuse for who signs
    it: the job's own principal, a name the job does not list as a reviewer, or a key that
    is not the one pinned for that name. The workflow's validator stays the authority
    (SECURITY.md §1); this only spares the reviewer a draft they cannot decide on."""
    name = normalize_name(reviewer)
    if name == normalize_name(spec.principal.principal_id):
        raise ReviewRejected(f"{what} refused: the job's own principal {reviewer!r} can never "
                             "review its own draft; nothing shown or sent")
    keys = spec.review.signers(operators=False).get(name)
    if not keys:
        raise ReviewRejected(f"{what} refused: reviewer {reviewer!r} is not allowed for job "
                             f"{spec.job_id}; nothing shown or sent")
    if public_key_text(key) not in keys:
        raise ReviewRejected(f"{what} refused: the signing key is not the one listed for "
                             f"{reviewer!r}; nothing shown or sent")


async def review(console: Console, settings: Settings, job_id: str, decision: jobs.Decision,
                 *, reviewer: str, comments: list[str], yes: bool,
                 address: str | None = None, key_path: Path | None = None,
                 draft_hash: str | None = None, key: Ed25519PrivateKey | None = None) -> None:
    """Show the draft, ask, sign the decision on the text shown and send it.

    ``draft_hash`` (``--draft-hash``) lets a script say which draft it means; a different
    pending draft is refused before anything is signed. ``key`` is a key already unlocked
    (a console account's); without it the key file is read (``signing_key``).
    """
    import typer

    key = key or signing_key(settings, reviewer, key_path)
    client = await connect(settings, address)
    check_reviewer(await jobs.job_spec_of(client, job_id), reviewer, key)
    live, shown_hash = await show_draft(console, client, job_id, settings)
    assert live.pending_draft is not None
    if draft_hash is not None and draft_hash != shown_hash:
        raise JobNotWaiting(f"job {job_id!r} is waiting on draft r{live.pending_draft.revision}"
                            f" {shown_hash}, not {draft_hash}; nothing sent")
    verb = {"approve": "Approve and publish", "request_changes": "Request changes to",
            "reject": "Reject"}[decision]
    if not yes and not typer.confirm(f"{verb} draft r{live.pending_draft.revision} as "
                                     f"{reviewer}?", default=False):
        console.print("nothing sent")
        return
    result = await jobs.review_job(client, job_id, decision, reviewer=reviewer, comments=comments,
                                   key=key, draft_revision=live.pending_draft.revision,
                                   draft_hash=shown_hash, destination=live.destination,
                                   worker_grace=settings.worker_grace_seconds)
    console.print(f"recorded {result.decision} as {result.decision_id} "
                  f"({result.review.artifact_id} r{result.review.revision})")


class CallApproval(BaseModel):
    """``pressroom approve-call``: the approval (or, with ``--reject``, the refusal) signed
    and accepted, and what it binds."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "reject"] = "approve"
    job_id: str
    call_id: str
    tool_name: str
    arguments_sha256: str
    signer: str
    nonce: str


async def approve_call(console: Console, settings: Settings, job_id: str, call_id: str, *,
                       reviewer: str, yes: bool, address: str | None = None,
                       key_path: Path | None = None, key: Ed25519PrivateKey | None = None,
                       reject: bool = False, reason: str = "") -> CallApproval | None:
    """Show a call waiting for a signed approval (tool, server, arguments and their
    sha256), ask, and sign and send an approval of exactly that call — or, with
    ``reject``, a refusal, after which it never runs (docs/mcp.md, "Tools that act"). The
    signer must be a reviewer the job lists, with the key it pinned (``check_reviewer``);
    a call that is not waiting is refused before anything is shown or signed. ``None``
    when the reviewer said no."""
    import typer

    key = key or signing_key(settings, reviewer, key_path)
    client = await connect(settings, address)
    check_reviewer(await jobs.job_spec_of(client, job_id), reviewer, key, "approval")
    view, pending = await jobs.pending_call(client, job_id, call_id,
                                            worker_grace=settings.worker_grace_seconds)
    arguments = json.dumps(pending.arguments, sort_keys=True, indent=2, ensure_ascii=True)
    console.print(Panel(arguments, title=f"{job_id} call {pending.call_id} (turn "
                        f"{pending.turn}): {pending.tool_name}",
                        subtitle=f"arguments sha256 {pending.arguments_sha256}"),
                  markup=False, highlight=False)
    console.print(f"server {pending.server!r}, tool {pending.tool!r}: the operator marks it "
                  "effect: write (it acts on the world); approved, it runs once with exactly "
                  "these arguments", markup=False, highlight=False)
    verb = "Reject" if reject else "Approve"
    if not yes and not typer.confirm(f"{verb} call {pending.call_id} of {pending.tool_name} "
                                     f"as {reviewer}?", default=False):
        console.print("nothing sent")
        return None
    signed: ToolApprovalInput | ToolRejectionInput
    if reject:
        signed = await jobs.reject_tool_call(client, job_id, pending,
                                             first_run_id=view.first_run_id, signer=reviewer,
                                             key=key, reason=reason)
        done = "rejected", "it is refused and never runs"
    else:
        signed = await jobs.approve_tool_call(client, job_id, pending,
                                              first_run_id=view.first_run_id,
                                              signer=reviewer, key=key)
        done = "approved", "the job runs it now"
    assert signed.signature is not None
    console.print(f"{done[0]} call {pending.call_id} ({pending.tool_name}) as {reviewer}; "
                  f"{done[1]}", markup=False, highlight=False)
    return CallApproval(decision="reject" if reject else "approve", job_id=job_id,
                        call_id=pending.call_id, tool_name=pending.tool_name,
                        arguments_sha256=pending.arguments_sha256, signer=reviewer,
                        nonce=signed.signature.nonce)


async def resolve(console: Console, settings: Settings, job_id: str, flags: dict[str, Any],
                  address: str | None = None, *, signer: str,
                  key_path: Path | None = None, key: Ed25519PrivateKey | None = None) -> None:
    """``flags`` are the CLI's resolve options; bad combinations are a ``JobError``."""
    resolution: ResolveInput = await pin_resolution(
        checked_source(build_resolution(**flags), settings), settings.locations,
        lambda line: console.print(line, highlight=False))
    key = key or signing_key(settings, signer, key_path)
    await jobs.resolve_job(await connect(settings, address), job_id, resolution,
                           signer=signer, key=key, worker_grace=settings.worker_grace_seconds)
    if resolution.action == "abandon":
        console.print(f"sent abandon to {job_id}; it ends failed, nothing published")
    else:
        console.print(f"sent {resolution.action} to {job_id}; it re-assembles its context (or "
                      "runs the failed step again) now")


async def cancel(console: Console, settings: Settings, job_id: str,
                 address: str | None = None, *, signer: str, key_path: Path | None = None,
                 reason: str = "", key: Ed25519PrivateKey | None = None) -> None:
    key = key or signing_key(settings, signer, key_path)
    await jobs.cancel_job(await connect(settings, address), job_id, signer=signer, key=key,
                          reason=reason, worker_grace=settings.worker_grace_seconds)
    console.print(f"{job_id} cancelled by {signer}; nothing will be published")


async def explain(console: Console, settings: Settings, job_id: str, step: str | None = None,
                  address: str | None = None, *, turn: int | None = None) -> ExplainReport:
    """Render the job's manifests (``presentation.explain``): per step, then the notes they
    share once; returns what was shown."""
    view = await jobs.view_job(await connect(settings, address), job_id,
                               worker_grace=settings.worker_grace_seconds)
    if turn is not None:
        return await _explain_turn(console, settings, job_id, view, turn, address)
    ids: list[str] = []
    tenant = project = None
    if view.live is not None:
        ids, tenant, project = view.live.manifest_ids, view.live.tenant, view.live.project
    elif view.result is not None:
        ids, tenant, project = view.result.manifest_ids, view.result.tenant, view.result.project
    store = await _store(settings)
    try:
        if not ids or tenant is None or project is None:
            # Failed or cancelled jobs report nothing: their spec (first history event)
            # names the scope, and their latest checkpoint lists the last manifests.
            spec = await jobs.job_spec_of(await connect(settings, address), job_id)
            tenant, project = spec.scope.tenant, spec.scope.project
            checkpoint = await store.latest_checkpoint(job_id,
                                                       principal=_principal(tenant, project))
            ids = list((checkpoint or {}).get("manifest_ids") or [])
        if not ids:
            raise JobNotFound(f"job {job_id!r} has no manifests to explain ({view.summary})")
        shown: list[dict[str, Any]] = []
        for manifest_id in ids:
            manifest = await store.get_manifest(manifest_id, principal=_principal(tenant, project))
            check_manifest(job_id, manifest, manifest_id)
            if step and step not in (manifest.get("step_id"), manifest.get("stage"), manifest_id):
                continue
            shown.append(manifest)
    finally:
        await store.close()
    if step and not shown:
        raise JobNotFound(f"job {job_id!r} has no step {step!r}; steps are named like "
                          "'draft-5' or by stage ('plan', 'research', 'draft', 'publish')")
    return explain_report(job_id, shown, render_manifests(console, shown))


async def _explain_turn(console: Console, settings: Settings, job_id: str, view: jobs.JobView,
                        turn: int, address: str | None) -> ExplainReport:
    """The manifest research turn ``turn`` was decided on (its stored reply names it)."""
    tenant, project, _ = await _scope(settings, job_id, view, address)
    principal = _principal(tenant, project)
    store = await _store(settings)
    try:
        head = await store.head("model_decision", f"{job_id}.turn.{turn:04d}",
                                principal=principal)
        if head is None:
            raise JobNotFound(f"job {job_id!r} has no research turn {turn}")
        _, raw = await store.get("model_decision", head.artifact_id, principal=principal,
                                 revision=head.revision)
        manifest_id = json.loads(raw)["manifest_id"]
        manifest = await store.get_manifest(manifest_id, principal=principal)
        check_manifest(job_id, manifest, manifest_id)
    finally:
        await store.close()
    console.print(f"[bold]research turn {turn}[/bold]")
    render_manifest(console, manifest)
    return explain_report(job_id, [manifest], Notes())
