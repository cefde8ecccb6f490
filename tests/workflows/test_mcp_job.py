"""A research job that uses MCP tools, end to end on the Temporal dev server.

The worker holds the operator's servers (``mcp-server-git`` over a fixture repository and
``mcp-server-time``, real subprocesses); the job is granted some of their tools. The
offline agent sees them in the sealed request's tool definitions, calls each granted read
tool whose required arguments the question fills, notes the git log's line on the retry
backoff citing the call, and the job publishes. A worker SIGKILLed between an MCP call and
its record leaves one call and one record.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.client import WorkflowUpdateFailedError
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from activities.runtime import ActivityRuntime, principal_of
from client.jobs import check_paths_on_worker, has_pollers
from contracts.job_spec import JobSpec
from contracts.mcp_servers import arguments_sha256
from contracts.signing import sign
from contracts.workflow_messages import ToolApprovalInput
from tests.mcp.servers import fixture_repo, server_table, servers
from tests.waiting import wait_for
from tests.workflows.conftest import LOCAL
from tests.workflows.jobkit import (
    loop_notes,
    loop_tool_history,
    published_files,
    review,
    reviewer_key,
    roots_for,
    running_worker,
    start_job,
    start_worker_process,
    wait_status,
)
from workflows.research_job import ResearchJobWorkflow
from workflows.temporal_config import (
    DATA_CONVERTER,
    WORKFLOW_FAILURE_EXCEPTION_TYPES,
    WORKFLOW_RUNNER,
)

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


def _spec(make_spec: Callable[..., JobSpec], repo: Path, **extra: Any) -> JobSpec:
    return make_spec(
        question=f"How does the client handle retries and resume? (repo_path={repo} "
                 "timezone=Europe/Paris)",
        tools=[{"server": "git", "tools": ["git_log", "git_commit"]},
               {"server": "time", "tools": ["get_current_time"]}], **extra)


async def test_a_job_calls_mcp_tools_cites_a_result_and_publishes(
        client: Any, store_url: str, tmp_path: Path,
        task_queue: str, make_spec: Callable[..., JobSpec]) -> None:
    repo = fixture_repo(tmp_path / "repo")
    runtime = ActivityRuntime(store_url, locations=LOCAL, roots=roots_for(tmp_path),
                              mcp_servers=servers(tmp_path, repo), mcp_environ={})
    spec = _spec(make_spec, repo)
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        status = await wait_status(handle, {"awaiting_review", "blocked", "failed"})
        assert status.status == "awaiting_review", status
        await review(client, spec.job_id, "approve", reviewer="alice")
        result = await asyncio.wait_for(handle.result(), 120)
        assert result.status == "published"
        tools = await loop_tool_history(runtime, spec)
        notes = [n for n in await loop_notes(runtime, spec) if n["tool_name"] == "note"]
        history = await handle.fetch_history()
    mcp_calls = [c for c in tools["calls"] if c["tool_name"].startswith("mcp__")]
    # each granted read tool whose arguments the question fills, once; the write tool never
    assert sorted(c["tool_name"] for c in mcp_calls) == ["mcp__git__git_log",
                                                         "mcp__time__get_current_time"]
    assert mcp_calls[0]["arguments"] in ({"repo_path": str(repo)},
                                         {"timezone": "Europe/Paris"})
    by_call = {r["call_id"]: r for r in tools["results"]}
    assert all(by_call[c["call_id"]]["status"] == "success" for c in mcp_calls)
    cited = [n for n in notes if n["source_name"] == "mcp__git__git_log"]
    assert cited, notes
    assert "exponential backoff" in cited[0]["content"]
    assert cited[0]["trust"] == "untrusted_external_data"
    log_call = next(c for c in mcp_calls if c["tool_name"] == "mcp__git__git_log")
    assert cited[0]["cited_call_id"] == log_call["call_id"]
    article = published_files(spec)[0].read_text(encoding="utf-8")
    assert "mcp__git__git_log:result#L" in article, article
    # history holds references: no MCP result in it (a note's claim, the model's own
    # argument, quotes the line it cites; the rest of the result never travels)
    raw = json.dumps([str(e) for e in history.events])
    assert "Commit history:" not in raw and "day_of_week" not in raw
    replayed = await Replayer(
        workflows=[ResearchJobWorkflow], data_converter=DATA_CONVERTER,
        workflow_runner=WORKFLOW_RUNNER,
        workflow_failure_exception_types=list(WORKFLOW_FAILURE_EXCEPTION_TYPES),
    ).replay_workflow(history)
    assert replayed.replay_failure is None


async def _wait_for(path: Path, timeout: float = 90.0) -> None:
    for _ in range(int(timeout / 0.1)):
        if path.exists():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{path} never appeared")


@pytest.mark.slow
async def test_a_worker_killed_between_an_mcp_call_and_its_record_leaves_one_of_each(
        temporal_env: WorkflowEnvironment, runtime: ActivityRuntime, store_url: str,
        task_queue: str, tmp_path: Path, make_spec: Callable[..., JobSpec]) -> None:
    client = temporal_env.client
    address = client.service_client.config.target_host
    repo = fixture_repo(tmp_path / "repo")
    table = tmp_path / "mcp.yaml"
    table.write_text(yaml.safe_dump(server_table(tmp_path, repo)), encoding="utf-8")
    spec = make_spec(question="How does the client handle retries and resume?",
                     tools=[{"server": "hostile", "tools": ["count"]}])
    markers, log = tmp_path / "markers", tmp_path / "worker.log"
    env = {"PRESSROOM_MCP_SERVERS": str(table)}
    first = start_worker_process({**env, "PRESSROOM_TEST_PAUSE_AT": "mcp_call_after",
                                  "PRESSROOM_TEST_PAUSE_DIR": str(markers)},
                                 address, task_queue, store_url, log)
    second = None
    try:
        handle = await start_job(client, spec, task_queue)
        await _wait_for(markers / "mcp_call_after.reached")
        count = tmp_path / "count.txt"
        assert count.read_text(encoding="utf-8").count("\n") == 1  # the server ran it
        first.send_signal(signal.SIGKILL)
        assert first.wait(10) == -signal.SIGKILL
        second = start_worker_process(env, address, task_queue, store_url, log)
        status = await wait_status(handle, {"awaiting_review", "blocked"}, timeout=180)
        assert status.status == "awaiting_review", status
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(10)
        print(log.read_text(encoding="utf-8", errors="replace")[-4000:] if log.exists() else "")
    assert count.read_text(encoding="utf-8").count("\n") == 1  # one call
    tools = await loop_tool_history(runtime, spec)
    calls = [c for c in tools["calls"] if c["tool_name"] == "mcp__hostile__count"]
    assert len(calls) == 1  # the agent called it once, and it was recorded once
    store = await runtime.store()
    exchange = f"{spec.job_id}:tool:{calls[0]['call_id']}"
    assert len(await store.history("tool_record", exchange,
                                   principal=principal_of(spec))) == 1  # one record
    result = next(r for r in tools["results"] if r["call_id"] == calls[0]["call_id"])
    assert json.loads(result["content"])["error"] == "tool_interrupted"


async def test_pressroom_run_refuses_an_undefined_server_at_submit(
        client: Any, store_url: str, tmp_path: Path,
        task_queue: str, make_spec: Callable[..., JobSpec]) -> None:
    """The worker answers ``pressroom run``'s check (``workflows.path_check``) for the
    grants too: one line naming the server, before any job starts."""
    repo = fixture_repo(tmp_path / "repo")
    runtime = ActivityRuntime(store_url, locations=LOCAL, roots=roots_for(tmp_path),
                              mcp_servers=servers(tmp_path, repo), mcp_environ={})
    bad = make_spec(tools=[{"server": "shell", "tools": ["run"]}])
    good = make_spec(tools=[{"server": "git", "tools": ["git_log"]}])
    async with running_worker(client, runtime, task_queue):
        await wait_for(lambda: has_pollers(client, task_queue), 60, "the worker polling")
        refused = await check_paths_on_worker(client, bad, task_queue=task_queue)
        allowed = await check_paths_on_worker(client, good, task_queue=task_queue)
    assert refused is not None and refused.refusal is not None
    assert "server 'shell' is not defined" in refused.refusal
    assert "McpGrantRefused" in refused.refusal and "\n" not in refused.refusal
    assert allowed is not None and allowed.refusal is None


def _commits(repo: Path) -> int:
    out = subprocess.run(["git", "-C", str(repo), "rev-list", "--count", "HEAD"],
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip())


async def _pending(handle: Any, timeout: float = 90.0) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        try:  # a query no worker answers yet (one still starting) times out: ask again
            status = await handle.query(ResearchJobWorkflow.status)
        except RPCError:
            await asyncio.sleep(0.2)
            continue
        if status.pending_tool_approvals:
            return status
        assert status.status not in ("blocked", "failed"), status
        await asyncio.sleep(0.2)
    raise AssertionError("no call ever waited for approval")


@pytest.mark.parametrize("approve", [True, False])
async def test_a_write_call_waits_for_its_signed_approval_as_a_durable_update(
        client: Any, store_url: str, tmp_path: Path, task_queue: str,
        make_spec: Callable[..., JobSpec], monkeypatch: pytest.MonkeyPatch,
        approve: bool) -> None:
    """The model asks for ``git_commit`` (``effect: write``); the loop waits for a
    reviewer's approval of exactly that call, shown in ``status`` with its arguments. An
    approval of other arguments, of another call, or unsigned by a listed reviewer is
    refused by the Update; the signed one lets the call run once, and the same approval
    again is refused. Without an approval within the review timeout the call never runs."""
    from tests.workflows.replay_api import Turn, replayed_openai

    repo = fixture_repo(tmp_path / "repo")
    (repo / "change.txt").write_text("a change to commit\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(repo), "add", "change.txt"], check=True)
    arguments = {"repo_path": str(repo), "message": "approved commit"}
    runtime = ActivityRuntime(store_url, locations=LOCAL, roots=roots_for(tmp_path),
                              mcp_servers=servers(tmp_path, repo), mcp_environ={})
    review_spec = {"reviewers": ["alice", "bob"], "timeout": "10m" if approve else "4s",
                   "max_revisions": 2}
    spec = make_spec(model={"provider": "openai", "name": "replayed-model"},
                     tools=[{"server": "git", "tools": ["git_commit"]}], review=review_spec)
    script: list[Turn] = [[("mcp__git__git_commit", arguments)],
              [("finish", {"summary": "done", "open_items": []})]]
    with replayed_openai(monkeypatch, script):
        async with running_worker(client, runtime, task_queue):
            handle = await start_job(client, spec, task_queue)
            first_run = (await handle.describe()).run_id
            status = await _pending(handle)
            pending = status.pending_tool_approvals[0]
            assert (pending.tool_name, pending.arguments) == ("mcp__git__git_commit",
                                                              arguments)
            assert pending.arguments_sha256 == arguments_sha256(arguments)

            def approval(signer: str = "alice", **other: Any) -> ToolApprovalInput:
                fields = {"call_id": pending.call_id, "server": "git", "tool": "git_commit",
                          "arguments_sha256": pending.arguments_sha256,
                          "first_run_id": first_run, **other}
                unsigned = ToolApprovalInput(**fields)
                return unsigned.model_copy(update={"signature": sign(
                    reviewer_key(signer), "tool_approval", spec.job_id,
                    unsigned.signed_body(), signer=signer)})

            if approve:
                for bad in (approval(arguments_sha256=arguments_sha256({"x": 1})),
                            approval(call_id="t0001-9"), approval(signer="mallory"),
                            approval(first_run_id="another-run")):
                    with pytest.raises(WorkflowUpdateFailedError):
                        await handle.execute_update(ResearchJobWorkflow.approve_tool_call, bad)
                assert _commits(repo) == 1
                good = approval()
                await handle.execute_update(ResearchJobWorkflow.approve_tool_call, good)
                with pytest.raises(WorkflowUpdateFailedError):  # the same approval again
                    await handle.execute_update(ResearchJobWorkflow.approve_tool_call, good)
            status = await wait_status(handle, {"blocked", "awaiting_review", "failed"})
            assert not status.pending_tool_approvals
            tools = await loop_tool_history(runtime, spec)
            history = await handle.fetch_history()
            await handle.terminate("test over")
    result = next(r for r in tools["results"] if r["tool_name"] == "mcp__git__git_commit")
    if approve:
        assert result["status"] == "success", result
        assert _commits(repo) == 2  # run once
    else:
        assert json.loads(result["content"])["error"] == "approval_required", result
        assert _commits(repo) == 1  # never run
    replayed = await Replayer(
        workflows=[ResearchJobWorkflow], data_converter=DATA_CONVERTER,
        workflow_runner=WORKFLOW_RUNNER,
        workflow_failure_exception_types=list(WORKFLOW_FAILURE_EXCEPTION_TYPES),
    ).replay_workflow(history)
    assert replayed.replay_failure is None


@pytest.mark.slow
async def test_an_approved_write_call_runs_once_when_its_worker_dies_mid_call(
        temporal_env: WorkflowEnvironment, runtime: ActivityRuntime, store_url: str,
        task_queue: str, tmp_path: Path, make_spec: Callable[..., JobSpec],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The server ran the approved commit, then the worker was SIGKILLed before the call's
    exchange was stored: the retry on a fresh worker finds the call reserved and runs
    nothing (``tool_interrupted``) — one commit, one record."""
    from tests.workflows.replay_api import Turn, replayed_openai

    client = temporal_env.client
    address = client.service_client.config.target_host
    repo = fixture_repo(tmp_path / "repo")
    (repo / "change.txt").write_text("a change to commit\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(repo), "add", "change.txt"], check=True)
    table = tmp_path / "mcp.yaml"
    table.write_text(yaml.safe_dump(server_table(tmp_path, repo)), encoding="utf-8")
    arguments = {"repo_path": str(repo), "message": "approved commit"}
    spec = make_spec(model={"provider": "openai", "name": "replayed-model"},
                     tools=[{"server": "git", "tools": ["git_commit"]}])
    markers, log = tmp_path / "markers", tmp_path / "worker.log"
    env = {"PRESSROOM_MCP_SERVERS": str(table)}
    script: list[Turn] = [[("mcp__git__git_commit", arguments)],
              [("finish", {"summary": "done", "open_items": []})]]
    first = second = None
    with replayed_openai(monkeypatch, script):
        try:
            first = start_worker_process({**env, "PRESSROOM_TEST_PAUSE_AT": "mcp_call_after",
                                          "PRESSROOM_TEST_PAUSE_DIR": str(markers)},
                                         address, task_queue, store_url, log)
            handle = await start_job(client, spec, task_queue)
            first_run = (await handle.describe()).run_id
            pending = (await _pending(handle)).pending_tool_approvals[0]
            unsigned = ToolApprovalInput(call_id=pending.call_id, server="git",
                                         tool="git_commit",
                                         arguments_sha256=pending.arguments_sha256,
                                         first_run_id=first_run)
            await handle.execute_update(ResearchJobWorkflow.approve_tool_call,
                                        unsigned.model_copy(update={"signature": sign(
                                            reviewer_key("alice"), "tool_approval",
                                            spec.job_id, unsigned.signed_body(),
                                            signer="alice")}))
            await _wait_for(markers / "mcp_call_after.reached")
            assert _commits(repo) == 2  # the server committed
            first.send_signal(signal.SIGKILL)
            assert first.wait(10) == -signal.SIGKILL
            second = start_worker_process(env, address, task_queue, store_url, log)
            await wait_status(handle, {"blocked", "awaiting_review"}, timeout=180)
            await handle.terminate("test over")
        finally:
            for proc in (first, second):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait(10)
            print(log.read_text(encoding="utf-8", errors="replace")[-4000:]
                  if log.exists() else "")
    assert _commits(repo) == 2  # run once
    tools = await loop_tool_history(runtime, spec)
    calls = [c for c in tools["calls"] if c["tool_name"] == "mcp__git__git_commit"]
    assert len(calls) == 1
    store = await runtime.store()
    assert len(await store.history("tool_record", f"{spec.job_id}:tool:{calls[0]['call_id']}",
                                   principal=principal_of(spec))) == 1
    result = next(r for r in tools["results"] if r["call_id"] == calls[0]["call_id"])
    assert json.loads(result["content"])["error"] == "tool_interrupted"
