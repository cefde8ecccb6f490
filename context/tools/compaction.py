"""Compaction of older tool exchanges into one checked structured summary.

The newest ``tool_pairs.keep_recent`` pairs stay verbatim (whole exchanges, in call
order). Older pairs — together with admitted checkpoint items, which hold the run's open
items — are replaced by one extractive summary from ``context.tools.transforms``. Each older
pair enters the summary as an item ``tool-result:<call_id>`` whose ``source_ref`` is
lifted from the call's arguments (``repo``, ``commit``, ``path``, ``line_start`` /
``line_end`` or ``lines: "a-b"``), so the summary keeps ``repo@commit:path#La-Lb``,
the call ids (``tool-result:<id>`` refs) and every unresolved call.

Trust: the pair items are ``untrusted_external_data`` (tool output), so the summary —
whose trust is the lowest of its inputs — can never rank above tool output; it is
rendered as a data block. A failed preservation assertion raises ``PreservationFailed``
and the engine blocks with ``transform_blocked``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from context.items import ContextItem, ScopeRef, SourceRef
from context.tokens import TokenCounter
from context.tool_history import ToolPair, result_item_id
from context.tools.transforms import TransformRecord, structured_summary
from context.vocabulary import Role, SourceType, Trust

_LINES = re.compile(r"^\s*(\d+)\s*[-:]\s*(\d+)\s*$")


def ref_from_args(args: dict[str, Any]) -> SourceRef:
    def text(key: str) -> str | None:
        v = args.get(key)
        return str(v) if isinstance(v, str | int) and not isinstance(v, bool) and v != "" else None

    start, end = args.get("line_start"), args.get("line_end")
    if not (isinstance(start, int) and isinstance(end, int)):
        m = _LINES.match(str(args.get("lines", "")))
        start, end = (int(m.group(1)), int(m.group(2))) if m else (None, None)
    if start is not None and end is not None and (start < 1 or end < start):
        start = end = None
    return SourceRef(
        repo=text("repo"),
        commit=text("commit"),
        path=text("path"),
        line_start=start,
        line_end=end,
        url=text("url"),
    )


def pair_item(pair: ToolPair, scope: ScopeRef) -> ContextItem:
    """A tool pair as a summary input (untrusted tool output, cited by its call args)."""
    return ContextItem.build(
        item_id=result_item_id(pair.call_id),
        source_type=SourceType.TOOL_RESULT,
        producer=f"tool:{pair.tool_name}",
        content=pair.result.content,
        scope=scope,
        trust=Trust.UNTRUSTED_EXTERNAL_DATA,
        intended_role=Role.UNTRUSTED_DATA,
        source_ref=ref_from_args(pair.call.arguments),
        claim=f"{pair.tool_name} call {pair.call_id} returned {pair.status.value}",
        metadata={"turn": pair.turn},
    )


def compact(
    older: Sequence[ToolPair],
    checkpoints: Sequence[ContextItem],
    *,
    scope: ScopeRef,
    step_id: str,
    objective: str,
    policy_version: str,
    preserve: Sequence[str],
    counter: TokenCounter,
) -> tuple[ContextItem, TransformRecord]:
    items = [*checkpoints, *(pair_item(p, scope) for p in older)]
    kwargs: dict[str, Any] = {}
    if preserve:
        kwargs["preserve"] = tuple(preserve)
    return structured_summary(
        items,
        objective=objective,
        policy_version=policy_version,
        tool_pairs=list(older),
        # named by the range it stands for, not by the step: the next turns, compacting
        # the same block, render the very same summary
        # (docs/context-engine.md#order-for-the-prompt-cache)
        output_item_id=f"history-summary:{older[0].call_id}..{older[-1].call_id}"[:200],
        record_id=f"transform-history-{step_id}",
        counter=counter,
        **kwargs,
    )
