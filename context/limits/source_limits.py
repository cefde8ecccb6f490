"""Source limits (docs/context-engine.md#source-limits): shrink a candidate at its source,
before any budgeting.

Three limits, chosen per source type by the policy's ``source_limits``:

* ``excerpt_with_line_range`` (code): more than ``max_lines`` lines become the contiguous
  window of ``max_lines`` lines with the most lines mentioning a topic term (the earliest
  such window on ties); ``source_ref.line_start/line_end`` are moved to the window, so
  the excerpt still cites ``repo@commit:path#Lx-Ly`` exactly.
* ``failures_plus_artifact_ref`` (test logs): the lines that report failures (``FAIL``,
  ``ERROR``, ``Traceback``, ``assert``, ``Exception``) with the two lines after each, up
  to ``max_lines``, then a footer with the full log's reference, hash and line count.
* ``relevant_sections_plus_hash`` (web pages): sections (split at blank lines / markdown
  headings) that mention a topic term, at most ``max_sections``, in page order, then a
  footer with the page's hash and which sections were kept.

Each limit is deterministic and extractive (no text is invented or reworded), applies only
when the item is over its limit, and returns the shrunk item plus a
:class:`LimitApplied` note the engine turns into a ``TransformRecord``
(type ``excerpt``). An item with no matching text is left whole: deciding that it is
irrelevant is the ranking stage's job (``not_required``), not the source limit's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from context.admission.scan import contains_any, occurrences
from context.items import ContextItem, LineageNode, SourceRef, sha256_text
from context.policy import SourceLimit
from context.vocabulary import Completeness

_FAILURE = re.compile(r"(?i)\b(?:fail(?:ed|ure|ures)?|error|traceback|assert\w*|exception)\b")
# The same pattern on lower-cased ASCII text. Every match starts with one of the stems, so
# matching only where ``str.find`` sees a stem gives ``finditer``'s matches without the
# case-insensitive regex visiting every position of the log (~10x slower than the finds).
_FAILURE_LOWER = re.compile(_FAILURE.pattern.removeprefix("(?i)"))
_FAILURE_STEMS = ("fail", "error", "traceback", "assert", "exception")
_SECTION_SPLIT = re.compile(r"\n\s*\n|\n(?=#{1,6} )")


@dataclass(frozen=True)
class LimitApplied:
    mode: str
    item: ContextItem
    detail: str


def _mentions(line: str, terms: tuple[str, ...]) -> bool:
    return contains_any(terms, line.casefold())


def _derive(item: ContextItem, content: str, ref: SourceRef, kind: str) -> ContextItem:
    base = item.source_lineage or (
        LineageNode(node_id=item.item_id, type=item.source_type.value, digest=item.content_hash),
    )
    digest = sha256_text(content)
    node = LineageNode(
        node_id=f"{item.item_id}#{kind}", type=kind, input_node_ids=(base[-1].node_id,),
        digest=digest,
    )
    return item.model_copy(
        update={
            "content": content,
            "content_hash": digest,
            "source_ref": ref,
            "completeness": Completeness.EXCERPT,
            "source_lineage": (*base, node),
        }
    )


def excerpt_code(
    item: ContextItem, limit: SourceLimit, terms: tuple[str, ...]
) -> LimitApplied | None:
    lines = item.content.split("\n")
    n, w = len(lines), limit.max_lines
    if n <= w:
        return None
    # casefold once (it never adds or removes a newline, so folded lines align with
    # ``lines``), then one substring test per line and term: ~2x faster than folding
    # every line on its own, and the same answer as ``_mentions`` line by line
    folded = item.content.casefold().split("\n")
    hits = [0] * n
    for t in terms:
        for i, low in enumerate(folded):
            if not hits[i] and t in low:
                hits[i] = 1
    window = sum(hits[:w])
    best, best_at = window, 0
    for start in range(1, n - w + 1):
        window += hits[start + w - 1] - hits[start - 1]
        if window > best:
            best, best_at = window, start
    ref = item.source_ref
    start_line = (ref.line_start or 1) + best_at
    new_ref = ref.model_copy(update={"line_start": start_line, "line_end": start_line + w - 1})
    content = "\n".join(lines[best_at : best_at + w])
    shrunk = _derive(item, content, new_ref, "excerpt")
    detail = f"lines {start_line}-{start_line + w - 1} of {ref.line_start}-{ref.line_end}"
    return LimitApplied("excerpt_with_line_range", shrunk, detail)


def failures_of_log(item: ContextItem, limit: SourceLimit) -> LimitApplied | None:
    text = item.content
    if text.count("\n") < limit.max_lines:
        return None
    lines = text.split("\n")
    keep: list[int] = []
    seen: set[int] = set()
    # One scan of the whole text instead of one search per line: a match is made of word
    # characters only, so it never spans a newline and ``\b`` sees the same neighbours.
    line, pos, last = 0, 0, -1
    for m in _failure_matches(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        if line == last:
            continue
        last = line
        for j in range(line, min(line + 3, len(lines))):
            if j not in seen:
                seen.add(j)
                keep.append(j)
        if len(keep) >= limit.max_lines:
            break
    keep = sorted(keep)[: limit.max_lines]
    if not keep:  # no failure lines: keep the tail, where test runners print their summary
        keep = list(range(len(lines) - limit.max_lines, len(lines)))
    body = "\n".join(lines[i] for i in keep)
    footer = (
        f"[log excerpt: {len(keep)} of {len(lines)} lines; full log "
        f"{item.source_ref.citation()} {item.content_hash}]"
    )
    shrunk = _derive(item, f"{body}\n{footer}", item.source_ref, "excerpt")
    return LimitApplied("failures_plus_artifact_ref", shrunk, f"{len(keep)}/{len(lines)} lines")


def _failure_matches(text: str) -> Iterator[re.Match[str]]:
    """``_FAILURE.finditer(text)``; for ASCII text through the stems' positions."""
    if not text.isascii():  # lower() may change lengths or disagree with (?i) there
        yield from _FAILURE.finditer(text)
        return
    low = text.lower()
    end = 0
    for at in occurrences(_FAILURE_STEMS, low):
        if at < end:
            continue  # finditer never starts a match inside the previous one
        m = _FAILURE_LOWER.match(low, at)
        if m is not None:
            end = m.end()
            yield m


