"""What every baseline shares: the packing ruler and the naive packet
(docs/context-engine.md#baselines).

The three baselines (``dump-all``, ``gated-dump``, ``top-k``) differ only in *which*
candidates they offer and in what order; everything else is fixed here so they are
measured alike:

* **The ruler.** An item's cost is the engine's tokenizer on its rendered evidence block
  (``context.seal.render.data_block``), the unit ``evidence_budget`` counts, so baselines
  and engine are measured with the same ruler. :class:`Packer` keeps the running total.
* **The task message.** One user message: the question, a MISSING EVIDENCE section naming
  the required topics no selected source covers (``missing_topics`` is computed the same
  way for every baseline, from the selected sources' topics, so the missing-evidence
  grader compares selections, not bookkeeping), then the evidence blocks.
* **The tool history** is replayed verbatim in arrival order (one message per call or
  result), the way a transcript is naively re-sent: no baseline repairs it.
* Every candidate was ``retrieved`` from the fixed file, and no manifest is sealed.
"""

from __future__ import annotations

import json

from context import MISSING_EVIDENCE_HEADING, ContextItem, count_tokens, data_block
from evals.context_lab.dataset import LabCase, LabSource
from evals.context_lab.packet import (
    AcquisitionEntry,
    ExcludedEntry,
    Packet,
    SelectedEntry,
    ToolEvent,
    VisibleMessage,
    fingerprint,
)


def missing_topics_of(case: LabCase, covered: set[str]) -> tuple[str, ...]:
    return tuple(t for t in case.required_topics if t not in covered)


def render_task(question: str, missing: tuple[str, ...]) -> str:
    text = f"QUESTION\n{question}\n"
    if missing:
        text += f"\n{MISSING_EVIDENCE_HEADING}\n" + "".join(f"- {t}\n" for t in missing)
        text += "\nINSTRUCTION\nDo not infer missing evidence. Ask for a source or hand off.\n"
    return text


class Packer:
    """Selected blocks, exclusions and the tokens used so far, against one budget."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0
        self.selected: list[SelectedEntry] = []
        self.excluded: list[ExcludedEntry] = []
        self.blocks: list[str] = []

    @property
    def left(self) -> int:
        return self.budget - self.used

    def offer(self, source: LabSource, item: ContextItem) -> int | None:
        """Select ``item`` if its block fits: ``None`` when taken, else its token count
        (nothing is recorded then: the caller names the exclusion)."""
        block = data_block(item)
        tokens = count_tokens(block)
        if tokens > self.left:
            return tokens
        self.used += tokens
        self.blocks.append(block)
        self.selected.append(SelectedEntry(id=source.id, tokens=tokens, item_id=item.item_id,
                                           locator=source.locator,
                                           updated_at=source.updated_at.isoformat(),
                                           content_hash=item.content_hash))
        return None

    def exclude(self, sid: str, reason: str, detail: str, gate: str | None = None) -> None:
        self.excluded.append(ExcludedEntry(id=sid, reason=reason, gate=gate, detail=detail))


def naive_packet(case: LabCase, sources: dict[str, LabSource], packer: Packer, *,
                 strategy: str) -> Packet:
    """The packet of a baseline whose selection ``packer`` holds (see the module doc)."""
    covered = {t for s in packer.selected for t in sources[s.id].topics}
    missing = missing_topics_of(case, covered)
    rendered = "\n\n".join(packer.blocks)
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
        strategy=strategy,
        selected=tuple(packer.selected),
        excluded=tuple(packer.excluded),
        missing_topics=missing,
        budget_used=packer.used,
        budget_limit=packer.budget,
        acquisitions=tuple(AcquisitionEntry(id=sid, outcome="retrieved")
                           for sid in case.candidate_source_ids),
        messages=tuple(messages),
        tool_events=tuple(events),
        rendered_context=rendered,
        manifest=None,
        fingerprint=fingerprint(strategy=strategy, case_id=case.id,
                                as_of=case.as_of.isoformat(),
                                selected=[(s.id, s.content_hash) for s in packer.selected],
                                policy=None),
    )
