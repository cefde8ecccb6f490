"""Signed commands are never replayable: a resolve names its block and has an age limit,
every verified nonce is remembered, and a command is bound to the job's first run.

Each command is signed on the client with the deterministic test keys
(``tests.workflows.jobkit.reviewer_key``) and sent to a real worker on the dev server, as
Updates through ``client.jobs`` or as the raw ``resolve`` signal an attacker with
namespace access can send; nothing is faked. SECURITY.md §1.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.service import RPCError

from activities.runtime import ActivityRuntime
from client import jobs
from client.errors import CommandRefused
from contracts.job_spec import JobSpec
from contracts.signing import sign
from contracts.workflow_messages import (
    MAX_RESOLVE_AGE,
    CancelInput,
    ResearchJobInput,
    ResolveInput,
)
from tests.workflows.jobkit import (
    published_files,
    resolve,
    review,
    reviewer_key,
    running_worker,
    start_job,
    wait_status,
)
from workflows.research_job import ResearchJobWorkflow

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


def _signed_resolve(job_id: str, resolution: ResolveInput, *, signer: str = "ops",
                    now: datetime | None = None) -> ResolveInput:
    return resolution.model_copy(update={"signature": sign(
        reviewer_key(signer), "resolve", job_id, resolution.signed_body(), signer=signer,
        now=now)})


async def _refused(client: Client, job_id: str, signed: Any, needle: str) -> None:
    with pytest.raises(CommandRefused, match=needle):
        await jobs._signed_update(client, job_id, ResearchJobWorkflow.resolve_blocked, signed)


async def _next_block(handle: Any, after: str | None, timeout: float = 60.0) -> Any:
    """The job's status once it is blocked in another block than ``after``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        status = await handle.query(ResearchJobWorkflow.status)
        if status.status == "blocked" and status.block != after:
            return status
        await asyncio.sleep(0.2)
    raise AssertionError(f"no block after {after!r} within {timeout} s")


def _blocked_spec(make_spec: Callable[..., JobSpec]) -> JobSpec:
    """A job that blocks on its context budget until an operator raises it."""
    return make_spec(model={"context_limit": 5000},
                     review={"reviewers": ["alice"], "operators": ["ops"], "timeout": "10m"})


