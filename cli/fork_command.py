"""``pressroom fork``: start a new job from a parent job's state after research turn N,
with signed edits (docs/architecture.md#forking-a-job). Client-side only.

The parent's state is read from the store first (``contracts.fork_reader``, content hashes
checked): a turn that was never recorded or a state that fails its hash is refused here
in one line, before anything starts. The operator signs (purpose ``fork``, for the parent
job) the lineage — parent, its first run, the turn, that state's hash, the new id and
every edit — and the fork starts with the spec ``contracts.fork.fork_spec`` makes. The
worker checks all of it again (``fork_state``) before it writes anything; this command
waits until the fork has copied its state, or prints the worker's one-line refusal.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel, ConfigDict
from rich.markup import escape
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError

import artifacts
from client import jobs
from context import ManifestDiff, diff_manifests
from contracts.errors import JobError
from contracts.fork import ForkError, ForkRefused, fork_spec
from contracts.fork_reader import parent_state, plan_artifact_id
from contracts.job_spec import JobSpec
from contracts.lineage import ForkEdits, ForkLineage, ForkPlan
from contracts.signing import sign
from contracts.source_specs import SourceSpec
from contracts.workflow_messages import JobStatus
from presentation import turns
from workflows.research_job import ResearchJobWorkflow

#: the CLI's principal in the store (``cli.commands.CLI_PRINCIPAL``)
CLI_PRINCIPAL = "pressroom-cli"
#: how long ``fork`` waits for the fork to copy its state
FORK_WAIT_SECONDS = 120.0


class ForkNotStarted(JobError):
    """The fork was refused (before it started, or by the worker); one line."""


@dataclass
class EditFlags:
    """The command's edit options as typed."""

    add_sources: list[SourceSpec]
    refresh_sources: list[str]
    drop_sources: list[str]
    drop_notes: list[str]
    plan_file: Path | None = None
    question: str | None = None
    token_budget: int | None = None
    cost_budget: str | None = None


async def _parent(client: Client, parent_id: str) -> tuple[JobSpec, str]:
    """The parent's start spec (its scope) and first run id."""
    spec = await jobs.job_spec_of(client, parent_id)
    desc = await client.get_workflow_handle(parent_id).describe()
    first = desc.raw_description.workflow_execution_info.first_run_id or desc.run_id
    if not first:
        raise ForkNotStarted(f"job {parent_id!r} has no first run id")
    return spec, first


async def fork_job(client: Client, store_url: str, parent_id: str, *, turn: int, new_id: str,
                   flags: EditFlags, signer: str, key: Ed25519PrivateKey,
                   task_queue: str, wait_seconds: float = FORK_WAIT_SECONDS) -> JobStatus:
    """Sign and start the fork; the fork's live status once it holds its copied state.
    ``ForkNotStarted`` (one line) when it is refused."""
    handle = await start_fork(client, store_url, parent_id, turn=turn, new_id=new_id,
                              flags=flags, signer=signer, key=key, task_queue=task_queue)
    return await wait_forked(handle, turn, wait_seconds)


async def start_fork(client: Client, store_url: str, parent_id: str, *, turn: int,
                     new_id: str, flags: EditFlags, signer: str, key: Ed25519PrivateKey,
                     task_queue: str) -> Any:
    """Sign and start the fork without waiting for it; its workflow handle."""
    started_spec, parent_run = await _parent(client, parent_id)
    principal = artifacts.Principal(principal_id=CLI_PRINCIPAL,
                                    tenant=started_spec.scope.tenant,
                                    project=started_spec.scope.project)
    store = await artifacts.open_store(store_url)
    try:
        try:
            state = await parent_state(store, parent_id, principal, turn)
        except ForkRefused as exc:
            raise ForkNotStarted(exc.message) from None
        plan = None
        if flags.plan_file is not None:
            plan = await _store_plan(store, state.spec, new_id, flags.plan_file)
    finally:
        await store.close()
    edits = ForkEdits(add_sources=flags.add_sources, refresh_sources=flags.refresh_sources,
                      drop_sources=flags.drop_sources, drop_notes=flags.drop_notes, plan=plan,
                      question=flags.question, token_budget=flags.token_budget,
                      cost_budget_usd=flags.cost_budget)
    lineage = ForkLineage(parent_job=parent_id, parent_run_id=parent_run, turn=turn,
                          state_hash=state.state_hash(), new_job=new_id, edits=edits)
    fork_spec(state.spec, lineage)  # an edit that does not apply: refused before signing
    signed = lineage.model_copy(update={"signature": sign(
        key, "fork", parent_id, lineage.signed_body(), signer=signer)})
    spec = fork_spec(state.spec, signed)
    return await jobs.start_job(client, spec, task_queue=task_queue)