def relevant_sections(
    item: ContextItem, limit: SourceLimit, terms: tuple[str, ...]
) -> LimitApplied | None:
    raw = _SECTION_SPLIT.split(item.content)
    sections = [s for s in raw if s.strip()]
    if len(sections) <= limit.max_sections:
        return None
    # Fold the page once and split it the same way: folding never creates or removes
    # whitespace, newlines or '#', so the folded sections align with the original ones.
    folded = _SECTION_SPLIT.split(item.content.casefold())
    if len(folded) == len(raw):
        lows = [f for f, s in zip(folded, raw, strict=True) if s.strip()]
        hits = [i for i, low in enumerate(lows) if contains_any(terms, low)]
    else:  # not expected; the per-section definition stays the reference
        hits = [i for i, s in enumerate(sections) if _mentions(s, terms)]
    picked = hits[: limit.max_sections]
    if not picked:
        return None
    body = "\n\n".join(sections[i] for i in picked)
    footer = (
        f"[page sections {', '.join(str(i + 1) for i in picked)} of {len(sections)}; "
        f"full page {item.source_ref.citation()} {item.content_hash}]"
    )
    shrunk = _derive(item, f"{body}\n\n{footer}", item.source_ref, "excerpt")
    return LimitApplied("relevant_sections_plus_hash", shrunk, f"{len(picked)}/{len(sections)}")


def apply_source_limit(
    item: ContextItem, limit: SourceLimit | None, terms: tuple[str, ...]
) -> LimitApplied | None:
    """The limited item, or ``None`` when no limit applies or the item is within it."""
    if limit is None:
        return None
    if limit.mode == "excerpt_with_line_range":
        if item.source_ref.line_start is None:
            return None
        return excerpt_code(item, limit, terms)
    if limit.mode == "failures_plus_artifact_ref":
        return failures_of_log(item, limit)
    return relevant_sections(item, limit, terms)
