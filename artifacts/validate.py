"""Input checks of the store's operations, raising ``InvalidArtifact``.

Identifiers follow ``artifacts.ids`` (shared with the value objects in ``artifacts.types``);
this module checks everything else a caller hands in: kinds, scopes, principals, bodies,
labels, revisions, media types and JSON records.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from artifacts.errors import InvalidArtifact
from artifacts.types import ArtifactKind, Principal, Scope

__all__ = [
    "check_body",
    "check_json_body",
    "check_kind",
    "check_label",
    "check_media_type",
    "check_principal",
    "check_revision",
    "check_scope",
    "check_trust",
]

_LABEL = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")
_MEDIA_TYPE = re.compile(r"^[\w.+-]+/[\w.+-]+(\s*;.*)?$")


def check_kind(kind: object) -> ArtifactKind:
    """Accept an ``ArtifactKind`` or its string value."""
    if isinstance(kind, ArtifactKind):
        return kind
    if isinstance(kind, str):
        try:
            return ArtifactKind(kind)
        except ValueError:
            pass
    known = ", ".join(k.value for k in ArtifactKind)
    raise InvalidArtifact(f"unknown artifact kind {kind!r}; known kinds: {known}")


def check_scope(scope: object) -> Scope:
    """Accept a ``Scope`` or a mapping with exactly tenant/project/task strings."""
    if isinstance(scope, Scope):
        return scope
    if isinstance(scope, Mapping):
        keys = set(scope)
        if keys != {"tenant", "project", "task"}:
            got = sorted(map(str, keys))
            raise InvalidArtifact(f"scope must have exactly tenant, project, task; got {got}")
        try:
            return Scope.model_validate(dict(scope))
        except ValidationError as exc:
            raise InvalidArtifact(f"invalid scope: {_first_error(exc)}") from None
    raise InvalidArtifact(
        f"scope must be a Scope or a tenant/project/task mapping, got {type(scope).__name__}"
    )


def check_principal(principal: object) -> Principal:
    """Accept only a ``Principal``: who acts must never be guessed from a loose dict."""
    if not isinstance(principal, Principal):
        raise InvalidArtifact(f"principal must be a Principal, got {type(principal).__name__}")
    return principal


def check_body(body: object) -> bytes:
    """Bodies are bytes, exactly; text must be encoded by the caller (no silent encoding)."""
    if type(body) is not bytes:
        hint = " (encode text first, e.g. body.encode('utf-8'))" if isinstance(body, str) else ""
        raise InvalidArtifact(f"body must be bytes, got {type(body).__name__}{hint}")
    return body


def check_label(value: object, what: str) -> str:
    """Labels (trust, status) are short lowercase tokens such as ``repository_evidence``."""
    if not isinstance(value, str) or not _LABEL.match(value):
        raise InvalidArtifact(
            f"{what} must be a lowercase token like 'external_evidence', got {value!r}"
        )
    return str(value)


def check_trust(trust: object) -> str:
    """A trust label (any enum member of ``context.vocabulary.Trust`` qualifies)."""
    return check_label(trust, "trust label")


def check_revision(revision: object, what: str) -> int | None:
    """Revisions are positive ints (``None`` where the API allows it)."""
    if revision is None:
        return None
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
        raise InvalidArtifact(f"{what} must be a positive int or None, got {revision!r}")
    return revision


def check_media_type(media_type: object) -> str:
    """A ``type/subtype`` string, optionally with parameters."""
    if not isinstance(media_type, str) or not _MEDIA_TYPE.match(media_type):
        raise InvalidArtifact(f"media_type must look like 'type/subtype', got {media_type!r}")
    return media_type


def check_json_body(body: object, what: str) -> dict[str, Any]:
    """A JSON object that serializes (no NaN, no sets, string keys)."""
    if not isinstance(body, dict):
        raise InvalidArtifact(f"{what} must be a dict, got {type(body).__name__}")
    try:
        json.dumps(body, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InvalidArtifact(f"{what} is not JSON-serializable: {exc}") from None
    return body


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        return f"{loc}: {first.get('msg')}"
    return str(exc)
