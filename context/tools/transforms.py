"""Checked transforms: boundary-only truncation and an extractive checkpoint summary.

Why this exists: every shortening must say what it keeps and prove it
(docs/context-engine.md#transforms-and-preservation-assertions). Each transform returns a
:class:`TransformRecord` (fields listed in
docs/context-engine.md#transforms-and-preservation-assertions) whose
``preservation_assertions`` are checked deterministically against the *inputs*; any ``failed``
assertion raises :class:`PreservationFailed` carrying the record, and the engine seals
``transform_blocked`` instead of passing a lossy result on.

:func:`truncate_items` cuts only whole units: an item, a turn (items with the same
``metadata["turn"]`` and the tool pairs of that turn travel together) — so a tool exchange
(the assistant's calls of a turn and all their results) is never split. It keeps a
contiguous run of units (newest by default), never skips a unit to squeeze a smaller one
in, and always keeps pinned units (unresolved tool calls, ``pinned_item_ids``).

:func:`structured_summary` is deterministic and extractive (no model): every line is a
verbatim fact taken from the inputs, in input order, de-duplicated. Where facts come from:

* ``item.metadata`` keys (and, for ``source_type=checkpoint`` items whose content is a JSON
  object, the same keys in that object): ``goal``, ``constraints``, ``current_stage``,
  ``done``, ``in_progress``, ``blocked``, ``open_items``, ``exact_values``, ``errors``,
  ``conflicts``, ``negative_findings`` (strings, or ``{"finding", "scope"}`` so "not found"
  keeps where it was searched), ``draft_revision``, ``next_steps``, ``artifact_refs``,
  ``checkpoint_ref``, ``unresolved_tool_calls`` (call ids);
* the items themselves: ``claim`` + ``source_ref.citation()`` (``repo@commit:path#Lx-Ly``)
  + ``revision`` become confirmed claims / source refs; artifact-backed items become
  artifact refs (``kind:id@revision``);
* tool pairs: closed pairs appear as result refs (errors with their first line as exact
  errors); pairs answered by a placeholder are unresolved tool calls (only closed results
  enter a summary, docs/context-engine.md#transforms-and-preservation-assertions).

The output item's ``metadata`` carries the extracted facts again, so a summary of
summaries keeps them. ``trust_after`` is the lowest trust among everything summarized —
the items and, when tool pairs are given, their tool output (``untrusted_external_data``)
— capped at ``derived_context``: a summary never ranks above any input or above derived
context.
Values longer than ``max_line_chars`` are clipped and a ``max_tokens`` target drops
optional lines (done, next steps, claim wording) first; clipping a required fact fails
its assertion — that is the blocking path, not a silent loss.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from context.errors import ContextError
from context.items import ContextItem, LineageNode, ScopeRef, sha256_text
from context.tokens import TokenCounter, canonical_json, default_counter
from context.tool_history import ToolPair
from context.tools.summary import Facts, extract_facts, render_summary
from context.vocabulary import (
    PRESERVE_KEYS,
    SECURITY_LEVEL,
    TRUST_RANK,
    Completeness,
    Role,
    SourceType,
    Trust,
    lowest_trust,
)

__all__ = [
    "PRESERVE_KEYS",
    "SUMMARIZER_VERSION",
    "TRUNCATOR_VERSION",
    "PreservationFailed",
    "TransformError",
    "TransformRecord",
    "TruncationResult",
    "structured_summary",
    "truncate_items",
]

SUMMARIZER_VERSION = "checkpoint-summarizer/extractive-v1"
TRUNCATOR_VERSION = "boundary-truncator/v1"
Assertion = Literal["passed", "failed"]


class TransformError(ContextError):
    """A transform was asked to do something impossible (no inputs, mixed scopes)."""


class TransformRecord(BaseModel):
    """Record of one transform (docs/context-engine.md#transforms-and-preservation-assertions)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record_id: str
    type: Literal["truncate_item", "summarize"]
    input_item_ids: tuple[str, ...]
    input_range: dict[str, str] | None = None
    input_digest: str
    objective: str
    policy_version: str
    transformer_version: str
    output_item_id: str | None
    output_digest: str
    preservation_assertions: dict[str, Assertion]
    token_estimate_before: int
    token_estimate_after: int
    trust_before: str
    trust_after: str
    dropped_item_ids: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return all(v == "passed" for v in self.preservation_assertions.values())

    @property
    def failed_assertions(self) -> tuple[str, ...]:
        return tuple(k for k, v in self.preservation_assertions.items() if v == "failed")


class PreservationFailed(ContextError):
    """A transform broke a preservation assertion; ``record`` says which (status failed)."""

    def __init__(self, record: TransformRecord) -> None:
        super().__init__(
            f"transform {record.record_id} failed preservation assertions "
            f"{list(record.failed_assertions)}"
        )
        self.record = record


def _digest_inputs(items: Sequence[ContextItem], pairs: Sequence[ToolPair]) -> str:
    ids = [[i.item_id, i.content_hash] for i in items]
    ids += [[p.result_item_id, p.result_hash] for p in pairs]
    return sha256_text(canonical_json(ids))


def _trust_before(trusts: Sequence[Trust]) -> str:
    return str(trusts[0]) if len(set(trusts)) == 1 else "mixed_admitted_sources"


def _pair_tokens(pair: ToolPair, counter: TokenCounter) -> int:
    return counter.count_text(pair.result.content) + counter.count_text(
        canonical_json(pair.call.arguments)
    )


class TruncationResult(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    kept_items: tuple[ContextItem, ...]
    kept_pairs: tuple[ToolPair, ...]
    dropped_item_ids: tuple[str, ...]
    dropped_call_ids: tuple[str, ...]
    record: TransformRecord


def _turn(item: ContextItem) -> int | None:
    t = item.metadata.get("turn")
    return t if isinstance(t, int) and not isinstance(t, bool) else None


def truncate_items(
    items: Sequence[ContextItem],
    *,
    max_tokens: int,
    objective: str,
    policy_version: str,
    tool_pairs: Sequence[ToolPair] = (),
    keep: Literal["newest", "oldest"] = "newest",
    pinned_item_ids: Iterable[str] = (),
    token_counts: Mapping[str, int] | None = None,
    counter: TokenCounter | None = None,
    record_id: str | None = None,
) -> TruncationResult:
    """Keep a contiguous run of whole units within ``max_tokens``; record what was cut."""
    if max_tokens < 0:
        raise TransformError(f"max_tokens must be >= 0, got {max_tokens}")
    if not items and not tool_pairs:
        raise TransformError("truncate_items needs at least one item or tool pair")
    counter = default_counter() if counter is None else counter
    counts = dict(token_counts or {})
    pinned = set(pinned_item_ids)
    # unit key -> (items, pairs); turn units merge items and pairs of that turn
    units: dict[tuple[str, int | str], tuple[list[ContextItem], list[ToolPair]]] = {}
    for it in items:
        t = _turn(it)
        key: tuple[str, int | str] = ("turn", t) if t is not None else ("item", it.item_id)
        units.setdefault(key, ([], []))[0].append(it)
    for p in tool_pairs:
        units.setdefault(("turn", p.turn), ([], []))[1].append(p)
    order = list(units)

    def cost(key: tuple[str, int | str]) -> int:
        its, ps = units[key]
        n = sum(counts.get(i.item_id) or counter.count_text(i.content) for i in its)
        return n + sum(_pair_tokens(p, counter) for p in ps)

    def is_pinned(key: tuple[str, int | str]) -> bool:
        its, ps = units[key]
        return any(i.item_id in pinned for i in its) or any(p.synthesized for p in ps)

    costs = {k: cost(k) for k in order}
    kept = {k for k in order if is_pinned(k)}
    used = sum(costs[k] for k in kept)
    for key in reversed(order) if keep == "newest" else order:
        if key in kept:
            continue
        if used + costs[key] > max_tokens:
            break
        kept.add(key)
        used += costs[key]
    kept_items = tuple(i for k in order if k in kept for i in units[k][0])
    kept_pairs = tuple(p for p in tool_pairs if ("turn", p.turn) in kept)
    kept_ids = {i.item_id for i in kept_items}
    kept_calls = {p.call_id for p in kept_pairs}
    dropped_items = tuple(i.item_id for i in items if i.item_id not in kept_ids)
    dropped_calls = tuple(p.call_id for p in tool_pairs if p.call_id not in kept_calls)
    assertions = _truncation_assertions(items, tool_pairs, kept_items, kept_pairs, pinned)
    assertions["within_budget"] = _ok(used <= max_tokens)
    trusts = [i.trust for i in items] or [Trust.UNTRUSTED_EXTERNAL_DATA]
    if tool_pairs:
        trusts.append(Trust.UNTRUSTED_EXTERNAL_DATA)
    floor = str(lowest_trust(trusts))
    input_digest = _digest_inputs(items, tool_pairs)
    record = TransformRecord(
        record_id=record_id or f"transform-truncate-{input_digest[7:23]}",
        type="truncate_item",
        input_item_ids=tuple(i.item_id for i in items)
        + tuple(p.result_item_id for p in tool_pairs),
        input_digest=input_digest,
        objective=objective,
        policy_version=policy_version,
        transformer_version=TRUNCATOR_VERSION,
        output_item_id=None,
        output_digest=_digest_inputs(kept_items, kept_pairs),
        preservation_assertions=assertions,
        token_estimate_before=sum(costs.values()),
        token_estimate_after=used,
        trust_before=_trust_before(trusts),
        trust_after=floor,
        dropped_item_ids=dropped_items + tuple(f"tool-result:{c}" for c in dropped_calls),
    )
    if not record.passed:
        raise PreservationFailed(record)
    return TruncationResult(
        kept_items=kept_items,
        kept_pairs=kept_pairs,
        dropped_item_ids=dropped_items,
        dropped_call_ids=dropped_calls,
        record=record,
    )


def _ok(condition: bool) -> Assertion:
    return "passed" if condition else "failed"


def _truncation_assertions(
    items: Sequence[ContextItem],
    pairs: Sequence[ToolPair],
    kept_items: Sequence[ContextItem],
    kept_pairs: Sequence[ToolPair],
    pinned: set[str],
) -> dict[str, Assertion]:
    """Checked on the outcome, independently of how units were chosen."""
    kept_ids = {i.item_id for i in kept_items}
    kept_calls = {p.call_id for p in kept_pairs}
    exchange: dict[int, set[bool]] = {}
    turn: dict[int, set[bool]] = {}
    for p in pairs:
        exchange.setdefault(p.turn, set()).add(p.call_id in kept_calls)
        turn.setdefault(p.turn, set()).add(p.call_id in kept_calls)
    for i in items:
        t = _turn(i)
        if t is not None:
            turn.setdefault(t, set()).add(i.item_id in kept_ids)
    return {
        "tool_exchanges_whole": _ok(all(len(s) == 1 for s in exchange.values())),
        "turns_whole": _ok(all(len(s) == 1 for s in turn.values())),
        "unresolved_tool_calls": _ok(all(p.call_id in kept_calls for p in pairs if p.synthesized)),
        "pinned_items": _ok(all(i.item_id in kept_ids for i in items if i.item_id in pinned)),
    }


def structured_summary(
    items: Sequence[ContextItem],
    *,
    objective: str,
    policy_version: str,
    tool_pairs: Sequence[ToolPair] = (),
    output_item_id: str | None = None,
    record_id: str | None = None,
    preserve: Sequence[str] = PRESERVE_KEYS,
    contiguous: bool = True,
    max_tokens: int | None = None,
    max_line_chars: int = 2000,
    counter: TokenCounter | None = None,
) -> tuple[ContextItem, TransformRecord]:
    """Extractive checkpoint summary of ``items`` (and closed/unresolved tool pairs)."""
    if not items:
        raise TransformError("structured_summary needs at least one input item")
    unknown = sorted(set(preserve) - set(PRESERVE_KEYS))
    if unknown:
        raise TransformError(f"unknown preservation keys {unknown}; known: {list(PRESERVE_KEYS)}")
    counter = default_counter() if counter is None else counter
    facts: Facts = extract_facts(items, tool_pairs)
    text = render_summary(facts, items, counter, max_tokens=max_tokens, max_chars=max_line_chars)
    checks = facts.check(text)
    assertions: dict[str, Assertion] = {k: checks[k] for k in preserve}
    if max_tokens is not None:
        assertions["within_token_target"] = _ok(counter.count_text(text) <= max_tokens)
    trusts = [i.trust for i in items]
    if tool_pairs:  # tool output it summarizes is untrusted data, whatever the items say
        trusts.append(Trust.UNTRUSTED_EXTERNAL_DATA)
    trust_after = lowest_trust([*trusts, Trust.DERIVED_CONTEXT])
    input_digest = _digest_inputs(items, tool_pairs)
    out_id = output_item_id or f"summary-{input_digest[7:23]}"
    rec_id = record_id or f"transform-summary-{input_digest[7:23]}"
    out_hash = sha256_text(text)
    output = ContextItem.build(
        item_id=out_id,
        source_type=SourceType.MODEL_SUMMARY,
        producer=SUMMARIZER_VERSION,
        content=text,
        content_hash=out_hash,
        scope=_narrowest_scope(items),
        observed_at=min((i.observed_at for i in items if i.observed_at), default=None),
        valid_until=min((i.valid_until for i in items if i.valid_until), default=None),
        trust=trust_after,
        intended_role=Role.DERIVED_CONTEXT
        if TRUST_RANK[trust_after] >= TRUST_RANK[Trust.DERIVED_CONTEXT]
        else Role.UNTRUSTED_DATA,
        security_class=max((i.security_class for i in items), key=SECURITY_LEVEL.__getitem__),
        completeness=Completeness.SUMMARY,
        estimated_tokens=counter.count_text(text),
        topics=tuple(sorted({t for i in items for t in i.topics})),
        source_lineage=(
            *(
                LineageNode(node_id=i.item_id, type=str(i.source_type), digest=i.content_hash)
                for i in items
            ),
            LineageNode(
                node_id=out_id,
                type="summarize",
                input_node_ids=tuple(i.item_id for i in items),
                digest=out_hash,
            ),
        ),
        metadata={**facts.as_metadata(), "transform_record_id": rec_id},
    )
    record = TransformRecord(
        record_id=rec_id,
        type="summarize",
        input_item_ids=tuple(i.item_id for i in items),
        input_range={"start_item_id": items[0].item_id, "end_item_id": items[-1].item_id}
        if contiguous
        else None,
        input_digest=input_digest,
        objective=objective,
        policy_version=policy_version,
        transformer_version=SUMMARIZER_VERSION,
        output_item_id=out_id,
        output_digest=out_hash,
        preservation_assertions=assertions,
        token_estimate_before=sum(counter.count_text(i.content) for i in items)
        + sum(_pair_tokens(p, counter) for p in tool_pairs),
        token_estimate_after=counter.count_text(text),
        trust_before=_trust_before(trusts),
        trust_after=str(trust_after),
    )
    if not record.passed:
        raise PreservationFailed(record)
    return output, record


def _narrowest_scope(items: Sequence[ContextItem]) -> ScopeRef:
    """The one scope all inputs fit; summarizing never widens visibility."""
    first = items[0].scope
    tasks = {i.scope.task for i in items if i.scope.task is not None}
    if any((i.scope.tenant, i.scope.project) != (first.tenant, first.project) for i in items):
        raise TransformError("cannot summarize items from different tenants or projects")
    if len(tasks) > 1:
        raise TransformError(f"cannot summarize items from different tasks {sorted(tasks)}")
    return ScopeRef(tenant=first.tenant, project=first.project, task=next(iter(tasks), None))
