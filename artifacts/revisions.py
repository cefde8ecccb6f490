"""Artifact revisions inside one transaction: put, get, head, history.

A put hashes the body once (``prepare_put``, before any lock: hashing 50 MB takes a
while), then, inside a write transaction, checks the named parent against the head,
stores the blob if it is new and inserts the revision row. The unique ``(kind,
artifact_id, revision)`` constraint is the final arbiter between racing writers: the
insert skips a taken revision (``ON CONFLICT DO NOTHING``) and the put re-reads the head
to report the ``RevisionConflict``, so exactly one writer wins each parent on both
engines without a savepoint (on SQLite ``BEGIN IMMEDIATE`` already queues writers). The
caller owns the transaction: on any error it rolls back (``Database.call`` does), which
also removes a blob written earlier in the same put.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from artifacts.attestation import Keyring
from artifacts.blobio import BLOB_COLUMNS, read_blob_row, write_blob
from artifacts.errors import (
    ArtifactNotFound,
    IntegrityError,
    InvalidArtifact,
    RevisionConflict,
    ScopeDenied,
    StoreError,
)
from artifacts.ids import check_identifier
from artifacts.sqltx import ConstraintRefused, Tx
from artifacts.types import ArtifactKind, ArtifactRecord, Attestation, Principal, Scope
from artifacts.validate import (
    check_body,
    check_kind,
    check_media_type,
    check_principal,
    check_revision,
    check_scope,
    check_trust,
)

__all__ = ["PreparedPut", "content_hash", "get_artifact", "head_artifact", "history",
           "insert_revision", "prepare_put", "put_artifact", "sign_unsigned"]

_COLUMNS = ("a.kind, a.artifact_id, a.revision, a.content_hash, a.writer, a.tenant, "
            "a.project, a.task, a.trust, a.created_at, a.parent_revision, a.size, "
            "a.media_type, CAST(a.metadata AS TEXT), a.attestation_key_id, a.attestation_mac")
#: where the blob columns start in a row of ``_COLUMNS, BLOB_COLUMNS``
_BLOB_AT = 16
_VISIBLE = ("a.kind = :kind AND a.artifact_id = :aid AND a.tenant = :tenant "
            "AND a.project = :project")
_HEAD = ("SELECT a.revision, a.tenant, a.project FROM artifacts a WHERE a.kind = :kind "
         "AND a.artifact_id = :aid ORDER BY a.revision DESC LIMIT 1")
_INSERT = ("INSERT INTO artifacts (kind, artifact_id, revision, parent_revision, "
           "content_hash, writer, tenant, project, task, trust, created_at, size, "
           "media_type, metadata, attestation_key_id, attestation_mac) VALUES (:kind, :aid, "
           ":revision, :parent, :hash, :writer, :tenant, :project, :task, :trust, :created, "
           ":size, :media, :meta, :akey, :amac) "
           "ON CONFLICT (kind, artifact_id, revision) DO NOTHING")


def content_hash(body: bytes) -> str:
    """``sha256:<hex>`` of ``body`` (hashlib reads the buffer in place; no copy)."""
    return "sha256:" + hashlib.sha256(body).hexdigest()


@dataclass(frozen=True)
class PreparedPut:
    """A put's checked arguments and digest, computed before the transaction begins."""

    kind: ArtifactKind
    artifact_id: str
    body: bytes
    digest: str
    principal: Principal
    scope: Scope
    trust: str
    parent: int | None
    media_type: str
    metadata: dict[str, Any]
    metadata_text: str