async def _store_plan(store: Any, parent: JobSpec, new_id: str, path: Path) -> ForkPlan:
    """Store the ``--plan`` file's text as the fork's first agent plan revision."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ForkError(f"--plan {path}: cannot be read ({type(exc).__name__})") from None
    body = text.encode("utf-8")
    digest = hashlib.sha256(body).hexdigest()
    artifact_id = plan_artifact_id(new_id)
    principal = artifacts.Principal(principal_id=CLI_PRINCIPAL, tenant=parent.scope.tenant,
                                    project=parent.scope.project)
    head = await store.head("agent_plan", artifact_id, principal=principal)
    if head is not None and head.content_hash == "sha256:" + digest:
        return ForkPlan(artifact_id=artifact_id, revision=head.revision, sha256=digest)
    if head is not None:
        raise ForkError(f"job {new_id} already has an agent plan; a fork id is never reused")
    rec = await store.put("agent_plan", artifact_id, body, principal=principal,
                          scope=artifacts.Scope(tenant=parent.scope.tenant,
                                                project=parent.scope.project,
                                                task=parent.scope.task),
                          trust="untrusted_external_data", parent_revision=None,
                          media_type="text/markdown",
                          metadata={"write_id": f"fork-plan:{digest}", "fork_edit": "plan"})
    return ForkPlan(artifact_id=artifact_id, revision=rec.revision, sha256=digest)


async def wait_forked(handle: Any, turn: int, wait_seconds: float) -> JobStatus:
    """Wait until the fork left its start (its state copied) or ended; its refusal as
    ``ForkNotStarted``."""
    deadline = time.monotonic() + wait_seconds
    while True:
        desc = await handle.describe()
        if desc.status != WorkflowExecutionStatus.RUNNING:
            try:
                await handle.result()
            except WorkflowFailureError as exc:
                cause: Any = exc.cause
                raise ForkNotStarted(str(getattr(cause, "message", None) or cause)) from None
        else:
            status: JobStatus = await handle.query(ResearchJobWorkflow.status)
            if status.stage != "start":
                return status
        if time.monotonic() > deadline:
            raise ForkNotStarted(f"fork {handle.id} did not copy its state within "
                                 f"{wait_seconds:g}s (is a worker running?)")
        await asyncio.sleep(0.2)




async def turn_request(store: Any, job_id: str, turn: int,
                       principal: Any) -> tuple[dict[str, Any], int | None]:
    """``presentation.turns.turn_request``, or ``ForkNotStarted`` when the job has no
    research turn ``turn``."""
    found = await turns.turn_request(store, job_id, turn, principal)
    if found is None:
        raise ForkNotStarted(f"job {job_id!r} has no research turn {turn}")
    return found


async def turn_manifest(store: Any, job_id: str, turn: int, principal: Any) -> dict[str, Any]:
    """The sealed manifest research turn ``turn`` of ``job_id`` was decided on."""
    return (await turn_request(store, job_id, turn, principal))[0]


async def explain_diff(client: Client, store_url: str, job_a: str, turn_a: int, job_b: str,
                       turn_b: int) -> ManifestDiff:
    """``explain --diff``: the two turns' sealed requests compared item by item, with the
    turns' recorded costs (each job's own id reads ``{job}`` in its item ids)."""
    spec_a = await jobs.job_spec_of(client, job_a)
    spec_b = await jobs.job_spec_of(client, job_b)
    store = await artifacts.open_store(store_url)
    try:
        a, cost_a = await turn_request(store, job_a, turn_a, artifacts.Principal(
            principal_id=CLI_PRINCIPAL, tenant=spec_a.scope.tenant, project=spec_a.scope.project))
        b, cost_b = await turn_request(store, job_b, turn_b, artifacts.Principal(
            principal_id=CLI_PRINCIPAL, tenant=spec_b.scope.tenant, project=spec_b.scope.project))
    finally:
        await store.close()
    return diff_manifests(a, b, jobs=(job_a, job_b), cost_a=cost_a, cost_b=cost_b)


class DiffItem(BaseModel):
    """One item that entered, left or changed between the two requests."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    change: str
    zone_a: str | None
    zone_b: str | None
    decided_by: str
    tokens_a: int
    tokens_b: int
    token_delta: int
    detail: str = ""
    inherited_from: str | None = None


class DiffSide(BaseModel):
    model_config = ConfigDict(extra="forbid")

    job_id: str
    turn: int
    manifest_id: str
    tokens: int
    #: the turn's model call as the worker priced it (micro-USD); ``None``: not priced
    cost_micro_usd: int | None


