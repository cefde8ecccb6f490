"""The substring test behind the line-by-line term scans of source limits.

Whole texts are scanned for all their terms at once (``context._needles``); a line of a
web page is too short for that to pay, so it asks ``in`` for each term.

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
