"""The job's typed search attributes (workflows/visibility.py) and ``list_visible_jobs``.

Jobs run for real on the session dev server (which registers the attributes, as
``pressroom dev`` does) with a worker; visibility is eventually consistent, so every
check of a list waits for it (``tests.waiting.wait_for``). The query builder's quoting and
the registration's failure paths are unit tests.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.runtime import ActivityRuntime
from contracts.job_spec import JobSpec
from contracts.workflow_messages import ResearchJobInput
from tests.waiting import wait_for
from tests.workflows.jobkit import review, running_worker, start_job, wait_status
from workflows import client as jobs
from workflows.devserver import DevServer
from workflows.errors import SearchAttributesMissing
from workflows.research_job import ResearchJobWorkflow
from workflows.temporal_config import DATA_CONVERTER, WORKFLOW_TYPE
from workflows.visibility import (
    PRESSROOM_PROJECT,
    PRESSROOM_REVIEWERS,
    PRESSROOM_STAGE,
    PRESSROOM_STATUS,
    PRESSROOM_TENANT,
    PRESSROOM_TOKENS,
    PRESSROOM_TURN,
    SEARCH_ATTRIBUTE_TYPES,
    SEARCH_ATTRIBUTES,
    create_command,
    jobs_query,
)
from workflows.visibility_admin import ensure_search_attributes, missing_search_attributes


def _uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def _ids(client: Client, **filters: Any) -> set[str]:
    return {job.job_id for job in await jobs.list_visible_jobs(client, **filters)}


async def _until_listed(client: Client, want: set[str], what: str, **filters: Any) -> None:
    async def listed() -> bool:
        return await _ids(client, **filters) == want

    await wait_for(listed, 30, what)


# ------------------------------------------------------------------ against the dev server
@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_jobs_list_by_reviewer_status_and_tenant(
        client: Client, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    tenant, other_tenant = _uniq("acme"), _uniq("globex")
    carol, dave = _uniq("Carol"), _uniq("dave")  # a capital: listed and matched normalized
    scope = {"tenant": tenant, "project": "docs", "task": "t1"}
    spec_a = make_spec(scope=scope, review={"reviewers": ["alice", carol], "timeout": "10m"})
    spec_b = make_spec(scope=scope, review={"reviewers": ["bob", dave], "timeout": "10m"})
    spec_c = make_spec(scope={**scope, "tenant": other_tenant},
                       review={"reviewers": [carol], "timeout": "10m"})
    async with running_worker(client, runtime, task_queue):
        handles = [await start_job(client, spec, task_queue)
                   for spec in (spec_a, spec_b, spec_c)]
        for handle in handles:
            await wait_status(handle, {"awaiting_review"})
        status = await handles[0].query(ResearchJobWorkflow.status)

        # the job's own attributes, as the workflow upserted them
        async def described() -> Any:
            attrs = (await handles[0].describe()).typed_search_attributes
            return attrs if attrs.get(PRESSROOM_STATUS) == "awaiting_review" else None

        attrs = await wait_for(described, 30, "job A's attributes at awaiting_review")
        assert attrs.get(PRESSROOM_STAGE) == "review"
        assert attrs.get(PRESSROOM_TENANT) == tenant
        assert attrs.get(PRESSROOM_PROJECT) == "docs"
        assert attrs.get(PRESSROOM_REVIEWERS) == sorted(["alice", carol.lower()])
        assert status.research is not None
        assert attrs.get(PRESSROOM_TURN) == status.research.turn
        assert attrs.get(PRESSROOM_TOKENS) == status.research.tokens_used
        assert status.research.turn >= 1 and status.research.tokens_used > 0

        # reviewer filter: only the jobs listing that reviewer (any case)
        both_carol = {spec_a.job_id, spec_c.job_id}
        await _until_listed(client, both_carol, "carol's two jobs listed",
                            reviewer=carol.upper())
        assert await _ids(client, reviewer=dave) == {spec_b.job_id}
        assert await _ids(client, reviewer=_uniq("nobody")) == set()
        # tenant and status filters
        assert await _ids(client, reviewer=None, tenant=tenant) == {spec_a.job_id,
                                                                    spec_b.job_id}
        assert await _ids(client, reviewer=carol, tenant=other_tenant) == {spec_c.job_id}
        assert await _ids(client, reviewer=None, tenant=tenant,
                          status="awaiting_review") == {spec_a.job_id, spec_b.job_id}

        listed = {j.job_id: j for j in await jobs.list_visible_jobs(client, reviewer=carol)}
        a = listed[spec_a.job_id]
        assert (a.stage, a.status, a.tenant, a.project) == ("review", "awaiting_review",
                                                            tenant, "docs")
        assert a.reviewers == sorted(["alice", carol.lower()])
        assert a.turn == status.research.turn and a.tokens == status.research.tokens_used
        assert a.started_at is not None and a.closed_at is None

        # a decision moves the job between status filters; its final state stays listed
        await review(client, spec_b.job_id, "reject", reviewer="bob")
        await handles[1].result()
        await _until_listed(client, {spec_b.job_id}, "job B listed rejected",
                            reviewer=None, tenant=tenant, status="rejected")
        assert await _ids(client, reviewer=None, tenant=tenant,
                          status="awaiting_review") == {spec_a.job_id}
        [b] = await jobs.list_visible_jobs(client, reviewer=dave)
        assert b.status == "rejected" and b.closed_at is not None
        assert b.execution == "COMPLETED" and a.execution == "RUNNING"
        for spec in (spec_a, spec_c):
            await review(client, spec.job_id, "reject", reviewer="alice" if spec is spec_a
                         else carol)
        for handle in (handles[0], handles[2]):
            await handle.result()


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_job_started_without_attributes_runs_without_upserting(
        client: Client, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    """The guard: a run that started without the attributes (a namespace lacking them
    once) never upserts them, so no workflow task fails on it."""
    spec = make_spec()
    async with running_worker(client, runtime, task_queue):
        handle = await client.start_workflow(ResearchJobWorkflow.run,
                                             ResearchJobInput(spec=spec), id=spec.job_id,
                                             task_queue=task_queue)
        await wait_status(handle, {"awaiting_review"})
        attrs = (await handle.describe()).typed_search_attributes
        assert all(attrs.get(key) is None for key in SEARCH_ATTRIBUTES)
        history = await handle.fetch_history()
        upserted = {name for e in history.events
                    if e.HasField("upsert_workflow_search_attributes_event_attributes")
                    for name in e.upsert_workflow_search_attributes_event_attributes
                    .search_attributes.indexed_fields}
        assert not upserted & set(SEARCH_ATTRIBUTE_TYPES)  # (the SDK's own change versions)
        await review(client, spec.job_id, "approve", reviewer="alice")
        assert (await handle.result()).status == "published"


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_namespace_without_attributes_refuses_start_then_is_registered(
        temporal_env: Any, make_spec: Callable[..., JobSpec]) -> None:
    base: Client = temporal_env.client
    namespace = _uniq("pressroom-bare")
    await base.workflow_service.register_namespace(RegisterNamespaceRequest(
        namespace=namespace, workflow_execution_retention_period=_duration(1)))
    bare = await Client.connect(base.service_client.config.target_host, namespace=namespace,
                                data_converter=DATA_CONVERTER)
    await wait_for(lambda: _answers(bare), 30, "the new namespace answering")
    assert await missing_search_attributes(bare) == list(SEARCH_ATTRIBUTE_TYPES)
    spec = make_spec()
    with pytest.raises(SearchAttributesMissing) as refused:
        await jobs.start_job(bare, spec, task_queue="nobody-polls")
    message = str(refused.value)
    assert "PressroomStage" in message
    assert "temporal operator search-attribute create" in message and namespace in message

    assert await ensure_search_attributes(bare) == list(SEARCH_ATTRIBUTE_TYPES)
    assert await ensure_search_attributes(bare) == []  # idempotent
    assert await missing_search_attributes(bare) == []
    # the namespace's cache takes a moment to see them; then the job starts
    handle = await wait_for(lambda: _try_start(bare, spec), 60, "start once registered")
    await handle.terminate("test over")


# ------------------------------------------------------------------------------ unit tests
def test_jobs_query_filters_and_normalizes() -> None:
    assert jobs_query(reviewer=None) == f"WorkflowType = '{WORKFLOW_TYPE}'"
    query = jobs_query(reviewer=" \uff21lice ", status="awaiting_review", tenant="acme")
    assert query == (f"WorkflowType = '{WORKFLOW_TYPE}' AND PressroomReviewers = 'alice' "
                     "AND PressroomStatus = 'awaiting_review' AND PressroomTenant = 'acme'")


@pytest.mark.parametrize("bad", [
    "x' OR WorkflowType != '", 'x" OR 1=1', "back\\slash", "tick`", "nul\x00", "zw\u200bsp",
    "line\nbreak", "",
])
@pytest.mark.parametrize("field", ["reviewer", "status", "tenant"])
def test_jobs_query_refuses_what_could_break_a_literal(field: str, bad: str) -> None:
    kwargs: dict[str, Any] = {"reviewer": None, field: bad}
    with pytest.raises(ValueError):
        jobs_query(**kwargs)


def test_dev_server_registers_every_attribute(tmp_path: Any) -> None:
    cmd = DevServer(tmp_path / "t.db").command()
    pairs = {cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--search-attribute"}
    assert pairs == {"PressroomStage=Keyword", "PressroomStatus=Keyword",
                     "PressroomTenant=Keyword", "PressroomProject=Keyword",
                     "PressroomReviewers=KeywordList", "PressroomTurn=Int",
                     "PressroomTokens=Int"}
    assert create_command(["PressroomTurn"], "ns") == (
        "temporal operator search-attribute create --namespace ns "
        "--name PressroomTurn --type Int")


class _DeniedOperator:
    async def list_search_attributes(self, req: Any) -> Any:
        raise RPCError("Request unauthorized.", RPCStatusCode.PERMISSION_DENIED, b"")


class _DeniedClient:
    namespace = "prod"
    operator_service = _DeniedOperator()


@pytest.mark.asyncio
async def test_ensure_without_permission_names_the_command() -> None:
    with pytest.raises(SearchAttributesMissing) as denied:
        await ensure_search_attributes(_DeniedClient())  # type: ignore[arg-type]
    message = str(denied.value)
    assert "PERMISSION_DENIED" in message
    assert create_command(None, "prod") in message
    assert "--name PressroomReviewers --type KeywordList" in message
    assert "--name PressroomTurn --type Int --name PressroomTokens --type Int" in message


# ------------------------------------------------------------------------------- helpers
def _duration(days: int) -> Any:
    from google.protobuf.duration_pb2 import Duration

    d = Duration()
    d.FromTimedelta(timedelta(days=days))
    return d


async def _answers(client: Client) -> bool:
    await client.count_workflows()
    return True


async def _try_start(client: Client, spec: JobSpec) -> Any:
    try:
        return await jobs.start_job(client, spec, task_queue="nobody-polls")
    except SearchAttributesMissing:
        return None
