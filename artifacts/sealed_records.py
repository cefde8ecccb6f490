"""Sealed JSON records inside one transaction: manifests, checkpoints, publish receipts.

Each body is stored with the hash of its canonical JSON and re-hashed on every read,
like artifact bodies. Writes are insert-once: repeating a write with the same content is
a no-op (safe for retried activities); different content under the same id is a
``SealedConflict``. Receipts are idempotent by key: the first receipt wins and every
later put returns it.

A body is stored as its canonical JSON text (sorted keys, no spaces), the very bytes its
hash covers, so sealing encodes it once and a read proves it by hashing the stored text
before decoding it. A row stored in another layout (by an earlier version of the store,
or edited in place) is decoded and re-encoded canonically before its hash is compared.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from artifacts.errors import (
    IntegrityError,
    InvalidArtifact,
    ScopeDenied,
    SealedConflict,
)
from artifacts.ids import check_identifier
from artifacts.sqltx import Tx
from artifacts.types import Principal, Scope
from artifacts.validate import (
    check_json_body,
    check_label,
    check_principal,
    check_scope,
)

__all__ = [
    "canonical_text",
    "checkpoints",
    "get_manifest",
    "get_receipt",
    "json_hash",
    "latest_checkpoint",
    "manifest_summaries",
    "put_checkpoint",
    "put_manifest",
    "put_receipt",
    "record_usage",
]


def canonical_text(body: dict[str, Any]) -> str:
    """The canonical JSON of ``body`` (sorted keys, no spaces, NaN refused)."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def json_hash(body: dict[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``body`` (sorted keys, no spaces)."""
    return _text_hash(canonical_text(body))


