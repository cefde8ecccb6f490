"""Errors of the context lab, in one hierarchy.

::

    LabError                  base of everything ``evals.context_lab`` raises on purpose
    ├── DatasetError          unusable input: a missing or unreadable file, a line that is
    │                         not JSON, a missing/unknown/ill-typed field, a duplicate id, a
    │                         case naming an unknown source, a bad date, a budget < 1. The
    │                         message names the file, the line and the field. CLI exit 2.
    └── StrategyError         a strategy could not produce a packet for a valid case (the
                              engine raised a typed ``ContextError`` on a request the lab
                              built); the message names the case. CLI exit 2, because the
                              run is unusable, not a gate failure.

A case that the engine *blocks* is not an error: it is a packet with ``status="blocked"``
that the graders judge like any other.
"""

from __future__ import annotations

from pathlib import Path

from context import one_line


class LabError(Exception):
    """Base class of the context lab's deliberate errors."""


class DatasetError(LabError):
    """An input file cannot be used; names the file, line (1-based) and field."""

    def __init__(self, path: Path | str, message: str, *, line: int | None = None,
                 field: str | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.detail = message
        where = self.path
        if line is not None:
            where += f" line {line}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(one_line(f"{where}: {message}"))  # a key may hold a line break


class StrategyError(LabError):
    """A strategy failed on a valid case (the message names the case and strategy)."""
