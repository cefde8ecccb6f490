"""Typed errors of the artifact store, so callers can react to each failure by class.

Hierarchy (every error the store raises on purpose is a ``StoreError``)::

    StoreError                  base class; carries a one-line message naming the problem
    ├── RevisionConflict        a write named a stale parent revision (kind, id, expected, actual)
    │   └── SealedConflict      a sealed record (manifest, checkpoint, usage) was re-written
    │                           with different content
    ├── IntegrityError          stored bytes no longer hash to the recorded content hash
    ├── ScopeDenied             the principal may not read/write there. A read of an id with
    │                           nothing visible in the principal's tenant/project raises it
    │                           whether the id exists in another scope or nowhere, with the
    │                           same message, so guessing ids learns nothing (use ``head()``,
    │                           which returns ``None``, to ask "does it exist yet?");
    │                           ``record_usage`` on a manifest it cannot see likewise
    ├── ArtifactNotFound        a revision that does not exist of an artifact the principal
    │                           sees
    ├── InvalidArtifact         bad input: unknown kind, bad id, bad scope shape, non-bytes body
    ├── DatabaseUnavailable     the database cannot be reached (names host / file)
    └── SchemaNotReady          the database schema is not at the shipped migration head

``IntegrityError`` here is the store's own class; it is unrelated to
``sqlalchemy.exc.IntegrityError`` (a constraint violation), which the store translates.
"""

from __future__ import annotations

__all__ = [
    "ArtifactNotFound",
    "DatabaseUnavailable",
    "IntegrityError",
    "InvalidArtifact",
    "RevisionConflict",
    "SchemaNotReady",
    "ScopeDenied",
    "SealedConflict",
    "StoreError",
]


class StoreError(Exception):
    """Base class of every error the artifact store raises deliberately."""


class RevisionConflict(StoreError):
    """A write built on a parent revision that is no longer the head."""

    def __init__(
        self,
        kind: str,
        artifact_id: str,
        expected_parent: int | None,
        actual_head: int | None,
        message: str | None = None,
    ) -> None:
        self.kind = kind
        self.artifact_id = artifact_id
        self.expected_parent = expected_parent
        self.actual_head = actual_head
        super().__init__(
            message
            or (
                f"revision conflict on {kind}/{artifact_id}: write names parent revision "
                f"{expected_parent} but the head is {actual_head}; re-read and retry"
            )
        )


class SealedConflict(RevisionConflict):
    """A sealed, write-once record already exists with different content."""

    def __init__(self, kind: str, record_id: str, detail: str) -> None:
        super().__init__(
            kind, record_id, None, None,
            message=f"{kind} {record_id!r} is sealed and cannot change: {detail}",
        )


class IntegrityError(StoreError):
    """Stored bytes do not hash to the hash recorded when they were written."""

    def __init__(self, kind: str, record_id: str, revision: int | None,
                 expected_hash: str, actual_hash: str) -> None:
        self.kind = kind
        self.artifact_id = record_id
        self.revision = revision
        self.expected_hash = expected_hash
        self.actual_hash = actual_hash
        rev = f" revision {revision}" if revision is not None else ""
        super().__init__(
            f"integrity failure on {kind}/{record_id}{rev}: expected {expected_hash}, "
            f"stored bytes hash to {actual_hash}"
        )


class ScopeDenied(StoreError):
    """The principal's tenant/project does not cover the record it asked for."""


class ArtifactNotFound(StoreError):
    """A revision that does not exist of an artifact visible to the principal."""


class InvalidArtifact(StoreError, ValueError):
    """Bad input to the store, named precisely; nothing was written."""


class DatabaseUnavailable(StoreError):
    """The database URL cannot be reached or opened."""


class SchemaNotReady(StoreError):
    """The database is reachable but its schema is not at the migration head."""
