"""The store's self-check: exercises put/get, conflicts, scoping and tamper detection on a
scratch database in a directory the caller names, then opens the configured store.

``pressroom selfcheck`` prints its result as a table; it is also what ``pressroom demo``
runs until the research workflow lands. Each check records what it proved, and a failed
check never stops the others.
"""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text

from artifacts.database import redact
from artifacts.errors import IntegrityError, RevisionConflict, ScopeDenied, StoreError
from artifacts.migrate import current_revision, head_revision
from artifacts.store import ArtifactStore, open_store
from artifacts.types import ArtifactKind, Principal, Scope

__all__ = ["CheckResult", "run_selfcheck"]

KIND = ArtifactKind.RESEARCH_PLAN
OWNER = Principal(principal_id="selfcheck", tenant="selfcheck", project="store")
SCOPE = Scope(tenant="selfcheck", project="store", task="selfcheck")
STRANGER = Principal(principal_id="stranger", tenant="elsewhere", project="store")
WRITERS = 20


@dataclass(frozen=True)
class CheckResult:
    """One line of the self-check table."""

    name: str
    ok: bool
    detail: str
    seconds: float


async def _put(store: ArtifactStore, artifact_id: str, body: bytes, parent: int | None) -> int:
    rec = await store.put(KIND, artifact_id, body, principal=OWNER, scope=SCOPE,
                          trust="trusted_state", parent_revision=parent)
    return rec.revision


async def _round_trip(store: ArtifactStore) -> str:
    await _put(store, "plan", b"first", None)
    await _put(store, "plan", b"second", 1)
    rec, body = await store.get(KIND, "plan", principal=OWNER, revision=1)
    head, head_body = await store.get(KIND, "plan", principal=OWNER)
    if (body, head_body, head.revision, head.parent_revision) != (b"first", b"second", 2, 1):
        raise AssertionError("revision chain did not read back as written")
    return f"revisions 1→2 read back, hash {rec.content_hash[:19]}…"


async def _conflict(store: ArtifactStore) -> str:
    try:
        await _put(store, "plan", b"stale", 1)
    except RevisionConflict as exc:
        return f"stale parent refused: {exc}"
    raise AssertionError("a write on a stale parent was accepted")


async def _race(store: ArtifactStore) -> str:
    async def one(i: int) -> bool:
        try:
            await _put(store, "race", b"%d" % i, None)
        except RevisionConflict:
            return False
        return True

    wins = sum(await asyncio.gather(*(one(i) for i in range(WRITERS))))
    if wins != 1:
        raise AssertionError(f"{wins} of {WRITERS} racing writers won the same parent")
    return f"{WRITERS} concurrent writers on one parent: exactly 1 won, {WRITERS - 1} conflicts"


async def _scope(store: ArtifactStore) -> str:
    try:
        await store.get(KIND, "plan", principal=STRANGER)
    except ScopeDenied:
        return "another tenant's read was denied"
    raise AssertionError("another tenant read the artifact")


async def _tamper(store: ArtifactStore) -> str:
    await _put(store, "tamper", b"original bytes", None)
    head = await store.head(KIND, "tamper", principal=OWNER)
    assert head is not None
    async with store.db.write() as session:
        await session.execute(text("UPDATE blobs SET data = :d WHERE hash = :h"),
                              {"d": b"forged bytes", "h": head.content_hash})
    try:
        await store.get(KIND, "tamper", principal=OWNER)
    except IntegrityError as exc:
        return f"tampered blob detected: expected {exc.expected_hash[:15]}…, " \
               f"got {exc.actual_hash[:15]}…"
    raise AssertionError("tampered bytes were returned")


async def _records(store: ArtifactStore) -> str:
    first = await store.put_receipt("selfcheck-receipt", body={"n": 1}, scope=SCOPE)
    again = await store.put_receipt("selfcheck-receipt", body={"n": 2}, scope=SCOPE)
    if first != again:
        raise AssertionError("the same receipt key returned two receipts")
    await store.put_manifest("selfcheck-manifest", run_id="run", step_id="step",
                             status="ready", body={"budget": {}}, scope=SCOPE)
    await store.record_usage("selfcheck-manifest", 42, principal=OWNER)
    manifest = await store.get_manifest("selfcheck-manifest", principal=OWNER)
    if manifest["budget"].get("actual_input_tokens") != 42:
        raise AssertionError("usage write-back not visible on the manifest")
    return "receipt idempotent by key; manifest sealed with usage write-back"


async def _timed(name: str, check: Callable[[], Awaitable[str]]) -> CheckResult:
    start = time.perf_counter()
    try:
        detail = await check()
        ok = True
    except (StoreError, AssertionError) as exc:
        detail, ok = f"{type(exc).__name__}: {exc}", False
    return CheckResult(name, ok, detail, time.perf_counter() - start)


async def run_selfcheck(url: str, *, scratch_dir: Path) -> list[CheckResult]:
    """Run every check on a scratch SQLite file in ``scratch_dir``; then open ``url`` (the
    configured store)."""
    scratch = scratch_dir / f"scratch-{uuid.uuid4().hex[:8]}.db"
    results: list[CheckResult] = []
    store: ArtifactStore | None = None

    async def _open() -> str:
        nonlocal store
        store = await open_store(f"sqlite+aiosqlite:///{scratch}")
        return f"scratch store {scratch} migrated to {await current_revision(store.db)}"

    results.append(await _timed("migrate", _open))
    if store is not None:
        opened: ArtifactStore = store
        try:
            for name, check in (
                ("put/get", _round_trip), ("conflict", _conflict), ("race", _race),
                ("scope", _scope), ("tamper", _tamper), ("records", _records),
            ):
                results.append(await _timed(name, functools.partial(check, opened)))
        finally:
            await opened.close()
    for suffix in ("", "-wal", "-shm"):
        scratch.with_name(scratch.name + suffix).unlink(missing_ok=True)

    async def _default() -> str:
        async with await open_store(url) as default:
            at = await current_revision(default.db)
        if at != head_revision():
            raise AssertionError(f"default store at {at}, expected {head_revision()}")
        return f"{redact(url)} at schema {at}"

    results.append(await _timed("default store", _default))
    return results
