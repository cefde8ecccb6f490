"""Identifier rules of the artifact store (ids, scope and principal fields).

Ids become parts of URLs, file names and log lines elsewhere, so path separators,
control characters and surrounding whitespace are refused at the door. This module
depends only on ``artifacts.errors``, so both the value objects (``artifacts.types``)
and the input checks (``artifacts.validate``) use the same rule without importing each
other.
"""

from __future__ import annotations

import unicodedata

from artifacts.errors import InvalidArtifact

__all__ = ["MAX_ID_LENGTH", "check_identifier", "identifier_problem"]

MAX_ID_LENGTH = 255


def identifier_problem(value: object) -> str | None:
    """Why ``value`` is not a usable id, as a phrase that never quotes it, or ``None``.

    The one definition of the rule: the store (``check_identifier``) and the job spec,
    which checks its names at submit (``contracts.identifiers``), both ask here.
    """
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__}"
    if not value:
        return "must not be empty"
    if len(value) > MAX_ID_LENGTH:
        return f"is {len(value)} characters long (max {MAX_ID_LENGTH})"
    if "/" in value or "\\" in value:
        return "contains a path separator"
    if value in (".", ".."):
        return "is a relative path component"
    for ch in value:
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            return f"contains control character U+{ord(ch):04X}"
    if value != value.strip():
        return "has leading or trailing whitespace"
    return None


def check_identifier(value: object, what: str) -> str:
    """Return ``value`` if it is a usable id; else raise ``InvalidArtifact`` saying why."""
    problem = identifier_problem(value)
    if problem is None and isinstance(value, str):
        return value
    shown = f" {value!r}" if isinstance(value, str) and 0 < len(value) <= MAX_ID_LENGTH else ""
    raise InvalidArtifact(f"{what}{shown} {problem}")