class DiffReport(BaseModel):
    """``pressroom explain --diff JOB_A --turn N JOB_B --turn M --json``."""

    model_config = ConfigDict(extra="forbid")

    a: DiffSide
    b: DiffSide
    items: list[DiffItem]
    token_delta: int
    cost_delta_micro_usd: int | None


def diff_report(diff: ManifestDiff, job_a: str, turn_a: int, job_b: str,
                turn_b: int) -> DiffReport:
    return DiffReport(
        a=DiffSide(job_id=job_a, turn=turn_a, manifest_id=diff.a, tokens=diff.tokens_a,
                   cost_micro_usd=diff.cost_a),
        b=DiffSide(job_id=job_b, turn=turn_b, manifest_id=diff.b, tokens=diff.tokens_b,
                   cost_micro_usd=diff.cost_b),
        items=[DiffItem(**dataclasses.asdict(i), token_delta=i.tokens_b - i.tokens_a)
               for i in diff.items],
        token_delta=diff.token_delta, cost_delta_micro_usd=diff.cost_delta)


def render_diff(console: Any, diff: ManifestDiff, title: str | None = None) -> None:
    """The diff as lines: one per item, then the token and cost difference."""
    console.print(f"[bold]{escape(title or '')}[/bold]" if title else "", highlight=False)
    console.print(f"manifest {diff.a} → {diff.b}", highlight=False, markup=False)
    if not diff.items:
        console.print("no item entered, left or changed", highlight=False)
    for item in diff.items:
        mark = f" [inherited from {item.inherited_from}]" if item.inherited_from else ""
        zones = f"{item.zone_a or '-'} → {item.zone_b or '-'}"
        detail = f"; {item.detail}" if item.detail else ""
        console.print(f"{item.change:8} {item.item_id} ({zones}; {item.tokens_a} → "
                      f"{item.tokens_b} tokens, {item.tokens_b - item.tokens_a:+d}) by "
                      f"{item.decided_by}{detail}{mark}",
                      highlight=False, markup=False, soft_wrap=True)
    cost = diff.cost_delta
    if cost is not None:
        money = f"; cost {diff.cost_a} → {diff.cost_b} micro-USD ({cost:+d})"
    else:
        money = "; cost not recorded (the worker had no price for a turn's model)"
    console.print(f"tokens {diff.tokens_a} → {diff.tokens_b} ({diff.token_delta:+d}){money}",
                  highlight=False, markup=False)


async def fork_command(settings: Any, job: str, *, turn: int, new_id: str,
                       add_sources: list[str], refresh_sources: list[str],
                       drop_sources: list[str], drop_notes: list[str], plan: Path | None,
                       question: str | None, token_budget: int | None,
                       cost_budget: str | None, signer: str, key_path: Path | None,
                       key: Ed25519PrivateKey | None, task_queue: str,
                       address: str | None) -> JobStatus:
    """``pressroom fork``'s body: the flags parsed, the key loaded, the fork started."""
    import yaml
    from pydantic import TypeAdapter, ValidationError

    from cli.commands import connect
    from cli.reviewer_keys import signing_key

    sources: list[SourceSpec] = []
    for text in add_sources:
        try:
            sources.append(TypeAdapter(SourceSpec).validate_python(yaml.safe_load(text)))
        except (ValidationError, ValueError, yaml.YAMLError) as exc:
            raise ForkError(f"--add-source: not a source ({type(exc).__name__})") from None
    flags = EditFlags(add_sources=sources, refresh_sources=refresh_sources,
                      drop_sources=drop_sources, drop_notes=drop_notes, plan_file=plan,
                      question=question, token_budget=token_budget, cost_budget=cost_budget)
    key = key or signing_key(settings, signer, key_path)
    return await fork_job(await connect(settings, address), settings.store_url, job, turn=turn,
                          new_id=new_id, flags=flags, signer=signer, key=key,
                          task_queue=task_queue)


async def diff_command(console: Any, settings: Any, job_a: str, turn_a: int, job_b: str,
                       turn_b: int, address: str | None) -> DiffReport:
    """``pressroom explain --diff JOB_A --turn N JOB_B --turn M``'s body."""
    from cli.commands import connect

    diff = await explain_diff(await connect(settings, address), settings.store_url, job_a,
                              turn_a, job_b, turn_b)
    render_diff(console, diff, f"{job_a} turn {turn_a} → {job_b} turn {turn_b}")
    return diff_report(diff, job_a, turn_a, job_b, turn_b)


__all__ = ["DiffItem", "DiffReport", "DiffSide", "EditFlags", "ForkNotStarted", "diff_command",
           "diff_report", "explain_diff", "fork_command", "fork_job", "render_diff", "start_fork",
           "turn_manifest", "turn_request", "wait_forked"]
