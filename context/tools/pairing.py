"""Tool call/result pairing: one result per call, right after it, every repair typed.

Why this exists: parallel tools complete out of order, results get lost, duplicated or
replayed, and a model that sees Repo A's output next to Repo B's arguments draws wrong
conclusions (docs/context-engine.md#tool-pairing-and-anomalies). :func:`pair_tool_history`
turns a raw history (calls in the order the assistant issued them, results in arrival order)
into pairs in *call* order, each call followed by exactly one result, and records every repair
as a typed :class:`ToolAnomaly`:

* ``tool_result_reordered`` — a result arrived in another position than its call's;
* ``tool_result_synthesized`` — a call has no result; a placeholder with status
  ``unknown`` says the result is unavailable and success must not be assumed;
* ``orphan_tool_result_dropped`` — a result names a call id that was never issued;
* ``duplicate_dropped`` — a second result for the same call (the *first arrival* is kept),
  or an exact repeat of a call record.

Choices the design leaves open, written down:

* ``canonical_argument_hash`` = ``sha256`` of canonical JSON of ``[tool_name, arguments]``
  (sorted keys, no whitespace, ``ensure_ascii=False``; NaN/Infinity rejected) — method name
  ``tool_name_plus_canonical_json_args/v1``.
* Two *different* calls sharing a ``call_id`` are bad input: :class:`ToolHistoryError`.
  An identical repeated call record is a harmless ``duplicate_dropped``.
* A repair that would hide a security-relevant fact blocks instead (``blocked`` names the
  rule; the engine seals ``unsafe_tool_repair``). Dropping a result hides a fact when the
  dropped result differs from the kept one (or is an orphan) *and* it is security-relevant:
  it carries ``security_flags``, its tool is security-relevant (call flag or the
  ``security_relevant_tools`` argument), or its content matches :data:`SECURITY_MARKERS`.
  A differing duplicate whose status is not ``success`` also blocks: silently keeping the
  other one would hide an error.
* A result whose ``tool_name`` differs from its call's blocks (``tool_name_mismatch``):
  pairing it would be exactly the Repo A / Repo B confusion.
* A given ``result_hash`` must equal ``sha256(content)``; a mismatch blocks
  (``result_hash_mismatch``): the stored content is not what was recorded, and replacing
  it by a placeholder would hide possible tampering.
* ``evidence_use``: ``confirmed_by_policy`` for ``success`` (and for ``partial``/``error``
  only when ``allow_partial_evidence``); ``diagnostic_only`` for ``partial``/``error``
  otherwise and for ``canceled``; ``unavailable`` for ``unknown`` and placeholders.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from context.errors import ToolHistoryError
from context.tool_history import (
    EvidenceUse,
    PairingResult,
    ToolAnomaly,
    ToolCall,
    ToolHistory,
    ToolPair,
    ToolResult,
    placeholder_text,
    result_item_id,
)
from context.vocabulary import AnomalyType, ToolStatus

__all__ = ["SECURITY_MARKERS", "pair_tool_history", "recent_call_ids"]

SECURITY_MARKERS = re.compile(
    r"permission denied|access denied|unauthori[sz]ed|forbidden|\b40[13]\b|"
    r"secret|credential|api[_ -]?key|password|token leak|prompt injection|"
    r"security (?:alert|violation|warning)|policy violation|sandbox violation",
    re.IGNORECASE,
)

def _evidence_use(status: ToolStatus, allow_partial: bool, synthesized: bool) -> EvidenceUse:
    if synthesized or status is ToolStatus.UNKNOWN:
        return "unavailable"
    if status is ToolStatus.SUCCESS:
        return "confirmed_by_policy"
    if status in (ToolStatus.PARTIAL, ToolStatus.ERROR) and allow_partial:
        return "confirmed_by_policy"
    return "diagnostic_only"


def _security_relevant(result: ToolResult, call: ToolCall | None, tools: frozenset[str]) -> bool:
    return bool(
        result.security_flags
        or (call is not None and call.security_relevant)
        or result.tool_name in tools
        or SECURITY_MARKERS.search(result.content)
    )


def _unique_calls(calls: Iterable[ToolCall]) -> tuple[list[ToolCall], list[ToolAnomaly]]:
    kept: dict[str, ToolCall] = {}
    anomalies: list[ToolAnomaly] = []
    for call in calls:
        seen = kept.get(call.call_id)
        if seen is None:
            kept[call.call_id] = call
        elif seen == call:
            anomalies.append(
                ToolAnomaly(
                    type=AnomalyType.DUPLICATE_DROPPED,
                    call_id=call.call_id,
                    detail="identical call record repeated; one copy kept",
                )
            )
        else:
            raise ToolHistoryError(
                f"call_id {call.call_id!r} is used by two different calls "
                f"({seen.tool_name} turn {seen.turn} and {call.tool_name} turn {call.turn}); "
                "every call needs its own id"
            )
    return list(kept.values()), anomalies


def pair_tool_history(
    history: ToolHistory,
    *,
    allow_partial_evidence: bool = False,
    security_relevant_tools: Iterable[str] = (),
) -> PairingResult:
    """Pair every call with exactly one result, in call order; see the module docstring."""
    sec_tools = frozenset(security_relevant_tools)
    calls, anomalies = _unique_calls(history.calls)
    by_id = {c.call_id: c for c in calls}
    first: dict[str, tuple[int, ToolResult]] = {}
    for arrival, result in enumerate(history.results):
        call = by_id.get(result.call_id)
        if result.result_hash is not None and result.result_hash != result.computed_hash:
            return _blocked(
                anomalies,
                f"result_hash_mismatch: result for {result.call_id} claims "
                f"{result.result_hash} but its content hashes to {result.computed_hash}",
            )
        if call is None:
            if _security_relevant(result, None, sec_tools):
                return _blocked(
                    anomalies,
                    f"orphan_security_relevant: result for unknown call {result.call_id} "
                    f"({result.tool_name}, {result.status}) carries a security-relevant fact",
                )
            anomalies.append(
                ToolAnomaly(
                    type=AnomalyType.ORPHAN_TOOL_RESULT_DROPPED,
                    call_id=result.call_id,
                    detail=f"result of {result.tool_name} (arrival {arrival}, status "
                    f"{result.status}) names a call id that was never issued; dropped",
                )
            )
            continue
        if result.tool_name != call.tool_name:
            return _blocked(
                anomalies,
                f"tool_name_mismatch: result for {result.call_id} is from "
                f"{result.tool_name} but the call was to {call.tool_name}",
            )
        kept = first.get(result.call_id)
        if kept is None:
            first[result.call_id] = (arrival, result)
            continue
        same = kept[1].content == result.content and kept[1].status == result.status
        if not same and (
            result.status is not ToolStatus.SUCCESS or _security_relevant(result, call, sec_tools)
        ):
            return _blocked(
                anomalies,
                f"duplicate_conflict: a second result for {result.call_id} "
                f"(status {result.status}) differs from the first and is security-relevant "
                "or not a success; dropping it would hide it",
            )
        anomalies.append(
            ToolAnomaly(
                type=AnomalyType.DUPLICATE_DROPPED,
                call_id=result.call_id,
                detail=f"second result (arrival {arrival}) dropped, first arrival "
                f"{kept[0]} kept; content {'identical' if same else 'differed'}",
            )
        )

    answered = [c.call_id for c in calls if c.call_id in first]
    arrival_order = sorted(answered, key=lambda cid: first[cid][0])
    arrival_rank = {cid: i for i, cid in enumerate(arrival_order)}
    pairs: list[ToolPair] = []
    for rank, call in enumerate(c for c in calls if c.call_id in first):
        if arrival_rank[call.call_id] != rank:
            anomalies.append(
                ToolAnomaly(
                    type=AnomalyType.TOOL_RESULT_REORDERED,
                    call_id=call.call_id,
                    detail=f"result arrived {arrival_rank[call.call_id] + 1}. of "
                    f"{len(answered)} but its call is {rank + 1}.; placed right after the call",
                )
            )
    for call in calls:
        entry = first.get(call.call_id)
        if entry is None:
            result = ToolResult(
                call_id=call.call_id,
                tool_name=call.tool_name,
                status=ToolStatus.UNKNOWN,
                content=placeholder_text(call),
            )
            anomalies.append(
                ToolAnomaly(
                    type=AnomalyType.TOOL_RESULT_SYNTHESIZED,
                    call_id=call.call_id,
                    detail="no result recorded; placeholder with status unknown inserted",
                )
            )
            pairs.append(_pair(call, result, allow_partial_evidence, synthesized=True))
        else:
            pairs.append(_pair(call, entry[1], allow_partial_evidence, synthesized=False))
    return PairingResult(pairs=tuple(pairs), anomalies=tuple(anomalies), blocked=None)


def _pair(call: ToolCall, result: ToolResult, allow: bool, *, synthesized: bool) -> ToolPair:
    return ToolPair(
        call_id=call.call_id,
        tool_name=call.tool_name,
        canonical_argument_hash=call.argument_hash,
        result_item_id=result_item_id(call.call_id),
        result_hash=result.computed_hash,
        status=result.status,
        evidence_use=_evidence_use(result.status, allow, synthesized),
        synthesized=synthesized,
        turn=call.turn,
        call=call,
        result=result,
    )


def _blocked(anomalies: list[ToolAnomaly], reason: str) -> PairingResult:
    return PairingResult(pairs=(), anomalies=tuple(anomalies), blocked=reason)


def recent_call_ids(pairs: Sequence[ToolPair], keep: int) -> list[str]:
    """The newest pairs until at least ``keep``, extended to whole turns."""
    turns: list[list[ToolPair]] = []
    for pair in pairs:
        if turns and turns[-1][0].turn == pair.turn:
            turns[-1].append(pair)
        else:
            turns.append([pair])
    kept: list[str] = []
    for group in reversed(turns):
        if len(kept) >= keep:
            break
        kept += [pair.call_id for pair in group]
    return kept
