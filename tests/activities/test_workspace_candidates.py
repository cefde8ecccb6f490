"""Workspace files become candidates with one store artifact per file, whatever its name.

Real SQLite store, real files; no Temporal needed (the loader is called directly).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from activities.candidates import load_candidates
from activities.runtime import ActivityRuntime
from activities.store_activities import StoreJobSpecInput, store_job_spec
from contracts.activity_messages import AssembleContextInput, JobRef, StepState
from contracts.job_spec import parse_job_spec
from settings import Settings
from tests.workflows.jobkit import job_dict

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
    rt = ActivityRuntime(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}", locations=LOCAL)
    try:
        ref = await store_job_spec(rt, StoreJobSpecInput(spec=spec))
        job = JobRef(job_id=spec.job_id, principal_id=spec.principal.principal_id,
                     tenant=spec.scope.tenant, project=spec.scope.project, spec=ref)
        inp = AssembleContextInput(job=job, step_id="plan-1", stage="plan",
                                   state=StepState(job_spec=ref),
                                   as_of="2026-01-01T00:00:00+00:00")
        for _ in range(2):  # a second step re-admits the same revisions, no churn
            cands = await load_candidates(await rt.store(), spec, inp)
            items = {i.item_id: i for i in cands.items if i.item_id.startswith("workspace:")}
            assert sorted(items) == ["workspace:a/b.md", "workspace:a__b.md",
                                     "workspace:notes\\draft.md"]
            assert {i.content for i in items.values()} == {
                "nested plan\n", "flat plan with a look-alike name\n",
                "a backslash in a file name\n"}
            assert {i.revision for i in items.values()} == {"1"}
    finally:
        await rt.close()
