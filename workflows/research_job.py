"""``ResearchJobWorkflow``: plan → research → draft → review → (research → revise → review)*
→ publish.

Research is a loop of turns (``_research_turn``: assemble, decide, the tool calls in
parallel, record) until a checked ``finish``, the turn limit or the token budget; it
continues as new every ``research.turns_per_run`` turns (docs/architecture.md#the-research-loop).

Deterministic orchestration only. Every side effect is an activity, addressed by name so
this module never imports I/O code into the sandbox. The workflow remembers references
(``JobState``), never content; each step begins with ``assemble_context`` and a blocked
assembly stops the job (no model call) until a ``resolve`` signal or the block timeout —
the policy's ``blocking.block_timeout``, carried on the blocked ``ContextRef``, shortened
by the job spec's ``block_timeout`` when that is smaller. No activity retries for ever
(``temporal_config.ACTIVITY_LIMITS``; permanent errors get one attempt,
``contracts/failures.py``): one that fails for good stops the job as ``needs_operator:
<reason>`` until a signed ``retry`` runs it again or ``abandon`` ends the job ``failed``
(docs/architecture.md#failed-steps-bounded-retries-and-needs_operator).
Review is an Update whose validator rejects stale, foreign, unsigned or replayed decisions
before anything is recorded; the review wait always has a timer. Resolutions and cancels are
signed too (a listed reviewer or operator; contracts/signing.py, SECURITY.md): the
``resolve_blocked`` and ``cancel`` Updates refuse a bad signature to the caller, the older
``resolve`` signal drops one and counts it. Anyone with namespace access can still cancel
or terminate a workflow through Temporal itself; that stops a job but can never publish.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any, Literal, NoReturn, TypeVar

from temporalio import workflow
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    RetryState,
)

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

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
        JobRef,
        PlanInput,
        PlannedCall,
        PublishInput,
        PublishResult,
        RecordReviewInput,
        RecordTurnInput,
        RecordTurnResult,
        RefreshWebPageInput,
        ResearchInput,
        ResearchResult,
        StepState,
        StoreJobSpecInput,
        ToolCallInput,
        ToolCallResult,
        WebPageRevisionResult,
    )
    from contracts.fork import ForkRefused, ForkStateInput, ForkStateResult, check_signature
    from contracts.job_spec import JobSpec
    from contracts.mcp_servers import arguments_sha256
    from contracts.ownership import owns
    from contracts.pricing import format_usd as _usd
    from contracts.pricing import micro_usd as _micro_usd
    from contracts.signing import Purpose, Signature, SignatureError, normalize_name, verify
    from contracts.steps import AnyActivityName
    from contracts.workflow_messages import (
        MAX_RESOLVE_AGE,
        SEEN_NONCES_KEPT,
        CancelInput,
        JobResult,
        JobState,
        JobStatus,
        PendingDraft,
        PendingToolApproval,
        ResearchJobInput,
        ResolveInput,
        ReviewInput,
        ReviewResult,
        ToolApprovalInput,
        ToolCallSummary,
        ToolRejectionInput,
    )
    from workflows.temporal_config import (
        ACTIVITY_LIMITS,
        WORKFLOW_TYPE,
        activity_retry_policy,
        activity_schedule_to_close,
    )
    from workflows.visibility import (
        PRESSROOM_STATUS,
        current_details,
        reason_code,
        search_attribute_updates,
    )

R = TypeVar("R", bound=BaseModel)

_MANIFEST_IDS_KEPT = 200
_MAX_COMMENTS = 50
_MAX_COMMENT_CHARS = 20_000
#: every round's comments travel with the references: keep the newest this many
_ALL_COMMENTS_KEPT = 100
#: ``status`` shows this many of the latest tool calls
_LAST_CALLS_KEPT = 8
#: the patch id that turns the research stage into the loop; histories recorded before it
#: replay the one-shot acquisition they ran
RESEARCH_LOOP_PATCH = "research-loop"
#: the patch id under which the ``resolve`` signal requires a signature; histories recorded
#: before it replay their unsigned resolutions
SIGNED_COMMANDS_PATCH = "signed-commands"
#: the patch id under which an activity that failed for good (its bound reached, or a
#: permanent error) stops the job for an operator instead of failing it; histories recorded
#: before it replay their failures
NEEDS_OPERATOR_PATCH = "needs-operator"
#: the patch id under which continue-as-new is also checked after each resolution of a
#: block (a step blocked and resolved many times used to grow one history without bound)
ROLLOVER_AFTER_RESOLVE_PATCH = "continue-as-new-after-resolve"
#: the patch id under which the job upserts its typed search attributes (stage, status,
#: research turn and tokens, a blocked or needs_operator job's reason code;
#: workflows/visibility.py) whenever they change; histories recorded before it replay
#: without the upserts
SEARCH_ATTRIBUTES_PATCH = "search-attributes"
#: the patch id under which a continued run checks the state it carried against the job's
#: stored spec before anything else (``check_carried_state``), and the job's first run id
#: travels with its spec and its article (SECURITY.md, "Tenant isolation"); histories
#: recorded before it replay without the check
CARRIED_CHECK_PATCH = "carried-state-check"
#: the patch id under which the ``resolve`` signal remembers the nonce of every verified
#: signature, also one that arrives while nothing is blocked, and holds a resolution to the
#: block it names, its age and the job's first run like the ``resolve_blocked`` Update
#: (SECURITY.md §1); histories recorded before it replay their signals as they were
SIGNED_BINDING_PATCH = "signed-command-binding"
#: the patch id under which the research loop also stops at the job's cost budget
#: (``research.cost_budget_usd``; docs/configuration.md#cost-in-money); only a job that
#: sets one asks, so histories recorded before replay unchanged
COST_BUDGET_PATCH = "cost-budget"
#: ``resolve --refresh-source`` on a live web page stores a new revision of it first
WEB_PAGE_REFRESH_PATCH = "web-page-refresh"
#: context.policy.DEFAULT_BLOCK_TIMEOUT, for refs that carry no policy value
_DEFAULT_BLOCK_TIMEOUT = timedelta(hours=24)
#: a ``needs_operator`` reason is cut to this many characters
_MAX_REASON_CHARS = 500


def _unapproved(call: PlannedCall, approvals: dict[str, ToolApprovalInput | None],
                rejections: dict[str, str]) -> str | None:
    """The refusal of a write call a reviewer refused, or no reviewer approved in time
    (docs/mcp.md)."""
    if call.call_id in rejections:
        return (f"approval_refused: {rejections[call.call_id]} {call.tool_name} call "
                f"{call.call_id}; it was not run")
    if call.call_id in approvals and approvals[call.call_id] is None:
        return (f"approval_required: no listed reviewer approved {call.tool_name} call "
                f"{call.call_id} within the review timeout; it was not run")
    return None


@workflow.defn(name=WORKFLOW_TYPE)
class ResearchJobWorkflow:
    @workflow.init
    def __init__(self, inp: ResearchJobInput) -> None:
        self._spec: JobSpec = inp.spec
        # A carried state is the job's own memory only on its own continue-as-new, which a
        # client start can never claim (``continued_run_id`` is the server's). Anything
        # else is a made-up state — another job's draft, another tenant's manifests — and
        # is neither kept nor shown: the status query answers from an empty state and the
        # run ends at once (SECURITY.md, "Tenant isolation").
        self._forged_carry = (inp.carried is not None
                              and workflow.info().continued_run_id is None)
        self._state: JobState = (inp.carried.model_copy(deep=True)
                                 if inp.carried is not None and not self._forged_carry
                                 else JobState())
        self._resolutions: list[ResolveInput] = []
        self._review_busy = False
        #: the latest signed ``retry``/``abandon`` for a step that needs an operator, and
        #: how many have arrived (every waiting step acts on the next one)
        self._operator_action: ResolveInput | None = None
        self._operator_round = 0
        #: steps waiting for an operator, and the status and reason to go back to when the
        #: last of them is retried
        self._operator_waiting = 0
        self._resume: tuple[Any, str | None, str | None] = ("running", None, None)

    # ------------------------------------------------------------------ run
    @workflow.run
    async def run(self, inp: ResearchJobInput) -> JobResult:
        if self._forged_carry:
            self._state.status = "failed"
            raise ApplicationError(
                f"refused: job {self._spec.job_id} was started with a carried state, which a "
                "job accepts only from its own continue-as-new; nothing was read",
                type="ForgedCarriedState", non_retryable=True)
        # The stages run as a task so an accepted ``cancel`` Update can stop them wherever
        # they wait. A task adds no command, so histories recorded before replay unchanged.
        stages = asyncio.ensure_future(self._run_stages())
        try:
            await workflow.wait_condition(
                lambda: stages.done() or self._state.cancelled_by is not None)
        except asyncio.CancelledError:  # Temporal's own cancel: stop the stages with it
            await self._stop(stages)
            raise
        if stages.done():
            return stages.result()
        await self._stop(stages)
        self._state.status = "cancelled"
        self._sync_visibility()
        return self._result(reason=f"cancelled by {self._state.cancelled_by}")

    @staticmethod
    async def _stop(stages: asyncio.Future[JobResult]) -> None:
        stages.cancel()
        try:
            await stages
        except asyncio.CancelledError:
            pass
        except ActivityError as failed:  # the activity the stages awaited was cancelled
            if not isinstance(failed.cause, CancelledError):
                raise

    async def _run_stages(self) -> JobResult:
        state = self._state
        if (workflow.info().continued_run_id is not None and state.refs is not None
                and workflow.patched(CARRIED_CHECK_PATCH)):
            await self._check_carried()
        while True:
            self._sync_visibility()  # the last stage, turn or token count, before any wait
            self._maybe_continue_as_new()
            if state.stage == "start" and self._spec.lineage is not None:
                await self._start_fork()  # a fork's first state is its parent's turn N
            elif state.stage == "start":
                ref = await self._act("store_job_spec", self._spec_input(), ArtifactRef)
                state.refs = StepState(job_spec=ref)
                state.stage = "plan"
            elif state.stage == "plan":
                ctx = await self._assemble("plan")
                plan = await self._act("write_plan", PlanInput(
                    job=self._job(), context=ctx,
                    parent_revision=self._refs.plan.revision if self._refs.plan else None,
                ), ArtifactRef)
                self._set_refs(plan=plan)
                await self._checkpoint("plan", ["research the required sources"])
                state.stage = "research"
            elif state.stage == "research":
                if self._agent_mode():
                    if not await self._research_turn():
                        continue  # next turn (continue-as-new is checked in between)
                else:
                    await self._research(list(self._spec.sources))
                await self._checkpoint("research", ["draft the article from admitted evidence"])
                state.stage = "revise" if state.revision_round > 0 else "draft"
            elif state.stage in ("draft", "revise"):
                await self._draft(state.stage)
                await self._checkpoint(state.stage, ["wait for a reviewer's decision"])
                state.stage = "review"
            elif state.stage == "review":
                outcome = await self._await_review()
                if outcome is not None:
                    return outcome
            elif state.stage == "publish":
                return await self._publish()
            else:  # "done" can only be reached by a bug; fail loudly, never loop
                raise ApplicationError(f"unexpected stage {state.stage!r}", non_retryable=True)

    # --------------------------------------------------------------- stages
    async def _start_fork(self) -> None:
        """A forked job's first step (docs/architecture.md#forking-a-job): the signed fork
        request is verified here first (a listed reviewer or operator of the spec, which
        ``fork_state`` proves is the parent's with only the signed edits), then
        ``fork_state`` copies the parent's state after turn N into the fork's own
        artifacts, and the research loop goes on from turn N+1. Only a spec with a lineage
        reaches this path, so no history recorded before it changes; a refusal ends the
        fork ``failed`` with its one line, nothing of the parent written."""
        lineage, state = self._spec.lineage, self._state
        assert lineage is not None
        try:
            check_signature(lineage, self._spec, now=workflow.now())
        except ForkRefused as refused:
            state.status = "failed"
            self._sync_visibility()
            raise ApplicationError(refused.message, type="ForkRefused",
                                   non_retryable=True) from None
        assert lineage.signature is not None
        self._remember(lineage.signature)
        while True:
            try:
                forked = await self._act("fork_state", ForkStateInput(
                    spec=self._spec, first_run_id=self._first_run_id()), ForkStateResult,
                    stop_for_operator=False)
                break
            except ActivityError as failed:
                cause = failed.cause
                if isinstance(cause, CancelledError):
                    raise
                if isinstance(cause, ApplicationError) and cause.type == "ForkRefused":
                    state.status = "failed"
                    self._sync_visibility()
                    raise ApplicationError(cause.message, type="ForkRefused",
                                           non_retryable=True) from None
                await self._needs_operator("fork_state", failed)
        state.refs = forked.refs
        research = state.research
        research.turn = research.round_start_turn = research.run_start_turn = forked.turn
        research.covered_topics = list(forked.covered_topics)
        state.checkpoint_seq = 1 if forked.checkpoint_id else 0
        state.stage = "research"
        await self._refresh_live_pages([src for src in self._spec.sources
                                        if src.name in lineage.edits.refresh_sources])

    async def _research(self, sources: list[Any]) -> None:
        """The retired one-shot acquisition (``research.mode: acquire``): kept so that the
        histories of jobs started with it replay; no job can be submitted with it now, and
        no worker registers the ``research`` activity (README.md, "Upgrading")."""
        ctx = await self._assemble("research")
        researched = await self._act("research", ResearchInput(
            job=self._job(), context=ctx, state=self._refs, sources=sources,
            as_of=workflow.now().isoformat(), turn=self._state.step_counter,
        ), ResearchResult)
        self._set_refs(source_records=researched.source_records,
                       evidence_pack=researched.evidence_pack)
        if not self._agent_mode():  # the loop's history is its own chunks (record_turn)
            self._set_refs(tool_records=researched.tool_records)

    def _agent_mode(self) -> bool:
        """Whether research runs as the loop of model turns
        (docs/architecture.md#the-research-loop)."""
        return self._spec.research.mode == "agent" and workflow.patched(RESEARCH_LOOP_PATCH)

    async def _research_turn(self) -> bool:
        """One research turn — assemble, decide, the tool calls (in parallel), record — or
        a stop. True once the loop is done: ``finish`` with every topic covered, the turn
        limit, or what was gathered accepted by ``resolve``."""
        research, limits = self._state.research, self._spec.research
        if research.token_budget is None:
            research.token_budget = limits.token_budget
        budget = research.token_budget
        if research.turn - research.round_start_turn >= limits.max_turns:
            research.stop_reason = "turn_limit"
            return True
        if research.tokens_used >= budget:
            return await self._research_blocked(
                f"budget_exhausted ({research.tokens_used} of {budget} tokens used)")
        if self._cost_exhausted():
            return await self._research_blocked(
                f"budget_exhausted ({_usd(research.cost_micro_usd)} of "
                f"{_usd(research.cost_budget_micro_usd or 0)} cost budget used)")
        turn = research.turn + 1
        ctx = await self._assemble("research", turn=turn)
        research.block_timeout_s = ctx.block_timeout_s
        try:
            decided = await self._act("decide", DecideInput(job=self._job(), context=ctx,
                                                            turn=turn),
                                      DecideResult, stop_for_operator=False)
        except ActivityError as failed:
            if isinstance(failed.cause, CancelledError):
                raise  # the job is being cancelled: not a failure of the model
            # a model that keeps failing stops the job for a human, never retries for ever
            cause = str(failed.cause or failed)
            return await self._research_blocked(f"model_call_failed ({cause[:300]})")
        research.tokens_used += decided.input_tokens + decided.output_tokens
        research.cost_micro_usd += decided.cost_micro_usd or 0  # the worker priced it
        if decided.cost_micro_usd is None:
            research.unpriced_calls += 1
        # a write tool's call waits for its signed approval (none in a job without one)
        approvals = {call.call_id: await self._tool_approval(call, turn)
                     for call in decided.calls if call.needs_approval and call.refusal is None}
        results: list[ToolCallResult] = list(await asyncio.gather(*(
            self._act("run_tool", ToolCallInput(
                job=self._job(), call_id=call.call_id, tool_name=call.tool_name,
                arguments=call.arguments, turn=turn,
                refusal=call.refusal or _unapproved(call, approvals,
                                                    self._state.tool_rejections),
                approval=approvals.get(call.call_id),
            ), ToolCallResult) for call in decided.calls)))
        recorded = await self._act("record_turn", RecordTurnInput(
            job=self._job(), turn=turn, state=self._refs, results=results,
            as_of=workflow.now().isoformat(),
        ), RecordTurnResult)
        self._set_refs(tool_records=recorded.tool_records, agent_plan=recorded.agent_plan,
                       notes=recorded.notes or self._refs.notes)
        research.turn = turn
        covered = [r.note_topic for r in results if r.note_topic]
        research.covered_topics = list(dict.fromkeys([*research.covered_topics, *covered]))
        research.rejected_calls += sum(r.status == "error" for r in results)
        summaries = [ToolCallSummary(turn=turn, call_id=call.call_id, tool_name=call.tool_name,
                                     status=result.status, result_chars=result.result_chars,
                                     rejection=result.rejection)
                     for call, result in zip(decided.calls, results, strict=True)]
        research.last_calls = [*research.last_calls, *summaries][-_LAST_CALLS_KEPT:]
        workflow.set_current_details(
            f"research turn {turn} of at most {research.round_start_turn + limits.max_turns}; "
            f"tokens {research.tokens_used} of {research.token_budget}; topics with a "
            f"verified note {len(research.covered_topics)} of {len(self._spec.topics)}; "
            "calls " + ", ".join(f"{c.tool_name} {c.status}" for c in summaries))
        first_compaction = ctx.history_transformed and not research.compacted_once
        research.compacted_once = research.compacted_once or ctx.history_transformed
        if first_compaction or turn % limits.checkpoint_every == 0:
            await self._checkpoint("research", ["next research turn"], note=f"turn {turn}")
        finished = any(call.tool_name == "finish" and result.status == "success"
                       for call, result in zip(decided.calls, results, strict=True))
        if not (finished or not decided.calls):
            return False
        research.stop_reason = "finished" if finished else "model_stopped"
        uncovered = [t.name for t in self._spec.topics if t.name not in research.covered_topics]
        if not uncovered:
            return True
        # finish is checked, not trusted: a topic without a verified note stops the job
        return await self._research_blocked(
            f"required_evidence_missing (no verified note for: {', '.join(uncovered)})")

    def _cost_exhausted(self) -> bool:
        """Whether the research turns' cost reached the job's cost budget. Only a job with
        one asks the patch, so older histories (none had a cost budget) replay unchanged;
        the budget is the spec's until ``resolve --cost-budget`` raises it."""
        research, limit = self._state.research, self._spec.research.cost_budget_usd
        if limit is None or not workflow.patched(COST_BUDGET_PATCH):
            return False
        if research.cost_budget_micro_usd is None:
            research.cost_budget_micro_usd = _micro_usd(limit)
        return research.cost_micro_usd >= research.cost_budget_micro_usd

    async def _research_blocked(self, reason: str) -> bool:
        """Stop for a human; True if they accepted what was gathered, False to go on
        researching (a raised budget, a new source, a retry)."""
        research = self._state.research
        timeouts = [t for t in (
            timedelta(seconds=research.block_timeout_s) if research.block_timeout_s else None,
            self._spec.block_timeout) if t is not None]
        await self._block("research", reason, min(timeouts, default=_DEFAULT_BLOCK_TIMEOUT))
        accepted = False
        for resolution in list(self._resolutions):
            if resolution.action == "accept_gathered":
                accepted = True
                self._resolutions.remove(resolution)
            elif resolution.action == "raise_budget" and resolution.token_budget:
                research.token_budget = resolution.token_budget
                if not (resolution.evidence_budget or resolution.context_limit):
                    self._resolutions.remove(resolution)
            elif resolution.action == "raise_budget" and resolution.cost_budget_micro_usd:
                research.cost_budget_micro_usd = resolution.cost_budget_micro_usd
                if not (resolution.evidence_budget or resolution.context_limit):
                    self._resolutions.remove(resolution)
        await self._apply_resolutions()
        if accepted:
            research.stop_reason = "accepted_gathered"
            return True
        research.stop_reason = None
        return False

    async def _draft(self, stage: str) -> None:
        state = self._state
        ctx = await self._assemble(stage)
        drafted = await self._act("draft", DraftInput(
            job=self._job(), context=ctx, state=self._refs, round=state.revision_round,
        ), DraftResult)
        self._set_refs(draft=drafted.draft)
        state.pending_draft = PendingDraft(
            revision=drafted.draft.revision, content_hash=drafted.draft.content_hash,
            summary=drafted.summary, artifact_id=drafted.draft.artifact_id,
            drafted_at=workflow.now().isoformat(),
        )

    async def _await_review(self) -> JobResult | None:
        state = self._state
        state.status = "awaiting_review"
        state.review_decision = None
        self._sync_visibility()
        timeout = self._spec.review.timeout
        try:
            await workflow.wait_condition(lambda: state.review_decision is not None,
                                          timeout=timeout)
        except TimeoutError:
            # A decision being recorded right now wins over the timer that fired meanwhile.
            await workflow.wait_condition(lambda: not self._review_busy)
            if state.review_decision is None:
                state.status = "expired"
                self._sync_visibility()
                await self._checkpoint("review", [], note="review timed out; not published")
                return self._result(reason=f"no review within {timeout}")
        decision = state.review_decision
        if decision == "approve":
            state.status = "running"
            state.stage = "publish"
        elif decision == "request_changes":
            state.status = "running"
            state.revision_round += 1
            if self._agent_mode():  # the comments re-open research (then revise)
                state.research.round_start_turn = state.research.turn
                state.research.stop_reason = None
                state.stage = "research"
            else:
                state.stage = "revise"
        else:
            state.status = "rejected"
            self._sync_visibility()
            await self._checkpoint("review", [], note="rejected by reviewer")
            return self._result(reason="rejected by reviewer")
        return None

    async def _publish(self) -> JobResult:
        state = self._state
        ctx = await self._assemble("publish")
        refs = self._refs
        if refs.draft is None or refs.review is None:
            raise ApplicationError("publish reached without a draft and a review",
                                   non_retryable=True)
        state.receipt = await self._act("publish", PublishInput(
            job=self._job(), context=ctx, draft=refs.draft, review=refs.review,
            first_run_id=self._first_run_id(),
        ), PublishResult)
        state.status = "published"
        state.stage = "done"
        self._sync_visibility()
        await self._checkpoint("publish", [], note=f"published to {state.receipt.location}")
        return self._result()

    # ------------------------------------------------------------- assembly
    async def _assemble(self, stage: str, turn: int = 0) -> ContextRef:
        state = self._state
        while True:
            state.step_counter += 1
            step_id = f"{stage}-{state.step_counter}"
            ref = await self._act("assemble_context", AssembleContextInput(
                job=self._job(), step_id=step_id, stage=stage,
                state=self._refs, as_of=workflow.now().isoformat(), turn=turn,
            ), ContextRef)
            state.manifest_ids = [*state.manifest_ids, ref.manifest_id][-_MANIFEST_IDS_KEPT:]
            # replay-safe (not logged while replaying); the ids for a JSON log line
            workflow.logger.info("%s step %s %s", stage, step_id, ref.status, extra={
                "job_id": workflow.info().workflow_id, "step_id": step_id,
                "manifest_id": ref.manifest_id})
            if ref.status == "ready":
                state.status, state.blocked_reason = "running", None
                return ref
            reason = ref.blocked_reason or "blocked"
            if ref.blocked_detail:
                reason = f"{reason} ({ref.blocked_detail})"
            await self._block(stage, reason, self._block_timeout(ref))
            await self._apply_resolutions()
            if workflow.patched(ROLLOVER_AFTER_RESOLVE_PATCH):
                # a step blocked and resolved again and again must not grow one history
                # without bound: the next run starts this stage over (assembly first)
                self._maybe_continue_as_new()

    async def _block(self, stage: str, reason: str, timeout: timedelta) -> None:
        """Wait, blocked, for a ``resolve`` (the caller applies it) or fail at ``timeout``."""
        state = self._state
        state.status, state.blocked_reason = "blocked", reason
        self._name_block(stage)
        self._sync_visibility()
        await self._checkpoint(stage, ["resolve the block"], note=f"blocked: {reason}")
        try:
            await workflow.wait_condition(lambda: bool(self._resolutions), timeout=timeout)
        except TimeoutError:
            state.status = "failed"
            self._sync_visibility()
            await self._checkpoint(stage, [], note=f"failed: {reason}")
            raise ApplicationError(f"failed: {reason}", type="JobBlocked",
                                   non_retryable=True) from None
        abandon = next((r for r in self._resolutions if r.action == "abandon"), None)
        if abandon is not None:
            self._resolutions.clear()
            await self._end_abandoned(stage, reason, abandon)
        state.status, state.blocked_reason = "running", None
        self._sync_visibility()

    async def _apply_resolutions(self) -> None:
        to_acquire: list[Any] = []
        while self._resolutions:
            r = self._resolutions.pop(0)
            if r.action == "add_source" and r.source is not None:
                names = [src.name for src in self._spec.sources]
                if r.source.name in names:  # same name: replace the spec, then refresh it
                    sources = [r.source if src.name == r.source.name else src
                               for src in self._spec.sources]
                else:
                    sources = [*self._spec.sources, r.source]
                self._spec = self._spec.model_copy(update={"sources": sources})
                # activities read the spec from the store: store the new revision first
                ref = await self._act("store_job_spec", self._spec_input(), ArtifactRef)
                self._set_refs(job_spec=ref)
                to_acquire.append(r.source)
            elif r.action == "refresh_source" and r.source_name:
                named = [src for src in self._spec.sources if src.name == r.source_name]
                await self._refresh_live_pages(named)
                to_acquire.extend(named)
            elif r.action == "raise_budget":
                if r.evidence_budget:
                    self._set_refs(evidence_budget=r.evidence_budget)
                if r.context_limit:
                    self._set_refs(context_limit=r.context_limit)
            elif r.action == "accept_revision" and r.canonical_key and r.revision:
                accepted = {**self._refs.accepted_revisions, r.canonical_key: r.revision}
                self._set_refs(accepted_revisions=accepted)
        if to_acquire and self._refs.evidence_pack is not None:
            await self._research(to_acquire)

    async def _refresh_live_pages(self, sources: list[Any]) -> None:
        """A live web page's reads use its stored revision
        (docs/architecture.md#live-web-pages): refreshing one fetches and stores a new one
        first. Only a job with a live page reaches the patch, so older histories replay
        unchanged."""
        for src in sources:
            if not src.live:
                continue
            if not workflow.patched(WEB_PAGE_REFRESH_PATCH):
                return
            self._state.step_counter += 1
            await self._act("refresh_web_page", RefreshWebPageInput(
                job=self._job(), source_name=src.name,
                write_id=f"refresh-{src.name}-{self._state.step_counter}"),
                WebPageRevisionResult)

    # ------------------------------------------------------------- handlers
    @workflow.update
    async def review(self, inp: ReviewInput) -> ReviewResult:
        state = self._state
        self._review_busy = True
        try:
            state.review_count += 1
            decision_id = f"{self._spec.job_id}-review-{state.review_count}"
            refs = self._refs
            assert refs.draft is not None
            if inp.signature is not None:
                self._remember(inp.signature)
            try:
                ref = await self._act("record_review", RecordReviewInput(
                    job=self._job(), decision_id=decision_id, decision=inp.decision,
                    reviewer=inp.reviewer, draft=refs.draft, destination=inp.destination,
                    comments=inp.comments, decided_at=workflow.now().isoformat(),
                    parent_revision=refs.review.revision if refs.review else None,
                    signature=inp.signature, first_run_id=inp.first_run_id,
                ), ArtifactRef, stop_for_operator=False)
            except ActivityError as failed:
                if isinstance(failed.cause, CancelledError):
                    raise
                # the decision is refused to its sender; the job keeps waiting for one (any
                # reviewer's) and its review timer runs on — the finally below frees it
                raise ApplicationError(
                    f"decision not recorded, the job still waits for one: "
                    f"{_failure_reason('record_review', failed, self._spec.model.max_attempts)}",
                    type="ReviewNotRecorded", non_retryable=True) from None
            comments = inp.comments if inp.decision == "request_changes" else []
            every_round = [*refs.all_review_comments, *comments][-_ALL_COMMENTS_KEPT:]
            self._set_refs(review=ref, review_comments=comments, all_review_comments=every_round)
            state.review_decision = inp.decision
            return ReviewResult(decision_id=decision_id, decision=inp.decision, review=ref)
        finally:
            self._review_busy = False

    @review.validator
    def _validate_review(self, inp: ReviewInput) -> None:
        state, spec = self._state, self._spec
        if (state.status != "awaiting_review" or self._review_busy
                or state.review_decision is not None):
            raise ValueError(
                f"job {spec.job_id} is not waiting for a review (status {state.status})")
        draft = state.pending_draft
        if draft is None:
            raise ValueError("no draft is pending review")
        if inp.draft_revision != draft.revision:
            raise ValueError(f"stale decision: it names draft revision {inp.draft_revision}, "
                             f"the pending draft is revision {draft.revision}")
        if inp.draft_hash != draft.content_hash:
            raise ValueError(f"stale decision: draft hash {inp.draft_hash} does not match the "
                             f"pending draft {draft.content_hash}")
        if inp.destination != spec.destination:
            raise ValueError(f"wrong destination {inp.destination!r}; this job publishes to "
                             f"{spec.destination!r}")
        reviewer = normalize_name(inp.reviewer)
        if reviewer == normalize_name(spec.principal.principal_id):
            raise ValueError(f"the job's own principal {inp.reviewer!r} can never review "
                             "its own draft")
        if reviewer not in {normalize_name(name) for name in spec.review.reviewer_names()}:
            raise ValueError(f"reviewer {inp.reviewer!r} is not allowed for this job")
        if inp.signature is not None and normalize_name(inp.signature.signer) != reviewer:
            raise ValueError(f"the decision names reviewer {inp.reviewer!r} but is signed by "
                             f"{inp.signature.signer!r}")
        drafted_at = (datetime.fromisoformat(draft.drafted_at) if draft.drafted_at else None)
        self._check_signature(inp.signature, "review", inp.signed_body(), operators=False,
                              not_before=drafted_at)
        self._check_first_run("review", inp.first_run_id)
        size = sum(len(c) for c in inp.comments)
        if len(inp.comments) > _MAX_COMMENTS or size > _MAX_COMMENT_CHARS:
            # comments travel in history and into every later draft step: keep them bounded
            raise ValueError(f"review comments too large: {len(inp.comments)} comments, "
                             f"{size} characters (limit {_MAX_COMMENTS} comments, "
                             f"{_MAX_COMMENT_CHARS} characters)")
        if inp.decision == "request_changes":
            if not [c for c in inp.comments if c.strip()]:
                raise ValueError("request_changes needs at least one comment")
            if state.revision_round >= spec.review.max_revisions:
                raise ValueError(f"all {spec.review.max_revisions} revision rounds are used; "
                                 "approve or reject")

    @workflow.signal
    def resolve(self, inp: ResolveInput) -> None:
        # Only a blocked step can be resolved; a stray signal (the CLI refuses to send one)
        # is counted and dropped so it can neither hold back continue-as-new nor surprise
        # a later, unrelated block. A signal cannot answer its sender, so one whose
        # signature does not verify is counted too (``refused_commands``); ``pressroom
        # resolve`` uses the ``resolve_blocked`` Update, which refuses it to the caller.
        # Histories recorded before signed commands replay without the check.
        remembered = False
        if workflow.patched(SIGNED_COMMANDS_PATCH):
            try:
                self._check_signature(inp.signature, "resolve", inp.signed_body(),
                                      operators=True)
            except ValueError:
                self._state.refused_commands += 1
                return
            assert inp.signature is not None
            if workflow.patched(SIGNED_BINDING_PATCH):
                # verified once is used up, delivered in time or not: the same signal
                # replayed at a later block is a replay (SECURITY.md §1)
                self._remember(inp.signature)
                remembered = True
        status = self._state.status
        if status == "blocked" or (status == "needs_operator"
                                   and inp.action in ("retry", "abandon")):
            if remembered:
                try:
                    self._check_resolve_binding(inp)
                except ValueError:
                    self._state.refused_commands += 1
                    return
            elif inp.signature is not None:
                self._remember(inp.signature)
            self._accept_resolution(inp)
        else:
            self._state.ignored_resolutions += 1

    @workflow.update
    def resolve_blocked(self, inp: ResolveInput) -> None:
        """A signed resolution of the current block — or, for a step that needs an
        operator, a signed ``retry`` or ``abandon`` — refused to the caller when it is bad."""
        assert inp.signature is not None
        self._remember(inp.signature)
        self._accept_resolution(inp)

    @resolve_blocked.validator
    def _validate_resolve(self, inp: ResolveInput) -> None:
        status = self._state.status
        if status == "needs_operator":
            if inp.action not in ("retry", "abandon"):
                raise ValueError(f"job {self._spec.job_id} needs an operator "
                                 f"({self._state.blocked_reason}); resolve it with retry or "
                                 f"abandon, not {inp.action}")
        elif status != "blocked":
            raise ValueError(f"job {self._spec.job_id} is not blocked "
                             f"(status {self._state.status})")
        self._check_signature(inp.signature, "resolve", inp.signed_body(), operators=True)
        self._check_resolve_binding(inp)

    def _check_resolve_binding(self, inp: ResolveInput) -> None:
        """A verified resolve resolves only the block it names, only within
        ``MAX_RESOLVE_AGE`` of being signed, and only in the job it was signed for (its
        first run); ``ValueError`` otherwise (SECURITY.md §1)."""
        self._check_first_run("resolve", inp.first_run_id)
        current = self._state.block_id
        if inp.block is None:
            raise ValueError(f"resolve refused: it names no block; job {self._spec.job_id} "
                             f"waits in block {current!r} (see pressroom status)")
        if inp.block != current:
            raise ValueError(f"resolve refused: it names block {inp.block!r}, but job "
                             f"{self._spec.job_id} waits in block {current!r} (a resolve "
                             "for an earlier or another block is never applied)")
        assert inp.signature is not None
        try:
            signed_at = inp.signature.signed_time()
        except SignatureError as exc:
            raise ValueError(f"resolve refused: {exc}") from None
        if workflow.now() - signed_at > MAX_RESOLVE_AGE:
            raise ValueError(f"resolve refused: expired, signed at {inp.signature.signed_at}, "
                             f"more than {MAX_RESOLVE_AGE} ago; sign a new one")

    def _check_first_run(self, purpose: str, first_run_id: str | None) -> None:
        """A signed command names the first run of the job it was signed for: one signed
        for an earlier job with the same id (its nonces are not this job's) is refused."""
        mine = workflow.info().first_execution_run_id
        if first_run_id is None:
            raise ValueError(f"{purpose} refused: it does not name the job's first run "
                             f"(first_run_id); sign it again with this Pressroom's client")
        if first_run_id != mine:
            raise ValueError(f"{purpose} refused: signed for an earlier job with id "
                             f"{self._spec.job_id} (first run {first_run_id}), not this one "
                             f"(first run {mine})")

    def _accept_resolution(self, inp: ResolveInput) -> None:
        if self._state.status == "needs_operator":
            self._operator_action = inp
            self._operator_round += 1
        else:
            self._resolutions.append(inp)

    async def _tool_approval(self, call: PlannedCall, turn: int) -> ToolApprovalInput | None:
        """Wait, at most the review timeout, for a listed reviewer's signed approval of
        exactly this call (``approve_tool_call``); ``None`` when none came (docs/mcp.md)."""
        server, _, tool = call.tool_name.removeprefix("mcp__").partition("__")
        pending = PendingToolApproval(
            call_id=call.call_id, tool_name=call.tool_name, server=server, tool=tool,
            arguments=call.arguments, arguments_sha256=arguments_sha256(call.arguments),
            turn=turn)
        self._state.pending_tool_approvals.append(pending)
        workflow.set_current_details(f"waiting for a reviewer's approval of {call.tool_name} "
                                     f"(call {call.call_id})")
        try:
            await workflow.wait_condition(
                lambda: call.call_id in self._state.tool_approvals
                or call.call_id in self._state.tool_rejections,
                timeout=self._spec.review.timeout)
        except TimeoutError:
            pass
        self._state.pending_tool_approvals = [
            p for p in self._state.pending_tool_approvals if p.call_id != call.call_id]
        return self._state.tool_approvals.pop(call.call_id, None)

    @workflow.update
    def approve_tool_call(self, inp: ToolApprovalInput) -> str:
        """A listed reviewer approves one pending write call, bound to its arguments."""
        assert inp.signature is not None
        self._remember(inp.signature)
        self._state.tool_approvals[inp.call_id] = inp
        return f"approved {inp.call_id}"

    @approve_tool_call.validator
    def _validate_tool_approval(self, inp: ToolApprovalInput) -> None:
        self._check_tool_decision("tool_approval", inp)

    def _check_tool_decision(self, purpose: Literal["tool_approval", "tool_rejection"],
                             inp: ToolApprovalInput | ToolRejectionInput) -> None:
        """An approval or rejection must name a call still waiting, bind exactly its server,
        tool and arguments, and carry a listed reviewer's signature for ``purpose``."""
        pending = next((p for p in self._state.pending_tool_approvals
                        if p.call_id == inp.call_id), None)
        if (pending is None or inp.call_id in self._state.tool_approvals
                or inp.call_id in self._state.tool_rejections):
            raise ValueError(f"{purpose} refused: no call {inp.call_id[:40]!r} of job "
                             f"{self._spec.job_id} is waiting for approval")
        if (inp.server, inp.tool, inp.arguments_sha256) != (
                pending.server, pending.tool, pending.arguments_sha256):
            raise ValueError(f"{purpose} refused: it names another server, tool or "
                             f"arguments than call {inp.call_id} (arguments sha256 "
                             f"{pending.arguments_sha256})")
        self._check_signature(inp.signature, purpose, inp.signed_body(), operators=False)
        self._check_first_run(purpose, inp.first_run_id)

    @workflow.update
    def reject_tool_call(self, inp: ToolRejectionInput) -> str:
        """A listed reviewer refuses one pending write call: it is refused now, never run."""
        assert inp.signature is not None
        self._remember(inp.signature)
        reason = f" ({' '.join(inp.reason.split())[:200]})" if inp.reason.strip() else ""
        self._state.tool_rejections[inp.call_id] = (
            f"reviewer {normalize_name(inp.signature.signer)!r} rejected{reason}")
        return f"rejected {inp.call_id}"

    @reject_tool_call.validator
    def _validate_tool_rejection(self, inp: ToolRejectionInput) -> None:
        self._check_tool_decision("tool_rejection", inp)

    @workflow.update
    def cancel(self, inp: CancelInput) -> None:
        """Stop the job (signed by a reviewer or an operator); nothing is published after."""
        assert inp.signature is not None
        self._remember(inp.signature)
        self._state.cancelled_by = normalize_name(inp.signature.signer)

    @cancel.validator
    def _validate_cancel(self, inp: CancelInput) -> None:
        if self._state.status in ("published", "rejected", "expired", "failed", "cancelled") \
                or self._state.stage in ("publish", "done"):
            raise ValueError(f"job {self._spec.job_id} can no longer be cancelled "
                             f"(status {self._state.status}, stage {self._state.stage})")
        self._check_signature(inp.signature, "cancel", inp.signed_body(), operators=True)
        self._check_first_run("cancel", inp.first_run_id)

    def _check_signature(self, signature: Signature | None, purpose: Purpose,
                         body: dict[str, object], *, operators: bool,
                         not_before: datetime | None = None) -> None:
        """Verify a signed command (contracts/signing.py); ``ValueError`` if refused."""
        try:
            verify(signature, purpose, self._spec.job_id, body,
                   allowed=self._spec.review.signers(operators=operators),
                   now=workflow.now(), not_before=not_before,
                   seen_nonces=self._state.seen_nonces)
        except SignatureError as exc:
            raise ValueError(f"{purpose} refused: {exc}") from None

    def _name_block(self, stage: str) -> None:
        """Give the block the job enters now the id a resolve must name
        (``JobStatus.block``): its step, its reason code, and a count of the job's blocks,
        so no two blocks of one job share an id."""
        state = self._state
        state.blocks += 1
        code = reason_code(state.status, state.blocked_reason)
        state.block_id = f"{stage}-{state.step_counter}:{code}#{state.blocks}"

    def _remember(self, signature: Signature) -> None:
        nonces = self._state.seen_nonces
        nonces.append(signature.nonce)
        del nonces[:-SEEN_NONCES_KEPT]

    @workflow.query
    def status(self) -> JobStatus:
        state = self._state
        return JobStatus(
            job_id=self._spec.job_id, status=state.status, stage=state.stage,
            blocked_reason=state.blocked_reason, pending_draft=state.pending_draft,
            manifest_ids=list(state.manifest_ids), revision_round=state.revision_round,
            destination=self._spec.destination, reviewers=self._spec.review.reviewer_names(),
            tenant=self._spec.scope.tenant, project=self._spec.scope.project, receipt=state.receipt,
            research=state.research.model_copy(deep=True),
            refused_commands=state.refused_commands,
            block=(state.block_id if state.status in ("blocked", "needs_operator") else None),
            pending_tool_approvals=[p.model_copy() for p in state.pending_tool_approvals],
        )

    # -------------------------------------------------------------- helpers
    def _first_run_id(self) -> str | None:
        """The job's first run id under the carried-state patch (``None`` in histories
        recorded before it, so their activity inputs replay as they were)."""
        if not workflow.patched(CARRIED_CHECK_PATCH):
            return None
        return workflow.info().first_execution_run_id

    def _spec_input(self) -> StoreJobSpecInput:
        return StoreJobSpecInput(spec=self._spec, first_run_id=self._first_run_id())

    async def _check_carried(self) -> None:
        """End the job (``CarriedStateMismatch``, nothing published) unless every reference
        the carried state holds is this job's own and its spec reference names the stored
        spec of this job, in its tenant and project, holding exactly the spec this run has
        (``store_job_spec`` with ``held``: it reads, never writes)."""
        job_id, state = self._spec.job_id, self._state
        refs = self._refs
        held = [r for r in (refs.job_spec, refs.plan, refs.source_records, refs.evidence_pack,
                            refs.tool_records, refs.draft, refs.review, refs.agent_plan,
                            refs.notes) if r is not None]
        foreign = [r.artifact_id for r in held if not owns(job_id, r.kind, r.artifact_id)]
        if state.pending_draft is not None and not owns(job_id, "article_draft",
                                                        state.pending_draft.artifact_id):
            foreign.append(state.pending_draft.artifact_id)
        if foreign:
            await self._refuse_carried(f"it names artifacts of another job ({foreign[0]!r})")
        try:
            await self._act("store_job_spec", StoreJobSpecInput(
                spec=self._spec, first_run_id=self._first_run_id(), held=refs.job_spec),
                ArtifactRef, stop_for_operator=False)
        except ActivityError as failed:
            if isinstance(failed.cause, CancelledError):
                raise
            cause = failed.cause
            why = cause.message if isinstance(cause, ApplicationError) else str(failed)
            await self._refuse_carried(why[:_MAX_REASON_CHARS])

    async def _refuse_carried(self, why: str) -> NoReturn:
        self._state = JobState(status="failed")  # nothing of it is shown any more
        self._sync_visibility()
        raise ApplicationError(f"refused: job {self._spec.job_id}'s carried state does not "
                               f"match its stored spec: {why}", type="CarriedStateMismatch",
                               non_retryable=True) from None

    @property
    def _refs(self) -> StepState:
        if self._state.refs is None:
            raise ApplicationError("job state has no artifact references yet", non_retryable=True)
        return self._state.refs

    def _job(self) -> JobRef:
        """The small reference activities get instead of the whole spec."""
        spec = self._spec
        return JobRef(job_id=spec.job_id, principal_id=spec.principal.principal_id,
                      tenant=spec.scope.tenant, project=spec.scope.project,
                      spec=self._refs.job_spec)

    def _block_timeout(self, ref: ContextRef) -> timedelta:
        """The policy's block timeout (docs/architecture.md#blocked-steps); the spec's may
        only shorten it.

        A ref without the policy's value (recorded before it was carried) falls back to
        the spec's, then to the policy default, so replaying old histories waits as before.
        """
        limits = [t for t in (
            timedelta(seconds=ref.block_timeout_s) if ref.block_timeout_s else None,
            self._spec.block_timeout,
        ) if t is not None]
        return min(limits) if limits else _DEFAULT_BLOCK_TIMEOUT

    def _set_refs(self, **changes: Any) -> None:
        self._state.refs = self._refs.model_copy(update=changes)

    async def _act(self, name: AnyActivityName, arg: BaseModel, result_type: type[R], *,
                   stop_for_operator: bool = True) -> R:
        """Run activity ``name`` within its bound (``temporal_config.ACTIVITY_LIMITS``).

        When the bound is reached or the error is permanent, the job stops for an operator
        (``_needs_operator``) and runs the activity again on a signed ``retry``; with
        ``stop_for_operator=False`` the ``ActivityError`` goes to the caller instead (the
        model call's ``model_call_failed`` block, the review Update's refusal).
        """
        runtime = self._spec.runtime
        while True:
            try:
                result: R = await workflow.execute_activity(
                    name, arg, result_type=result_type,
                    start_to_close_timeout=runtime.activity_timeout,
                    schedule_to_close_timeout=activity_schedule_to_close(
                        name, activity_timeout=runtime.activity_timeout),
                    heartbeat_timeout=runtime.heartbeat_timeout,
                    retry_policy=activity_retry_policy(
                        name, model_attempts=self._spec.model.max_attempts),
                )
                return result
            except ActivityError as failed:
                if (not stop_for_operator or isinstance(failed.cause, CancelledError)
                        or not workflow.patched(NEEDS_OPERATOR_PATCH)):
                    raise
                await self._needs_operator(name, failed)

    async def _needs_operator(self, name: AnyActivityName, failed: ActivityError) -> None:
        """Wait, with status ``needs_operator: <reason>``, for a signed ``retry`` (return:
        the caller runs the activity again) or ``abandon`` (the job ends ``failed``,
        nothing published). The wait is bounded like a block's (the spec's
        ``block_timeout``, else 24 hours); on expiry the job ends ``failed`` too.

        No activity runs here, so a failing store cannot fail this wait in turn. Several
        steps of one turn may wait together (parallel tool calls): each acts on the next
        operator action, the status shows the latest failure, and it goes back to what it
        was only when no step waits any more.
        """
        state = self._state
        reason = f"needs_operator: {_failure_reason(name, failed, self._spec.model.max_attempts)}"
        if state.status != "needs_operator":
            self._resume = (state.status, state.blocked_reason, state.block_id)
        state.status, state.blocked_reason = "needs_operator", reason
        self._name_block(state.stage)
        self._sync_visibility()
        workflow.set_current_details(reason)
        seen = self._operator_round
        timeout = self._spec.block_timeout or _DEFAULT_BLOCK_TIMEOUT
        self._operator_waiting += 1
        try:
            await workflow.wait_condition(lambda: self._operator_round > seen, timeout=timeout)
        except TimeoutError:
            await self._end_failed(state.stage, f"{reason} (no operator within {timeout})",
                                   "NeedsOperatorTimeout")
        finally:
            self._operator_waiting -= 1
        action = self._operator_action
        if action is not None and action.action == "abandon":
            await self._end_abandoned(state.stage, reason, action)
        if self._operator_waiting == 0:
            state.status, state.blocked_reason, state.block_id = self._resume
            self._sync_visibility()
            workflow.set_current_details("")

    async def _end_abandoned(self, stage: str, reason: str, action: ResolveInput) -> NoReturn:
        """End the job ``failed``: an operator or reviewer abandoned it (signed)."""
        signer = action.signature.signer if action.signature is not None else "unsigned"
        note = f" — {action.note[:200]}" if action.note else ""
        await self._end_failed(stage, f"abandoned by {signer}{note}: {reason}", "JobAbandoned")

    async def _end_failed(self, stage: str, reason: str, kind: str) -> NoReturn:
        """Fail the job with ``reason``; a last checkpoint records it when the store lets
        it (this is the way out of a failure, so a failed checkpoint does not stop it)."""
        state = self._state
        state.status = "failed"
        self._sync_visibility()
        if state.refs is not None:
            try:
                await self._checkpoint(stage, [], note=f"failed: {reason}",
                                       stop_for_operator=False)
            except ActivityError as failed:
                if isinstance(failed.cause, CancelledError):
                    raise
        # from None: the reason says what failed; the activity's failure (when this runs
        # inside its handler) would otherwise become the failure's cause, which
        # ``pressroom status`` shows instead of the reason
        raise ApplicationError(f"failed: {reason}", type=kind, non_retryable=True) from None

    async def _checkpoint(self, stage: str, next_steps: list[str], note: str = "", *,
                          stop_for_operator: bool = True) -> None:
        state = self._state
        state.checkpoint_seq += 1  # checkpoints are sealed: every one gets its own id
        cp_id = f"{self._spec.job_id}-cp-{state.checkpoint_seq:04d}-{stage}"
        open_items = [note] if note else []
        await self._act("write_checkpoint", CheckpointInput(
            job=self._job(), checkpoint_id=cp_id, step_id=f"{stage}-{state.step_counter}",
            stage=stage, status=state.status, state=self._refs,
            manifest_ids=state.manifest_ids[-5:],
            open_items=open_items, next_steps=next_steps,
        ), CheckpointResult, stop_for_operator=stop_for_operator)
        self._set_refs(checkpoint_id=cp_id)

    def _result(self, reason: str | None = None) -> JobResult:
        state = self._state
        return JobResult(job_id=self._spec.job_id, tenant=self._spec.scope.tenant,
                         project=self._spec.scope.project, status=state.status, reason=reason,
                         receipt=state.receipt, manifest_ids=list(state.manifest_ids))

    def _sync_visibility(self) -> None:
        """Upsert the job's search attributes (workflows/visibility.py) when they differ
        from the ones the run has now; deterministic (it compares with
        ``workflow.info().typed_search_attributes``, which the start event and this run's
        own upserts define).

        Only under the ``search-attributes`` patch, and only when the run started with them
        (``start_job`` sets them; continue-as-new carries them): upserting an attribute the
        namespace does not know would fail the workflow task, so a job started on a
        namespace without them runs on without visibility. Likewise ``PressroomReason``,
        added later, is upserted only when the run started with it (``start_job`` sets it
        to ``""``; ``visibility.search_attribute_updates``): a job started on a namespace
        registered before it existed runs on without it.

        It also sets the job's current details (``visibility.current_details``: stage,
        status, turn, reason code), outside the patch: they add no command to history, so
        every history replays with or without them.
        """
        workflow.set_current_details(current_details(self._state))
        if not workflow.patched(SEARCH_ATTRIBUTES_PATCH):
            return
        current = workflow.info().typed_search_attributes
        if current.get(PRESSROOM_STATUS) is None:
            return
        updates = search_attribute_updates(self._spec, self._state, current)
        if updates:
            workflow.upsert_search_attributes(updates)

    def _maybe_continue_as_new(self) -> None:
        info, state = workflow.info(), self._state
        too_long = info.get_current_history_length() >= self._spec.runtime.continue_as_new_events
        research = state.research
        turns_done = (state.stage == "research" and research.turn - research.run_start_turn
                      >= self._spec.research.turns_per_run)
        if not (too_long or turns_done or info.is_continue_as_new_suggested()):
            return
        if self._review_busy or self._resolutions or not workflow.all_handlers_finished():
            return  # try again at the next stage boundary; never drop a pending message
        research.run_start_turn = research.turn
        self._state.continued_runs += 1
        workflow.continue_as_new(ResearchJobInput(spec=self._spec, carried=self._state))


def _failure_reason(name: AnyActivityName, failed: ActivityError, model_attempts: int) -> str:
    """One bounded line: which activity, why it stopped, and its last error (the worker
    redacted the message before it left: activities/error_redaction.py)."""
    cause = failed.cause
    if failed.retry_state == RetryState.NON_RETRYABLE_FAILURE:
        how = "a permanent error"
    elif failed.retry_state == RetryState.MAXIMUM_ATTEMPTS_REACHED:
        attempts = ACTIVITY_LIMITS[name].max_attempts or model_attempts
        how = f"gave up after {attempts} attempts"
    elif failed.retry_state == RetryState.TIMEOUT:
        how = "out of time"
    else:
        how = "failed"
    if isinstance(cause, ApplicationError):
        last = f"{cause.type or 'ApplicationError'}: {cause.message}"
    else:
        last = f"{type(cause).__name__}: {cause}" if cause is not None else str(failed)
    text = " ".join(f"{name} failed ({how}): {last}".split())
    return text if len(text) <= _MAX_REASON_CHARS else text[:_MAX_REASON_CHARS - 1] + "…"


__all__ = ["ResearchJobWorkflow"]
