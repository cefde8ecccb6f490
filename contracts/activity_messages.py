"""The inputs and results of every Pressroom activity: small references, never content.

Workflow history stores these payloads verbatim, so each one carries only what identifies
an artifact (kind, id, revision, content hash) or a manifest, plus a few short strings. The
bytes live in the artifact store; an activity that needs them reads them by reference.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from contracts.job_spec import JobSpec
from contracts.signing import Signature
from contracts.source_specs import SourceSpec
from contracts.steps import AssemblyStage

#: a tool call's arguments are at most this many characters of JSON (they travel in history)
MAX_TOOL_ARGUMENT_CHARS = 4000


class _Msg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ArtifactRef(_Msg):
    """Identifies one stored artifact revision."""

    kind: str
    artifact_id: str
    revision: int = Field(ge=1)
    content_hash: str


class ContextRef(_Msg):
    """What ``assemble_context`` returns: the sealed manifest's identity, never its body."""

    manifest_id: str
    step_id: str
    stage: str
    status: Literal["ready", "blocked"]
    input_hash: str | None = None
    blocked_reason: str | None = None
    blocked_detail: str | None = None
    #: the block timeout (seconds) of the policy the step ran under
    block_timeout_s: int | None = None
    #: the engine cleared or compacted tool history in this step (a checkpoint is due)
    history_transformed: bool = False
    #: the engine's estimate of the request's input tokens (``None`` when blocked)
    input_tokens: int | None = None


class JobRef(_Msg):
    """Which job an activity works for: its identity and the job-spec revision it holds.

    Activities load the spec itself from the store by this reference (cached per worker by
    content hash), so the spec is not copied into every activity input in history.
    """

    job_id: str
    principal_id: str
    tenant: str
    project: str
    spec: ArtifactRef


class StepState(_Msg):
    """The references a step's context is assembled from (the revisions the job holds)."""

    job_spec: ArtifactRef
    plan: ArtifactRef | None = None
    source_records: ArtifactRef | None = None
    evidence_pack: ArtifactRef | None = None
    tool_records: ArtifactRef | None = None
    draft: ArtifactRef | None = None
    review: ArtifactRef | None = None
    checkpoint_id: str | None = None
    review_comments: list[str] = Field(default_factory=list)
    evidence_budget: int | None = None
    context_limit: int | None = None
    accepted_revisions: dict[str, str] = Field(default_factory=dict)
    #: the agent's own plan (``update_plan``): data for the next turns, never instruction
    agent_plan: ArtifactRef | None = None
    #: every round's requested changes, oldest first (``review_comments`` is the last round)
    all_review_comments: list[str] = Field(default_factory=list)
    #: the research notes' current chunk (``record_turn``; earlier chunks are read by id)
    notes: ArtifactRef | None = None


class StoreJobSpecInput(_Msg):
    spec: JobSpec
    #: the job's first run (``workflow.info().first_execution_run_id``): a job id reused by
    #: another workflow cannot add a revision to this job's spec (SECURITY.md, "Tenant
    #: isolation"); ``None`` in histories recorded before it was carried
    first_run_id: str | None = None
    #: a continued run's check of its carried state: the spec revision ``held`` must be this
    #: job's stored spec head, in its tenant and project, holding exactly ``spec``; nothing
    #: is written (``CarriedStateMismatch`` otherwise)
    held: ArtifactRef | None = None


class AssembleContextInput(_Msg):
    job: JobRef
    step_id: str
    stage: AssemblyStage
    state: StepState
    as_of: str  # ISO-8601 from workflow.now(): the engine must not read a clock
    #: the research turn this step assembles for (0 outside the research loop)
    turn: int = Field(default=0, ge=0)


class PlanInput(_Msg):
    job: JobRef
    context: ContextRef
    parent_revision: int | None = None


class ResearchInput(_Msg):
    job: JobRef
    context: ContextRef
    state: StepState
    #: the sources to (re-)acquire in this call; results merge into the held revisions
    sources: list[SourceSpec]
    as_of: str
    turn: int = 1


