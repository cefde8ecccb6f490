"""Messages of ``ResearchJobWorkflow``: its input, update, signal, query and result.

Also ``JobState``, the workflow's whole memory: stage, references and counters. It is what
continue-as-new carries, so it must stay reference-sized (no artifact content).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contracts.activity_messages import ArtifactRef, PublishResult, StepState, ToolApproval
from contracts.job_spec import JobSpec
from contracts.signing import Signature, comments_hash
from contracts.source_specs import SourceSpec
from contracts.steps import Stage

#: ``needs_operator``: an activity failed for good (its bound reached, or a permanent error);
#: ``blocked_reason`` says which and why, and a signed ``retry`` or ``abandon`` resolves it
Status = Literal[
    "running", "blocked", "awaiting_review", "published", "rejected", "expired", "failed",
    "cancelled", "needs_operator",
]


class _Msg(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PendingDraft(_Msg):
    revision: int
    content_hash: str
    summary: str
    artifact_id: str
    #: when the draft was recorded (workflow time); a decision signed before it is stale
    drafted_at: str | None = None


class ToolCallSummary(_Msg):
    """One research tool call as ``status`` shows it: no arguments, no content."""

    turn: int
    call_id: str
    tool_name: str
    status: str
    result_chars: int
    rejection: str | None = None


#: why the research loop stopped
StopReason = Literal["finished", "turn_limit", "accepted_gathered", "model_stopped"]


class ResearchProgress(_Msg):
    """Where the research loop stands; small and bounded (it is carried by continue-as-new)."""

    turn: int = 0
    #: the turn the current research round started after (a requested change re-opens it)
    round_start_turn: int = 0
    #: the turn this workflow run started at (continue-as-new every ``turns_per_run``)
    run_start_turn: int = 0
    tokens_used: int = 0
    #: the budget in force (the spec's, or what ``resolve`` raised it to)
    token_budget: int | None = None
    #: what the research turns' model calls cost, in whole micro-dollars (each call priced
    #: by the worker that made it, contracts/pricing.py); unpriced calls add nothing
    cost_micro_usd: int = 0
    #: the research turns' model calls the worker had no price for: their cost is not in
    #: ``cost_micro_usd``, so what it shows is "not priced" rather than $0
    unpriced_calls: int = 0
    #: the cost budget in force, micro-dollars (the spec's ``cost_budget_usd``, or what
    #: ``resolve --cost-budget`` raised it to); ``None``: no money limit
    cost_budget_micro_usd: int | None = None
    covered_topics: list[str] = Field(default_factory=list)
    last_calls: list[ToolCallSummary] = Field(default_factory=list)
    stop_reason: StopReason | None = None
    finish_open_items: list[str] = Field(default_factory=list)
    compacted_once: bool = False
    rejected_calls: int = 0
    #: the policy's block timeout as the last research turn's assembly reported it
    block_timeout_s: int | None = None


#: the newest signed commands' nonces a job remembers (a replay of an older one is also
#: refused by its draft hash, revision or timestamp; a resolve by its block and age)
SEEN_NONCES_KEPT = 200
#: a signed resolve older than this is refused (SECURITY.md §1). An operator signs a
#: resolve for the block the live status shows and sends it at once; an hour covers a slow
#: hand and a clock a few minutes off, and is far below the default 24-hour block timeout,
#: so a resolve captured from history (or an unsent one) cannot wait for a later block.
MAX_RESOLVE_AGE = timedelta(hours=1)


class PendingToolApproval(_Msg):
    """A call of an ``effect: write`` MCP tool waiting for a reviewer's signed approval:
    what the reviewer sees (the arguments) and what the approval must bind."""

    call_id: str
    tool_name: str
    server: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    arguments_sha256: str
    turn: int = 0


#: the ``approve_tool_call`` Update's input (``contracts.activity_messages.ToolApproval``)
ToolApprovalInput = ToolApproval


class ToolRejectionInput(_Msg):
    """A listed reviewer's signed refusal of one pending write call (the workflow's
    ``reject_tool_call`` Update): bound like an approval (docs/mcp.md) — the job (in the
    statement), the call id, the server, the tool, the sha256 of the call's canonical
    arguments and the job's first run — plus the reviewer's reason. The call is then
    refused (``approval_refused``) at once instead of at the review timeout; it never
    runs."""

    call_id: str = Field(min_length=1, max_length=200)
    server: str = Field(min_length=1, max_length=64)
    tool: str = Field(min_length=1, max_length=64)
    arguments_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    reason: str = Field(default="", max_length=500)
    first_run_id: str | None = None
    signature: Signature | None = None

    def signed_body(self) -> dict[str, object]:
        return _bound({"call_id": self.call_id, "server": self.server, "tool": self.tool,
                       "arguments_sha256": self.arguments_sha256, "reason": self.reason},
                      first_run_id=self.first_run_id)


class JobState(_Msg):
    """Everything the workflow remembers; carried across continue-as-new."""

    stage: Stage = "start"
    status: Status = "running"
    blocked_reason: str | None = None
    refs: StepState | None = None
    pending_draft: PendingDraft | None = None
    manifest_ids: list[str] = Field(default_factory=list)
    revision_round: int = 0
    step_counter: int = 0
    review_decision: Literal["approve", "request_changes", "reject"] | None = None
    review_count: int = 0
    receipt: PublishResult | None = None
    continued_runs: int = 0
    ignored_resolutions: int = 0
    checkpoint_seq: int = 0
    research: ResearchProgress = Field(default_factory=ResearchProgress)
    #: nonces of the signed commands this job accepted (newest last; bounded)
    seen_nonces: list[str] = Field(default_factory=list)
    #: signed resolutions refused (bad or missing signature) that arrived as signals
    refused_commands: int = 0
    #: who cancelled the job (``cancel`` signed by a reviewer or an operator) and why
    cancelled_by: str | None = None
    #: the block (or stop for an operator) the job waits in now, as a signed resolve must
    #: name it: ``<step id>:<reason code>#<n>``, ``n`` counting every block of the job
    block_id: str | None = None
    blocks: int = 0
    #: write calls waiting for a reviewer's approval, and approvals accepted, by call id
    pending_tool_approvals: list[PendingToolApproval] = Field(default_factory=list)
    tool_approvals: dict[str, ToolApproval] = Field(default_factory=dict)
    #: write calls a reviewer refused (``reject_tool_call``): call id -> who and why
    tool_rejections: dict[str, str] = Field(default_factory=dict)


class ResearchJobInput(_Msg):
    spec: JobSpec
    carried: JobState | None = None


class ReviewInput(_Msg):
    """A reviewer's decision. It must bind the exact draft and destination it judged.

    ``signature`` is the reviewer's Ed25519 signature over ``signed_body()`` (see
    contracts/signing.py); the workflow refuses a decision without a valid one.
    """

    decision: Literal["approve", "request_changes", "reject"]
    reviewer: str = Field(min_length=1)
    draft_revision: int
    draft_hash: str
    destination: str
    comments: list[str] = Field(default_factory=list)
    #: the job's first run id (``workflow.info().first_execution_run_id``): a decision
    #: signed for an earlier job with the same id is refused
    first_run_id: str | None = None
    signature: Signature | None = None

    def signed_body(self) -> dict[str, object]:
        body: dict[str, object] = {
            "decision": self.decision, "reviewer": self.reviewer,
            "draft_revision": self.draft_revision, "draft_hash": self.draft_hash,
            "destination": self.destination, "comments_hash": comments_hash(self.comments)}
        return _bound(body, first_run_id=self.first_run_id)


class ReviewResult(_Msg):
    decision_id: str
    decision: str
    review: ArtifactRef


class ResolveInput(_Msg):
    """What unblocks a blocked step (the workflow re-assembles after applying it), or what
    an operator decides for a step that needs one (``retry`` or ``abandon``)."""

    #: ``retry`` re-assembles a blocked step, or runs again a step that needs an operator;
    #: ``abandon`` ends the job ``failed`` with the reason, nothing published
    action: Literal["add_source", "refresh_source", "raise_budget", "accept_revision", "retry",
                    "accept_gathered", "abandon"]
    source: SourceSpec | None = None
    source_name: str | None = None
    evidence_budget: int | None = Field(default=None, gt=0)
    context_limit: int | None = Field(default=None, gt=0)
    #: with ``raise_budget``: the research loop's new token budget (input + output)
    token_budget: int | None = Field(default=None, gt=0)
    #: with ``raise_budget``: the research loop's new cost budget, in micro-dollars
    cost_budget_micro_usd: int | None = Field(default=None, gt=0)
    canonical_key: str | None = None
    revision: str | None = None
    note: str = ""
    #: the block it resolves, as the live status names it (``JobStatus.block``)
    block: str | None = Field(default=None, max_length=200)
    #: the job's first run id (see ``ReviewInput.first_run_id``)
    first_run_id: str | None = None
    #: a listed reviewer's or operator's signature over everything above
    signature: Signature | None = None

    def signed_body(self) -> dict[str, object]:
        # a field added later is signed only when set, so a resolution signed before it
        # existed (a committed history's) still verifies
        unset_new = {"cost_budget_micro_usd"} if self.cost_budget_micro_usd is None else set()
        body = self.model_dump(mode="json",
                               exclude={"signature", "block", "first_run_id", *unset_new})
        return _bound(body, block=self.block, first_run_id=self.first_run_id)


class CancelInput(_Msg):
    """A signed request to stop the job; nothing is published after it is accepted."""

    reason: str = Field(default="", max_length=2000)
    #: the job's first run id (see ``ReviewInput.first_run_id``)
    first_run_id: str | None = None
    signature: Signature | None = None

    def signed_body(self) -> dict[str, object]:
        return _bound({"reason": self.reason}, first_run_id=self.first_run_id)


def _bound(body: dict[str, object], **binding: str | None) -> dict[str, object]:
    """``body`` with the bindings that are set: one left ``None`` is not in the signed
    body at all, so commands signed before the bindings existed (the committed histories)
    still verify as they were signed."""
    return {**body, **{k: v for k, v in binding.items() if v is not None}}


class JobStatus(_Msg):
    job_id: str
    status: Status
    stage: Stage
    blocked_reason: str | None
    pending_draft: PendingDraft | None
    manifest_ids: list[str]
    revision_round: int
    destination: str
    reviewers: list[str]
    tenant: str
    project: str
    receipt: PublishResult | None = None
    research: ResearchProgress | None = None
    #: ``resolve`` signals dropped for a missing or invalid signature
    refused_commands: int = 0
    #: the block a signed resolve must name (``ResolveInput.block``), while blocked or
    #: waiting for an operator
    block: str | None = None
    #: write calls of MCP tools waiting for a reviewer's signed approval (docs/mcp.md)
    pending_tool_approvals: list[PendingToolApproval] = Field(default_factory=list)


class JobResult(_Msg):
    job_id: str
    tenant: str
    project: str
    status: Status
    reason: str | None = None
    receipt: PublishResult | None = None
    manifest_ids: list[str] = Field(default_factory=list)
