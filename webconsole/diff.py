"""The change between two draft revisions, as rows a template can show.

``difflib`` over lines, grouped into hunks with three lines of context; each row says
whether a line was added, removed or kept. The text stays text: the template escapes it
(and ``webconsole.shown`` marks hidden characters). Pure.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class DiffRow:
    kind: Literal["add", "del", "ctx", "hunk"]
    old_line: int | None
    new_line: int | None
    text: str


def diff_rows(old: str, new: str, context: int = 3) -> list[DiffRow]:
    """Rows of the line diff from ``old`` to ``new`` (``[]`` when they are equal)."""
    a, b = old.splitlines(), new.splitlines()
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        rows.append(DiffRow("hunk", None, None,
                            f"@@ -{first[1] + 1},{last[2] - first[1]} "
                            f"+{first[3] + 1},{last[4] - first[3]} @@"))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [DiffRow("ctx", i + 1, j1 + (i - i1) + 1, a[i]) for i in range(i1, i2)]
                continue
            if tag in ("replace", "delete"):
                rows += [DiffRow("del", i + 1, None, a[i]) for i in range(i1, i2)]
            if tag in ("replace", "insert"):
                rows += [DiffRow("add", None, j + 1, b[j]) for j in range(j1, j2)]
    return rows


__all__ = ["DiffRow", "diff_rows"]
