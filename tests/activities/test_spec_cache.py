"""The worker's job-spec cache: bounded, and never a way around the store's scope check.

Real SQLite store; specs are written through the real ``store_job_spec`` activity body.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from activities.runtime import ActivityRuntime
from activities.store_activities import store_job_spec
from artifacts.errors import ScopeDenied
from contracts.activity_messages import JobRef, StoreJobSpecInput
from contracts.job_spec import parse_job_spec
from settings import Settings
from tests.workflows.jobkit import job_dict, roots_for

#: what source-location placeholders stand for here (as a worker started now is told)
LOCAL = Settings.from_env(os.environ).locations


async def _stored(rt: ActivityRuntime, tmp_path: Path) -> JobRef:
    spec = parse_job_spec(job_dict(tmp_path, tmp_path, job_id=f"c-{uuid.uuid4().hex[:8]}"))
    ref = await store_job_spec(rt, StoreJobSpecInput(spec=spec))
    return JobRef(job_id=spec.job_id, principal_id=spec.principal.principal_id,
                  tenant=spec.scope.tenant, project=spec.scope.project, spec=ref)


async def test_cache_is_bounded_and_evicted_specs_still_load(tmp_path: Path) -> None:
    rt = ActivityRuntime(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}", spec_cache_size=2,
                         locations=LOCAL, roots=roots_for(tmp_path))
    try:
        jobs = [await _stored(rt, tmp_path) for _ in range(4)]
        for job in jobs:
            assert (await rt.spec_of(job)).job_id == job.job_id
        assert len(rt._specs) == 2
        assert (await rt.spec_of(jobs[0])).job_id == jobs[0].job_id  # read again
    finally:
        await rt.close()


async def test_a_cached_spec_is_not_served_to_another_tenant(tmp_path: Path) -> None:
    rt = ActivityRuntime(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}", locations=LOCAL,
                         roots=roots_for(tmp_path))
    try:
        job = await _stored(rt, tmp_path)
        await rt.spec_of(job)  # cached now, for tenant acme
        foreign = job.model_copy(update={"tenant": "other-tenant"})
        with pytest.raises(ScopeDenied):
            await rt.spec_of(foreign)
    finally:
        await rt.close()
