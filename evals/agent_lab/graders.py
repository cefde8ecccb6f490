"""What an article cites, judged: key-line recall and the share of uninformative quotes.

An article's findings are its ``- "quote" — `citation``` lines (``extractive.compose``).
A key line is recalled when some finding quotes it: a quote from the key line's file whose
text matches the key line's pattern. A quote is *uninformative* when it is a bare header —
``class Foo:``, ``class Foo(Base):``, ``def foo(self):`` (no default value in it) — or an
entry of an export or import list (``"FooError",``, ``FooError,``): it names a thing and
says nothing about it. These rules are the grader's own, written apart from the agent's
ranking, so the agent is not graded by the code it is trying to satisfy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evals.agent_lab.dataset import KeyLine

FINDING = re.compile(r'^- "(?P<quote>.+)" — `(?P<citation>[^`]+)`')
_CITED_PATH = re.compile(r"^[^:]+(?::(?P<path>[^#]+))?#L\d+-L\d+$")
_HEADER = re.compile(
    r"^(?:(?:async\s+)?def\s+\w+\s*\((?P<params>[^=]*)\)\s*(?:->[^:]*)?|class\s+\w+\s*"
    r"(?:\([^)]*\))?)\s*:\s*$")
_LIST_ENTRY = re.compile(r"^(?:[\"']?[A-Za-z_][\w.]*[\"']?\s*,\s*)+[\"']?[A-Za-z_]?[\w.]*[\"']?,?$")


@dataclass(frozen=True)
class Cited:
    quote: str
    citation: str
    path: str


def findings(article: str) -> list[Cited]:
    out = []
    for line in article.splitlines():
        if m := FINDING.match(line):
            cm = _CITED_PATH.match(m.group("citation"))
            path = (cm.group("path") or "") if cm else ""
            out.append(Cited(m.group("quote"), m.group("citation"), path))
    return out


def uninformative(quote: str) -> bool:
    """A bare header or an export/import-list entry (see the module docstring)."""
    text = quote.strip()
    return _HEADER.match(text) is not None or _LIST_ENTRY.match(text) is not None


def recalled(key_lines: tuple[KeyLine, ...], cited: list[Cited]) -> list[bool]:
    return [any(k.found_in(c.path, c.quote) for c in cited) for k in key_lines]
