"""Reads hand out fresh, verified bodies after the per-call copies were removed.

The store selects sealed bodies as columns (decoded anew on every read) instead of
deep-copying mapped rows, and the worker's read cache keeps what it writes; these tests
pin what that must not change: a caller mutating a body it got never changes the next
read, and a cached body that no longer matches its content hash is never handed out.
"""

from __future__ import annotations

from activities.store_access import WorkerStore
from artifacts import ArtifactKind, ArtifactRecord, ArtifactStore, Principal, Scope
from artifacts.sealed_records import json_hash

BODY = {"assembly": {"policy": {"id": "p", "revision": "1"}},
        "included": [{"item_id": "x", "text": "é\u2028"}], "budget": {"used": 1}}


async def test_sealed_reads_are_fresh_copies(
    store: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    digest = await store.put_manifest("assembly-fresh", run_id="run-f", step_id="s1",
                                      status="ready", body=BODY, scope=scope)
    assert digest == json_hash(BODY)
    first = await store.get_manifest("assembly-fresh", principal=alice)
    first["included"].append({"item_id": "forged"})
    first["budget"]["used"] = 999
    assert await store.get_manifest("assembly-fresh", principal=alice) == BODY

    await store.put_checkpoint("cp-fresh", run_id="run-f", step_id="s1", body=BODY, scope=scope)
    cp = await store.latest_checkpoint("run-f", principal=alice)
    assert cp == BODY
    assert cp is not None
    cp["included"].clear()
    assert await store.latest_checkpoint("run-f", principal=alice) == BODY


async def test_worker_cache_keeps_writes_and_rechecks_hits(
    store: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    ws = WorkerStore(store)
    rec = await ws.put("research_plan", "plan-cache", b"plan v1", principal=alice, scope=scope,
                       trust="trusted_state", parent_revision=None)
    calls: list[str] = []
    real_get = store.get

    async def counting_get(kind: ArtifactKind | str, artifact_id: str, *, principal: Principal,
                           revision: int | None = None) -> tuple[ArtifactRecord, bytes]:
        calls.append("get")
        return await real_get(kind, artifact_id, principal=principal, revision=revision)

    store.get = counting_get  # type: ignore[method-assign]
    got_rec, body = await ws.get("research_plan", "plan-cache", principal=alice, revision=1)
    assert (got_rec.content_hash, body, calls) == (rec.content_hash, b"plan v1", [])

    # A cached entry whose bytes no longer match the record is dropped, not returned.
    key = next(iter(ws._cache))
    ws._cache[key] = (rec, b"tampered")
    _rec, body = await ws.get("research_plan", "plan-cache", principal=alice, revision=1)
    assert (body, calls) == (b"plan v1", ["get"])
