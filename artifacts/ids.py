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

__all__ = ["MAX_ID_LENGTH", "check_identifier"]

MAX_ID_LENGTH = 255


def check_identifier(value: object, what: str) -> str:
    """Return ``value`` if it is a usable id; else raise ``InvalidArtifact`` saying why."""
    if not isinstance(value, str):
        raise InvalidArtifact(f"{what} must be a string, got {type(value).__name__}")
    if not value:
        raise InvalidArtifact(f"{what} must not be empty")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidArtifact(f"{what} is {len(value)} characters long (max {MAX_ID_LENGTH})")
    if "/" in value or "\\" in value:
        raise InvalidArtifact(f"{what} {value!r} contains a path separator")
    if value in (".", ".."):
        raise InvalidArtifact(f"{what} {value!r} is a relative path component")
    for ch in value:
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            raise InvalidArtifact(
                f"{what} {value!r} contains control character U+{ord(ch):04X}"
            )
    if value != value.strip():
        raise InvalidArtifact(f"{what} {value!r} has leading or trailing whitespace")
    return value
