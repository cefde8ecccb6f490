"""Scoped reads and writes: other tenants and other projects see nothing, whatever id."""

from __future__ import annotations

import pytest

from artifacts import ArtifactKind, ArtifactStore, Principal, Scope, ScopeDenied

KIND = ArtifactKind.ARTICLE_DRAFT


@pytest.fixture
async def draft(store: ArtifactStore, alice: Principal, scope: Scope) -> str:
    await store.put(KIND, "draft-7", b"secret draft", principal=alice, scope=scope,
                    trust="trusted_state", parent_revision=None)
    await store.put(KIND, "draft-7", b"secret draft v2", principal=alice, scope=scope,
                    trust="trusted_state", parent_revision=1)
    return "draft-7"


@pytest.mark.parametrize("intruder", ["mallory", "neighbour"])
async def test_other_scope_cannot_read(
    store: ArtifactStore, draft: str, intruder: str, request: pytest.FixtureRequest
) -> None:
    who: Principal = request.getfixturevalue(intruder)
    for revision in (None, 1, 2, 99):
        with pytest.raises(ScopeDenied) as info:
            await store.get(KIND, draft, principal=who, revision=revision)
        assert who.principal_id in str(info.value)
        assert "secret" not in str(info.value)
    assert await store.head(KIND, draft, principal=who) is None
    assert await store.history(KIND, draft, principal=who) == []


async def test_denial_does_not_reveal_existence(
    store: ArtifactStore, draft: str, mallory: Principal
) -> None:
    with pytest.raises(ScopeDenied) as existing:
        await store.get(KIND, draft, principal=mallory)
    with pytest.raises(ScopeDenied) as missing:
        await store.get(KIND, "no-such-draft", principal=mallory)
    assert str(existing.value).replace(draft, "ID") == str(missing.value).replace(
        "no-such-draft", "ID")


async def test_owner_still_reads(store: ArtifactStore, draft: str, alice: Principal) -> None:
    rec, body = await store.get(KIND, draft, principal=alice)
    assert (rec.revision, body) == (2, b"secret draft v2")
    # Another principal of the same tenant and project reads it too.
    colleague = Principal(principal_id="carol", tenant="acme", project="newsroom")
    _, body = await store.get(KIND, draft, principal=colleague, revision=1)
    assert body == b"secret draft"


async def test_cannot_write_into_foreign_scope(
    store: ArtifactStore, draft: str, mallory: Principal, neighbour: Principal, scope: Scope
) -> None:
    with pytest.raises(ScopeDenied, match="may not write into scope"):
        await store.put(KIND, "new", b"x", principal=mallory, scope=scope,
                        trust="trusted_state", parent_revision=None)
    own = Scope(tenant="acme", project="sports", task="t")
    for parent in (None, 2):
        with pytest.raises(ScopeDenied, match="held outside"):
            await store.put(KIND, draft, b"overwrite", principal=neighbour, scope=own,
                            trust="trusted_state", parent_revision=parent)
    alice = Principal(principal_id="alice", tenant="acme", project="newsroom")
    assert [r.revision for r in await store.history(KIND, draft, principal=alice)] == [1, 2]


async def test_records_are_scoped(
    store: ArtifactStore, alice: Principal, mallory: Principal, neighbour: Principal,
    scope: Scope,
) -> None:
    await store.put_manifest("m-1", run_id="run-1", step_id="s1", status="ready",
                             body={"x": 1}, scope=scope)
    await store.put_checkpoint("c-1", run_id="run-1", step_id="s1", body={"x": 1},
                               scope=scope)
    await store.put_receipt("r-1", body={"x": 1}, scope=scope)
    for who in (mallory, neighbour):
        with pytest.raises(ScopeDenied):
            await store.get_manifest("m-1", principal=who)
        assert await store.latest_checkpoint("run-1", principal=who) is None
        assert await store.get_receipt("r-1", principal=who) is None
    other = Scope(tenant="globex", project="newsroom", task="t")
    with pytest.raises(ScopeDenied, match="held outside"):
        await store.put_receipt("r-1", body={"x": 2}, scope=other)
    assert await store.get_manifest("m-1", principal=alice) == {"x": 1}
    assert await store.get_receipt("r-1", principal=alice) == {"x": 1}
