"""A 50 MB body round-trips byte for byte on both engines (memory is measured in bench/)."""

from __future__ import annotations

import hashlib
import os

import pytest

from artifacts import ArtifactKind, ArtifactStore, Principal, Scope

SIZE = 50 * 1024 * 1024


async def test_50mb_round_trip(store: ArtifactStore, alice: Principal, scope: Scope) -> None:
    body = os.urandom(SIZE)
    digest = "sha256:" + hashlib.sha256(body).hexdigest()
    rec = await store.put(ArtifactKind.DOCUMENT, "big", body, principal=alice, scope=scope,
                          trust="external_evidence", parent_revision=None,
                          media_type="application/pdf")
    assert rec.size == SIZE and rec.content_hash == digest
    got_rec, got = await store.get(ArtifactKind.DOCUMENT, "big", principal=alice)
    assert got_rec == rec
    assert len(got) == SIZE
    assert got == body


async def test_streamed_bodies_dedupe_and_detect_tampering(
    store: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    """Bodies above one chunk take the streaming path; it dedupes and re-hashes like the
    plain path, including after the bytes are changed in the database."""
    from sqlalchemy import func, select, text

    from artifacts import IntegrityError
    from artifacts.blobio import CHUNK
    from artifacts.tables import Blob

    body = os.urandom(2 * CHUNK + 123)
    first = await store.put(ArtifactKind.WEB_PAGE, "page", body, principal=alice, scope=scope,
                            trust="external_evidence", parent_revision=None)
    again = await store.put(ArtifactKind.WEB_PAGE, "page-copy", body, principal=alice,
                            scope=scope, trust="external_evidence", parent_revision=None)
    assert first.content_hash == again.content_hash
    async with store.db.read() as s:
        assert await s.scalar(select(func.count()).select_from(Blob)) == 1
    _, got = await store.get(ArtifactKind.WEB_PAGE, "page-copy", principal=alice)
    assert got == body

    forged = bytearray(body)
    forged[CHUNK + 7] ^= 0xFF  # one flipped byte in the second chunk
    async with store.db.write() as s:
        await s.execute(text("UPDATE blobs SET data = :d WHERE hash = :h"),
                        {"d": bytes(forged), "h": first.content_hash})
    with pytest.raises(IntegrityError) as info:
        await store.get(ArtifactKind.WEB_PAGE, "page", principal=alice)
    assert info.value.expected_hash == first.content_hash
    assert info.value.actual_hash == "sha256:" + hashlib.sha256(bytes(forged)).hexdigest()
