"""The console's audit log on a real SQLite artifact store: events round-trip in order, one
revision each, in the job's tenant/project — and no other tenant reads or writes them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from artifacts import ArtifactKind, ArtifactStore, Principal, ScopeDenied, open_store
from artifacts.validate import check_kind
from webconsole.audit import (
    CONSOLE_PRINCIPAL,
    CONSOLE_PROJECT,
    CONSOLE_TENANT,
    AuditEvent,
    AuditLog,
    audit_artifact_id,
)

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[ArtifactStore]:
    s = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}", migrate=True)
    try:
        yield s
    finally:
        await s.close()


def _event(action: str, n: int = 0, **fields: object) -> AuditEvent:
    base: dict[str, object] = {"at": T0 + timedelta(seconds=n), "actor": "alice",
                               "action": action, "job_id": "job-1", "tenant": "acme",
                               "project": "docs"}
    return AuditEvent.model_validate({**base, **fields})


def test_audit_log_is_a_known_artifact_kind() -> None:
    assert check_kind("audit_log") is ArtifactKind.AUDIT_LOG


async def test_events_round_trip_one_revision_each(store: ArtifactStore) -> None:
    log = AuditLog(store)
    written = [_event("view_draft", 0), _event("decision_refused", 1, outcome="refused",
                                                  detail="missing or wrong CSRF token"),
               _event("decision", 2, outcome="approve")]
    for event in written:
        await log.record(event)
    assert await log.events("job-1", "acme", "docs") == written
    owner = Principal(principal_id=CONSOLE_PRINCIPAL, tenant="acme", project="docs")
    history = await store.history(ArtifactKind.AUDIT_LOG, "job-1.audit", principal=owner)
    assert [r.revision for r in history] == [1, 2, 3]
    assert [r.metadata["action"] for r in history] == ["view_draft", "decision_refused",
                                                       "decision"]
    assert {(r.scope.tenant, r.scope.project, r.writer) for r in history} == {
        ("acme", "docs", CONSOLE_PRINCIPAL)}
    assert await log.events("job-2", "acme", "docs") == []


async def test_logs_without_a_job_are_per_tenant_and_console_wide(
        store: ArtifactStore) -> None:
    log = AuditLog(store)
    sign_in = AuditEvent.now(actor="alice", action="sign_in")
    failed = AuditEvent.now(actor="anonymous", action="sign_in_failed", outcome="refused")
    listed = AuditEvent.now(actor="alice", action="view_job", tenant="acme", project="docs")
    for event in (sign_in, failed, listed, _event("view_draft")):
        await log.record(event)
    assert await log.events(None, None, None) == [sign_in, failed]
    assert await log.events(None, "acme", "docs") == [listed]
    assert await log.events("job-1", "acme", "docs") == [_event("view_draft")]
    console_wide = Principal(principal_id=CONSOLE_PRINCIPAL, tenant=CONSOLE_TENANT,
                             project=CONSOLE_PROJECT)
    assert await store.head(ArtifactKind.AUDIT_LOG, audit_artifact_id(None, None, None),
                            principal=console_wide) is not None
    # two tenant/project pairs never share an id, and none is a job's
    ids = {audit_artifact_id(None, "a.b", "c"), audit_artifact_id(None, "a", "b.c"),
           audit_artifact_id("a.b.c", "a", "b")}
    assert len(ids) == 3


async def test_another_tenant_can_neither_read_nor_append(store: ArtifactStore) -> None:
    log = AuditLog(store)
    await log.record(_event("decision", outcome="approve", detail="approved revision 2"))
    # reading as another tenant, or the same tenant's other project, shows nothing
    assert await log.events("job-1", "globex", "docs") == []
    assert await log.events("job-1", "acme", "sports") == []
    mallory = Principal(principal_id=CONSOLE_PRINCIPAL, tenant="globex", project="docs")
    with pytest.raises(ScopeDenied):
        await store.get(ArtifactKind.AUDIT_LOG, "job-1.audit", principal=mallory)
    # and cannot slip an event into the job's log
    with pytest.raises(ScopeDenied):
        await log.record(_event("decision", tenant="globex", outcome="reject"))
    assert [e.outcome for e in await log.events("job-1", "acme", "docs")] == ["approve"]


async def test_concurrent_records_all_land(store: ArtifactStore) -> None:
    log = AuditLog(store)
    events = [_event("view_draft", n, actor=f"reviewer-{n}") for n in range(8)]
    await asyncio.gather(*(log.record(e) for e in events))
    got = await log.events("job-1", "acme", "docs")
    assert sorted(e.actor for e in got) == sorted(e.actor for e in events)


def test_events_are_checked() -> None:
    with pytest.raises(ValidationError, match="tenant and project"):
        AuditEvent.now(actor="alice", action="view_draft", job_id="job-1")
    with pytest.raises(ValidationError):
        AuditEvent.now(actor="alice", action="Sign In")
    with pytest.raises(ValidationError):
        AuditEvent.now(actor="alice", action="view_job", tenant="acme/x", project="docs")
    with pytest.raises(ValidationError):
        AuditEvent(at=datetime(2026, 1, 1), actor="alice", action="sign_in")  # naive time
    # text a request supplied is kept on one line and cut, never a reason to fail the write
    typed = AuditEvent.now(actor="mallory\n\u202eadmin", action="sign_in_failed",
                           outcome="refused", detail="line one\nline two" + "x" * 600)
    assert typed.actor == "mallory\\u000a\\u202eadmin"
    assert typed.detail.startswith("line one\\u000aline two") and len(typed.detail) == 500
    assert typed.detail.endswith("…")
    with pytest.raises(ValidationError):
        AuditEvent.now(actor="", action="sign_in")