class ResearchResult(_Msg):
    source_records: ArtifactRef
    evidence_pack: ArtifactRef
    tool_records: ArtifactRef
    retrieved: int
    not_retrieved: int
    retrieval_failed: int


class DraftInput(_Msg):
    job: JobRef
    context: ContextRef
    state: StepState
    round: int = 0


class DraftResult(_Msg):
    draft: ArtifactRef
    summary: str
    input_tokens: int | None = None
    output_tokens: int | None = None


class RecordReviewInput(_Msg):
    job: JobRef
    decision_id: str
    decision: Literal["approve", "request_changes", "reject"]
    reviewer: str
    draft: ArtifactRef
    destination: str
    comments: list[str] = Field(default_factory=list)
    decided_at: str
    parent_revision: int | None = None
    #: the reviewer's signature, stored with the decision so publish can verify it again
    signature: Signature | None = None
    #: the job's first run the signature names (``ReviewInput.first_run_id``), stored with it
    first_run_id: str | None = None


class CheckpointInput(_Msg):
    job: JobRef
    checkpoint_id: str
    step_id: str
    stage: str
    status: str
    state: StepState
    manifest_ids: list[str] = Field(default_factory=list)
    open_items: list[str] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)


class CheckpointResult(_Msg):
    checkpoint_id: str
    content_hash: str


class PublishInput(_Msg):
    job: JobRef
    context: ContextRef
    draft: ArtifactRef
    review: ArtifactRef
    #: the job's first run id, written into the article's marker so a reused job id never
    #: replaces another run's article; ``None`` in histories recorded before it was carried
    first_run_id: str | None = None


class PublishResult(_Msg):
    receipt_key: str
    destination: str
    location: str
    content_hash: str
    review_decision_id: str
    published_at: str


class ToolApproval(_Msg):
    """A reviewer's approval of one pending write call (the workflow's ``approve_tool_call``
    Update, then the call's ``run_tool``), signed over ``signed_body()``: the job (in the
    statement), the call id, the server, the tool and the sha256 of the call's canonical
    arguments, and the job's first run (docs/mcp.md)."""

    call_id: str = Field(min_length=1, max_length=200)
    server: str = Field(min_length=1, max_length=64)
    tool: str = Field(min_length=1, max_length=64)
    arguments_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    first_run_id: str | None = None
    signature: Signature | None = None

    def signed_body(self) -> dict[str, object]:
        body: dict[str, object] = {"call_id": self.call_id, "server": self.server,
                                   "tool": self.tool, "arguments_sha256": self.arguments_sha256}
        if self.first_run_id is not None:
            body["first_run_id"] = self.first_run_id
        return body


class ToolCallInput(_Msg):
    """One tool call the model asked for, to run over the job's declared sources.

    The arguments are the model's, unchecked: whatever they hold, the activity answers with
    a result (a typed error for a bad call), so this model accepts any JSON object and only
    bounds its size — the arguments travel in history.
    """

    job: JobRef
    call_id: str = Field(min_length=1, max_length=200)
    tool_name: str = Field(max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)
    turn: int = Field(default=0, ge=0)
    #: set when the runtime refuses the call before running it (``kind: detail``): a reply
    #: whose arguments were not a JSON object, or a call past the turn's limit
    refusal: str | None = Field(default=None, max_length=1000)
    #: a reviewer's signature approving this very call of an ``effect: write`` MCP tool
    #: (``contracts.mcp_servers.approval_body``), checked again where it runs
    approval: ToolApproval | None = None

    @field_validator("arguments")
    @classmethod
    def _bounded(cls, value: dict[str, Any]) -> dict[str, Any]:
        size = len(json.dumps(value, default=str))
        if size > MAX_TOOL_ARGUMENT_CHARS:
            raise ValueError(f"tool arguments are {size} characters of JSON; the limit is "
                             f"{MAX_TOOL_ARGUMENT_CHARS}")
        return value


