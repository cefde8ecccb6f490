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
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.common import TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from activities.fail_hook import FAIL_ENV
from activities.runtime import ActivityRuntime
from client import jobs
from client.devserver import DevServer
from client.errors import SearchAttributesMissing
from client.visibility_admin import ensure_search_attributes, missing_search_attributes
from context.vocabulary import BlockedReason
from contracts.job_spec import JobSpec
from contracts.workflow_messages import JobState, ResearchJobInput, ResolveInput
from tests.waiting import wait_for
from tests.workflows.jobkit import resolve, review, running_worker, start_job, wait_status
from tests.workflows.test_blocked_evidence import TOPICS, _quota_docs
from tests.workflows.test_needs_operator import RETRY, wait_parked
from workflows.research_job import ResearchJobWorkflow
from workflows.temporal_config import DATA_CONVERTER, WORKFLOW_TYPE
from workflows.visibility import (
    BLOCKED_REASON_CODES,
    PRESSROOM_PROJECT,
    PRESSROOM_REASON,
    PRESSROOM_REVIEWERS,
    PRESSROOM_STAGE,
    PRESSROOM_STATUS,
    PRESSROOM_TENANT,
    PRESSROOM_TOKENS,
    PRESSROOM_TURN,
    SEARCH_ATTRIBUTE_TYPES,
    SEARCH_ATTRIBUTES,
    create_command,
    job_search_attributes,
    jobs_query,
    reason_code,
    search_attribute_updates,
)


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
        assert a.reason is None and attrs.get(PRESSROOM_REASON) == ""
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


#: reviewers and an operator (who signs the retry)
_OPS_REVIEW = {"reviewers": ["alice"], "operators": ["ops"], "timeout": "10m"}


