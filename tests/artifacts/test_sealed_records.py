"""Sealed records (``artifacts.sealed_records``) — manifests, checkpoints and receipts:
sealed once, idempotent on retry, usage write-back."""

from __future__ import annotations

import asyncio

import pytest

from artifacts import (
    ArtifactStore,
    InvalidArtifact,
    Principal,
    Scope,
    ScopeDenied,
    SealedConflict,
    json_hash,
)

MANIFEST = {
    "assembly": {
        "id": "assembly-1",
        "run_id": "run-1",
        "step_id": "step-1",
        "status": "ready",
        "policy": {"id": "source-research", "revision": 3, "digest": "sha256:" + "a" * 64},
        "serialized_model_input_hash": "sha256:" + "b" * 64,
    },
    "budget": {"usable_input": 1000, "estimated_used": 700, "actual_input_tokens": None},
    "included": [{"item_id": "x", "score": 0.5}],
}


async def test_manifest_seal_and_usage(
    store: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    digest = await store.put_manifest("assembly-1", run_id="run-1", step_id="step-1",
                                      status="ready", body=MANIFEST, scope=scope)
    assert digest == json_hash(MANIFEST)
    # A retried activity re-writes the same manifest: no-op.
    assert await store.put_manifest("assembly-1", run_id="run-1", step_id="step-1",
                                    status="ready", body=MANIFEST, scope=scope) == digest
    changed = {**MANIFEST, "included": []}
    with pytest.raises(SealedConflict, match="manifest 'assembly-1' is sealed"):
        await store.put_manifest("assembly-1", run_id="run-1", step_id="step-1",
                                 status="ready", body=changed, scope=scope)
    assert await store.get_manifest("assembly-1", principal=alice) == MANIFEST

    await store.record_usage("assembly-1", 812, principal=alice)
    await store.record_usage("assembly-1", 812, principal=alice)
    with pytest.raises(SealedConflict, match="already recorded as 812"):
        await store.record_usage("assembly-1", 900, principal=alice)
    got = await store.get_manifest("assembly-1", principal=alice)
    assert got["budget"]["actual_input_tokens"] == 812
    assert got["included"] == MANIFEST["included"]
    # unknown, or another tenant's: refused alike, and nothing is written
    with pytest.raises(ScopeDenied, match="manifest 'missing'"):
        await store.record_usage("missing", 1, principal=alice)
    mallory = Principal(principal_id="mallory", tenant="evil", project=alice.project)
    with pytest.raises(ScopeDenied, match="manifest 'assembly-1'"):
        await store.record_usage("assembly-1", 999, principal=mallory)

    async with store.db.read() as s:
        from sqlalchemy import select

        from artifacts.tables import Manifest

        row = await s.scalar(select(Manifest).where(Manifest.manifest_id == "assembly-1"))
    assert row is not None
    assert (row.policy_id, row.policy_revision) == ("source-research", "3")
    assert row.policy_digest == "sha256:" + "a" * 64
    assert row.serialized_input_hash == "sha256:" + "b" * 64
    assert row.actual_input_tokens == 812


async def test_cache_usage_is_recorded_once_beside_the_input_count(
    store: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    """The provider's prompt-cache figures (docs/context-engine.md#prompt-cache-identity)
    are kept with ``actual_input_tokens``, outside the seal, once; a different second
    report is a conflict, and figures larger than the input they are parts of are refused
    before anything is written."""
    await store.put_manifest("assembly-c", run_id="run-1", step_id="step-c", status="ready",
                             body=MANIFEST, scope=scope)
    with pytest.raises(InvalidArtifact, match="exceed actual_input_tokens 100"):
        await store.record_usage("assembly-c", 100, principal=alice, cached_input_tokens=80,
                                 cache_write_input_tokens=30)
    with pytest.raises(InvalidArtifact, match="cached_input_tokens must be a non-negative"):
        await store.record_usage("assembly-c", 100, principal=alice, cached_input_tokens=-1)
    assert (await store.get_manifest("assembly-c", principal=alice)
            )["budget"]["actual_input_tokens"] is None  # nothing was written
    await store.record_usage("assembly-c", 1000, principal=alice, cached_input_tokens=640,
                             cache_write_input_tokens=200)
    await store.record_usage("assembly-c", 1000, principal=alice, cached_input_tokens=640,
                             cache_write_input_tokens=200)
    with pytest.raises(SealedConflict, match="cache usage already recorded as 640 cached"):
        await store.record_usage("assembly-c", 1000, principal=alice, cached_input_tokens=0,
                                 cache_write_input_tokens=200)
    got = await store.get_manifest("assembly-c", principal=alice)
    assert {k: got["budget"][k] for k in ("actual_input_tokens", "cached_input_tokens",
                                          "cache_write_input_tokens")} == {
        "actual_input_tokens": 1000, "cached_input_tokens": 640,
        "cache_write_input_tokens": 200}


async def test_manifest_summaries_list_a_runs_columns_without_bodies(
    store: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    """A listing (the console's job page) reads columns, oldest first, of one run and the
    principal's tenant and project only."""
    assert await store.manifest_summaries("run-1", principal=alice) == []
    for n, status in ((1, "ready"), (2, "blocked"), (3, "ready")):
        await store.put_manifest(f"m-{n}", run_id="run-1", step_id=f"research-{n}",
                                 status=status, body={**MANIFEST, "n": n}, scope=scope)
    await store.put_manifest("m-other", run_id="run-2", step_id="s", status="ready",
                             body=MANIFEST, scope=scope)
    other_tenant = Scope(tenant="other", project=scope.project, task=scope.task)
    await store.put_manifest("m-foreign", run_id="run-1", step_id="research-9",
                             status="ready", body=MANIFEST, scope=other_tenant)
    summaries = await store.manifest_summaries("run-1", principal=alice)
    assert [(s["manifest_id"], s["step_id"], s["status"]) for s in summaries] == [
        ("m-1", "research-1", "ready"), ("m-2", "research-2", "blocked"),
        ("m-3", "research-3", "ready")]
    assert all(set(s) == {"manifest_id", "step_id", "status", "created_at"}
               and s["created_at"].tzinfo is not None for s in summaries)
    with pytest.raises(InvalidArtifact):
        await store.manifest_summaries("../run", principal=alice)


async def test_checkpoints_latest_wins(
    store: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    assert await store.latest_checkpoint("run-1", principal=alice) is None
    for n in range(1, 4):
        await store.put_checkpoint(f"cp-{n}", run_id="run-1", step_id=f"step-{n}",
                                   body={"n": n}, scope=scope)
    await store.put_checkpoint("cp-other", run_id="run-2", step_id="s", body={"n": 99},
                               scope=scope)
    assert await store.latest_checkpoint("run-1", principal=alice) == {"n": 3}
    await store.put_checkpoint("cp-2", run_id="run-1", step_id="step-2", body={"n": 2},
                               scope=scope)  # retry: no-op, does not become "latest"
    assert await store.latest_checkpoint("run-1", principal=alice) == {"n": 3}
    with pytest.raises(SealedConflict, match="checkpoint 'cp-2'"):
        await store.put_checkpoint("cp-2", run_id="run-1", step_id="step-2", body={"n": 7},
                                   scope=scope)


async def test_receipts_are_idempotent_under_races(
    store: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    results = await asyncio.gather(*(
        store.put_receipt("publish:run-1:article", body={"attempt": i}, scope=scope)
        for i in range(12)
    ))
    assert len({json_hash(r) for r in results}) == 1
    assert await store.get_receipt("publish:run-1:article", principal=alice) == results[0]
    assert await store.get_receipt("publish:run-9:article", principal=alice) is None
