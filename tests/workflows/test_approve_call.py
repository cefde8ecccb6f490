"""``pressroom approve-call``: a listed reviewer approves a waiting write call from the CLI.

A job on the session's dev server is granted ``mcp-server-git``'s ``git_commit``, which the
operator marks ``effect: write``; the model (a replayed OpenAI endpoint) asks for one
commit. The research loop waits for a signed approval of exactly that call. ``pressroom
status`` shows the call and the command to run; ``approve-call`` with a call id that is not
waiting refuses in one line and signs nothing; ``approve-call`` with the waiting call shows
its tool and arguments, signs with the reviewer's key file and sends the Update — and the
call runs once (one new commit in the repository). The same command again refuses: that
call no longer waits. Each command is its own ``pressroom`` process; the worker and the MCP
server are real.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from activities.runtime import ActivityRuntime
from contracts.job_spec import JobSpec
from tests.mcp.servers import fixture_repo, servers
from tests.workflows.conftest import LOCAL
from tests.workflows.jobkit import (
    loop_tool_history,
    roots_for,
    running_worker,
    start_job,
    wait_status,
    write_registry,
)
from tests.workflows.test_cli import _one_line_error, pressroom
from tests.workflows.test_mcp_job import _pending

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


def _commits(repo: Path) -> int:
    out = subprocess.run(["git", "-C", str(repo), "rev-list", "--count", "HEAD"],
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip())


async def test_approve_call_signs_the_waiting_call_which_then_runs_once(
        temporal_env: Any, store_url: str, tmp_path: Path, task_queue: str,
        make_spec: Callable[..., JobSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.workflows.replay_api import Turn, replayed_openai

    client = temporal_env.client
    address = client.service_client.config.target_host
    home = tmp_path / "home"
    write_registry(home, "alice", "mallory")
    repo = fixture_repo(tmp_path / "repo")
    (repo / "change.txt").write_text("a change to commit\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(repo), "add", "change.txt"], check=True)
    arguments = {"repo_path": str(repo), "message": "approved from the CLI"}
    runtime = ActivityRuntime(store_url, locations=LOCAL, roots=roots_for(tmp_path),
                              mcp_servers=servers(tmp_path, repo), mcp_environ={})
    spec = make_spec(model={"provider": "openai", "name": "replayed-model"},
                     tools=[{"server": "git", "tools": ["git_commit"]}])
    script: list[Turn] = [[("mcp__git__git_commit", arguments)],
              [("finish", {"summary": "done", "open_items": []})]]
    job = spec.job_id
    with replayed_openai(monkeypatch, script):
        async with running_worker(client, runtime, task_queue):
            handle = await start_job(client, spec, task_queue)
            pending = (await _pending(handle)).pending_tool_approvals[0]
            call = pending.call_id
            rc, out, err = await pressroom(home, address, "status", job)
            assert f"approve it: pressroom approve-call {job} {call}" in out, (out, err)
            # a call id that is not waiting: one line, nothing signed or sent
            rc, out, err = await pressroom(home, address, "approve-call", job, "t0099-1",
                                           "--as", "alice", "--yes")
            _one_line_error(rc, err, f"call 't0099-1' of job '{job}' is not waiting for "
                                     "approval")
            assert f"calls waiting: {call} (mcp__git__git_commit)" in err
            # a signer the job does not list is refused before anything is shown
            rc, out, err = await pressroom(home, address, "approve-call", job, call,
                                           "--as", "mallory", "--yes")
            _one_line_error(rc, err, "approval refused: reviewer 'mallory' is not allowed")
            assert "git_commit" not in out
            assert _commits(repo) == 1
            # the waiting call: shown (tool, arguments, sha256), signed, sent
            rc, out, err = await pressroom(home, address, "approve-call", job, call,
                                           "--as", "alice", "--yes")
            assert rc == 0, err
            assert "mcp__git__git_commit" in out and "approved from the CLI" in out
            assert pending.arguments_sha256 in out
            assert f"approved call {call} (mcp__git__git_commit) as alice" in out
            status = await wait_status(handle, {"blocked", "awaiting_review", "failed"})
            assert not status.pending_tool_approvals
            # approved once: the same command again finds nothing waiting
            rc, out, err = await pressroom(home, address, "approve-call", job, call,
                                           "--as", "alice", "--yes")
            _one_line_error(rc, err, f"call '{call}' of job '{job}' is not waiting for "
                                     "approval")
            tools = await loop_tool_history(runtime, spec)
            await handle.terminate("test over")
    results = [r for r in tools["results"] if r["tool_name"] == "mcp__git__git_commit"]
    assert len(results) == 1 and results[0]["status"] == "success", results
    assert "approval" not in json.loads(results[0]["content"]).get("error", "")
    assert _commits(repo) == 2  # run once


async def test_approve_call_reject_refuses_the_waiting_call_at_once(
        temporal_env: Any, store_url: str, tmp_path: Path, task_queue: str,
        make_spec: Callable[..., JobSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    """``--reject`` signs a refusal bound like an approval: the loop stops waiting at once
    (long before the 10-minute review timeout), the call is refused with the reviewer's
    name and reason and never runs, and an approval sent after it is refused. The
    workflow's history replays."""
    from temporalio.worker import Replayer

    from tests.workflows.replay_api import Turn, replayed_openai
    from workflows.research_job import ResearchJobWorkflow
    from workflows.temporal_config import (
        DATA_CONVERTER,
        WORKFLOW_FAILURE_EXCEPTION_TYPES,
        WORKFLOW_RUNNER,
    )

    client = temporal_env.client
    address = client.service_client.config.target_host
    home = tmp_path / "home"
    write_registry(home, "bob")
    repo = fixture_repo(tmp_path / "repo")
    (repo / "change.txt").write_text("a change to commit\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(repo), "add", "change.txt"], check=True)
    arguments = {"repo_path": str(repo), "message": "never approved"}
    runtime = ActivityRuntime(store_url, locations=LOCAL, roots=roots_for(tmp_path),
                              mcp_servers=servers(tmp_path, repo), mcp_environ={})
    spec = make_spec(model={"provider": "openai", "name": "replayed-model"},
                     tools=[{"server": "git", "tools": ["git_commit"]}])
    script: list[Turn] = [[("mcp__git__git_commit", arguments)],
              [("finish", {"summary": "done", "open_items": []})]]
    job = spec.job_id
    with replayed_openai(monkeypatch, script):
        async with running_worker(client, runtime, task_queue):
            handle = await start_job(client, spec, task_queue)
            call = (await _pending(handle)).pending_tool_approvals[0].call_id
            rc, out, err = await pressroom(home, address, "approve-call", job, call, "--as",
                                           "bob", "--reason", "why", "--yes")
            assert rc == 2 and "--reason goes with --reject" in err  # a usage error
            rc, out, err = await pressroom(home, address, "approve-call", job, call, "--as",
                                           "bob", "--reject", "--reason",
                                           "not in this repository", "--yes")
            assert rc == 0, err
            assert f"rejected call {call} (mcp__git__git_commit) as bob" in out
            status = await wait_status(handle, {"blocked", "awaiting_review", "failed"},
                                       timeout=120)
            assert not status.pending_tool_approvals
            rc, out, err = await pressroom(home, address, "approve-call", job, call,
                                           "--as", "bob", "--yes")
            _one_line_error(rc, err, "is not waiting for approval")
            tools = await loop_tool_history(runtime, spec)
            history = await handle.fetch_history()
            await handle.terminate("test over")
    [result] = [r for r in tools["results"] if r["tool_name"] == "mcp__git__git_commit"]
    content = json.loads(result["content"])
    assert content["error"] == "approval_refused", content
    assert "reviewer 'bob' rejected (not in this repository)" in content["detail"]
    assert _commits(repo) == 1  # never run
    replayed = await Replayer(
        workflows=[ResearchJobWorkflow], data_converter=DATA_CONVERTER,
        workflow_runner=WORKFLOW_RUNNER,
        workflow_failure_exception_types=list(WORKFLOW_FAILURE_EXCEPTION_TYPES),
    ).replay_workflow(history)
    assert replayed.replay_failure is None
