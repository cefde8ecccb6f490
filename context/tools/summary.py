"""Fact extraction and rendering for the extractive checkpoint summary (``transforms``).

Kept apart from ``context.tools.transforms`` so the two halves stay checkable on their own: the
*facts* (what must survive, extracted from the inputs) and the *text* (what the summary
says). The preservation check asks whether every required fact appears verbatim in the
text — it never trusts the renderer. Values are normalized once (whitespace collapsed)
so that a multi-line error message is still compared exactly, word for word.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from context.items import ContextItem
from context.tokens import TokenCounter
from context.tool_history import ToolPair
from context.vocabulary import SourceType

__all__ = ["Facts", "extract_facts", "load_checkpoint_json", "render_summary"]

_WS = re.compile(r"\s+")
_LISTS = (
    "goal",
    "constraints",
    "done",
    "in_progress",
    "blocked",
    "open_items",
    "exact_values",
    "errors",
    "conflicts",
    "negative_findings",
    "next_steps",
    "artifact_refs",
    "unresolved_tool_calls",
    "source_refs",
    "claims",
)
_SCALARS = ("current_stage", "draft_revision", "checkpoint_ref")


def norm(value: Any) -> str:
    if isinstance(value, dict) and "finding" in value:
        scope = value.get("scope")
        value = f"{value['finding']} (searched: {scope})" if scope else value["finding"]
    elif not isinstance(value, str):
        value = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return _WS.sub(" ", value).strip()


def load_checkpoint_json(item: ContextItem) -> dict[str, Any]:
    """Facts in a checkpoint item's JSON content (empty when it is not a JSON object)."""
    if item.source_type is not SourceType.CHECKPOINT:
        return {}
    try:
        data = json.loads(item.content)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


@dataclass
class Facts:
    lists: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in _LISTS})
    scalars: dict[str, str | None] = field(default_factory=lambda: dict.fromkeys(_SCALARS))
    tool_refs: list[str] = field(default_factory=list)

    def add(self, key: str, value: Any) -> None:
        values = value if isinstance(value, list | tuple) else [value]
        bucket = self.lists[key]
        for v in values:
            text = norm(v)
            if text and text not in bucket:
                bucket.append(text)

    def required(self) -> dict[str, list[str]]:
        L, S = self.lists, self.scalars
        return {
            "goal": L["goal"],
            "constraints": L["constraints"],
            "current_stage": [S["current_stage"]] if S["current_stage"] else [],
            "done_in_progress_blocked": L["done"] + L["in_progress"] + L["blocked"],
            "open_items": L["open_items"],
            "source_refs": L["source_refs"],
            "exact_values_and_errors": L["exact_values"] + L["errors"],
            "conflicts_and_negative_findings": L["conflicts"] + L["negative_findings"],
            "unresolved_tool_calls": L["unresolved_tool_calls"],
            "article_draft_revision": [S["draft_revision"]] if S["draft_revision"] else [],
            "artifact_refs": L["artifact_refs"]
            + ([S["checkpoint_ref"]] if S["checkpoint_ref"] else [])
            + self.tool_refs,
        }

    def check(self, text: str) -> dict[str, Literal["passed", "failed"]]:
        """Each required fact must appear as its own line (refs: anywhere in the text)."""
        lines = set(text.splitlines())
        checkpoint = self.scalars["checkpoint_ref"]

        def present(key: str, value: str) -> bool:
            if key == "source_refs":
                return value in text
            if key in ("current_stage", "article_draft_revision"):
                return value in lines
            if key == "artifact_refs" and value == checkpoint:
                return f"checkpoint: {value}" in lines
            return f"- {value}" in lines

        return {
            key: "passed" if all(present(key, v) for v in values) else "failed"
            for key, values in self.required().items()
        }

    def as_metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {k: list(v) for k, v in self.lists.items() if v}
        meta.update({k: v for k, v in self.scalars.items() if v})
        if self.tool_refs:
            meta["artifact_refs"] = [*meta.get("artifact_refs", []), *self.tool_refs]
        return meta