class ToolCallResult(_Msg):
    """What a tool call left: the stored exchange's reference and its shape, never content."""

    call_id: str
    status: Literal["success", "error"]
    #: the stored exchange (the call and its full result), one ``tool_record`` per call id
    exchange: ArtifactRef
    result_hash: str
    result_chars: int = Field(ge=0)
    #: for an ``error``: the refusal kind (``ToolRejected.kind``)
    rejection: str | None = None
    #: for an accepted ``note``: its topic, so the workflow can check ``finish`` against the
    #: topics covered without reading any content
    note_topic: str | None = None


class RefreshWebPageInput(_Msg):
    """Fetch a live web page source again (``resolve --refresh-source NAME``) and store the
    bytes as its new revision, once per ``write_id`` (the workflow step that asked)."""

    job: JobRef
    source_name: str
    write_id: str


class WebPageRevisionResult(_Msg):
    """The stored revision a live web page's reads now use: what it is, never its bytes."""

    source_name: str
    #: ``sha256:<hex>`` of the page's bytes (what tool results and citations name)
    revision: str
    store_revision: int = Field(ge=1)
    final_url: str
    fetched_at: str


class PlannedCall(_Msg):
    """One tool call of a model's reply, as the loop will run it: the runtime's call id
    (``t<turn>-<n>``, unique in the job), the tool and the arguments, or a refusal."""

    call_id: str = Field(min_length=1, max_length=40)
    tool_name: str = Field(max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)
    refusal: str | None = Field(default=None, max_length=1000)
    #: an MCP tool the operator marks ``effect: write``: the loop waits for a reviewer's
    #: signed approval of exactly this call before it runs (docs/mcp.md)
    needs_approval: bool = False


class DecideInput(_Msg):
    job: JobRef
    context: ContextRef
    turn: int = Field(ge=1)


class DecideResult(_Msg):
    """What the model asked for in one turn; the reply itself is stored (``decision``)."""

    decision: ArtifactRef
    calls: list[PlannedCall] = Field(default_factory=list)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    text_chars: int = Field(default=0, ge=0)
    #: the part of ``input_tokens`` the provider read from / wrote to its prompt cache
    #: (activities/providers/base.py; docs/context-engine.md#prompt-cache-identity)
    cached_input_tokens: int = Field(default=0, ge=0)
    cache_write_input_tokens: int = Field(default=0, ge=0)
    #: the call's cost in whole micro-dollars as the worker priced it
    #: (contracts/pricing.py); ``None``: its price table has no price for the model
    cost_micro_usd: int | None = Field(default=None, ge=0)


class RecordTurnInput(_Msg):
    """A finished turn's exchanges, to fold into the job's tool history and evidence."""

    job: JobRef
    turn: int = Field(ge=1)
    state: StepState
    results: list[ToolCallResult] = Field(default_factory=list)
    as_of: str


class RecordTurnResult(_Msg):
    tool_records: ArtifactRef
    #: recorded histories from before the notes were chunked carry it; now always None
    evidence_pack: ArtifactRef | None = None
    agent_plan: ArtifactRef | None = None
    notes_added: int = Field(default=0, ge=0)
    notes: ArtifactRef | None = None


class PathCheckInput(_Msg):
    """The spec ``pressroom run`` is about to start, for a worker on its task queue to check
    against that worker's roots (``workflows.path_check``) before anything starts."""

    spec: JobSpec


class RefusedPath(_Msg):
    """One path a spec names that lies outside the worker's roots of its kind: ``what`` and
    ``path`` as the spec names it, and ``folder``, the resolved folder a root would need
    to hold (the path itself when it is a folder or does not exist yet, else its folder)."""

    what: str
    path: str
    kind: Literal["source", "publish"]
    folder: str


class PathCheckResult(_Msg):
    """A worker's verdict on a ``PathCheckInput``: ``refusal`` is ``None`` when every path is
    allowed, else one line saying why not. It never carries the worker's roots: for a path
    outside them, ``outside`` lists each such path (the submitter's own) so the caller can
    name the flag and folder that would allow it."""

    refusal: str | None = None
    outside: list[RefusedPath] = Field(default_factory=list)
