"""Artifact revisions on the caller's session: put, get, head, history.

A put hashes the body once, takes the write lock, checks the named parent against the
head, stores the blob if it is new and inserts the revision row. The unique
``(kind, artifact_id, revision)`` constraint is the final arbiter between racing
writers, so exactly one wins each parent on both engines. The caller owns the
transaction: on any error it must roll back (``ArtifactStore`` does), which also removes
a blob written earlier in the same put.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError as DBIntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from artifacts.blobio import blob_io_for
from artifacts.engine import begin_write
from artifacts.errors import (
    ArtifactNotFound,
    IntegrityError,
    RevisionConflict,
    ScopeDenied,
    StoreError,
)
from artifacts.models import Artifact
from artifacts.types import ArtifactKind, ArtifactRecord, Principal, Scope
from artifacts.validate import (
    check_body,
    check_identifier,
    check_json_body,
    check_kind,
    check_media_type,
    check_principal,
    check_revision,
    check_scope,
    check_trust,
)

__all__ = ["content_hash", "get_artifact", "head_artifact", "history", "put_artifact"]


def content_hash(body: bytes) -> str:
    """``sha256:<hex>`` of ``body`` (hashlib reads the buffer in place; no copy)."""
    return "sha256:" + hashlib.sha256(body).hexdigest()


async def put_artifact(
    session: AsyncSession,
    kind: ArtifactKind | str,
    artifact_id: str,
    body: bytes,
    *,
    principal: Principal,
    scope: Scope,
    trust: str,
    parent_revision: int | None,
    media_type: str = "application/octet-stream",
    metadata: dict[str, Any] | None = None,
) -> ArtifactRecord:
    """Append a new revision built on ``parent_revision`` (``None`` for the first)."""
    kind = check_kind(kind)
    check_identifier(artifact_id, "artifact_id")
    body = check_body(body)
    principal = check_principal(principal)
    scope = check_scope(scope)
    trust = check_trust(trust)
    parent = check_revision(parent_revision, "parent_revision")
    media_type = check_media_type(media_type)
    meta = check_json_body({} if metadata is None else metadata, "metadata")
    if not principal.covers(scope.tenant, scope.project):
        raise ScopeDenied(f"principal {principal} may not write into scope {scope}")

    digest = content_hash(body)  # before the write lock: hashing 50 MB takes a while
    await begin_write(session)
    head = await _head_row(session, kind, artifact_id)
    if head is not None and not principal.covers(head.tenant, head.project):
        # Writes cannot hide that an id is taken (ids are global); they reveal nothing more.
        raise ScopeDenied(
            f"principal {principal} may not write {kind.value}/{artifact_id}: "
            "the id is held outside its tenant/project"
        )
    actual = head.revision if head is not None else None
    if actual != parent:
        raise RevisionConflict(kind.value, artifact_id, parent, actual)

    await blob_io_for(session).write(session, digest, body)
    record = ArtifactRecord(
        kind=kind, artifact_id=artifact_id, revision=(parent or 0) + 1,
        content_hash=digest, writer=principal.principal_id, scope=scope, trust=trust,
        created_at=datetime.now(UTC), parent_revision=parent, size=len(body),
        media_type=media_type, metadata=meta,
    )
    try:
        async with session.begin_nested():
            session.add(_row(record))
    except DBIntegrityError as exc:
        head = await _head_row(session, kind, artifact_id)
        actual = head.revision if head is not None else None
        if actual != parent:  # another writer won this parent between our check and insert
            raise RevisionConflict(kind.value, artifact_id, parent, actual) from exc
        raise StoreError(
            f"write of {kind.value}/{artifact_id} revision {record.revision} was refused by "
            f"the database: {str(exc.orig).strip().splitlines()[0]}"
        ) from exc
    return record


async def get_artifact(
    session: AsyncSession,
    kind: ArtifactKind | str,
    artifact_id: str,
    *,
    principal: Principal,
    revision: int | None = None,
) -> tuple[ArtifactRecord, bytes]:
    """Read one revision (the head by default), re-hashing its bytes before returning."""
    kind = check_kind(kind)
    check_identifier(artifact_id, "artifact_id")
    principal = check_principal(principal)
    wanted = check_revision(revision, "revision")
    head = await _visible_head(session, kind, artifact_id, principal)
    if head is None:
        raise ScopeDenied(_not_visible(principal, kind, artifact_id))
    row = head
    if wanted is not None and wanted != head.revision:
        found = await session.scalar(
            select(Artifact).where(
                Artifact.kind == kind.value,
                Artifact.artifact_id == artifact_id,
                Artifact.revision == wanted,
            )
        )
        if found is None:
            raise ArtifactNotFound(
                f"{kind.value}/{artifact_id} has no revision {wanted} (head is {head.revision})"
            )
        row = found
    data = await blob_io_for(session).read(session, row.content_hash)
    if data is None:
        raise IntegrityError(kind.value, artifact_id, row.revision, row.content_hash,
                             "<blob missing>")
    actual = content_hash(data)
    if actual != row.content_hash:
        raise IntegrityError(kind.value, artifact_id, row.revision, row.content_hash, actual)
    return _record(row), data


async def head_artifact(
    session: AsyncSession, kind: ArtifactKind | str, artifact_id: str, *, principal: Principal
) -> ArtifactRecord | None:
    """The newest revision's record, or ``None`` when none is visible to ``principal``."""
    kind = check_kind(kind)
    check_identifier(artifact_id, "artifact_id")
    row = await _visible_head(session, kind, artifact_id, check_principal(principal))
    return _record(row) if row is not None else None


