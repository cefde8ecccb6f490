"""The research activity called directly (real SQLite store, real document source).

Two resolutions for the same source can reach the workflow in one activation (e.g. two
``pressroom resolve --refresh`` sent while the worker was down); the activity must acquire
that source once, not record it twice.
"""

from __future__ import annotations

from collections.abc import Callable

from activities import research, store_activities
from activities.runtime import ActivityRuntime
from contracts.activity_messages import ContextRef, JobRef, ResearchInput, StepState
from contracts.job_spec import JobSpec
from tests.workflows.jobkit import store_json


async def test_a_source_named_twice_is_acquired_once(
    runtime: ActivityRuntime, make_spec: Callable[..., JobSpec]
) -> None:
    spec = make_spec()
    try:
        ref = await store_activities.store_job_spec(
            runtime, store_activities.StoreJobSpecInput(spec=spec))
        job = JobRef(job_id=spec.job_id, principal_id=spec.principal.principal_id,
                     tenant=spec.scope.tenant, project=spec.scope.project, spec=ref)
        ctx = ContextRef(manifest_id="m-1", step_id="research-2", stage="research",
                         status="ready")
        src = spec.sources[0]
        res = await research.research(runtime, ResearchInput(
            job=job, context=ctx, state=StepState(job_spec=ref), sources=[src, src],
            as_of="2026-01-01T00:00:00+00:00"))
        sources = await store_json(runtime, spec, "source_records",
                                   res.source_records.artifact_id)
        assert [a["source_name"] for a in sources["acquisitions"]] == [src.name]
        tools = await store_json(runtime, spec, "tool_record", res.tool_records.artifact_id)
        call_ids = [c["call_id"] for c in tools["calls"]]
        assert len(call_ids) == len(set(call_ids)) == 1
        assert len(tools["results"]) == 1
        pack = await store_json(runtime, spec, "evidence_pack", res.evidence_pack.artifact_id)
        ids = [r["item_id"] for r in pack["records"]]
        assert ids and len(ids) == len(set(ids))
        assert res.retrieved == 1
    finally:
        await runtime.close()