async def test_a_resolve_resolves_only_its_own_block_and_only_while_fresh(
        client: Client, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    """Two operators sign a resolution of the first block; one is applied and the job
    blocks again (the raised limit is still too small). The other one — never sent, its
    nonce unseen — is refused at the second block because it names the first; one naming a
    block that does not exist is refused; one for the right block but signed longer than
    ``MAX_RESOLVE_AGE`` ago is refused; a fresh one for the current block is applied."""
    spec = _blocked_spec(make_spec)
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        first = await wait_status(handle, {"blocked"})
        assert first.block is not None and first.block.endswith("#1"), first.block
        run = handle.first_execution_run_id
        too_small = ResolveInput(action="raise_budget", context_limit=5001, block=first.block,
                                 first_run_id=run)
        kept_back = _signed_resolve(spec.job_id, too_small.model_copy(update={"note": "b"}))
        await jobs._signed_update(client, spec.job_id, ResearchJobWorkflow.resolve_blocked,
                                  _signed_resolve(spec.job_id, too_small))
        second = await _next_block(handle, first.block)
        assert second.status == "blocked" and second.block != first.block
        assert second.block is not None and second.block.endswith("#2"), second.block
        # the unsent resolution of the first block, replayed after that block ended
        await _refused(client, spec.job_id, kept_back, "names block")
        # a block the job never had
        other = too_small.model_copy(update={"block": "plan-99:minimums_exceed_budget#7"})
        await _refused(client, spec.job_id, _signed_resolve(spec.job_id, other), "names block")
        # the current block, but signed more than MAX_RESOLVE_AGE ago
        raise_limit = ResolveInput(action="raise_budget", context_limit=40_000,
                                   block=second.block, first_run_id=run)
        old = datetime.now(UTC) - MAX_RESOLVE_AGE - timedelta(minutes=1)
        await _refused(client, spec.job_id, _signed_resolve(spec.job_id, raise_limit, now=old),
                       "expired")
        # naming no block at all (a client that never read the status)
        await _refused(client, spec.job_id, _signed_resolve(
            spec.job_id, raise_limit.model_copy(update={"block": None})), "names no block")
        still = await handle.query(ResearchJobWorkflow.status)
        assert still.status == "blocked" and still.block == second.block
        await resolve(client, spec.job_id, ResolveInput(action="raise_budget",
                                                        context_limit=40_000), signer="ops")
        status = await wait_status(handle, {"awaiting_review", "blocked"})
        assert status.status == "awaiting_review", status.blocked_reason
        await jobs.cancel_job(client, spec.job_id, signer="ops", key=reviewer_key("ops"))
        assert (await handle.result()).status == "cancelled"


async def test_a_signed_resolve_signal_sent_while_not_blocked_is_used_up(
        client: Client, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    """A signed resolution naming the block the job is about to enter arrives as a signal
    before it is blocked: it is ignored, and its nonce remembered, so the same signed
    command sent again once that block exists is refused as a replay. The signal is
    delivered before any worker runs the job, so the job is certainly not blocked yet."""
    spec = _blocked_spec(make_spec)
    handle = await start_job(client, spec, task_queue)  # no worker yet
    predicted = ResolveInput(action="raise_budget", context_limit=40_000,
                             block="plan-1:minimums_exceed_budget#1",
                             first_run_id=handle.first_execution_run_id)
    early = _signed_resolve(spec.job_id, predicted)
    await handle.signal(ResearchJobWorkflow.resolve, early)
    async with running_worker(client, runtime, task_queue):
        status = await wait_status(handle, {"blocked"})
        assert status.block == predicted.block, status.block  # the prediction was right
        assert status.refused_commands == 0
        await _refused(client, spec.job_id, early, "replayed")
        still = await handle.query(ResearchJobWorkflow.status)
        assert still.status == "blocked"
        await jobs.cancel_job(client, spec.job_id, signer="ops", key=reviewer_key("ops"))
        assert (await handle.result()).status == "cancelled"


async def test_a_reused_job_id_accepts_no_command_signed_for_the_earlier_job(
        client: Client, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    """Job A publishes; a cancel an operator signed for it afterwards never reaches it (A is
    over), so no job remembers its nonce. A second workflow with the same id, started
    directly through the Temporal client, stops for an operator (its spec store refuses the
    reused id, so it never replaces A's article); A's cancel, and a resolve naming B's block
    but signed for A's first run, are refused there; B's own signed abandon ends it
    ``failed``."""
    spec = make_spec(review={"reviewers": ["alice"], "operators": ["ops"], "timeout": "10m"})
    async with running_worker(client, runtime, task_queue):
        first = await start_job(client, spec, task_queue)
        await wait_status(first, {"awaiting_review"})
        await review(client, spec.job_id, "approve", reviewer="alice")
        assert (await first.result()).status == "published"
        [article] = published_files(spec)
        published = article.read_bytes()
        run_a = first.first_execution_run_id
        assert run_a is not None
        late = CancelInput(reason="stop it", first_run_id=run_a)
        late = late.model_copy(update={"signature": sign(
            reviewer_key("ops"), "cancel", spec.job_id, late.signed_body(), signer="ops")})
        with pytest.raises(RPCError, match="already completed"):  # A is over: never seen
            await jobs._signed_update(client, spec.job_id, ResearchJobWorkflow.cancel, late)

        second = await client.start_workflow(
            ResearchJobWorkflow.run, ResearchJobInput(spec=spec), id=spec.job_id,
            task_queue=task_queue, id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL)
        assert second.first_execution_run_id != run_a
        status = await wait_status(second, {"needs_operator"})
        assert "JobIdReused" in (status.blocked_reason or ""), status.blocked_reason
        assert status.block is not None
        with pytest.raises(CommandRefused, match="signed for an earlier job"):
            await jobs._signed_update(client, spec.job_id, ResearchJobWorkflow.cancel, late)
        stolen = ResolveInput(action="retry", block=status.block, first_run_id=run_a)
        with pytest.raises(CommandRefused, match="signed for an earlier job"):
            await jobs._signed_update(client, spec.job_id, ResearchJobWorkflow.resolve_blocked,
                                      _signed_resolve(spec.job_id, stolen))
        again = await second.query(ResearchJobWorkflow.status)
        assert again.status == "needs_operator" and again.block == status.block
        await resolve(client, spec.job_id, ResolveInput(action="abandon", note="reused id"),
                      signer="ops")
        with pytest.raises(WorkflowFailureError) as err:
            await second.result()
    assert "abandoned by ops" in str(err.value.cause), err.value.cause
    assert published_files(spec) == [article] and article.read_bytes() == published
