"""Workspace files become candidates with one store artifact per file, whatever its name.

Real SQLite store, real files; no Temporal needed (the loader is called directly).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from activities.candidates import load_candidates
from activities.runtime import ActivityRuntime
from activities.store_activities import store_job_spec
from contracts.activity_messages import AssembleContextInput, JobRef, StepState, StoreJobSpecInput
from contracts.job_spec import parse_job_spec
from settings import Settings
from tests.workflows.jobkit import job_dict, roots_for

#: what source-location placeholders stand for here (as a worker started now is told)
LOCAL = Settings.from_env(os.environ).locations


async def test_every_workspace_file_gets_its_own_valid_artifact(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "a").mkdir(parents=True)
    (ws / "a" / "b.md").write_text("nested plan\n", encoding="utf-8")
    (ws / "a__b.md").write_text("flat plan with a look-alike name\n", encoding="utf-8")
    (ws / "notes\\draft.md").write_text("a backslash in a file name\n", encoding="utf-8")
    docs = tmp_path / "docs"
    docs.mkdir()
    spec = parse_job_spec(job_dict(tmp_path, docs, workspace=str(ws),
                                   job_id=f"ws-{uuid.uuid4().hex[:8]}"))
    rt = ActivityRuntime(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}", locations=LOCAL,
                         roots=roots_for(tmp_path))
    try:
        ref = await store_job_spec(rt, StoreJobSpecInput(spec=spec))
        job = JobRef(job_id=spec.job_id, principal_id=spec.principal.principal_id,
                     tenant=spec.scope.tenant, project=spec.scope.project, spec=ref)
        inp = AssembleContextInput(job=job, step_id="plan-1", stage="plan",
                                   state=StepState(job_spec=ref),
                                   as_of="2026-01-01T00:00:00+00:00")
        for _ in range(2):  # a second step re-admits the same revisions, no churn
            cands = await load_candidates(await rt.store(), spec, inp, roots=rt.roots)
            items = {i.item_id: i for i in cands.items if i.item_id.startswith("workspace:")}
            assert sorted(items) == ["workspace:a/b.md", "workspace:a__b.md",
                                     "workspace:notes\\draft.md"]
            assert {i.content for i in items.values()} == {
                "nested plan\n", "flat plan with a look-alike name\n",
                "a backslash in a file name\n"}
            assert {i.revision for i in items.values()} == {"1"}
    finally:
        await rt.close()


async def test_workspace_files_that_may_not_be_read_are_recorded_not_read(
        tmp_path: Path) -> None:
    """A link out of the roots, a FIFO and a file over the limit are not admitted; each is a
    ``not_retrieved`` acquisition with its reason (before: the link was read, the FIFO
    skipped silently, the big file admitted cut at the limit)."""
    from activities.candidates import WORKSPACE_MAX_BYTES

    root = tmp_path / "root"
    ws = root / "ws"
    ws.mkdir(parents=True)
    (ws / "plan.md").write_text("the plan\n", encoding="utf-8")
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("api key hunter2\n", encoding="utf-8")
    (ws / "linked.md").symlink_to(secret)
    os.mkfifo(ws / "pipe.md")
    with (ws / "big.md").open("wb") as fh:
        fh.truncate(WORKSPACE_MAX_BYTES + 1)  # sparse: nothing to read, only its size
    spec = parse_job_spec(job_dict(root, root, workspace=str(ws),
                                   job_id=f"ws-{uuid.uuid4().hex[:8]}"))
    rt = ActivityRuntime(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}", locations=LOCAL,
                         roots=roots_for(root))
    try:
        ref = await store_job_spec(rt, StoreJobSpecInput(spec=spec))
        job = JobRef(job_id=spec.job_id, principal_id=spec.principal.principal_id,
                     tenant=spec.scope.tenant, project=spec.scope.project, spec=ref)
        inp = AssembleContextInput(job=job, step_id="plan-1", stage="plan",
                                   state=StepState(job_spec=ref),
                                   as_of="2026-01-01T00:00:00+00:00")
        cands = await load_candidates(await rt.store(), spec, inp, roots=rt.roots)
    finally:
        await rt.close()
    items = {i.item_id: i.content for i in cands.items if i.item_id.startswith("workspace:")}
    assert items == {"workspace:plan.md": "the plan\n"}
    assert all("hunter2" not in i.content for i in cands.items)
    refused = {a.source_request_id: (a.outcome.value, a.reason) for a in cands.acquisitions}
    assert refused["workspace:linked.md"][0] == "not_retrieved"
    assert "outside the source roots" in (refused["workspace:linked.md"][1] or "")
    assert "FIFO" in (refused["workspace:pipe.md"][1] or "")
    assert "over the limit" in (refused["workspace:big.md"][1] or "")


async def test_a_workspace_outside_the_roots_is_refused(tmp_path: Path) -> None:
    from contracts.errors import PathOutsideRoots

    root = tmp_path / "root"
    root.mkdir()
    spec = parse_job_spec(job_dict(root, root, workspace=str(tmp_path / "elsewhere"),
                                   job_id=f"ws-{uuid.uuid4().hex[:8]}"))
    rt = ActivityRuntime(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}", locations=LOCAL,
                         roots=roots_for(root))
    try:
        with pytest.raises(PathOutsideRoots, match="workspace"):
            await store_job_spec(rt, StoreJobSpecInput(spec=spec))
    finally:
        await rt.close()
