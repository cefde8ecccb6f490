"""The one substring test behind every per-candidate term scan (detectors, coverage,
relevance, source limits).

A plain loop, not ``any()`` over a generator: these run several times per candidate text
on the cold path, and a generator frame per call costs as much as the search itself on
small texts.
"""

from __future__ import annotations

from collections.abc import Iterable


def contains_any(words: Iterable[str], text: str) -> bool:
    """Whether any of ``words`` occurs in ``text`` (plain substring, case as given)."""
    for w in words:
        if w in text:
            return True
    return False
