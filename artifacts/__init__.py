"""Pressroom's artifact store: immutable, content-addressed, scope-checked revisions.

SQLite (one file) or PostgreSQL, named by URL, one code path. Start with
``store = await open_store(url)`` (Pressroom's URL is ``settings.Settings.store_url``);
see ``artifacts.errors`` for the error hierarchy, ``artifacts.revisions`` /
``artifacts.sealed_records`` for the functions the ``ArtifactStore`` facade runs inside one
transaction each, and ``artifacts.txrunner`` for how a transaction reaches the database.
"""

from artifacts.errors import (
    ArtifactNotFound,
    DatabaseUnavailable,
    IntegrityError,
    InvalidArtifact,
    RevisionConflict,
    SchemaNotReady,
    ScopeDenied,
    SealedConflict,
    StoreError,
)
from artifacts.protocol import Store
from artifacts.revisions import content_hash
from artifacts.sealed_records import json_hash
from artifacts.store import ArtifactStore, open_store
from artifacts.types import ArtifactKind, ArtifactRecord, Principal, Scope

__all__ = [
    "ArtifactKind",
    "ArtifactNotFound",
    "ArtifactRecord",
    "ArtifactStore",
    "DatabaseUnavailable",
    "IntegrityError",
    "InvalidArtifact",
    "Principal",
    "RevisionConflict",
    "SchemaNotReady",
    "Scope",
    "ScopeDenied",
    "SealedConflict",
    "Store",
    "StoreError",
    "content_hash",
    "json_hash",
    "open_store",
]
