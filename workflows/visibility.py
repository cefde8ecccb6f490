"""The job's typed search attributes: what a page can list jobs by from Temporal's
visibility store, with one ``ListWorkflowExecutions`` query per page.

The workflow upserts them (``ResearchJobWorkflow._sync_visibility``, under the
``search-attributes`` patch) whenever its stage, status, research turn or token count
changes; ``client.jobs.start_job`` sets the first values at start; the dev server
registers them (``--search-attribute``) and a worker registers them on its namespace at
startup (``client.visibility_admin.ensure_search_attributes``). A blocked or failed
job's reason text is kept out: it can be long and quote untrusted text. Only a short code
from a fixed vocabulary goes in (``PressroomReason``, ``reason_code``).

Pure: imported inside the workflow sandbox (passed through), so it imports only ``re``,
``temporalio.common``, the API enum and ``contracts.signing.normalize_name``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, Any

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.common import (
    SearchAttributeKey,
    SearchAttributePair,
    SearchAttributeUpdate,
    TypedSearchAttributes,
)

from contracts.signing import normalize_name

if TYPE_CHECKING:
    from contracts.job_spec import JobSpec
    from contracts.workflow_messages import JobState

__all__ = [
    "BLOCKED_REASON_CODES",
    "CONTINUED_AS_NEW",
    "OTHER_REASON",
    "PRESSROOM_PROJECT",
    "PRESSROOM_REASON",
    "PRESSROOM_REVIEWERS",
    "PRESSROOM_STAGE",
    "PRESSROOM_STATUS",
    "PRESSROOM_TENANT",
    "PRESSROOM_TOKENS",
    "PRESSROOM_TURN",
    "SEARCH_ATTRIBUTES",
    "SEARCH_ATTRIBUTE_TYPES",
    "cli_type_name",
    "create_command",
    "current_details",
    "dev_server_args",
    "job_search_attributes",
    "jobs_query",
    "reason_code",
    "search_attribute_updates",
]

PRESSROOM_STAGE = SearchAttributeKey.for_keyword("PressroomStage")
PRESSROOM_STATUS = SearchAttributeKey.for_keyword("PressroomStatus")
PRESSROOM_TENANT = SearchAttributeKey.for_keyword("PressroomTenant")
PRESSROOM_PROJECT = SearchAttributeKey.for_keyword("PressroomProject")
#: the job's reviewers, each ``normalize_name``d (``PressroomReviewers = 'alice'`` matches
#: every job listing alice)
PRESSROOM_REVIEWERS = SearchAttributeKey.for_keyword_list("PressroomReviewers")
#: the research loop's turn
PRESSROOM_TURN = SearchAttributeKey.for_int("PressroomTurn")
#: research tokens used (input + output), as the loop counts them against its budget
PRESSROOM_TOKENS = SearchAttributeKey.for_int("PressroomTokens")
#: why a ``blocked`` or ``needs_operator`` job stopped, as a short code (``reason_code``);
#: ``""`` in every other status. Never the reason's text.
PRESSROOM_REASON = SearchAttributeKey.for_keyword("PressroomReason")

SEARCH_ATTRIBUTES: tuple[SearchAttributeKey[Any], ...] = (
    PRESSROOM_STAGE, PRESSROOM_STATUS, PRESSROOM_TENANT, PRESSROOM_PROJECT,
    PRESSROOM_REVIEWERS, PRESSROOM_TURN, PRESSROOM_TOKENS, PRESSROOM_REASON,
)
#: attributes added after the others: a run that started without one (on a namespace
#: registered before it existed) never upserts it (``search_attribute_updates``)
_LATER_ATTRIBUTES: tuple[SearchAttributeKey[Any], ...] = (PRESSROOM_REASON,)

#: the codes a ``blocked`` job's ``PressroomReason`` can hold: the assembly engine's
#: (``context.vocabulary.BlockedReason``'s values; a test keeps the two equal) and the
#: research loop's own (``workflows/research_job.py``: ``budget_exhausted``,
#: ``model_call_failed``; ``required_evidence_missing`` is also the engine's)
BLOCKED_REASON_CODES: frozenset[str] = frozenset({
    "required_partition_missing", "required_evidence_missing", "minimums_exceed_budget",
    "transform_blocked", "unsafe_tool_repair", "serialization_invalid",
    "budget_exhausted", "model_call_failed",
})
#: the code of a reason that is none of the known ones
OTHER_REASON = "other"

_BLOCKED_CODE = re.compile(r"([a-z_]+)(?: |$)")
#: ``needs_operator: <activity> failed (<how>): <ErrorType>: <message>``
#: (``research_job._failure_reason``)
_OPERATOR_CODE = re.compile(r"needs_operator: ([a-z_]+) failed \([^()]*\): ([A-Za-z]+):")


def reason_code(status: str, reason: str | None) -> str:
    """The ``PressroomReason`` of a job in ``status`` stopped for ``reason`` (the job's
    ``blocked_reason`` text, which never goes into visibility itself).

    ``blocked``: the reason's leading code when it is one of ``BLOCKED_REASON_CODES``;
    ``needs_operator``: ``<activity>:<ErrorType>`` (the failed activity and its last
    error's type) when both are plain words; otherwise ``other``. Every other status:
    ``""``."""
    if status == "blocked":
        match = _BLOCKED_CODE.match(reason or "")
        if match and match.group(1) in BLOCKED_REASON_CODES:
            return match.group(1)
        return OTHER_REASON
    if status == "needs_operator":
        match = _OPERATOR_CODE.match(reason or "")
        return f"{match.group(1)}:{match.group(2)}" if match else OTHER_REASON
    return ""

#: name → type, as ``OperatorService.AddSearchAttributes`` takes them
SEARCH_ATTRIBUTE_TYPES: dict[str, IndexedValueType.ValueType] = {
    key.name: IndexedValueType.ValueType(int(key.indexed_value_type))
    for key in SEARCH_ATTRIBUTES
}

_CLI_TYPES = {
    IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD: "Keyword",
    IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST: "KeywordList",
    IndexedValueType.INDEXED_VALUE_TYPE_INT: "Int",
}


def cli_type_name(name: str) -> str:
    """The ``temporal`` CLI's name of attribute ``name``'s type (``Keyword``, ``Int``…)."""
    return _CLI_TYPES[SEARCH_ATTRIBUTE_TYPES[name]]


def dev_server_args() -> list[str]:
    """``--search-attribute Name=Type`` for each attribute (``temporal server start-dev``)."""
    args: list[str] = []
    for name in SEARCH_ATTRIBUTE_TYPES:
        args += ["--search-attribute", f"{name}={cli_type_name(name)}"]
    return args


def create_command(names: list[str] | None = None, namespace: str = "default") -> str:
    """The command an operator runs to register ``names`` (default: all) on a cluster.

    Each ``--name`` is paired with the ``--type`` at the same position (a ``--type`` given
    once for several names registers only the first: temporal CLI 1.x).
    """
    chosen = names if names is not None else list(SEARCH_ATTRIBUTE_TYPES)
    flags = " ".join(f"--name {n} --type {cli_type_name(n)}" for n in chosen)
    return f"temporal operator search-attribute create --namespace {namespace} {flags}"


def _values(spec: JobSpec, state: JobState) -> list[SearchAttributePair[Any]]:
    reviewers = sorted({normalize_name(n) for n in spec.review.reviewer_names()})
    return [
        SearchAttributePair(PRESSROOM_STAGE, state.stage),
        SearchAttributePair(PRESSROOM_STATUS, state.status),
        SearchAttributePair(PRESSROOM_TENANT, spec.scope.tenant),
        SearchAttributePair(PRESSROOM_PROJECT, spec.scope.project),
        SearchAttributePair(PRESSROOM_REVIEWERS, reviewers),
        SearchAttributePair(PRESSROOM_TURN, state.research.turn),
        SearchAttributePair(PRESSROOM_TOKENS, state.research.tokens_used),
        SearchAttributePair(PRESSROOM_REASON, reason_code(state.status, state.blocked_reason)),
    ]


#: the longest current-details line (``current_details``)
_MAX_DETAILS_CHARS = 200


def current_details(state: JobState) -> str:
    """The job's one-line current details for the Web UI and ``temporal workflow describe``
    (``workflow.set_current_details``): stage, status, research turn and tokens, and a
    blocked or needs_operator job's reason *code* — never the reason's text, which can quote
    untrusted content. Set by the workflow whenever its search attributes are synced; it
    adds no command to history (the SDK answers it from memory through the
    ``__temporal_workflow_metadata`` query)."""
    line = f"{state.stage}: {state.status}"
    code = reason_code(state.status, state.blocked_reason)
    if code:
        line += f" ({code})"
    if state.research.turn:
        line += f"; research turn {state.research.turn}, {state.research.tokens_used} tokens"
    return line[:_MAX_DETAILS_CHARS]


def job_search_attributes(spec: JobSpec, state: JobState) -> TypedSearchAttributes:
    """Every attribute's value for a job with ``spec`` in ``state`` (also the start values)."""
    return TypedSearchAttributes(_values(spec, state))


def search_attribute_updates(spec: JobSpec, state: JobState,
                             current: TypedSearchAttributes) -> list[SearchAttributeUpdate[Any]]:
    """The updates that bring ``current`` to the values of ``spec`` and ``state``; empty when
    they already agree (the workflow then upserts nothing).

    An attribute added later (``PressroomReason``) is updated only when ``current`` has it
    (the run started with it, so its namespace knows it: the start sets it, ``""`` at
    first): upserting one the namespace lacks would fail the workflow task."""
    updates: list[SearchAttributeUpdate[Any]] = []
    for pair in _values(spec, state):
        if pair.key in _LATER_ATTRIBUTES and current.get(pair.key) is None:
            continue
        if current.get(pair.key) != pair.value:
            updates.append(pair.key.value_set(pair.value))
    return updates


_REFUSED = frozenset("'\"\\`")


def _literal(value: str, what: str) -> str:
    """``value`` as a single-quoted literal of the visibility query language.

    The language has no escape every server agrees on, so a value that could end or bend
    the literal (a quote, a backslash, a backtick, a control or format character) is refused
    — job ids, tenants, reviewer names and statuses never hold one (contracts.identifiers).
    """
    if not value:
        raise ValueError(f"{what} must not be empty")
    for ch in value:
        if ch in _REFUSED or unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            raise ValueError(f"{what} holds a character a visibility query cannot carry "
                             f"(U+{ord(ch):04X})")
    return f"'{value}'"


#: Temporal's status of a run that ended by continuing as new: the job goes on in a later
#: run of the same workflow id, so that run is not the job's current state
CONTINUED_AS_NEW = "ContinuedAsNew"


def jobs_query(*, reviewer: str | None, status: str | None = None, tenant: str | None = None,
               workflow_type: str = "ResearchJobWorkflow") -> str:
    """A visibility query for Pressroom jobs: of ``workflow_type`` (``WORKFLOW_TYPE``), and,
    when given, listing ``reviewer`` (compared ``normalize_name``d), in ``status``
    (``PressroomStatus``, e.g. ``awaiting_review``) and of ``tenant``. A value that cannot
    be quoted safely is a ``ValueError``.

    Only each job's latest run: the research loop continues as new every
    ``turns_per_run`` turns (docs/architecture.md, "The research loop"), and each earlier
    run closes ``ContinuedAsNew`` keeping the attributes it had then — ``running`` — so
    without this a job would be one row per run and a published job would still match
    ``PressroomStatus = 'running'``."""
    terms = [f"WorkflowType = {_literal(workflow_type, 'workflow type')}",
             f"ExecutionStatus != {_literal(CONTINUED_AS_NEW, 'execution status')}"]
    if reviewer is not None:
        terms.append(f"{PRESSROOM_REVIEWERS.name} = "
                     f"{_literal(normalize_name(reviewer), 'reviewer')}")
    if status is not None:
        terms.append(f"{PRESSROOM_STATUS.name} = {_literal(status, 'status')}")
    if tenant is not None:
        terms.append(f"{PRESSROOM_TENANT.name} = {_literal(tenant, 'tenant')}")
    return " AND ".join(terms)