async def history(
    session: AsyncSession, kind: ArtifactKind | str, artifact_id: str, *, principal: Principal
) -> list[ArtifactRecord]:
    """Every revision, oldest first; empty when none is visible to ``principal``."""
    kind = check_kind(kind)
    check_identifier(artifact_id, "artifact_id")
    principal = check_principal(principal)
    rows = await session.scalars(
        select(Artifact)
        .where(
            Artifact.kind == kind.value,
            Artifact.artifact_id == artifact_id,
            Artifact.tenant == principal.tenant,
            Artifact.project == principal.project,
        )
        .order_by(Artifact.revision)
    )
    return [_record(r) for r in rows]


def _not_visible(principal: Principal, kind: ArtifactKind, artifact_id: str) -> str:
    # One message whether the id exists elsewhere or nowhere: guessing ids learns nothing.
    return (
        f"principal {principal} cannot read {kind.value}/{artifact_id}: no such artifact "
        f"in tenant {principal.tenant!r}, project {principal.project!r}"
    )


async def _head_row(session: AsyncSession, kind: ArtifactKind, artifact_id: str) -> Artifact | None:
    row: Artifact | None = await session.scalar(
        select(Artifact)
        .where(Artifact.kind == kind.value, Artifact.artifact_id == artifact_id)
        .order_by(Artifact.revision.desc())
        .limit(1)
    )
    return row


async def _visible_head(
    session: AsyncSession, kind: ArtifactKind, artifact_id: str, principal: Principal
) -> Artifact | None:
    # Filtering in SQL (not after the fact) keeps other tenants' rows out of this process.
    row: Artifact | None = await session.scalar(
        select(Artifact)
        .where(
            Artifact.kind == kind.value,
            Artifact.artifact_id == artifact_id,
            Artifact.tenant == principal.tenant,
            Artifact.project == principal.project,
        )
        .order_by(Artifact.revision.desc())
        .limit(1)
    )
    return row


def _row(record: ArtifactRecord) -> Artifact:
    return Artifact(
        kind=record.kind.value, artifact_id=record.artifact_id, revision=record.revision,
        parent_revision=record.parent_revision, content_hash=record.content_hash,
        writer=record.writer, tenant=record.scope.tenant, project=record.scope.project,
        task=record.scope.task, trust=record.trust, created_at=record.created_at,
        size=record.size, media_type=record.media_type, meta=dict(record.metadata),
    )


def _record(row: Artifact) -> ArtifactRecord:
    return ArtifactRecord(
        kind=ArtifactKind(row.kind), artifact_id=row.artifact_id, revision=row.revision,
        content_hash=row.content_hash, writer=row.writer,
        scope=Scope(tenant=row.tenant, project=row.project, task=row.task),
        trust=row.trust, created_at=row.created_at, parent_revision=row.parent_revision,
        size=row.size, media_type=row.media_type, metadata=dict(row.meta or {}),
    )
