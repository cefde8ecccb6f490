"""The Temporal activity definitions, bound to one worker's ``ActivityRuntime``.

The workflow addresses activities by these names only, so this file is the one contract
between ``workflows/`` and the side-effecting code. Each definition heartbeats while it
runs (so a killed worker is noticed within the heartbeat timeout) and delegates to the
module that holds the logic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import activity

from activities import (
    checkpoint,
    context_activity,
    decide,
    draft,
    fork_state,
    publish,
    record_turn,
    store_activities,
    tool_call,
    web_refresh,
)
from activities.mcp import listing as mcp_listing
from activities.mcp.grants import grants_refusal as mcp_grants_refusal
from activities.providers import PROVIDERS
from activities.runtime import ActivityRuntime, heartbeating
from activities.telemetry import logged
from contracts import steps
from contracts.activity_messages import (
    ArtifactRef,
    AssembleContextInput,
    CheckpointInput,
    CheckpointResult,
    ContextRef,
    DecideInput,
    DecideResult,
    DraftInput,
    DraftResult,
    PathCheckInput,
    PathCheckResult,
    PlanInput,
    PublishInput,
    PublishResult,
    RecordReviewInput,
    RecordTurnInput,
    RecordTurnResult,
    RefreshWebPageInput,
    StoreJobSpecInput,
    ToolCallInput,
    ToolCallResult,
    WebPageRevisionResult,
)
from contracts.errors import PathOutsideRoots, WebUrlRefused
from contracts.fork import ForkStateInput, ForkStateResult
from contracts.job_spec import JobSpec
from contracts.model_endpoints import ModelEndpointRefused, endpoint_of
from contracts.path_check import verdict, with_allow_hint
from contracts.web_policy import check_job_urls

#: the job workflow's activities (each has its bound in ``temporal_config.ACTIVITY_LIMITS``);
#: every worker also runs ``check_job_paths_here`` for ``workflows.path_check``, which is no
#: step of a job (the names: ``contracts.steps``)
ACTIVITY_NAMES = steps.ACTIVITY_NAMES


#: what ``pressroom run`` is told when a worker's endpoint list lacks the job's ``base_url``
ENDPOINT_REFUSAL = ("model.base_url is not an endpoint this worker allows "
                    "(ModelEndpointRefused; the operator lists endpoints in "
                    "PRESSROOM_MODEL_ENDPOINTS)")


def endpoint_allowed(spec: JobSpec, runtime: ActivityRuntime) -> bool:
    """Whether this worker's endpoint list holds ``spec``'s ``model.base_url`` (a job
    without one uses the worker's default endpoint)."""
    if spec.model.base_url is None:
        return True
    try:
        endpoint_of(spec.model, runtime.endpoints, {})
    except ModelEndpointRefused:
        return False
    return True


async def _cpu_bound_model(runtime: ActivityRuntime, inp: DraftInput | DecideInput) -> bool:
    """Whether the job's provider computes here (see ``activities.offload.OFFLOADABLE``)."""
    spec = await runtime.spec_of(inp.job)
    return bool(getattr(PROVIDERS.get(spec.model.provider), "cpu_bound", False))


def build_activities(runtime: ActivityRuntime) -> list[Callable[..., Any]]:
    """All of Pressroom's activities, sharing ``runtime`` (one store per worker)."""

    @activity.defn(name="store_job_spec")
    async def store_job_spec(inp: StoreJobSpecInput) -> ArtifactRef:
        async with heartbeating(), logged(inp):
            try:
                return await store_activities.store_job_spec(runtime, inp)
            except PathOutsideRoots as exc:
                # say which flag of the worker would allow it (contracts.path_check)
                raise with_allow_hint(exc, inp.spec, runtime.roots, runtime.locations) from None

    @activity.defn(name="assemble_context")
    async def assemble_context(inp: AssembleContextInput) -> ContextRef:
        async with heartbeating(), logged(inp) as ids:
            if inp.stage == "research":  # the live servers are listed here, once per job
                await mcp_listing.ensure_tool_list(runtime, await runtime.spec_of(inp.job))
            ref = (await runtime.helpers.run("assemble_context", inp, ContextRef)
                   if runtime.helpers is not None
                   else await context_activity.assemble_context(runtime, inp))
            ids["manifest_id"] = ref.manifest_id
            return ref

    @activity.defn(name="write_plan")
    async def write_plan(inp: PlanInput) -> ArtifactRef:
        async with heartbeating(), logged(inp):
            return await store_activities.write_plan(runtime, inp)

    @activity.defn(name="draft")
    async def draft_article(inp: DraftInput) -> DraftResult:
        async with heartbeating(), logged(inp):
            if runtime.helpers is not None and await _cpu_bound_model(runtime, inp):
                return await runtime.helpers.run("draft", inp, DraftResult)
            return await draft.draft(runtime, inp)

    @activity.defn(name="record_review")
    async def record_review(inp: RecordReviewInput) -> ArtifactRef:
        async with heartbeating(), logged(inp):
            return await store_activities.record_review(runtime, inp)

    @activity.defn(name="write_checkpoint")
    async def write_checkpoint(inp: CheckpointInput) -> CheckpointResult:
        async with heartbeating(), logged(inp):
            return await checkpoint.write_checkpoint(runtime, inp)

    @activity.defn(name="publish")
    async def publish_article(inp: PublishInput) -> PublishResult:
        async with heartbeating(), logged(inp):
            return await publish.publish(runtime, inp)

    @activity.defn(name="run_tool")
    async def run_tool(inp: ToolCallInput) -> ToolCallResult:
        async with heartbeating(), logged(inp):
            return await tool_call.run_tool_call(runtime, inp)

    @activity.defn(name="decide")
    async def decide_turn(inp: DecideInput) -> DecideResult:
        async with heartbeating(), logged(inp):
            if runtime.helpers is not None and await _cpu_bound_model(runtime, inp):
                return await runtime.helpers.run("decide", inp, DecideResult)
            return await decide.decide(runtime, inp)

    @activity.defn(name="record_turn")
    async def record_research_turn(inp: RecordTurnInput) -> RecordTurnResult:
        async with heartbeating(), logged(inp):
            return await record_turn.record_turn(runtime, inp)

    @activity.defn(name="refresh_web_page")
    async def refresh_web_page(inp: RefreshWebPageInput) -> WebPageRevisionResult:
        async with heartbeating(), logged(inp):
            return await web_refresh.refresh_web_page(runtime, inp)

    @activity.defn(name="fork_state")
    async def fork_job_state(inp: ForkStateInput) -> ForkStateResult:
        async with heartbeating(), logged(inp):
            return await fork_state.fork_state(runtime, inp)

    @activity.defn(name="check_job_paths_here")
    async def check_job_paths_here(inp: PathCheckInput) -> PathCheckResult:
        # the check store_job_spec runs, with this worker's roots (contracts.path_check)
        async with heartbeating():
            refused = mcp_grants_refusal(inp.spec, runtime.mcp_servers)  # docs/mcp.md
            if refused is not None:
                return refused
            found = verdict(inp.spec, runtime.roots, runtime.locations)
            if found.refusal is None and not endpoint_allowed(inp.spec, runtime):
                # the submitter hears that, not this worker's list (SECURITY.md)
                return PathCheckResult(refusal=ENDPOINT_REFUSAL)
            if found.refusal is None:
                try:  # and its live web pages against this worker's allow-list
                    check_job_urls(inp.spec.sources, runtime.web_policy)
                except WebUrlRefused as exc:
                    return PathCheckResult(refusal=exc.message)
            return found

    return [store_job_spec, assemble_context, write_plan, draft_article,
            record_review, write_checkpoint, publish_article, run_tool, decide_turn,
            record_research_turn, refresh_web_page, fork_job_state, check_job_paths_here]