def extract_facts(items: Sequence[ContextItem], pairs: Sequence[ToolPair]) -> Facts:
    facts = Facts()
    for item in items:
        sources = [item.metadata, load_checkpoint_json(item)]
        for src in sources:
            for key in _LISTS:
                if key in src and src[key] is not None:
                    facts.add(key, src[key])
            for key in _SCALARS:
                if src.get(key) is not None:
                    facts.scalars[key] = norm(src[key])
        ref = item.source_ref
        citation = ref.citation()
        if citation != "unknown-source":
            rev = item.revision
            full = citation if not rev or rev in citation else f"{citation} @ revision {rev}"
            facts.add("source_refs", full)
            label = f"{norm(item.claim)} — " if item.claim else ""
            facts.add("claims", f"{label}{full} [{item.trust}]")
            if ref.artifact_id:
                facts.add("artifact_refs", citation)
            if ref.artifact_kind == "article_draft" and (ref.revision or rev):
                facts.scalars["draft_revision"] = norm(ref.revision or rev)
    for p in pairs:
        if p.synthesized:
            facts.add("unresolved_tool_calls", p.call_id)
            continue
        # The call id names the stored exchange; its hash stays in the manifest's tool_pairs
        # entry. A line per compacted call is what a long loop's summary grows by, so it
        # carries only what finds the exchange again.
        ref_line = f"tool-result:{p.call_id} ({p.tool_name} {p.status})"
        if ref_line not in facts.tool_refs:
            facts.tool_refs.append(ref_line)
        if p.status.value == "error":
            first = p.result.content.strip().splitlines()[0] if p.result.content.strip() else ""
            facts.add("errors", f"{p.call_id} {p.tool_name} error: {first}")
    return facts


def _clip(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def _render(facts: Facts, head: str, max_chars: int, *, next_steps: bool, claims: bool) -> str:
    """The sections in seed order; a section with nothing recorded is left out (a loop's
    summary used to carry ≈ 150 tokens of "(none recorded)" a turn), so a reader — and
    ``_check`` — finds each preserved fact under its own heading or nowhere."""
    L, S = facts.lists, facts.scalars

    def bullets(values: Sequence[str]) -> list[str]:
        return [f"- {_clip(v, max_chars)}" for v in values]

    def scalar(value: str | None) -> list[str]:
        return [_clip(value, max_chars)] if value else []

    def labelled(label: str, values: Sequence[str]) -> list[str]:
        return [label, *bullets(values)] if values else []

    claim_lines = L["claims"] if claims else L["source_refs"]
    out = [head]
    sections: list[tuple[str, list[str]]] = [
        ("Goal", bullets(L["goal"])),
        ("Constraints", bullets(L["constraints"])),
        ("Current Stage", scalar(S["current_stage"])),
        (
            "Done / In Progress / Blocked",
            [
                *labelled("Done:", L["done"]),
                *labelled("In progress:", L["in_progress"]),
                *labelled("Blocked:", L["blocked"]),
            ],
        ),
        ("Confirmed Claims + source refs", bullets(claim_lines)),
        ("Exact Values and Errors", bullets(L["exact_values"] + L["errors"])),
        ("Conflicts and Negative Findings", bullets(L["conflicts"] + L["negative_findings"])),
        ("Open Items", bullets(L["open_items"])),
        ("Draft Revision", scalar(S["draft_revision"])),
        ("Next Steps", bullets(L["next_steps"]) if next_steps
         else ["- (omitted for budget)"] if L["next_steps"] else []),
        (
            "Artifact / Checkpoint Refs",
            bullets(L["artifact_refs"] + facts.tool_refs)
            + ([f"checkpoint: {S['checkpoint_ref']}"] if S["checkpoint_ref"] else []),
        ),
        ("Unresolved Tool Calls", bullets(L["unresolved_tool_calls"])),
    ]
    for title, lines in sections:
        if lines:
            out.append(f"\n## {title}")
            out.extend(lines)
    return "\n".join(out)


def render_summary(
    facts: Facts,
    items: Sequence[ContextItem],
    counter: TokenCounter,
    *,
    max_tokens: int | None,
    max_chars: int,
) -> str:
    """The summary text; optional lines go first when over ``max_tokens``."""
    head = (
        f"# CHECKPOINT SUMMARY (extractive) of {len(items)} items "
        f"{items[0].item_id} .. {items[-1].item_id}\n"
        "Every line is quoted from the inputs; claims keep their source refs and trust."
    )
    text = _render(facts, head, max_chars, next_steps=True, claims=True)
    if max_tokens is None or counter.count_text(text) <= max_tokens:
        return text
    text = _render(facts, head, max_chars, next_steps=False, claims=True)
    if counter.count_text(text) <= max_tokens:
        return text
    return _render(facts, head, max_chars, next_steps=False, claims=False)
