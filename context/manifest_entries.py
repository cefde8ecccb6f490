"""Builders that turn items and gate outcomes into manifest entries (``context.manifest``).

Shared by every stage that records something (the gates, the tool stage, the state's
``exclude``, the seal stage), so every manifest field is produced in one place. All
builders are pure and deterministic: datetimes are ISO strings, dicts come from
``model_dump(mode="json")``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from context.admitted import Admitted, GateOutcome
from context.items import ContextItem, SourceAcquisition
from context.manifest import (
    AcquisitionEntry,
    ArtifactRefEntry,
    CandidateEntry,
    ExcludedEntry,
    IncludedEntry,
    SourceId,
    TransformEntry,
)
from context.memo import ItemMemo
from context.vocabulary import (
    GATE_ORDER,
    ExclusionReason,
    GateResult,
    SourceType,
)

_E = TypeVar("_E", CandidateEntry, ExcludedEntry, IncludedEntry)
_ALL_PASSED = {g.value: GateResult.PASSED.value for g in GATE_ORDER}
_ALL_PASSED_ITEMS = [(g, GateResult.PASSED) for g in GATE_ORDER]


def ref_dict(item: ContextItem) -> dict[str, object]:
    """``source_ref.model_dump(mode="json", exclude_none=True)``: every field of a
    ``SourceRef`` is a str or an int, so its non-``None`` attributes are that dump."""
    return {k: v for k, v in item.source_ref.__dict__.items() if v is not None}


def _construct(cls: type[_E], values: dict[str, Any]) -> _E:
    """``cls.model_construct(**values)`` when ``values`` names every field (no aliases,
    defaults or post-init on these entries): the same instance, without pydantic's
    per-field loop, which cost more than the rest of a candidate's gate work."""
    entry = cls.__new__(cls)
    object.__setattr__(entry, "__dict__", values)
    object.__setattr__(entry, "__pydantic_fields_set__", set(values))
    object.__setattr__(entry, "__pydantic_extra__", None)
    object.__setattr__(entry, "__pydantic_private__", None)
    return entry


def acquisition_entry(a: SourceAcquisition, reason: str | None) -> AcquisitionEntry:
    """``reason``: the acquisition's reason as the manifest may show it. A failed
    retrieval's reason is the tool's error text, which may quote a credential (a repository
    URL with a token), so the admission stage passes it redacted."""
    return AcquisitionEntry(
        source_request_id=a.source_request_id,
        source=SourceId(type=a.source_type, id=a.source_id, revision=a.revision),
        outcome=a.outcome,
        result_digest=a.result_digest,
        reason=reason,
    )


def candidate_entry(item: ContextItem, freshness: str | None,
                    freshness_waiver: str | None = None) -> CandidateEntry:
    # constructed, not validated: every value comes from an already-validated ContextItem
    return _construct(CandidateEntry, dict(
        item_id=item.item_id,
        source_request_id=item.source_request_id,
        source_ref=ref_dict(item),
        source_type=item.source_type.value,
        producer=item.producer,
        content_hash=item.content_hash,
        revision=item.revision,
        scope=str(item.scope),
        observed_at=item.observed_at.isoformat() if item.observed_at else None,
        valid_until=item.valid_until.isoformat() if item.valid_until else None,
        source_date=item.source_date.isoformat() if item.source_date else None,
        freshness=freshness,
        freshness_waiver=freshness_waiver,
        trust=item.trust.value,
        intended_role=item.intended_role.value,
        security_class=item.security_class.value,
        completeness=item.completeness.value,
        estimated_tokens=item.estimated_tokens,
        canonical_key=item.key,
        topics=list(item.topics),
    ))


def excluded_from_gate(outcome: GateOutcome) -> ExcludedEntry:
    assert outcome.reason is not None and outcome.failed_gate is not None
    item = outcome.item
    return ExcludedEntry(
        item_id=item.item_id,
        source_ref=ref_dict(item),
        reason=outcome.reason,
        hard_gate=outcome.failed_gate.value,
        hard_gate_results={g.value: r.value for g, r in outcome.results.items()},
        security_class=item.security_class.value,
        security_assessment=dict(outcome.security_assessment),
        refresh_condition=outcome.refresh_condition,
        detail=outcome.detail,
        stage="hard_gates",
    )


def _gate_results(gate: GateOutcome | None) -> dict[str, str]:
    """The JSON form of an admitted item's gate results (all passed: a copy of the
    prebuilt dict, same keys in the same order, instead of one enum lookup per gate)."""
    if gate is None or list(gate.results.items()) == _ALL_PASSED_ITEMS:
        return dict(_ALL_PASSED)
    return {g.value: r.value for g, r in gate.results.items()}


