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
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError

import artifacts
from contracts.errors import JobError
from contracts.fork import ForkError, ForkRefused, fork_spec
from contracts.fork_reader import parent_state, plan_artifact_id
from contracts.job_spec import JobSpec
from contracts.lineage import ForkEdits, ForkLineage, ForkPlan
from contracts.signing import sign
from contracts.source_specs import SourceSpec
from contracts.workflow_messages import JobStatus
from workflows import client as jobs
from workflows.research_job import ResearchJobWorkflow

#: the CLI's principal in the store (``workflows.commands.CLI_PRINCIPAL``)
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
    handle = await jobs.start_job(client, spec, task_queue=task_queue)
    return await wait_forked(handle, turn, wait_seconds)


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


__all__ = ["EditFlags", "ForkNotStarted", "fork_job", "wait_forked"]