async def _reason_listed(client: Client, job_id: str, status: str, reason: str | None) -> None:
    """Wait until the visibility store lists ``job_id`` in ``status`` with ``reason``."""
    async def listed() -> bool:
        found = {j.job_id: j for j in await jobs.list_visible_jobs(client, reviewer="alice",
                                                                    status=status)}
        job = found.get(job_id)
        return job is not None and job.reason == reason

    await wait_for(listed, 30, f"{job_id} listed {status} with reason {reason!r}")


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_blocked_and_needs_operator_jobs_list_their_reason_code(
        client: Client, runtime: ActivityRuntime, task_queue: str, tmp_path: Any,
        make_spec: Callable[..., JobSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    """``PressroomReason``: the engine's code for a blocked job, ``<activity>:<ErrorType>``
    for one that needs an operator, and cleared ("" → ``None``) once it is resolved."""
    stuck = make_spec(review=_OPS_REVIEW)
    blocked = make_spec(review=_OPS_REVIEW, topics=TOPICS)
    async with running_worker(client, runtime, task_queue):
        monkeypatch.setenv(FAIL_ENV, "write_plan:ScopeDenied")  # only until it has parked
        stuck_handle = await start_job(client, stuck, task_queue)
        await wait_parked(stuck_handle, "write_plan", more_than=0, status="needs_operator")
        monkeypatch.delenv(FAIL_ENV)
        blocked_handle = await start_job(client, blocked, task_queue)
        st = await wait_status(blocked_handle, {"blocked"})
        assert st.blocked_reason == "required_evidence_missing (no verified note for: quotas)"

        await _reason_listed(client, stuck.job_id, "needs_operator", "write_plan:ScopeDenied")
        await _reason_listed(client, blocked.job_id, "blocked", "required_evidence_missing")
        attrs = (await blocked_handle.describe()).typed_search_attributes
        assert attrs.get(PRESSROOM_REASON) == "required_evidence_missing"  # the code, not text

        await resolve(client, stuck.job_id, RETRY, signer="ops")
        await resolve(client, blocked.job_id, ResolveInput(
            action="add_source", source={"kind": "document", "name": "quotas",
                                         "path": str(_quota_docs(tmp_path))}))
        for handle in (stuck_handle, blocked_handle):
            await wait_status(handle, {"awaiting_review"})
        await _reason_listed(client, stuck.job_id, "awaiting_review", None)
        await _reason_listed(client, blocked.job_id, "awaiting_review", None)
        assert (await stuck_handle.describe()).typed_search_attributes.get(
            PRESSROOM_REASON) == ""
        for spec, handle in ((stuck, stuck_handle), (blocked, blocked_handle)):
            await review(client, spec.job_id, "reject", reviewer="alice")
            await handle.result()


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_job_started_without_the_reason_attribute_never_upserts_it(
        client: Client, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    """A run started with the first seven attributes only (``start_job`` on a namespace set
    up before ``PressroomReason`` existed) keeps the others up to date through a block and
    never upserts the eighth, so no workflow task fails on a namespace lacking it."""
    spec = make_spec(topics=TOPICS)
    seven = TypedSearchAttributes([
        pair for pair in job_search_attributes(spec, JobState()).search_attributes
        if pair.key != PRESSROOM_REASON])
    async with running_worker(client, runtime, task_queue):
        handle = await client.start_workflow(ResearchJobWorkflow.run,
                                             ResearchJobInput(spec=spec), id=spec.job_id,
                                             task_queue=task_queue, search_attributes=seven)
        await wait_status(handle, {"blocked"})

        async def described() -> Any:
            attrs = (await handle.describe()).typed_search_attributes
            return attrs if attrs.get(PRESSROOM_STATUS) == "blocked" else None

        attrs = await wait_for(described, 30, "the status upserted as blocked")
        assert attrs.get(PRESSROOM_REASON) is None
        history = await handle.fetch_history()
        upserted = {name for e in history.events
                    if e.HasField("upsert_workflow_search_attributes_event_attributes")
                    for name in e.upsert_workflow_search_attributes_event_attributes
                    .search_attributes.indexed_fields}
        assert "PressroomStatus" in upserted and "PressroomReason" not in upserted
        await _reason_listed(client, spec.job_id, "blocked", None)
        await handle.terminate("test over")


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_namespace_without_the_reason_attribute_refuses_start_naming_it(
        temporal_env: Any, make_spec: Callable[..., JobSpec]) -> None:
    """A namespace registered with the first seven attributes (before ``PressroomReason``):
    ``start_job`` refuses naming the missing one; ``ensure`` adds only it."""
    base: Client = temporal_env.client
    namespace = _uniq("pressroom-seven")
    await base.workflow_service.register_namespace(RegisterNamespaceRequest(
        namespace=namespace, workflow_execution_retention_period=_duration(1)))
    seven = await Client.connect(base.service_client.config.target_host, namespace=namespace,
                                 data_converter=DATA_CONVERTER)
    await wait_for(lambda: _answers(seven), 30, "the new namespace answering")
    await seven.operator_service.add_search_attributes(AddSearchAttributesRequest(
        namespace=namespace, search_attributes={
            name: kind for name, kind in SEARCH_ATTRIBUTE_TYPES.items()
            if name != "PressroomReason"}))
    assert await missing_search_attributes(seven) == ["PressroomReason"]
    spec = make_spec()

    async def refused_naming_reason() -> str | None:
        try:
            handle = await jobs.start_job(seven, spec, task_queue="nobody-polls")
        except SearchAttributesMissing as exc:
            message = str(exc)
            return message if "PressroomReason" in message else None
        await handle.terminate("test over")
        raise AssertionError("the job started on a namespace without PressroomReason")

    message = await wait_for(refused_naming_reason, 60, "a start refused naming the reason")
    assert "temporal operator search-attribute create" in message
    assert await ensure_search_attributes(seven) == ["PressroomReason"]
    handle = await wait_for(lambda: _try_start(seven, spec), 60, "start once registered")
    await handle.terminate("test over")


# ------------------------------------------------------------------------------ unit tests
def test_jobs_query_filters_and_normalizes() -> None:
    latest = f"WorkflowType = '{WORKFLOW_TYPE}' AND ExecutionStatus != 'ContinuedAsNew'"
    assert jobs_query(reviewer=None) == latest
    query = jobs_query(reviewer=" \uff21lice ", status="awaiting_review", tenant="acme")
    assert query == (f"{latest} AND PressroomReviewers = 'alice' "
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


def test_reason_code_is_a_known_code_or_other() -> None:
    assert BLOCKED_REASON_CODES >= {r.value for r in BlockedReason}  # the engine's, all
    assert reason_code("blocked", "required_evidence_missing (no verified note for: q)") == \
        "required_evidence_missing"
    assert reason_code("blocked", "budget_exhausted (9 of 5 tokens used)") == "budget_exhausted"
    assert reason_code("blocked", "model_call_failed (boom)") == "model_call_failed"
    assert reason_code("blocked", "minimums_exceed_budget") == "minimums_exceed_budget"
    for text in ("blocked", "made_up_code (x)", "budget_exhaustedX", "<script>", "", None,
                 "required_evidence_missing\u200b (x)"):
        assert reason_code("blocked", text) == "other", text
    assert reason_code("needs_operator", "needs_operator: publish failed (a permanent "
                       "error): ScopeDenied: not visible") == "publish:ScopeDenied"
    assert reason_code("needs_operator", "needs_operator: decide failed (gave up after 3 "
                       "attempts): ProviderOverloaded: 503") == "decide:ProviderOverloaded"
    for text in ("needs_operator: publish failed (failed): Activity task failed",
                 "needs_operator: publish failed (failed): bad.Type: x",
                 "needs_operator: Publish failed (failed): ScopeDenied: x",
                 "needs_operator: publish' failed (failed): ScopeDenied: x", "", None):
        assert reason_code("needs_operator", text) == "other", text
    for status in ("running", "awaiting_review", "published", "failed", "rejected"):
        assert reason_code(status, "budget_exhausted (x)") == ""


def test_reason_is_upserted_only_when_the_run_started_with_it(
        make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec()
    start = job_search_attributes(spec, JobState())
    assert start.get(PRESSROOM_REASON) == ""
    blocked = JobState(status="blocked", blocked_reason="budget_exhausted (9 of 5)")
    updates = search_attribute_updates(spec, blocked, start)
    assert {u.key.name: u.value for u in updates} == {"PressroomStatus": "blocked",
                                                     "PressroomReason": "budget_exhausted"}
    seven = TypedSearchAttributes([p for p in start.search_attributes
                                   if p.key != PRESSROOM_REASON])
    assert [u.key.name for u in search_attribute_updates(spec, blocked, seven)] == [
        "PressroomStatus"]


def test_dev_server_registers_every_attribute(tmp_path: Any) -> None:
    cmd = DevServer(tmp_path / "t.db").command()
    pairs = {cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--search-attribute"}
    assert pairs == {"PressroomStage=Keyword", "PressroomStatus=Keyword",
                     "PressroomTenant=Keyword", "PressroomProject=Keyword",
                     "PressroomReviewers=KeywordList", "PressroomTurn=Int",
                     "PressroomTokens=Int", "PressroomReason=Keyword"}
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


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_a_job_that_continued_as_new_is_listed_once_with_its_current_status(
        client: Client, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    """Every ``turns_per_run`` turns the job continues as new, and each closed run keeps
    the attributes it had (``PressroomStatus = running``): the list shows only each job's
    latest run, so the job is one row, in its current status, and a published job is not
    listed under ``running`` (Pressroom's status, not its old runs')."""
    tenant = _uniq("cont")
    spec = make_spec(research={"turns_per_run": 2, "max_calls_per_turn": 1},
                     scope={"tenant": tenant, "project": "docs", "task": "t1"})
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        status = await wait_status(handle, {"awaiting_review"})
        assert status.research is not None and status.research.turn >= 4
        runs = [w async for w in client.list_workflows(f"WorkflowId = '{spec.job_id}'")]
        assert len(runs) >= 3  # the job really continued as new, more than once

        async def listed_once(**filters: Any) -> list[jobs.VisibleJob] | None:
            found = [j for j in await jobs.list_visible_jobs(client, reviewer=None,
                                                             tenant=tenant, **filters)]
            return found if len(found) == 1 else None

        [row] = await wait_for(lambda: listed_once(), 30, "the job listed once")
        assert (row.status, row.execution) == ("awaiting_review", "RUNNING")
        assert row.turn == status.research.turn
        assert await _ids(client, reviewer=None, tenant=tenant, status="running") == set()

        await review(client, spec.job_id, "approve", reviewer="alice")
        assert (await handle.result()).status == "published"
        [row] = await wait_for(lambda: listed_once(status="published"), 30,
                               "the job listed once, published")
        assert row.execution == "COMPLETED"
        assert await _ids(client, reviewer=None, tenant=tenant, status="running") == set()
        assert [j.job_id for j in await jobs.list_visible_jobs(
            client, reviewer="alice", tenant=tenant)] == [spec.job_id]