def excluded_after_gates(
    item: ContextItem,
    gate: GateOutcome | None,
    reason: ExclusionReason,
    stage: str,
    detail: str,
    superseded_by: str | None = None,
) -> ExcludedEntry:
    # constructed, not validated: every value is already of its field's type
    return _construct(ExcludedEntry, dict(
        item_id=item.item_id,
        source_ref=ref_dict(item),
        reason=ExclusionReason(reason),
        hard_gate=None,
        hard_gate_results=_gate_results(gate),
        security_class=item.security_class.value,
        security_assessment=dict(gate.security_assessment) if gate is not None else {},
        refresh_condition=None,
        detail=str(detail),
        stage=str(stage),
        superseded_by=superseded_by,
    ))


_INCLUDED = ItemMemo()


def included_entry(a: Admitted) -> IncludedEntry:
    """The manifest entry of an admitted item (memoized: warm runs reuse the object)."""
    key = (a.tokens, a.zone, a.partition, a.admission_reason, a.load_mode, a.covered,
           tuple(a.transform_ids), a.gate.effective_trust, a.gate.freshness,
           tuple(a.gate.results.items()), tuple(a.gate.security_assessment.items()),
           a.gate.instruction_flags)
    found: IncludedEntry | None = _INCLUDED.get(a.item, key)
    if found is None:
        found = _included_entry(a)
        _INCLUDED.put(a.item, key, found)
    return found


def clear_memo() -> None:
    _INCLUDED.clear()


def _included_entry(a: Admitted) -> IncludedEntry:
    item = a.item
    # constructed, not validated: every value is already of its field's type
    return _construct(IncludedEntry, dict(
        item_id=item.item_id,
        source_ref=ref_dict(item),
        source_lineage=[n.model_dump(mode="json") for n in item.source_lineage],
        source_type=item.source_type.value,
        content_hash=item.content_hash,
        revision=item.revision,
        scope=str(item.scope),
        trust=a.gate.effective_trust.value,
        intended_role=item.intended_role.value,
        zone=a.zone.value,
        partition=a.partition.value,
        security_class=item.security_class.value,
        freshness=a.gate.freshness.value if a.gate.freshness else None,
        completeness=item.completeness.value,
        hard_gate_results={g.value: r.value for g, r in a.gate.results.items()},
        security_assessment=dict(a.gate.security_assessment),
        security_flags=list(a.gate.instruction_flags),
        admission_reason=a.admission_reason,
        load_mode=a.load_mode,
        covered_topics=list(a.covered),
        tokens=int(a.tokens),
        transform_record_ids=list(a.transform_ids),
    ))


def artifact_refs(included: Iterable[Admitted]) -> list[ArtifactRefEntry]:
    refs: dict[tuple[str, str, str], ArtifactRefEntry] = {}
    for a in included:
        ref = a.original.source_ref
        if ref.artifact_id:
            entry = ArtifactRefEntry(
                kind=ref.artifact_kind or a.original.source_type.value,
                id=ref.artifact_id,
                revision=ref.revision or a.original.revision,
                hash=a.original.content_hash,
            )
            refs[(entry.kind, entry.id, entry.revision or "")] = entry
    return [refs[k] for k in sorted(refs)]


def checkpoint_ref(included: Iterable[Admitted]) -> str | None:
    ids = sorted(
        a.original.source_ref.artifact_id or a.item.item_id
        for a in included
        if a.item.source_type is SourceType.CHECKPOINT
    )
    return ids[-1] if ids else None


def simple_transform(
    *,
    record_id: str,
    kind: str,
    before: ContextItem,
    after: ContextItem,
    objective: str,
    policy_version: str,
    transformer_version: str,
    assertions: dict[str, str],
    tokens_before: int | None,
    tokens_after: int | None,
) -> TransformEntry:
    """A one-input transform (redact, excerpt, disclose) with its checked assertions."""
    return TransformEntry(
        record_id=record_id,
        type=kind,
        input_item_ids=[before.item_id],
        input_digest=before.content_hash,
        objective=objective,
        policy_version=policy_version,
        transformer_version=transformer_version,
        output_item_id=after.item_id,
        output_digest=after.content_hash,
        preservation_assertions=assertions,
        token_estimate_before=tokens_before,
        token_estimate_after=tokens_after,
        trust_before=before.trust.value,
        trust_after=after.trust.value,
    )