def prepare_put(
    kind: ArtifactKind | str, artifact_id: str, body: bytes, *, principal: Principal,
    scope: Scope, trust: str, parent_revision: int | None,
    media_type: str = "application/octet-stream", metadata: dict[str, Any] | None = None,
) -> PreparedPut:
    """Check a put's arguments and hash its body; no database access."""
    kind = check_kind(kind)
    check_identifier(artifact_id, "artifact_id")
    body = check_body(body)
    principal = check_principal(principal)
    scope = check_scope(scope)
    trust = check_trust(trust)
    parent = check_revision(parent_revision, "parent_revision")
    media_type = check_media_type(media_type)
    meta = {} if metadata is None else metadata
    if not isinstance(meta, dict):
        raise InvalidArtifact(f"metadata must be a dict, got {type(meta).__name__}")
    try:
        meta_text = json.dumps(meta, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InvalidArtifact(f"metadata is not JSON-serializable: {exc}") from None
    if not principal.covers(scope.tenant, scope.project):
        raise ScopeDenied(f"principal {principal} may not write into scope {scope}")
    # The record gets the metadata as a read returns it (plain JSON: string keys, lists),
    # which is also what its attestation signs.
    return PreparedPut(kind, artifact_id, body, content_hash(body), principal, scope, trust,
                       parent, media_type, json.loads(meta_text), meta_text)


def put_artifact(tx: Tx, kind: ArtifactKind | str, artifact_id: str, body: bytes, *,
                 keyring: Keyring | None = None, **kwargs: Any) -> ArtifactRecord:
    """Append a new revision built on ``parent_revision`` (``None`` for the first); signed
    under ``keyring``'s current key when one is given."""
    return insert_revision(tx, prepare_put(kind, artifact_id, body, **kwargs), keyring)


def insert_revision(tx: Tx, put: PreparedPut, keyring: Keyring | None = None) -> ArtifactRecord:
    """The transactional half of a put (see the module docstring); with ``keyring``, the
    row carries its attestation (``artifacts.attestation``)."""
    tx.require_write()
    kind, artifact_id, principal, parent = put.kind, put.artifact_id, put.principal, put.parent
    key = {"kind": kind.value, "aid": artifact_id}
    head = tx.one(_HEAD, key)
    if head is not None and not principal.covers(head[1], head[2]):
        # Writes cannot hide that an id is taken (ids are global); they reveal nothing more.
        raise ScopeDenied(
            f"principal {principal} may not write {kind.value}/{artifact_id}: "
            "the id is held outside its tenant/project"
        )
    actual = head[0] if head is not None else None
    if actual != parent:
        raise RevisionConflict(kind.value, artifact_id, parent, actual)

    write_blob(tx, put.digest, put.body)
    record = ArtifactRecord(
        kind=kind, artifact_id=artifact_id, revision=(parent or 0) + 1,
        content_hash=put.digest, writer=principal.principal_id, scope=put.scope,
        trust=put.trust, created_at=datetime.now(UTC), parent_revision=parent,
        size=len(put.body), media_type=put.media_type, metadata=put.metadata,
    )
    if keyring is not None:
        record = record.model_copy(update={"attestation": keyring.sign(record)})
    signed = record.attestation
    try:
        inserted = tx.run(_INSERT, {
            **key, "revision": record.revision, "parent": parent, "hash": put.digest,
            "writer": record.writer, "tenant": put.scope.tenant, "project": put.scope.project,
            "task": put.scope.task, "trust": put.trust, "created": tx.when(record.created_at),
            "size": record.size, "media": put.media_type, "meta": put.metadata_text,
            "akey": signed.key_id if signed else None, "amac": signed.mac if signed else None,
        })
    except ConstraintRefused as exc:
        raise StoreError(
            f"write of {kind.value}/{artifact_id} revision {record.revision} was refused by "
            f"the database: {exc}"
        ) from exc
    if not inserted:  # another writer won this parent between our check and insert
        head = tx.one(_HEAD, key)
        actual = head[0] if head is not None else None
        raise RevisionConflict(kind.value, artifact_id, parent, actual)
    return record


def get_artifact(
    tx: Tx, kind: ArtifactKind | str, artifact_id: str, *, principal: Principal,
    revision: int | None = None,
) -> tuple[ArtifactRecord, bytes]:
    """Read one revision (the head by default), re-hashing its bytes before returning."""
    kind = check_kind(kind)
    check_identifier(artifact_id, "artifact_id")
    principal = check_principal(principal)
    wanted = check_revision(revision, "revision")
    params = {"kind": kind.value, "aid": artifact_id, "tenant": principal.tenant,
              "project": principal.project}
    # The revision row and its blob in one statement; only the scope's rows are visible.
    sql = (f"SELECT {_COLUMNS}, {BLOB_COLUMNS} FROM artifacts a "
           f"LEFT JOIN blobs b ON b.hash = a.content_hash WHERE {_VISIBLE} ")
    if wanted is None:
        row = tx.one(sql + "ORDER BY a.revision DESC LIMIT 1", params)
    else:
        row = tx.one(sql + "AND a.revision = :revision", {**params, "revision": wanted})
    if row is None:
        head = _visible_head(tx, params)
        if head is None:
            raise ScopeDenied(_not_visible(principal, kind, artifact_id))
        raise ArtifactNotFound(
            f"{kind.value}/{artifact_id} has no revision {wanted} (head is {head.revision})"
        )
    record = _record(tx, row)
    data = read_blob_row(tx, record.content_hash, row[_BLOB_AT], row[_BLOB_AT + 1])
    if data is None:
        raise IntegrityError(kind.value, artifact_id, record.revision, record.content_hash,
                             "<blob missing>")
    actual = content_hash(data)
    if actual != record.content_hash:
        raise IntegrityError(kind.value, artifact_id, record.revision, record.content_hash,
                             actual)
    return record, data


def head_artifact(
    tx: Tx, kind: ArtifactKind | str, artifact_id: str, *, principal: Principal
) -> ArtifactRecord | None:
    """The newest revision's record, or ``None`` when none is visible to ``principal``."""
    kind = check_kind(kind)
    check_identifier(artifact_id, "artifact_id")
    principal = check_principal(principal)
    return _visible_head(tx, {"kind": kind.value, "aid": artifact_id,
                              "tenant": principal.tenant, "project": principal.project})


def history(
    tx: Tx, kind: ArtifactKind | str, artifact_id: str, *, principal: Principal
) -> list[ArtifactRecord]:
    """Every revision, oldest first; empty when none is visible to ``principal``."""
    kind = check_kind(kind)
    check_identifier(artifact_id, "artifact_id")
    principal = check_principal(principal)
    rows = tx.all(f"SELECT {_COLUMNS} FROM artifacts a WHERE {_VISIBLE} ORDER BY a.revision",
                  {"kind": kind.value, "aid": artifact_id, "tenant": principal.tenant,
                   "project": principal.project})
    return [_record(tx, r) for r in rows]


def sign_unsigned(tx: Tx, keyring: Keyring) -> int:
    """Sign every revision that has no attestation with ``keyring``'s current key; returns
    how many. The operator's act of vouching for the store as it is now (``pressroom db
    sign-unsigned``, when a key is first configured on a store holding revisions): a row
    changed before this runs is signed as it stands."""
    tx.require_write()
    rows = tx.all(f"SELECT a.id, {_COLUMNS} FROM artifacts a "
                  "WHERE a.attestation_mac IS NULL ORDER BY a.id")
    for row in rows:
        signed = keyring.sign(_record(tx, tuple(row)[1:]))
        tx.run("UPDATE artifacts SET attestation_key_id = :k, attestation_mac = :m "
               "WHERE id = :id AND attestation_mac IS NULL",
               {"k": signed.key_id, "m": signed.mac, "id": row[0]})
    return len(rows)


def _not_visible(principal: Principal, kind: ArtifactKind, artifact_id: str) -> str:
    # One message whether the id exists elsewhere or nowhere: guessing ids learns nothing.
    return (
        f"principal {principal} cannot read {kind.value}/{artifact_id}: no such artifact "
        f"in tenant {principal.tenant!r}, project {principal.project!r}"
    )


def _visible_head(tx: Tx, params: dict[str, Any]) -> ArtifactRecord | None:
    # Filtering in SQL (not after the fact) keeps other tenants' rows out of this process.
    row = tx.one(f"SELECT {_COLUMNS} FROM artifacts a WHERE {_VISIBLE} "
                 "ORDER BY a.revision DESC LIMIT 1", params)
    return _record(tx, row) if row is not None else None


def _record(tx: Tx, row: Any) -> ArtifactRecord:
    return ArtifactRecord(
        kind=ArtifactKind(row[0]), artifact_id=row[1], revision=row[2], content_hash=row[3],
        writer=row[4], scope=Scope(tenant=row[5], project=row[6], task=row[7]),
        trust=row[8], created_at=tx.time_of(row[9]), parent_revision=row[10], size=row[11],
        media_type=row[12], metadata=json.loads(row[13]) if row[13] else {},
        # two strings from the row: built without a validation pass (every read makes one)
        attestation=(Attestation.model_construct(key_id=str(row[14]), mac=str(row[15]))
                     if row[14] is not None and row[15] is not None else None),
    )
