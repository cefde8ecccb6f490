"""The ``dump-all`` baseline: what a naive agent does without a context engine
(docs/context-engine.md#dump-all-baseline).

Candidates are taken in the order the case lists them, with no gate of any kind (no trust,
freshness, permission, scope, revision or relevance check), and packed until the first one
that would overflow the evidence budget; that one and everything after it are left out
(``budget_evicted``). Tokens are counted exactly as the engine counts evidence: the
engine's tokenizer on each rendered evidence block (``context.seal.render.data_block``), so the
two strategies are measured with the same ruler.

The tool history is replayed verbatim in arrival order (one message per call or result),
the way a transcript is naively re-sent. ``missing_topics`` is computed the same way for
both strategies (required topics no selected source covers), so the missing-evidence
grader compares selections, not bookkeeping.
"""

from __future__ import annotations

import json

from context.policy import ContextPolicy
from context.seal.render import MISSING_EVIDENCE_HEADING, data_block
from context.tokens import count_tokens
from evals.context_lab.dataset import LabCase, LabSource
from evals.context_lab.mapping import source_to_item
from evals.context_lab.packet import (
    AcquisitionEntry,
    ExcludedEntry,
    Packet,
    SelectedEntry,
    ToolEvent,
    VisibleMessage,
    fingerprint,
)

STRATEGY = "dump-all"


def missing_topics_of(case: LabCase, covered: set[str]) -> tuple[str, ...]:
    return tuple(t for t in case.required_topics if t not in covered)


def render_task(question: str, missing: tuple[str, ...]) -> str:
    text = f"QUESTION\n{question}\n"
    if missing:
        text += f"\n{MISSING_EVIDENCE_HEADING}\n" + "".join(f"- {t}\n" for t in missing)
        text += "\nINSTRUCTION\nDo not infer missing evidence. Ask for a source or hand off.\n"
    return text


def run_dump_all(case: LabCase, sources: dict[str, LabSource], *, budget: int,
                 policy: ContextPolicy) -> Packet:
    selected: list[SelectedEntry] = []
    excluded: list[ExcludedEntry] = []
    blocks: list[str] = []
    used = 0
    overflowed = False
    for sid in case.candidate_source_ids:
        source = sources[sid]
        if overflowed:
            excluded.append(ExcludedEntry(id=sid, reason="budget_evicted",
                                          detail="after the first overflow"))
            continue
        item = source_to_item(source, policy)
        block = data_block(item)
        tokens = count_tokens(block)
        if used + tokens > budget:
            overflowed = True
            excluded.append(ExcludedEntry(id=sid, reason="budget_evicted",
                                          detail=f"{tokens} tokens overflow {budget - used} left"))
            continue
        used += tokens
        blocks.append(block)
        selected.append(SelectedEntry(id=sid, tokens=tokens, item_id=item.item_id,
                                      locator=source.locator,
                                      updated_at=source.updated_at.isoformat(),
                                      content_hash=item.content_hash))
    covered = {t for s in selected for t in sources[s.id].topics}
    missing = missing_topics_of(case, covered)
    rendered = "\n\n".join(blocks)
    messages = [VisibleMessage(role="user", text=render_task(case.question, missing)
                               + "\nEVIDENCE\n" + rendered)]
    events: list[ToolEvent] = []
    for ev in case.tool_history:
        index = len(messages)
        if ev.type == "call":
            text = f"call {ev.call_id}: {ev.tool_name}({json.dumps(ev.arguments, sort_keys=True)})"
            messages.append(VisibleMessage(role="assistant", text=text))
        else:
            messages.append(VisibleMessage(role="tool", text=ev.content))
        events.append(ToolEvent(kind=ev.type, call_id=ev.call_id, message=index))
    return Packet(
        case_id=case.id,
        strategy=STRATEGY,
        selected=tuple(selected),
        excluded=tuple(excluded),
        missing_topics=missing,
        budget_used=used,
        budget_limit=budget,
        acquisitions=tuple(AcquisitionEntry(id=sid, outcome="retrieved")
                           for sid in case.candidate_source_ids),
        messages=tuple(messages),
        tool_events=tuple(events),
        rendered_context=rendered,
        manifest=None,
        fingerprint=fingerprint(strategy=STRATEGY, case_id=case.id,
                                as_of=case.as_of.isoformat(),
                                selected=[(s.id, s.content_hash) for s in selected], policy=None),
    )
