"""Bounded excerpts: which lines match which topics, and the windows cut around them.

Source limits (docs/context-engine.md#source-limits) are applied at the source, before
anything reaches the engine: a hit becomes a window of a few lines of context, adjacent or
overlapping windows merge, and no window exceeds ``MAX_EXCERPT_LINES`` (a longer run of hits
is split, never silently cut). Matching is case-insensitive substring matching of the topic
terms, the same rule ``git grep -i -F`` applies, so every source kind agrees on what "covers a
topic" means.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contracts.source_specs import TopicTerms

CONTEXT_LINES = 3
MAX_EXCERPT_LINES = 40
MAX_EXCERPT_CHARS = 6000
FAILURE_MARKERS = ("FAILED", "FAIL:", "ERROR", "Traceback", "AssertionError", "Error:")


@dataclass(frozen=True)
class Window:
    """Lines ``start``..``end`` (1-based, inclusive) and the topics matched inside."""

    start: int
    end: int
    topics: tuple[str, ...]


def all_terms(topics: Sequence[TopicTerms]) -> list[str]:
    """Every distinct search term, sorted (the canonical grep argument list)."""
    return sorted({t for topic in topics for t in topic.terms})


def topics_in(text: str, topics: Sequence[TopicTerms]) -> list[str]:
    """Names of the topics whose terms occur in ``text`` (case-insensitive), in topic order."""
    low = text.lower()
    return [t.name for t in topics if any(term.lower() in low for term in t.terms)]


def matching_lines(lines: Sequence[str], topics: Sequence[TopicTerms]) -> list[int]:
    """1-based numbers of the lines containing any topic term."""
    return [i for i, line in enumerate(lines, start=1) if topics_in(line, topics)]


def failure_lines(lines: Sequence[str]) -> list[int]:
    """1-based numbers of test-log lines that report a failure."""
    return [i for i, line in enumerate(lines, start=1) if any(m in line for m in FAILURE_MARKERS)]


def windows(
    lines: Sequence[str],
    hits: Sequence[int],
    topics: Sequence[TopicTerms],
    *,
    context: int = CONTEXT_LINES,
    max_lines: int = MAX_EXCERPT_LINES,
    lo: int = 1,
    hi: int | None = None,
) -> list[Window]:
    """Merge hit lines into windows within ``lo..hi``; split any window over ``max_lines``."""
    hi = len(lines) if hi is None else hi
    spans: list[list[int]] = []
    for h in sorted(set(hits)):
        start, end = max(lo, h - context), min(hi, h + context)
        if spans and start <= spans[-1][1] + 1:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    out: list[Window] = []
    for start, end in spans:
        for s in range(start, end + 1, max_lines):
            e = min(end, s + max_lines - 1)
            text = "\n".join(lines[s - 1 : e])
            out.append(Window(s, e, tuple(topics_in(text, topics))))
    return out


def excerpt_text(lines: Sequence[str], window: Window) -> str:
    """The window's lines joined with newlines, capped at ``MAX_EXCERPT_CHARS`` per line run."""
    text = "\n".join(lines[window.start - 1 : window.end])
    if len(text) > MAX_EXCERPT_CHARS:
        # A pathological line (minified code, a data blob) must not blow the limit; the
        # cut is marked so no reader mistakes it for the whole line.
        text = text[:MAX_EXCERPT_CHARS] + "\n[... excerpt cut at source limit ...]"
    return text


@dataclass(frozen=True)
class Section:
    """A heading-delimited section of a document: lines ``start``..``end`` (1-based)."""

    index: int
    heading: str
    start: int
    end: int


def markdown_sections(lines: Sequence[str]) -> list[Section]:
    """Split at ATX headings (``#``..``######``) outside fenced code blocks."""
    starts: list[tuple[int, str]] = []
    fenced = False
    for i, line in enumerate(lines, start=1):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and stripped.startswith("#") and stripped.lstrip("#").startswith(" "):
            starts.append((i, stripped.lstrip("#").strip()))
    if not starts or starts[0][0] != 1:
        starts.insert(0, (1, ""))
    sections = []
    for n, (start, heading) in enumerate(starts):
        end = starts[n + 1][0] - 1 if n + 1 < len(starts) else len(lines)
        if end >= start:
            sections.append(Section(n, heading, start, end))
    return sections


def section_windows(
    lines: Sequence[str], section: Section, topics: Sequence[TopicTerms]
) -> list[Window]:
    """A matching section whole when it fits the limit, else windows around its hits."""
    text = "\n".join(lines[section.start - 1 : section.end])
    found = topics_in(text, topics)
    if not found:
        return []
    if section.end - section.start + 1 <= MAX_EXCERPT_LINES:
        return [Window(section.start, section.end, tuple(found))]
    hits = [
        n for n in matching_lines(lines[section.start - 1 : section.end], topics)
    ]
    hits = [section.start + n - 1 for n in hits]
    return windows(lines, hits, topics, lo=section.start, hi=section.end)
