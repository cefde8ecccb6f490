"""Revision chains, blob dedup, stale-parent conflicts and racing writers, on both engines."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC
from typing import Any

import pytest
from sqlalchemy import func, select

from artifacts import (
    ArtifactKind,
    ArtifactNotFound,
    ArtifactStore,
    Principal,
    RevisionConflict,
    Scope,
)
from artifacts.tables import Artifact, Blob
from tests.waiting import wait_for

KIND = ArtifactKind.RESEARCH_PLAN


async def _count(store: ArtifactStore, model: type[Artifact] | type[Blob]) -> int:
    async with store.db.read() as s:
        return int(await s.scalar(select(func.count()).select_from(model)) or 0)


async def _lock_waiters(store: ArtifactStore) -> int:
    """PostgreSQL backends of this database whose artifact insert waits on a lock (another
    transaction's uncommitted row in the unique index)."""
    def count(tx: Any) -> int:
        row = tx.one("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                     "AND datname = current_database() AND pid <> pg_backend_pid() "
                     "AND query LIKE 'INSERT INTO artifacts%'")
        return int(row[0])

    return await store.db.call(False, count)


async def test_revision_chain(store: ArtifactStore, alice: Principal, scope: Scope) -> None:
    bodies = [b"plan v1", b"plan v2", b"plan v3"]
    parent = None
    for i, body in enumerate(bodies, start=1):
        rec = await store.put(KIND, "plan-42", body, principal=alice, scope=scope,
                              trust="task_authority", parent_revision=parent,
                              media_type="text/plain", metadata={"step": i})
        assert rec.revision == i
        assert rec.parent_revision == parent
        assert rec.content_hash == "sha256:" + hashlib.sha256(body).hexdigest()
        assert rec.size == len(body)
        parent = rec.revision

    head = await store.head(KIND, "plan-42", principal=alice)
    assert head is not None and head.revision == 3
    hist = await store.history(KIND, "plan-42", principal=alice)
    assert [r.revision for r in hist] == [1, 2, 3]
    assert [r.parent_revision for r in hist] == [None, 1, 2]
    for rec, body in zip(hist, bodies, strict=True):
        got_rec, got = await store.get(KIND, "plan-42", principal=alice, revision=rec.revision)
        assert got == body
        assert got_rec == rec
        assert got_rec.created_at.tzinfo == UTC
        assert got_rec.writer == "alice" and got_rec.scope == scope
        assert got_rec.trust == "task_authority" and got_rec.media_type == "text/plain"
        assert got_rec.metadata == {"step": rec.revision}
    latest, body = await store.get(KIND, "plan-42", principal=alice)
    assert latest.revision == 3 and body == b"plan v3"

    with pytest.raises(ArtifactNotFound, match="no revision 9"):
        await store.get(KIND, "plan-42", principal=alice, revision=9)


async def test_same_bytes_share_one_blob(
    store: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    body = b"identical bytes"
    a = await store.put(KIND, "a", body, principal=alice, scope=scope, trust="trusted_state",
                        parent_revision=None)
    await store.put(KIND, "a", b"other", principal=alice, scope=scope, trust="trusted_state",
                    parent_revision=1)
    c = await store.put(KIND, "a", body, principal=alice, scope=scope, trust="trusted_state",
                        parent_revision=2)
    b = await store.put(ArtifactKind.DOCUMENT, "b", body, principal=alice, scope=scope,
                        trust="trusted_state", parent_revision=None)
    assert a.content_hash == b.content_hash == c.content_hash
    assert await _count(store, Artifact) == 4
    assert await _count(store, Blob) == 2


async def test_stale_parent_conflict(store: ArtifactStore, alice: Principal, scope: Scope) -> None:
    await store.put(KIND, "p", b"1", principal=alice, scope=scope, trust="trusted_state",
                    parent_revision=None)
    await store.put(KIND, "p", b"2", principal=alice, scope=scope, trust="trusted_state",
                    parent_revision=1)

    with pytest.raises(RevisionConflict) as info:
        await store.put(KIND, "p", b"stale", principal=alice, scope=scope,
                        trust="trusted_state", parent_revision=1)
    err = info.value
    assert (err.kind, err.artifact_id, err.expected_parent, err.actual_head) == (
        KIND.value, "p", 1, 2)
    assert "research_plan/p" in str(err) and "parent revision 1" in str(err)
    assert "head is 2" in str(err)

    with pytest.raises(RevisionConflict) as info:
        await store.put(KIND, "p", b"again", principal=alice, scope=scope,
                        trust="trusted_state", parent_revision=None)
    assert (info.value.expected_parent, info.value.actual_head) == (None, 2)

    with pytest.raises(RevisionConflict) as info:
        await store.put(KIND, "p", b"future", principal=alice, scope=scope,
                        trust="trusted_state", parent_revision=7)
    assert (info.value.expected_parent, info.value.actual_head) == (7, 2)

    with pytest.raises(RevisionConflict) as info:
        await store.put(KIND, "fresh", b"x", principal=alice, scope=scope,
                        trust="trusted_state", parent_revision=1)
    assert (info.value.expected_parent, info.value.actual_head) == (1, None)

    # Nothing of the refused writes was stored: two revisions, two blobs.
    assert [r.revision for r in await store.history(KIND, "p", principal=alice)] == [1, 2]
    assert await _count(store, Blob) == 2
    _, body = await store.get(KIND, "p", principal=alice)
    assert body == b"2"


WRITERS = 24


async def test_concurrent_writers_one_winner_per_parent(
    store: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    """All writers race on the same parent at once: exactly one wins, the rest conflict."""
    await store.put(KIND, "race", b"base", principal=alice, scope=scope, trust="trusted_state",
                    parent_revision=None)
    start = asyncio.Event()

    async def writer(i: int) -> str:
        await start.wait()
        try:
            await store.put(KIND, "race", f"writer {i}".encode(), principal=alice, scope=scope,
                            trust="trusted_state", parent_revision=1)
        except RevisionConflict as exc:
            assert (exc.expected_parent, exc.actual_head) == (1, 2)
            return "conflict"
        return "won"

    tasks = [asyncio.create_task(writer(i)) for i in range(WRITERS)]
    start.set()
    outcomes = await asyncio.gather(*tasks)  # any other exception (database is locked) fails
    assert outcomes.count("won") == 1
    assert outcomes.count("conflict") == WRITERS - 1
    hist = await store.history(KIND, "race", principal=alice)
    assert [r.revision for r in hist] == [1, 2]


async def test_concurrent_writers_retrying_lose_nothing(
    store: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    """Writers re-read and retry on conflict: every write lands once, as a linear chain."""
    winners_per_parent: dict[int | None, list[int]] = {}

    async def writer(i: int) -> int:
        conflicts = 0
        while True:
            head = await store.head(KIND, "shared", principal=alice)
            parent = head.revision if head is not None else None
            try:
                rec = await store.put(KIND, "shared", f"writer {i}".encode(), principal=alice,
                                      scope=scope, trust="trusted_state",
                                      parent_revision=parent)
            except RevisionConflict:
                conflicts += 1
                continue
            winners_per_parent.setdefault(parent, []).append(i)
            assert rec.revision == (parent or 0) + 1
            return conflicts

    conflicts = await asyncio.gather(*(writer(i) for i in range(WRITERS)))
    hist = await store.history(KIND, "shared", principal=alice)
    assert [r.revision for r in hist] == list(range(1, WRITERS + 1))
    assert [r.parent_revision for r in hist] == [None, *range(1, WRITERS)]
    assert all(len(w) == 1 for w in winners_per_parent.values())
    bodies = set()
    for rec in hist:
        _, body = await store.get(KIND, "shared", principal=alice, revision=rec.revision)
        bodies.add(body)
    assert bodies == {f"writer {i}".encode() for i in range(WRITERS)}
    assert sum(conflicts) > 0  # they really raced


async def test_unique_constraint_arbitrates_open_transactions(
    store: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    """Writer B checks the head while A's revision 1 is still uncommitted; A commits; B must
    get a conflict (the head check on SQLite, the unique constraint on PostgreSQL), and B's
    blob must not survive."""
    from artifacts.revisions import put_artifact

    async with store.db.transaction(write=True) as tx_a:
        await tx_a.run(put_artifact, KIND, "held", b"A", principal=alice, scope=scope,
                       trust="trusted_state", parent_revision=None)

        async def writer_b() -> None:
            async with store.db.transaction(write=True) as tx_b:
                await tx_b.run(put_artifact, KIND, "held", b"B", principal=alice,
                               scope=scope, trust="trusted_state", parent_revision=None)

        b = asyncio.create_task(writer_b())
        if store.db.dialect.name == "postgresql":
            # B checked the head (A's row is invisible to it) and waits on the unique index
            await wait_for(lambda: _lock_waiters(store), 30,
                           "writer B waiting on A's uncommitted revision")
        # on SQLite B waits at BEGIN IMMEDIATE for A's write lock whenever it gets there, so
        # its head check always runs after A's commit: nothing to wait for
        assert not b.done()
    with pytest.raises(RevisionConflict) as info:
        await b
    assert (info.value.expected_parent, info.value.actual_head) == (None, 1)
    _, body = await store.get(KIND, "held", principal=alice)
    assert body == b"A"
    assert await _count(store, Blob) == 1
