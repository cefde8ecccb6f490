"""Plain substring helpers: the per-term test behind the line-by-line scans of source
limits, and where a regex's leading words occur (to try it only there).

Whole texts are scanned for all their terms at once (``context.admission.needles``); a line of a
web page is too short for that to pay, so it asks ``in`` for each term.

A plain loop, not ``any()`` over a generator: these run several times per candidate text
on the cold path, and a generator frame per call costs as much as the search itself on
small texts.
"""

from __future__ import annotations

from collections.abc import Iterable


def occurrences(words: Iterable[str], text: str) -> list[int]:
    """Every position where one of ``words`` starts in ``text``, ascending (overlaps too)."""
    starts: set[int] = set()
    for w in words:
        at = text.find(w)
        while at >= 0:
            starts.add(at)
            at = text.find(w, at + 1)
    return sorted(starts)


def contains_any(words: Iterable[str], text: str) -> bool:
    """Whether any of ``words`` occurs in ``text`` (plain substring, case as given)."""
    for w in words:
        if w in text:
            return True
    return False
