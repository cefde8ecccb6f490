"""The controlled vocabulary of context assembly (docs/context-engine.md#vocabulary).

Every label that ends up in a manifest, a policy or an exclusion is one of these enums, so
a typo is a validation error instead of a new, silently-unknown reason. They are
``StrEnum`` so they serialize as their plain string value in JSON and YAML.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, get_args

#: the provider request shapes the engine serializes (``context.seal.adapters`` has one
#: adapter per name; a job spec's ``model.adapter`` names one)
AdapterName = Literal["openai_chat", "anthropic_messages"]
ADAPTER_NAMES: tuple[AdapterName, ...] = get_args(AdapterName)


class SourceType(StrEnum):
    """Where a candidate came from; the policy maps each to a default trust label."""

    SYSTEM_POLICY = "system_policy"
    USER_REQUEST = "user_request"
    RUNTIME_STATE = "runtime_state"
    REPOSITORY_SOURCE = "repository_source"
    OFFICIAL_DOCUMENT = "official_document"
    WEB_PAGE = "web_page"
    EDITABLE_PROJECT_FILE = "editable_project_file"
    MODEL_SUMMARY = "model_summary"
    CHECKPOINT = "checkpoint"
    MEMORY_OBJECT = "memory_object"
    TOOL_RESULT = "tool_result"
    TEST_LOG = "test_log"
    AGENT_OUTPUT = "agent_output"
    ARTIFACT = "artifact"


class Trust(StrEnum):
    """Trust labels of ``trust.default_by_source``
    (docs/context-engine.md#effective-trust-and-role-limits).

    ``TRUST_RANK`` orders them by how much authority they may carry; a transform's
    output may never rank above the lowest-ranked of its inputs.

    ``untrusted_external_data`` is text read from a source the task names (a web page, a
    tool's output): unverified, and under the shipped policies admissible as data
    evidence. ``unvetted_external_data`` ranks below it: third-party text nobody vouches
    for (a reader comment, a forum post, a paste). It is never evidence — the shipped
    policies give it no role at all, so the trust-role gate refuses it; a policy may at
    most allow it as ``untrusted_data`` (shown as quoted data, never answering a required
    topic, docs/context-engine.md#effective-trust-and-role-limits).
    """

    CONTROL_AUTHORITY = "control_authority"
    TASK_AUTHORITY = "task_authority"
    TRUSTED_STATE = "trusted_state"
    REPOSITORY_EVIDENCE = "repository_evidence"
    EXTERNAL_EVIDENCE = "external_evidence"
    GOVERNED_MEMORY_CANDIDATE = "governed_memory_candidate"
    DERIVED_CONTEXT = "derived_context"
    PROJECT_EDITABLE = "project_editable"
    UNTRUSTED_EXTERNAL_DATA = "untrusted_external_data"
    UNVETTED_EXTERNAL_DATA = "unvetted_external_data"


TRUST_RANK: dict[Trust, int] = {
    Trust.CONTROL_AUTHORITY: 9,
    Trust.TASK_AUTHORITY: 8,
    Trust.TRUSTED_STATE: 7,
    Trust.REPOSITORY_EVIDENCE: 6,
    Trust.EXTERNAL_EVIDENCE: 5,
    Trust.GOVERNED_MEMORY_CANDIDATE: 4,
    Trust.DERIVED_CONTEXT: 3,
    Trust.PROJECT_EDITABLE: 2,
    Trust.UNTRUSTED_EXTERNAL_DATA: 1,
    Trust.UNVETTED_EXTERNAL_DATA: 0,
}
#: Trust labels that are never evidence: at most quoted data, never answering a topic.
NEVER_EVIDENCE: frozenset[Trust] = frozenset({Trust.UNVETTED_EXTERNAL_DATA})


def lowest_trust(labels: list[Trust]) -> Trust:
    """The least-trusted label of ``labels`` (a summary inherits at most this)."""
    if not labels:
        raise ValueError("lowest_trust needs at least one trust label")
    return min(labels, key=lambda t: TRUST_RANK[t])


class Role(StrEnum):
    """The message role an admitted item is allowed to play (role_limits,
    docs/context-engine.md#effective-trust-and-role-limits)."""

    CONTROL = "control"
    TASK_INTENT = "task_intent"
    STATE = "state"
    UNTRUSTED_DATA = "untrusted_data"
    DERIVED_CONTEXT = "derived_context"


class Zone(StrEnum):
    """Trust zones of the rendered context (docs/context-engine.md#trust-zones)."""

    CONTROL = "control"
    TASK = "task"
    STATE = "state"
    DATA = "data"
    DERIVED = "derived"


ROLE_ZONE: dict[Role, Zone] = {
    Role.CONTROL: Zone.CONTROL,
    Role.TASK_INTENT: Zone.TASK,
    Role.STATE: Zone.STATE,
    Role.UNTRUSTED_DATA: Zone.DATA,
    Role.DERIVED_CONTEXT: Zone.DERIVED,
}


class Freshness(StrEnum):
    VALID = "valid"
    REFRESH_REQUIRED = "refresh_required"
    EXPIRED = "expired"
    UNVERIFIABLE = "unverifiable"


class AttestationStatus(StrEnum):
    """What the runtime found when it checked a stored revision's signature before the
    item became a candidate (the engine holds no keys; it trusts this verdict and its
    integrity gate refuses ``invalid``)."""

    #: the revision's attestation matches under a key the worker holds
    VERIFIED = "verified"
    #: the worker has no attestation key: only the bare content hash was checked
    UNSIGNED = "unsigned"
    #: a key is configured and the revision is unsigned, signed with an unknown key id, or
    #: its signature does not match it
    INVALID = "invalid"


class SecurityClass(StrEnum):
    """Sensitivity of an item; the permission gate compares its level to the clearance."""

    PUBLIC = "public"
    INTERNAL = "internal"
    CONFIDENTIAL = "confidential"
    RESTRICTED = "restricted"
    SECRET = "secret"


SECURITY_LEVEL: dict[SecurityClass, int] = {
    SecurityClass.PUBLIC: 0,
    SecurityClass.INTERNAL: 1,
    SecurityClass.CONFIDENTIAL: 2,
    SecurityClass.RESTRICTED: 3,
    SecurityClass.SECRET: 4,
}


class Completeness(StrEnum):
    COMPLETE = "complete"
    EXCERPT = "excerpt"
    PARTIAL = "partial"
    SUMMARY = "summary"
    INDEX = "index"


class LoadMode(StrEnum):
    RESIDENT = "resident"
    RETRIEVE = "retrieve"
    DISCLOSE = "disclose"


class Partition(StrEnum):
    """Budget partitions (docs/context-engine.md#partition-budgets), in the order they are
    protected."""

    CONTROL = "control"
    TASK = "task"
    STATE = "state"
    DIRECT_EVIDENCE = "direct_evidence"
    RECENT_TOOL_PAIRS = "recent_tool_pairs"
    BACKGROUND = "background"


class Gate(StrEnum):
    """Hard gates, in the order they run. Nothing after them can rescue a failure."""

    PERMISSION = "permission"
    SCOPE = "scope"
    REQUIRED_REVISION = "required_revision"
    FRESHNESS = "freshness"
    INTEGRITY = "integrity"
    TRUST_ROLE = "trust_role_compatibility"
    SECURITY = "security_policy_compliance"


#: the gates in the order they run: ``Gate``'s own order, so a gate is listed once
GATE_ORDER: tuple[Gate, ...] = tuple(Gate)
#: what a memoized gate outcome was computed by (``context.admission.stage``): another gate
#: set or order is another key, so an added gate can never reuse an outcome that lacks it
GATE_SET_KEY = ",".join(gate.value for gate in GATE_ORDER)


class GateResult(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_EVALUATED = "not_evaluated"


class ExclusionReason(StrEnum):
    """The ``excluded.reason`` vocabulary (docs/context-engine.md#exclusion-reasons) plus the
    two ranking outcomes Pressroom needs.

    ``superseded`` (a newer valid revision of the same canonical key won) and ``not_required``
    (evidence covering none of the step's required topics,
    docs/context-engine.md#topic-coverage-and-missing-topics) are ranking results, kept
    distinct from ``ranking_lost`` so a report can tell them apart.
    """

    HARD_GATE_REJECTED = "hard_gate_rejected"
    PERMISSION_DENIED = "permission_denied"
    STALE_REVISION = "stale_revision"
    EXPIRED = "expired"
    UNVERIFIABLE = "unverifiable"
    RANKING_LOST = "ranking_lost"
    SUPERSEDED = "superseded"
    NOT_REQUIRED = "not_required"
    BUDGET_EVICTED = "budget_evicted"
    SECURITY_REJECTED = "security_rejected"
    TRANSFORM_BLOCKED = "transform_blocked"


class AcquisitionOutcome(StrEnum):
    """Outcome of asking for a source; never confused with an admission exclusion."""

    RETRIEVED = "retrieved"
    NOT_RETRIEVED = "not_retrieved"
    RETRIEVAL_FAILED = "retrieval_failed"


class ToolStatus(StrEnum):
    SUCCESS = "success"
    ERROR = "error"
    CANCELED = "canceled"
    PARTIAL = "partial"
    UNKNOWN = "unknown"


class AnomalyType(StrEnum):
    """Typed repairs of a tool history (docs/context-engine.md#tool-pairing-and-anomalies)."""

    TOOL_RESULT_REORDERED = "tool_result_reordered"
    TOOL_RESULT_SYNTHESIZED = "tool_result_synthesized"
    ORPHAN_TOOL_RESULT_DROPPED = "orphan_tool_result_dropped"
    DUPLICATE_DROPPED = "duplicate_dropped"
    TOOL_CALL_FAILED = "tool_call_failed"


class BlockedReason(StrEnum):
    """Why an assembly was sealed ``blocked`` (no model call follows)."""

    REQUIRED_PARTITION_MISSING = "required_partition_missing"
    REQUIRED_EVIDENCE_MISSING = "required_evidence_missing"
    MINIMUMS_EXCEED_BUDGET = "minimums_exceed_budget"
    TRANSFORM_BLOCKED = "transform_blocked"
    UNSAFE_TOOL_REPAIR = "unsafe_tool_repair"
    SERIALIZATION_INVALID = "serialization_invalid"


class CacheStatus(StrEnum):
    HIT = "hit"
    MISS = "miss"
    BYPASSED = "bypassed"


#: The facts a structured summary can be asked to preserve (``policy.transforms.preserve``);
#: each becomes a checked preservation assertion of the transform (context.tools.transforms).
PRESERVE_KEYS: tuple[str, ...] = (
    "goal",
    "constraints",
    "current_stage",
    "done_in_progress_blocked",
    "open_items",
    "source_refs",
    "exact_values_and_errors",
    "conflicts_and_negative_findings",
    "unresolved_tool_calls",
    "article_draft_revision",
    "artifact_refs",
)

#: The label a data block shows when its text reads like an instruction (the matched text
#: itself stays in the manifest's security flags, never in the rendered request).
INSTRUCTION_FLAG = "instruction_like_text"
#: The prefix of a tool pair's security flag for a secret found in it (``<prefix>:<kind>@
#: <where>``): the kind and location, never the value.
SECRET_FLAG = "secret_material"
