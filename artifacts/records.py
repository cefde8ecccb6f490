"""Sealed JSON records on the caller's session: manifests, checkpoints, publish receipts.

Each body is stored with the hash of its canonical JSON and re-hashed on every read,
like artifact bodies. Writes are insert-once: repeating a write with the same content is
a no-op (safe for retried activities); different content under the same id is a
``SealedConflict``. Receipts are idempotent by key: the first receipt wins and every
later put returns it.
"""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from artifacts.dialect import insert_for
from artifacts.engine import begin_write
from artifacts.errors import (
    ArtifactNotFound,
    IntegrityError,
    InvalidArtifact,
    ScopeDenied,
    SealedConflict,
)
from artifacts.models import Checkpoint, Manifest, Receipt
from artifacts.types import Principal, Scope
from artifacts.validate import (
    check_identifier,
    check_json_body,
    check_label,
    check_principal,
    check_scope,
)

__all__ = [
    "get_manifest",
    "get_receipt",
    "json_hash",
    "latest_checkpoint",
    "put_checkpoint",
    "put_manifest",
    "put_receipt",
    "record_usage",
]


def json_hash(body: dict[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``body`` (sorted keys, no spaces)."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           allow_nan=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _checked_hash(body: object, what: str) -> tuple[dict[str, Any], str]:
    """``check_json_body`` and ``json_hash`` in one encoding pass.

    A manifest carries its serialized model request, so it is the largest JSON a job
    writes; encoding it once to validate and again to hash was measurable per step.
    """
    if not isinstance(body, dict):
        return check_json_body(body, what), ""  # raises InvalidArtifact naming the type
    try:
        digest = json_hash(body)
    except (TypeError, ValueError) as exc:
        raise InvalidArtifact(f"{what} is not JSON-serializable: {exc}") from None
    return body, digest


def _verified(kind: str, record_id: str, body: dict[str, Any], expected: str) -> dict[str, Any]:
    actual = json_hash(body)
    if actual != expected:
        raise IntegrityError(kind, record_id, None, expected, actual)
    return body


def _not_visible(principal: Principal, kind: str, record_id: str) -> str:
    return (
        f"principal {principal} cannot read {kind} {record_id!r}: no such {kind} in "
        f"tenant {principal.tenant!r}, project {principal.project!r}"
    )


def _optional_str(value: object) -> str | None:
    return None if value is None or value == "absent" else str(value)[:255]


def _manifest_columns(body: dict[str, Any]) -> dict[str, str | None]:
    # Seed 000 §10 nests these under "assembly"; flat layouts are accepted too.
    assembly = body.get("assembly") if isinstance(body.get("assembly"), dict) else body
    assert isinstance(assembly, dict)
    policy = assembly.get("policy") if isinstance(assembly.get("policy"), dict) else {}
    assert isinstance(policy, dict)
    return {
        "policy_id": _optional_str(policy.get("id", policy.get("policy_id"))),
        "policy_revision": _optional_str(policy.get("revision")),
        "policy_digest": _optional_str(policy.get("digest")),
        "serialized_input_hash": _optional_str(assembly.get("serialized_model_input_hash")),
    }


async def put_manifest(
    session: AsyncSession, manifest_id: str, *, run_id: str, step_id: str, status: str,
    body: dict[str, Any], scope: Scope, policy_id: str | None = None,
    policy_revision: str | None = None, policy_digest: str | None = None,
    serialized_input_hash: str | None = None,
) -> str:
    """Seal a context-assembly manifest; returns the hash of its canonical JSON."""
    for value, what in ((manifest_id, "manifest_id"), (run_id, "run_id"), (step_id, "step_id")):
        check_identifier(value, what)
    status = check_label(status, "manifest status")
    scope = check_scope(scope)
    body, digest = _checked_hash(body, "manifest body")
    columns = _manifest_columns(body)
    explicit = {"policy_id": policy_id, "policy_revision": policy_revision,
                "policy_digest": policy_digest, "serialized_input_hash": serialized_input_hash}
    columns.update({k: v for k, v in explicit.items() if v is not None})
    await begin_write(session)
    await session.execute(
        insert_for(session, Manifest).values(
            manifest_id=manifest_id, run_id=run_id, step_id=step_id, status=status,
            tenant=scope.tenant, project=scope.project, task=scope.task, body=body,
            body_hash=digest, created_at=datetime.now(UTC), **columns,
        ).on_conflict_do_nothing(index_elements=["manifest_id"])
    )
    # Only the sealing columns come back: decoding the stored body again to compare
    # hashes would cost a full parse of the manifest for nothing.
    row = (await session.execute(
        select(Manifest.body_hash, Manifest.run_id, Manifest.step_id, Manifest.status,
               Manifest.tenant, Manifest.project, Manifest.task)
        .where(Manifest.manifest_id == manifest_id)
    )).first()
    assert row is not None
    stored = tuple(row)
    if stored != (digest, run_id, step_id, status, scope.tenant, scope.project, scope.task):
        raise SealedConflict("manifest", manifest_id,
                             f"stored body {row.body_hash} differs from {digest} (or its run, "
                             "step, status or scope differ)")
    return digest


async def get_manifest(
    session: AsyncSession, manifest_id: str, *, principal: Principal
) -> dict[str, Any]:
    """The sealed manifest body; recorded provider usage fills ``budget.actual_input_tokens``."""
    check_identifier(manifest_id, "manifest_id")
    principal = check_principal(principal)
    # Selecting columns (not the mapped row) decodes a fresh body on every call and keeps
    # it out of the session's identity map, so the caller may mutate it without a deep copy.
    row = (await session.execute(
        select(Manifest.body, Manifest.body_hash, Manifest.actual_input_tokens).where(
            Manifest.manifest_id == manifest_id,
            Manifest.tenant == principal.tenant,
            Manifest.project == principal.project,
        )
    )).first()
    if row is None:
        raise ScopeDenied(_not_visible(principal, "manifest", manifest_id))
    body = _verified("manifest", manifest_id, row.body, row.body_hash)
    if row.actual_input_tokens is not None:
        budget = body.get("budget")
        if isinstance(budget, dict):
            budget["actual_input_tokens"] = row.actual_input_tokens
        else:
            body["actual_input_tokens"] = row.actual_input_tokens
    return body


async def record_usage(session: AsyncSession, manifest_id: str, actual_input_tokens: int) -> None:
    """Write back the provider's input-token count once (the same value again is a no-op)."""
    check_identifier(manifest_id, "manifest_id")
    if (isinstance(actual_input_tokens, bool) or not isinstance(actual_input_tokens, int)
            or actual_input_tokens < 0):
        raise InvalidArtifact(
            f"actual_input_tokens must be a non-negative int, got {actual_input_tokens!r}"
        )
    await begin_write(session)
    await session.execute(
        update(Manifest)
        .where(Manifest.manifest_id == manifest_id, Manifest.actual_input_tokens.is_(None))
        .values(actual_input_tokens=actual_input_tokens)
    )
    found = (await session.execute(
        select(Manifest.actual_input_tokens).where(Manifest.manifest_id == manifest_id)
    )).first()
    if found is None:
        raise ArtifactNotFound(f"no manifest {manifest_id!r} to record usage on")
    stored = found[0]
    if stored != actual_input_tokens:
        raise SealedConflict("manifest", manifest_id,
                             f"actual_input_tokens already recorded as {stored}, "
                             f"not {actual_input_tokens}")


async def put_checkpoint(
    session: AsyncSession, checkpoint_id: str, *, run_id: str, step_id: str,
    body: dict[str, Any], scope: Scope,
) -> str:
    """Store a checkpoint once; returns the hash of its canonical JSON."""
    for value, what in ((checkpoint_id, "checkpoint_id"), (run_id, "run_id"),
                        (step_id, "step_id")):
        check_identifier(value, what)
    scope = check_scope(scope)
    body, digest = _checked_hash(body, "checkpoint body")
    await begin_write(session)
    await session.execute(
        insert_for(session, Checkpoint).values(
            checkpoint_id=checkpoint_id, run_id=run_id, step_id=step_id, tenant=scope.tenant,
            project=scope.project, task=scope.task, body=body, body_hash=digest,
            created_at=datetime.now(UTC),
        ).on_conflict_do_nothing(index_elements=["checkpoint_id"])
    )
    row = (await session.execute(
        select(Checkpoint.body_hash, Checkpoint.run_id, Checkpoint.step_id, Checkpoint.tenant,
               Checkpoint.project, Checkpoint.task)
        .where(Checkpoint.checkpoint_id == checkpoint_id)
    )).first()
    assert row is not None
    stored = tuple(row)
    if stored != (digest, run_id, step_id, scope.tenant, scope.project, scope.task):
        raise SealedConflict("checkpoint", checkpoint_id,
                             f"stored body {row.body_hash} differs from {digest} (or its run, "
                             "step or scope differ)")
    return digest


async def latest_checkpoint(
    session: AsyncSession, run_id: str, *, principal: Principal
) -> dict[str, Any] | None:
    """The body of the newest checkpoint of ``run_id`` visible to ``principal``, or ``None``."""
    check_identifier(run_id, "run_id")
    principal = check_principal(principal)
    row = (await session.execute(
        select(Checkpoint.checkpoint_id, Checkpoint.body, Checkpoint.body_hash)
        .where(
            Checkpoint.run_id == run_id,
            Checkpoint.tenant == principal.tenant,
            Checkpoint.project == principal.project,
        )
        .order_by(Checkpoint.seq.desc())
        .limit(1)
    )).first()
    if row is None:
        return None
    return _verified("checkpoint", row.checkpoint_id, row.body, row.body_hash)


async def put_receipt(
    session: AsyncSession, receipt_key: str, *, body: dict[str, Any], scope: Scope
) -> dict[str, Any]:
    """Store a publish receipt under ``receipt_key``; the first one stored wins and is returned."""
    check_identifier(receipt_key, "receipt_key")
    scope = check_scope(scope)
    body, digest = _checked_hash(body, "receipt body")
    await begin_write(session)
    await session.execute(
        insert_for(session, Receipt).values(
            receipt_key=receipt_key, tenant=scope.tenant, project=scope.project,
            task=scope.task, body=body, body_hash=digest, created_at=datetime.now(UTC),
        ).on_conflict_do_nothing(index_elements=["receipt_key"])
    )
    row = await session.scalar(select(Receipt).where(Receipt.receipt_key == receipt_key))
    assert row is not None
    if (row.tenant, row.project) != (scope.tenant, scope.project):
        raise ScopeDenied(f"receipt key {receipt_key!r} is held outside scope {scope}")
    return copy.deepcopy(_verified("receipt", receipt_key, row.body, row.body_hash))


async def get_receipt(
    session: AsyncSession, receipt_key: str, *, principal: Principal
) -> dict[str, Any] | None:
    """The receipt under ``receipt_key`` if ``principal`` may see it, else ``None``."""
    check_identifier(receipt_key, "receipt_key")
    principal = check_principal(principal)
    row = await session.scalar(
        select(Receipt).where(
            Receipt.receipt_key == receipt_key,
            Receipt.tenant == principal.tenant,
            Receipt.project == principal.project,
        )
    )
    if row is None:
        return None
    return copy.deepcopy(_verified("receipt", receipt_key, row.body, row.body_hash))
