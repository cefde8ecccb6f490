"""Tamper detection: bytes changed directly in the database are caught on the next read."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import text

from artifacts import ArtifactKind, ArtifactStore, IntegrityError, Principal, Scope


async def _tamper(store: ArtifactStore, sql: str, **params: object) -> None:
    async with store.db.write() as s:
        result = await s.execute(text(sql), params)
        assert result.rowcount == 1  # type: ignore[attr-defined]


async def test_tampered_blob_raises_integrity_error(
    store: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    rec = await store.put(ArtifactKind.EVIDENCE_PACK, "pack-1", b"the true evidence",
                          principal=alice, scope=scope, trust="repository_evidence",
                          parent_revision=None)
    forged = b"the forged evidence"
    await _tamper(store, "UPDATE blobs SET data = :d WHERE hash = :h", d=forged,
                  h=rec.content_hash)

    with pytest.raises(IntegrityError) as info:
        await store.get(ArtifactKind.EVIDENCE_PACK, "pack-1", principal=alice)
    err = info.value
    actual = "sha256:" + hashlib.sha256(forged).hexdigest()
    assert err.expected_hash == rec.content_hash
    assert err.actual_hash == actual
    assert (err.kind, err.artifact_id, err.revision) == ("evidence_pack", "pack-1", 1)
    message = str(err)
    assert rec.content_hash in message and actual in message
    assert "evidence_pack/pack-1 revision 1" in message


async def test_tamper_hits_every_revision_sharing_the_blob(
    store: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    rec = await store.put(ArtifactKind.DOCUMENT, "d", b"same", principal=alice, scope=scope,
                          trust="external_evidence", parent_revision=None)
    await store.put(ArtifactKind.DOCUMENT, "d", b"changed", principal=alice, scope=scope,
                    trust="external_evidence", parent_revision=1)
    await store.put(ArtifactKind.DOCUMENT, "d", b"same", principal=alice, scope=scope,
                    trust="external_evidence", parent_revision=2)
    await _tamper(store, "UPDATE blobs SET data = :d WHERE hash = :h", d=b"evil",
                  h=rec.content_hash)
    for revision in (1, 3):
        with pytest.raises(IntegrityError, match=f"revision {revision}"):
            await store.get(ArtifactKind.DOCUMENT, "d", principal=alice, revision=revision)
    _, body = await store.get(ArtifactKind.DOCUMENT, "d", principal=alice, revision=2)
    assert body == b"changed"


@pytest.mark.parametrize(
    ("table", "key_column", "key", "read"),
    [
        ("manifests", "manifest_id", "m-1", "manifest"),
        ("checkpoints", "checkpoint_id", "c-1", "checkpoint"),
        ("receipts", "receipt_key", "r-1", "receipt"),
    ],
)
async def test_tampered_json_records_raise_integrity_error(
    store: ArtifactStore, alice: Principal, scope: Scope, table: str, key_column: str,
    key: str, read: str,
) -> None:
    body = {"status": "ok", "n": 1}
    await store.put_manifest("m-1", run_id="run-1", step_id="s", status="ready", body=body,
                             scope=scope)
    await store.put_checkpoint("c-1", run_id="run-1", step_id="s", body=body, scope=scope)
    await store.put_receipt("r-1", body=body, scope=scope)
    await _tamper(store, f"UPDATE {table} SET body = :b WHERE {key_column} = :k",
                  b='{"status": "ok", "n": 2}', k=key)
    with pytest.raises(IntegrityError, match=f"{read}/{key}"):
        if read == "manifest":
            await store.get_manifest(key, principal=alice)
        elif read == "checkpoint":
            await store.latest_checkpoint("run-1", principal=alice)
        else:
            await store.get_receipt(key, principal=alice)
