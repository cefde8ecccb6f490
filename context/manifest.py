"""``ContextAssemblyManifest``: the sealed record of one assembly attempt
(docs/context-engine.md#sealing-and-the-manifest).

Every attempt — ready or blocked — produces one. Its ``model_dump(mode="json")`` uses the
field names of docs/context-engine.md#manifest-fields, with the identity block flattened
into the top level
(``assembly_id``, ``run_id``, ``step_id``, ``status``, ``blocked_reason``, ``policy``,
``model``, ``adapter``, ``candidate_set_digest``, ``assembly_input_hash``,
``serialized_model_input_hash``, ``created_at``) so ``manifest.status`` reads naturally;
the other sections keep their own names (``source_acquisition``, ``candidate_items``,
``budget``, ``included``, ``excluded``, ``transforms``, ``tool_pairs``, ``summaries``,
``artifact_refs``, ``checkpoint_ref``, ``cache``). Additions: ``missing_topics``,
``tool_anomalies``, ``stages`` (what each pipeline stage did, so a blocked manifest shows
how far it got), ``blocked_detail`` and ``manifest_digest``.

``created_at`` is the request's ``as_of`` (the engine has no clock). ``manifest_digest``
seals the manifest: sha256 of the canonical JSON of every other field;
:meth:`ContextAssemblyManifest.verify_seal` recomputes it. A blocked manifest carries no
input hashes (``None``) and no ``actual_input_tokens``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from context.memo import ItemMemo
from context.vocabulary import (
    AcquisitionOutcome,
    AnomalyType,
    BlockedReason,
    CacheStatus,
    ExclusionReason,
    LoadMode,
    ToolStatus,
)

MANIFEST_SCHEMA_VERSION = "context-manifest/v1"


class _M(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PolicyRef(_M):
    id: str
    revision: int
    digest: str


class ModelRef(_M):
    provider: str
    name: str
    api_version: str | None
    context_limit: int


class AdapterRef(_M):
    name: str
    version: str | None
    serialization_policy_version: str | None


class SourceId(_M):
    type: str
    id: str
    revision: str | None = None


class AcquisitionEntry(_M):
    source_request_id: str
    source: SourceId
    outcome: AcquisitionOutcome
    result_digest: str | None = None
    reason: str | None = None


class CandidateEntry(_M):
    item_id: str
    source_request_id: str | None
    source_ref: dict[str, Any]
    source_type: str
    producer: str
    content_hash: str
    revision: str | None
    scope: str
    observed_at: str | None
    valid_until: str | None
    source_date: str | None
    freshness: str | None
    #: set when a pin waived the age check: the age rule did not apply because the task
    #: holds this exact (immutable) revision (docs/context-engine.md#hard-gates)
    freshness_waiver: str | None
    trust: str
    intended_role: str
    security_class: str
    completeness: str
    estimated_tokens: int | None
    canonical_key: str
    topics: list[str]


class PartitionEntry(_M):
    """``demand`` is exact when ``uncounted`` is 0; otherwise it adds, for each of the
    ``uncounted`` units evicted on a proven lower bound without being tokenized, that
    bound (so it is then a lower bound itself)."""

    used: int
    minimum: int
    maximum: int | None
    demand: int
    eviction: str
    uncounted: int = 0


class BudgetEntry(_M):
    estimator: str
    model_context_limit: int
    response_reserve: int
    protocol_overhead: int
    safety_margin: int
    usable_input: int
    estimated_used: int | None
    actual_input_tokens: int | None = None
    #: filled in from the store with ``actual_input_tokens``: the part of it the provider
    #: read from its prompt cache and the part it wrote to it
    cached_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None
    evidence_budget: int | None
    evidence_block_tokens: int
    partitions: dict[str, PartitionEntry]


class IncludedEntry(_M):
    item_id: str
    source_ref: dict[str, Any]
    source_lineage: list[dict[str, Any]]
    source_type: str
    content_hash: str
    revision: str | None
    scope: str
    trust: str
    intended_role: str
    zone: str
    partition: str
    security_class: str
    freshness: str | None
    completeness: str
    hard_gate_results: dict[str, str]
    security_assessment: dict[str, str]
    security_flags: list[str]
    admission_reason: str
    load_mode: LoadMode
    covered_topics: list[str]
    tokens: int
    transform_record_ids: list[str]


class ExcludedEntry(_M):
    item_id: str
    source_ref: dict[str, Any]
    reason: ExclusionReason
    hard_gate: str | None
    hard_gate_results: dict[str, str]
    security_class: str
    security_assessment: dict[str, str] | str
    refresh_condition: str | None
    detail: str
    stage: str
    superseded_by: str | None = None


class TransformEntry(_M):
    record_id: str
    type: str
    input_item_ids: list[str]
    input_range: dict[str, str] | None = None
    input_digest: str
    objective: str
    policy_version: str
    transformer_version: str
    output_item_id: str | None
    output_digest: str | None
    preservation_assertions: dict[str, str]
    token_estimate_before: int | None
    token_estimate_after: int | None
    trust_before: str
    trust_after: str | None
    dropped_item_ids: list[str] = []


class ToolPairEntry(_M):
    call_id: str
    tool_name: str
    canonicalization: str
    canonical_argument_hash: str
    result_item_id: str
    result_hash: str
    status: ToolStatus
    pairing_assertion: str
    evidence_use: str
    synthesized: bool
    turn: int
    #: ``logged`` / ``folded``: a line of the research log, or inside its fold
    #: (``context.tools.fold``)
    placement: Literal["verbatim", "compacted", "logged", "folded", "evicted", "not_placed"]
    security_flags: list[str] = []


class AnomalyEntry(_M):
    type: AnomalyType
    call_id: str
    detail: str


class SummaryEntry(_M):
    summary_id: str
    input_item_ids: list[str]
    input_range: dict[str, str] | None
    input_digest: str
    transform_record_id: str
    preservation_assertions: dict[str, str]


class ArtifactRefEntry(_M):
    kind: str
    id: str
    revision: str | None
    hash: str


class CacheEntry(_M):
    prefix_hash: str | None
    prefix_identity: str | None
    policy: Literal["eligible", "ineligible"]
    status: CacheStatus
    previous_assembly_id: str | None
    reason: str
    #: what the request asks the provider to cache: Anthropic ``cache_control``
    #: breakpoints placed, and the OpenAI ``prompt_cache_key`` (none on a blocked step)
    breakpoints: int = 0
    prompt_cache_key: str | None = None
    #: the engine's count, in tokens, of the cacheable prefix it asked for (up to the last
    #: breakpoint; for OpenAI the tools and the system message)
    cacheable_prefix_tokens: int | None = None


class StageEntry(_M):
    stage: str
    status: Literal["done", "blocked"]
    detail: str


class ContextAssemblyManifest(_M):
    manifest_schema_version: str = MANIFEST_SCHEMA_VERSION
    assembly_id: str
    run_id: str
    step_id: str
    stage: str
    status: Literal["ready", "blocked"]
    blocked_reason: BlockedReason | None
    blocked_detail: str | None
    policy: PolicyRef
    model: ModelRef
    adapter: AdapterRef
    candidate_set_digest: str
    assembly_input_hash: str | None
    serialized_model_input_hash: str | None
    created_at: str
    source_acquisition: list[AcquisitionEntry]
    candidate_items: list[CandidateEntry]
    budget: BudgetEntry
    included: list[IncludedEntry]
    excluded: list[ExcludedEntry]
    transforms: list[TransformEntry]
    tool_pairs: list[ToolPairEntry]
    tool_anomalies: list[AnomalyEntry]
    summaries: list[SummaryEntry]
    missing_topics: list[str]
    artifact_refs: list[ArtifactRefEntry]
    checkpoint_ref: str | None
    cache: CacheEntry
    stages: list[StageEntry]
    manifest_digest: str

    @property
    def manifest_id(self) -> str:
        """The assembly id; the store keys manifests by it."""
        return self.assembly_id

    def verify_seal(self) -> bool:
        return seal_digest(self.model_dump(mode="json")) == self.manifest_digest


def canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _c_encoder() -> Callable[[Any], str] | None:
    """``canonical`` through one prebuilt C encoder: the same bytes without building a
    ``JSONEncoder`` per call (thousands of small entries per manifest)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    enc = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    run = make(None, enc.default, json.encoder.encode_basestring, None, ":", ",", True,
               False, True)

    def encode(data: Any) -> str:
        return "".join(run(data, 0))

    return encode


