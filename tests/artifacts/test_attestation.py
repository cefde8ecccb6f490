"""Signed revisions (``artifacts.attestation``) on both engines: what a database writer
without the key can and cannot do, rotation, per-scope keys, the migration, the key file.

The attacker here writes the database directly (SQL through the store's own engine), as
someone holding the database's credentials but not the worker's key file would.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from artifacts import ArtifactKind, ArtifactStore, Principal, Scope, StoreError, open_store
from artifacts.attestation import (
    AttestationKeyError,
    Keyring,
    add_key,
    load_keyring,
    mac_message,
    parse_keyring,
    verify_record,
)
from artifacts.database import connect
from artifacts.migrate import upgrade
from artifacts.tables import Artifact

KIND = ArtifactKind.EVIDENCE_PACK
SECRET_1 = os.urandom(32)
SECRET_2 = os.urandom(32)


def ring(*keys: tuple[str, bytes]) -> Keyring:
    return parse_keyring("\n".join(f"{k}:{base64.b64encode(s).decode()}" for k, s in keys))


K1 = ring(("k1", SECRET_1))


@pytest.fixture
async def signed(empty_db_url: str) -> AsyncIterator[ArtifactStore]:
    """A migrated store on each engine, signing with key k1."""
    s = await open_store(empty_db_url, migrate=True, keyring=K1)
    try:
        yield s
    finally:
        await s.close()


async def _sql(store: ArtifactStore, sql: str, **params: Any) -> int:
    async with store.db.write() as session:
        result = await session.execute(text(sql), params)
        return int(result.rowcount)  # type: ignore[attr-defined]


async def _forge_content(store: ArtifactStore, artifact_id: str, revision: int,
                         forged: bytes) -> None:
    """What a database writer does to swap an artifact's content so that the bare content
    hash still checks: store the forged bytes as a blob under their own hash and point the
    revision at it."""
    digest = "sha256:" + hashlib.sha256(forged).hexdigest()
    await _sql(store, "INSERT INTO blobs (hash, size, data) VALUES (:h, :n, :d) "
                      "ON CONFLICT (hash) DO NOTHING",
               h=digest, n=len(forged), d=forged)
    assert await _sql(store, "UPDATE artifacts SET content_hash = :h, size = :n "
                             "WHERE artifact_id = :a AND revision = :r",
                      h=digest, n=len(forged), a=artifact_id, r=revision) == 1


async def test_every_revision_is_signed_and_reads_back_verified(
    signed: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    meta = {"write_id": "w-1", "n": 3, "f": 0.1, "nested": {"b": (1, 2), "a": "é"}}
    first = await signed.put(KIND, "pack", b"evidence v1", principal=alice, scope=scope,
                             trust="repository_evidence", parent_revision=None,
                             metadata=meta, media_type="application/json")
    second = await signed.put(KIND, "pack", b"evidence v2", principal=alice, scope=scope,
                              trust="repository_evidence", parent_revision=1)
    assert first.attestation is not None and first.attestation.key_id == "k1"
    assert len(first.attestation.mac) == 64
    assert signed.attestation_key_id == "k1"
    got, body = await signed.get(KIND, "pack", principal=alice, revision=1)
    assert body == b"evidence v1"
    # everything signed survives the round trip: time to the microsecond, metadata, scope
    assert got.attestation == first.attestation and got.created_at == first.created_at
    assert got.metadata == first.metadata == {**meta, "nested": {"b": [1, 2], "a": "é"}}
    for rec in (first, second, got, await signed.head(KIND, "pack", principal=alice),
                *await signed.history(KIND, "pack", principal=alice)):
        assert rec is not None
        verdict = signed.verify(rec)
        assert (verdict.status, verdict.key_id) == ("verified", "k1")


async def test_content_and_hash_rewritten_together_pass_the_hash_but_not_the_key(
    empty_db_url: str, alice: Principal, scope: Scope
) -> None:
    """Why the key matters: without it, a database writer who recomputes the content hash
    has produced a perfectly consistent row; with it, the row no longer verifies."""
    for keyring in (None, K1):
        store = await open_store(empty_db_url, migrate=True, keyring=keyring)
        try:
            artifact_id = f"pack-{'signed' if keyring else 'unsigned'}"
            await store.put(KIND, artifact_id, b"the true evidence", principal=alice,
                            scope=scope, trust="repository_evidence", parent_revision=None)
            await _forge_content(store, artifact_id, 1, b"the forged evidence")
            rec, body = await store.get(KIND, artifact_id, principal=alice)
            assert body == b"the forged evidence"  # the bare content hash checks out
            verdict = store.verify(rec)
            if keyring is None:
                assert (verdict.status, verdict.detail) == (
                    "unsigned", "no attestation key configured")
            else:
                assert verdict.status == "invalid"
                assert "does not match the revision" in verdict.detail
        finally:
            await store.close()


@pytest.mark.parametrize(("column", "value"), [
    ("trust", "task_authority"),
    ("writer", "mallory"),
    ("task", "task-2"),
    ("media_type", "text/markdown"),
    ("parent_revision", 7),
    ("revision", 9),
    ("size", 1),
    ("kind", "job_spec"),
    ("artifact_id", "other-pack"),
    ("metadata", '{"write_id": "forged"}'),
    ("created_at", "later"),
])
async def test_every_signed_column_is_covered(
    signed: ArtifactStore, alice: Principal, scope: Scope, column: str, value: Any
) -> None:
    rec = await signed.put(KIND, "pack", b"evidence", principal=alice, scope=scope,
                           trust="repository_evidence", parent_revision=None,
                           metadata={"write_id": "w-1"})
    if column == "created_at":  # a row re-dated (ages by it: freshness of an observation)
        value = rec.created_at + timedelta(days=30)
        if signed.engine_name == "sqlite":
            value = value.strftime("%Y-%m-%d %H:%M:%S.%f")
    assert await _sql(signed, f"UPDATE artifacts SET {column} = :v", v=value) == 1
    async with signed.db.read() as session:
        row = (await session.execute(text("SELECT kind, artifact_id FROM artifacts"))).one()
    changed = await signed.head(row[0], row[1], principal=alice)
    assert changed is not None and changed != rec
    verdict = signed.verify(changed)
    assert verdict.status == "invalid", column


async def test_a_forged_revision_without_the_key_is_refused(
    signed: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    """A new revision inserted by SQL: unsigned, with a made-up MAC, or with the MAC of
    another revision copied over — none verifies."""
    genuine = await signed.put(KIND, "pack", b"evidence", principal=alice, scope=scope,
                               trust="repository_evidence", parent_revision=None)
    assert genuine.attestation is not None
    forged = b"planted evidence"
    digest = "sha256:" + hashlib.sha256(forged).hexdigest()
    await _sql(signed, "INSERT INTO blobs (hash, size, data) VALUES (:h, :n, :d)",
               h=digest, n=len(forged), d=forged)
    attempts = {2: (None, None), 3: ("k1", "0" * 64), 4: ("k1", genuine.attestation.mac),
                5: ("k9", genuine.attestation.mac)}
    for revision, (key_id, mac) in attempts.items():
        await _sql(signed, "INSERT INTO artifacts (kind, artifact_id, revision, "
                   "parent_revision, content_hash, writer, tenant, project, task, trust, "
                   "created_at, size, media_type, metadata, attestation_key_id, "
                   "attestation_mac) SELECT kind, artifact_id, :rev, :parent, :h, writer, "
                   "tenant, project, task, trust, created_at, :n, media_type, metadata, "
                   ":k, :m FROM artifacts WHERE revision = 1",
                   rev=revision, parent=revision - 1, h=digest, n=len(forged), k=key_id,
                   m=mac)
        rec, body = await signed.get(KIND, "pack", principal=alice, revision=revision)
        assert body == forged
        verdict = signed.verify(rec)
        assert verdict.status == "invalid"
        if key_id is None:
            assert "unsigned" in verdict.detail
        elif key_id == "k9":
            assert "'k9', which the attestation key file does not hold" in verdict.detail


async def test_a_signature_is_worthless_in_another_scope(
    signed: ArtifactStore, alice: Principal, mallory: Principal, scope: Scope
) -> None:
    theirs = Scope(tenant="globex", project="newsroom", task="task-1")
    ours = await signed.put(KIND, "ours", b"same bytes", principal=alice, scope=scope,
                            trust="repository_evidence", parent_revision=None)
    other = await signed.put(KIND, "theirs", b"same bytes", principal=mallory, scope=theirs,
                             trust="repository_evidence", parent_revision=None)
    assert ours.attestation is not None and other.attestation is not None
    # a row moved into another tenant keeps its (now foreign) signature: refused
    await _sql(signed, "UPDATE artifacts SET tenant = 'globex', writer = 'mallory' "
                       "WHERE artifact_id = 'ours'")
    moved = await signed.head(KIND, "ours", principal=mallory)
    assert moved is not None and signed.verify(moved).status == "invalid"
    # the signature of another tenant's row copied onto ours: refused
    await _sql(signed, "UPDATE artifacts SET tenant = 'acme', writer = 'alice', "
                       "attestation_mac = :m WHERE artifact_id = 'ours'",
               m=other.attestation.mac)
    copied = await signed.head(KIND, "ours", principal=alice)
    assert copied is not None and signed.verify(copied).status == "invalid"
    # and the key itself differs per tenant and project, so the same message would too
    message = mac_message("k1", ours)
    keys = {K1._scope_key("k1", t, p) for t, p in
            (("acme", "newsroom"), ("globex", "newsroom"), ("acme", "sports"),
             ("acmen", "ewsroom"))}  # length-prefixed: no two splits of one string collide
    assert len(keys) == 4 and len(message) > 0


async def test_rotation_keeps_old_revisions_verifiable(
    empty_db_url: str, alice: Principal, scope: Scope
) -> None:
    old = await open_store(empty_db_url, migrate=True, keyring=K1)
    try:
        first = await old.put(KIND, "pack", b"signed with k1", principal=alice, scope=scope,
                              trust="repository_evidence", parent_revision=None)
    finally:
        await old.close()
    rotated = ring(("k2", SECRET_2), ("k1", SECRET_1))
    new = await open_store(empty_db_url, keyring=rotated)
    try:
        assert new.attestation_key_id == "k2"
        second = await new.put(KIND, "pack", b"signed with k2", principal=alice, scope=scope,
                               trust="repository_evidence", parent_revision=1)
        assert second.attestation is not None and second.attestation.key_id == "k2"
        history = await new.history(KIND, "pack", principal=alice)
        assert [(new.verify(r).status, new.verify(r).key_id) for r in history] == [
            ("verified", "k1"), ("verified", "k2")]
        assert history[0].attestation == first.attestation
    finally:
        await new.close()
    # once k1 is dropped from the file, what it signed is no longer admissible
    only_new = await open_store(empty_db_url, keyring=ring(("k2", SECRET_2)))
    try:
        history = await only_new.history(KIND, "pack", principal=alice)
        verdicts = [only_new.verify(r) for r in history]
        assert [v.status for v in verdicts] == ["invalid", "verified"]
        assert "key id 'k1', which the attestation key file does not hold" in verdicts[0].detail
    finally:
        await only_new.close()
    # a key under the same id with another secret verifies nothing
    impostor = ring(("k1", os.urandom(32)), ("k2", os.urandom(32)))
    assert {verify_record(impostor, r).status for r in history} == {"invalid"}


async def test_revisions_from_before_the_migration_are_unsigned(
    empty_db_url: str, alice: Principal, scope: Scope
) -> None:
    db = await connect(empty_db_url)
    try:
        await upgrade(db, "0001_initial")
        async with db.write() as session:  # a revision as the first schema stored it
            await session.execute(text(
                "INSERT INTO blobs (hash, size, data) VALUES (:h, 3, :d)"),
                {"h": "sha256:" + hashlib.sha256(b"old").hexdigest(), "d": b"old"})
            await session.execute(text(
                "INSERT INTO artifacts (kind, artifact_id, revision, content_hash, writer, "
                "tenant, project, task, trust, created_at, size, media_type, metadata) VALUES "
                "('evidence_pack', 'old', 1, :h, 'alice', 'acme', 'newsroom', 'task-1', "
                "'repository_evidence', :t, 3, 'application/json', :m)"),
                {"h": "sha256:" + hashlib.sha256(b"old").hexdigest(), "m": json.dumps({}),
                 "t": (datetime.now(UTC) if db.dialect.name == "postgresql"
                       else datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f"))})
        await upgrade(db)
    finally:
        await db.dispose()
    for keyring, want in ((None, "unsigned"), (K1, "invalid")):
        store = await open_store(empty_db_url, keyring=keyring)
        try:
            rec, body = await store.get(KIND, "old", principal=alice)
            assert body == b"old" and rec.attestation is None
            assert store.verify(rec).status == want
        finally:
            await store.close()


async def test_sign_unsigned_vouches_for_the_store_as_it_is(
    empty_db_url: str, alice: Principal, scope: Scope
) -> None:
    """Configuring a key on a store that holds revisions: the operator signs what is there
    once (`pressroom db sign-unsigned`); signed revisions are left as they are."""
    plain = await open_store(empty_db_url, migrate=True)
    try:
        for n in (1, 2):
            await plain.put(KIND, "old", f"v{n}".encode(), principal=alice, scope=scope,
                            trust="repository_evidence", parent_revision=n - 1 or None)
        with pytest.raises(StoreError, match="no attestation key configured"):
            await plain.sign_unsigned()
    finally:
        await plain.close()
    keyed = await open_store(empty_db_url, keyring=K1)
    try:
        await keyed.put(KIND, "new", b"v1", principal=alice, scope=scope,
                        trust="repository_evidence", parent_revision=None)
        before = [keyed.verify(r).status for r in await keyed.history(KIND, "old",
                                                                      principal=alice)]
        assert before == ["invalid", "invalid"]
        new = await keyed.head(KIND, "new", principal=alice)
        assert await keyed.sign_unsigned() == 2
        assert await keyed.sign_unsigned() == 0
        after = await keyed.history(KIND, "old", principal=alice)
        assert [keyed.verify(r).status for r in after] == ["verified", "verified"]
        assert await keyed.head(KIND, "new", principal=alice) == new  # untouched
    finally:
        await keyed.close()


def test_the_model_names_the_attestation_columns() -> None:
    columns = Artifact.__table__.columns
    assert {"attestation_key_id", "attestation_mac"} <= set(columns.keys())
    assert all(columns[c].nullable for c in ("attestation_key_id", "attestation_mac"))


# --- the key file -------------------------------------------------------------------------

def _write(path: Path, content: str, mode: int = 0o600) -> Path:
    path.write_text(content, encoding="ascii")
    path.chmod(mode)
    return path


def test_key_file_lines_comments_and_rotation_order(tmp_path: Path) -> None:
    a, b = base64.b64encode(SECRET_2).decode(), base64.b64encode(SECRET_1).decode()
    keys = _write(tmp_path / "keys", f"# rotated 2026-12\n\nk2:{a}\n  k1 : {b}  \n")
    loaded = load_keyring(keys)
    assert loaded.current_key_id == "k2" and loaded.key_ids == ("k2", "k1")
    assert a not in repr(loaded) and b not in repr(loaded)
    assert repr(loaded) == "Keyring(current='k2', keys=['k2', 'k1'])"


@pytest.mark.parametrize(("content", "mode", "message"), [
    ("k1:{s}\n", 0o644, "readable or writable by others (mode 644); chmod 600 it"),
    ("k1:{s}\n", 0o640, "readable or writable by others (mode 640)"),
    ("", 0o600, "holds no keys"),
    ("# only a comment\n", 0o600, "holds no keys"),
    ("{s}\n", 0o600, "line 1: expected key_id:base64secret"),
    ("bad id:{s}\n", 0o600, "line 1: expected key_id:base64secret"),
    ("k1:{s}\nk1:{s}\n", 0o600, "line 2: key id 'k1' appears twice"),
    ("k1:not*base64{s}\n", 0o600, "line 1: the secret is not valid base64"),
    ("k1:c2hvcnQ=\n", 0o600, "line 1: the secret is 5 bytes; at least 32 are needed"),
])
def test_unusable_key_files_are_refused_without_quoting_a_secret(
    tmp_path: Path, content: str, mode: int, message: str
) -> None:
    secret = base64.b64encode(SECRET_1).decode()
    path = _write(tmp_path / "keys", content.format(s=secret), mode)
    with pytest.raises(AttestationKeyError) as info:
        load_keyring(path)
    assert message in str(info.value) and str(path) in str(info.value)
    assert secret not in str(info.value) and "c2hvcnQ" not in str(info.value)


def test_a_link_a_folder_a_fifo_a_missing_file_are_refused(tmp_path: Path) -> None:
    real = _write(tmp_path / "real", f"k1:{base64.b64encode(SECRET_1).decode()}\n")
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(AttestationKeyError, match="cannot open"):
        load_keyring(tmp_path / "link")
    (tmp_path / "folder").mkdir(mode=0o700)
    with pytest.raises(AttestationKeyError, match="not a regular file"):
        load_keyring(tmp_path / "folder")
    os.mkfifo(tmp_path / "fifo", 0o600)  # opened without blocking, then refused
    with pytest.raises(AttestationKeyError, match="not a regular file"):
        load_keyring(tmp_path / "fifo")
    with pytest.raises(AttestationKeyError, match="does not exist"):
        load_keyring(tmp_path / "missing")


def test_add_key_creates_0600_and_rotates(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "attestation.keys"
    first = add_key(path)
    assert first.key_ids == ("k1",)
    assert path.stat().st_mode & 0o777 == 0o600
    second = add_key(path)
    assert second.key_ids == ("k2", "k1") == load_keyring(path).key_ids
    assert load_keyring(path).current_key_id == "k2"
    with pytest.raises(AttestationKeyError, match="already holds key id 'k1'"):
        add_key(path, "k1")
    named = add_key(path, "2027-01")
    assert named.key_ids == ("2027-01", "k2", "k1")
    assert path.stat().st_mode & 0o777 == 0o600
    assert list(path.parent.iterdir()) == [path]  # no partial file left behind
    path.chmod(0o644)
    with pytest.raises(AttestationKeyError, match="chmod 600"):
        add_key(path)