def _text_hash(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _sealed(body: object, what: str) -> tuple[str, str]:
    """Check ``body`` is a JSON object and return its canonical text and hash, in one
    encoding pass (the manifest carries its serialized model request, so it is the
    largest JSON a job writes)."""
    if not isinstance(body, dict):
        check_json_body(body, what)  # raises InvalidArtifact naming the type
    try:
        text = canonical_text(body)  # type: ignore[arg-type]
        return text, _text_hash(text)
    except (TypeError, ValueError) as exc:
        raise InvalidArtifact(f"{what} is not JSON-serializable: {exc}") from None


def _verified(kind: str, record_id: str, stored: str, expected: str) -> dict[str, Any]:
    """The decoded body of a stored text, proven against its seal hash."""
    if _text_hash(stored) == expected:  # stored canonically: the text itself is proof
        body: dict[str, Any] = json.loads(stored)
        return body
    try:
        body = json.loads(stored)
        actual = json_hash(body)
    except (TypeError, ValueError):
        body, actual = {}, _text_hash(stored)
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
    # A nested layout keeps these under "assembly" (docs/context-engine.md#manifest-fields);
    # flat layouts are accepted too.
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


def put_manifest(
    tx: Tx, manifest_id: str, *, run_id: str, step_id: str, status: str,
    body: dict[str, Any], scope: Scope, policy_id: str | None = None,
    policy_revision: str | None = None, policy_digest: str | None = None,
    serialized_input_hash: str | None = None,
) -> str:
    """Seal a context-assembly manifest; returns the hash of its canonical JSON."""
    for value, what in ((manifest_id, "manifest_id"), (run_id, "run_id"), (step_id, "step_id")):
        check_identifier(value, what)
    status = check_label(status, "manifest status")
    scope = check_scope(scope)
    text, digest = _sealed(body, "manifest body")
    columns = _manifest_columns(body)
    explicit = {"policy_id": policy_id, "policy_revision": policy_revision,
                "policy_digest": policy_digest, "serialized_input_hash": serialized_input_hash}
    columns.update({k: v for k, v in explicit.items() if v is not None})
    tx.require_write()
    inserted = tx.run(
        "INSERT INTO manifests (manifest_id, run_id, step_id, status, tenant, project, task, "
        "policy_id, policy_revision, policy_digest, serialized_input_hash, body, body_hash, "
        "created_at) VALUES (:id, :run, :step, :status, :tenant, :project, :task, "
        ":policy_id, :policy_revision, :policy_digest, :serialized_input_hash, :body, "
        ":hash, :created) ON CONFLICT (manifest_id) DO NOTHING",
        {"id": manifest_id, "run": run_id, "step": step_id, "status": status,
         "tenant": scope.tenant, "project": scope.project, "task": scope.task, **columns,
         "body": text, "hash": digest, "created": tx.when(datetime.now(UTC))},
    )
    if inserted:
        return digest
    # The id was taken: a retry of the same write is a no-op, anything else a conflict.
    # Only the sealing columns come back (never the body).
    row = tx.one("SELECT body_hash, run_id, step_id, status, tenant, project, task "
                 "FROM manifests WHERE manifest_id = :id", {"id": manifest_id})
    assert row is not None
    if tuple(row) != (digest, run_id, step_id, status, scope.tenant, scope.project, scope.task):
        raise SealedConflict("manifest", manifest_id,
                             f"stored body {row[0]} differs from {digest} (or its run, "
                             "step, status or scope differ)")
    return digest


def get_manifest(tx: Tx, manifest_id: str, *, principal: Principal) -> dict[str, Any]:
    """The sealed manifest body; recorded provider usage fills ``budget.actual_input_tokens``
    and, when the provider reported them, ``budget.cached_input_tokens`` and
    ``budget.cache_write_input_tokens``."""
    check_identifier(manifest_id, "manifest_id")
    principal = check_principal(principal)
    row = tx.one(
        "SELECT CAST(body AS TEXT), body_hash, actual_input_tokens, cached_input_tokens, "
        "cache_write_input_tokens FROM manifests "
        "WHERE manifest_id = :id AND tenant = :tenant AND project = :project",
        {"id": manifest_id, "tenant": principal.tenant, "project": principal.project},
    )
    if row is None:
        raise ScopeDenied(_not_visible(principal, "manifest", manifest_id))
    body = _verified("manifest", manifest_id, row[0], row[1])  # decoded anew: caller's own
    if row[2] is not None:
        budget = body.get("budget")
        target = budget if isinstance(budget, dict) else body
        target["actual_input_tokens"] = row[2]
        for name, value in (("cached_input_tokens", row[3]),
                            ("cache_write_input_tokens", row[4])):
            if value is not None:
                target[name] = value
    return body


def manifest_summaries(tx: Tx, run_id: str, *, principal: Principal) -> list[dict[str, Any]]:
    """Every manifest of ``run_id`` visible to ``principal`` as its indexed columns only
    (``manifest_id``, ``step_id``, ``status``, ``created_at``), oldest first.

    For listings: a manifest body holds the whole serialized request (up to the model's
    window, megabytes), so a page listing a long research loop's 200 steps must not read and
    re-hash every body. Nothing here is verified — open one with ``get_manifest`` for that.
    """
    check_identifier(run_id, "run_id")
    principal = check_principal(principal)
    rows = tx.all(
        "SELECT manifest_id, step_id, status, created_at FROM manifests "
        "WHERE run_id = :run AND tenant = :tenant AND project = :project "
        "ORDER BY created_at, manifest_id",
        {"run": run_id, "tenant": principal.tenant, "project": principal.project},
    )
    return [{"manifest_id": row[0], "step_id": row[1], "status": row[2],
             "created_at": tx.time_of(row[3])} for row in rows]


def _usage_count(value: Any, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArtifact(f"{what} must be a non-negative int, got {value!r}")


def record_usage(tx: Tx, manifest_id: str, actual_input_tokens: int, *,
                 principal: Principal, cached_input_tokens: int | None = None,
                 cache_write_input_tokens: int | None = None) -> None:
    """Write back the provider's input-token count once (the same values again are a no-op),
    on a manifest of the principal's tenant and project — like reading it. The cache figures
    are parts of ``actual_input_tokens`` (what the provider read from / wrote to its prompt
    cache); ``None`` leaves one unrecorded."""
    check_identifier(manifest_id, "manifest_id")
    principal = check_principal(principal)
    _usage_count(actual_input_tokens, "actual_input_tokens")
    for value, what in ((cached_input_tokens, "cached_input_tokens"),
                        (cache_write_input_tokens, "cache_write_input_tokens")):
        if value is not None:
            _usage_count(value, what)
    if (cached_input_tokens or 0) + (cache_write_input_tokens or 0) > actual_input_tokens:
        raise InvalidArtifact(
            f"cached ({cached_input_tokens}) and cache-write ({cache_write_input_tokens}) "
            f"input tokens exceed actual_input_tokens {actual_input_tokens}")
    tx.require_write()
    scoped = {"id": manifest_id, "tenant": principal.tenant, "project": principal.project}
    values = {"n": actual_input_tokens, "cached": cached_input_tokens,
              "written": cache_write_input_tokens}
    if tx.run("UPDATE manifests SET actual_input_tokens = :n, cached_input_tokens = :cached, "
              "cache_write_input_tokens = :written WHERE manifest_id = :id "
              "AND tenant = :tenant AND project = :project AND actual_input_tokens IS NULL",
              {**values, **scoped}):
        return
    found = tx.one("SELECT actual_input_tokens, cached_input_tokens, cache_write_input_tokens "
                   "FROM manifests WHERE manifest_id = :id "
                   "AND tenant = :tenant AND project = :project", scoped)
    if found is None:  # unknown, or another tenant's: the same answer either way
        raise ScopeDenied(_not_visible(principal, "manifest", manifest_id))
    if found[0] != actual_input_tokens:
        raise SealedConflict("manifest", manifest_id,
                             f"actual_input_tokens already recorded as {found[0]}, "
                             f"not {actual_input_tokens}")
    if (found[1], found[2]) != (cached_input_tokens, cache_write_input_tokens):
        raise SealedConflict("manifest", manifest_id,
                             f"cache usage already recorded as {found[1]} cached and "
                             f"{found[2]} written, not {cached_input_tokens} and "
                             f"{cache_write_input_tokens}")


def put_checkpoint(
    tx: Tx, checkpoint_id: str, *, run_id: str, step_id: str, body: dict[str, Any],
    scope: Scope,
) -> str:
    """Store a checkpoint once; returns the hash of its canonical JSON."""
    for value, what in ((checkpoint_id, "checkpoint_id"), (run_id, "run_id"),
                        (step_id, "step_id")):
        check_identifier(value, what)
    scope = check_scope(scope)
    text, digest = _sealed(body, "checkpoint body")
    tx.require_write()
    if tx.run("INSERT INTO checkpoints (checkpoint_id, run_id, step_id, tenant, project, "
              "task, body, body_hash, created_at) VALUES (:id, :run, :step, :tenant, "
              ":project, :task, :body, :hash, :created) ON CONFLICT (checkpoint_id) DO NOTHING",
              {"id": checkpoint_id, "run": run_id, "step": step_id, "tenant": scope.tenant,
               "project": scope.project, "task": scope.task, "body": text, "hash": digest,
               "created": tx.when(datetime.now(UTC))}):
        return digest
    row = tx.one("SELECT body_hash, run_id, step_id, tenant, project, task FROM checkpoints "
                 "WHERE checkpoint_id = :id", {"id": checkpoint_id})
    assert row is not None
    if tuple(row) != (digest, run_id, step_id, scope.tenant, scope.project, scope.task):
        raise SealedConflict("checkpoint", checkpoint_id,
                             f"stored body {row[0]} differs from {digest} (or its run, "
                             "step or scope differ)")
    return digest


def latest_checkpoint(
    tx: Tx, run_id: str, *, principal: Principal
) -> dict[str, Any] | None:
    """The body of the newest checkpoint of ``run_id`` visible to ``principal``, or ``None``."""
    check_identifier(run_id, "run_id")
    principal = check_principal(principal)
    row = tx.one(
        "SELECT checkpoint_id, CAST(body AS TEXT), body_hash FROM checkpoints "
        "WHERE run_id = :run AND tenant = :tenant AND project = :project "
        "ORDER BY seq DESC LIMIT 1",
        {"run": run_id, "tenant": principal.tenant, "project": principal.project},
    )
    if row is None:
        return None
    return _verified("checkpoint", row[0], row[1], row[2])


def checkpoints(
    tx: Tx, run_id: str, *, principal: Principal
) -> list[dict[str, Any]]:
    """Every checkpoint of ``run_id`` visible to ``principal``, oldest first, each body
    proven against its seal hash (``IntegrityError`` for one that is not): what
    ``pressroom fork`` reads a parent's checkpoint as of a research turn from."""
    check_identifier(run_id, "run_id")
    principal = check_principal(principal)
    rows = tx.all(
        "SELECT checkpoint_id, CAST(body AS TEXT), body_hash FROM checkpoints "
        "WHERE run_id = :run AND tenant = :tenant AND project = :project ORDER BY seq",
        {"run": run_id, "tenant": principal.tenant, "project": principal.project},
    )
    return [{**_verified("checkpoint", row[0], row[1], row[2]), "_body_hash": row[2]}
            for row in rows]


def put_receipt(
    tx: Tx, receipt_key: str, *, body: dict[str, Any], scope: Scope
) -> dict[str, Any]:
    """Store a publish receipt under ``receipt_key``; the first one stored wins and is returned."""
    check_identifier(receipt_key, "receipt_key")
    scope = check_scope(scope)
    text, digest = _sealed(body, "receipt body")
    tx.require_write()
    if tx.run("INSERT INTO receipts (receipt_key, tenant, project, task, body, body_hash, "
              "created_at) VALUES (:key, :tenant, :project, :task, :body, :hash, :created) "
              "ON CONFLICT (receipt_key) DO NOTHING",
              {"key": receipt_key, "tenant": scope.tenant, "project": scope.project,
               "task": scope.task, "body": text, "hash": digest,
               "created": tx.when(datetime.now(UTC))}):
        stored: dict[str, Any] = json.loads(text)  # a fresh copy of what was sealed
        return stored
    row = tx.one("SELECT tenant, project, CAST(body AS TEXT), body_hash FROM receipts "
                 "WHERE receipt_key = :key", {"key": receipt_key})
    assert row is not None
    if (row[0], row[1]) != (scope.tenant, scope.project):
        raise ScopeDenied(f"receipt key {receipt_key!r} is held outside scope {scope}")
    return _verified("receipt", receipt_key, row[2], row[3])


def get_receipt(
    tx: Tx, receipt_key: str, *, principal: Principal
) -> dict[str, Any] | None:
    """The receipt under ``receipt_key`` if ``principal`` may see it, else ``None``."""
    check_identifier(receipt_key, "receipt_key")
    principal = check_principal(principal)
    row = tx.one("SELECT CAST(body AS TEXT), body_hash FROM receipts WHERE receipt_key = :key "
                 "AND tenant = :tenant AND project = :project",
                 {"key": receipt_key, "tenant": principal.tenant, "project": principal.project})
    if row is None:
        return None
    return _verified("receipt", receipt_key, row[0], row[1])
