"""A 50 MB body round-trips byte for byte on both engines (memory is measured in bench/)."""

from __future__ import annotations

import hashlib
import os

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