_canonical_entry: Callable[[Any], str] = _c_encoder() or canonical


def seal_digest(dumped: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a dumped manifest without ``manifest_digest``."""
    body = {k: v for k, v in dumped.items() if k != "manifest_digest"}
    return "sha256:" + hashlib.sha256(canonical(body).encode("utf-8")).hexdigest()


_LIST_FIELDS = frozenset({
    "source_acquisition", "candidate_items", "included", "excluded", "transforms",
    "tool_pairs", "tool_anomalies", "summaries", "artifact_refs", "stages",
})
_ENTRY_JSON = ItemMemo()


# Entries whose every field holds a JSON value or a StrEnum (encoded as its value): the
# attribute dict encodes to the same canonical JSON as their JSON-mode dump.
_FLAT_ENTRIES: frozenset[type[BaseModel]] = frozenset(
    {CandidateEntry, ExcludedEntry, IncludedEntry}
)


def _entry_json(entry: BaseModel) -> str:
    found: str | None = _ENTRY_JSON.get(entry, 0)
    if found is None:
        data = entry.__dict__ if type(entry) in _FLAT_ENTRIES else entry.model_dump(mode="json")
        found = _canonical_entry(data)
        _ENTRY_JSON.put(entry, 0, found)
    return found


def _fast_digest(m: ContextAssemblyManifest) -> str:
    """Same bytes as :func:`seal_digest` of ``m.model_dump(mode="json")``, built from
    per-entry canonical JSON that is memoized (entries are frozen and mostly reused
    between assemblies of the same candidates)."""
    small = m.model_dump(mode="json", exclude=set(_LIST_FIELDS) | {"manifest_digest"})
    parts = {k: canonical(v) for k, v in small.items()}
    for name in _LIST_FIELDS:
        parts[name] = "[" + ",".join(_entry_json(e) for e in getattr(m, name)) + "]"
    body = "{" + ",".join(f"{json.dumps(k)}:{parts[k]}" for k in sorted(parts)) + "}"
    return "sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()


def seal(fields: dict[str, Any]) -> ContextAssemblyManifest:
    """Validate ``fields`` into a manifest and stamp its ``manifest_digest``."""
    draft = ContextAssemblyManifest.model_validate({**fields, "manifest_digest": ""})
    return draft.model_copy(update={"manifest_digest": _fast_digest(draft)})


def clear_memo() -> None:
    _ENTRY_JSON.clear()
