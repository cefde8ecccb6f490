"""MCP tools through ``run_tool``, called directly: real SQLite store, real MCP servers.

The servers are real subprocesses: ``mcp-server-time`` and ``mcp-server-git`` (over a
fixture repository) from PyPI, and the hostile server written for these tests
(``tests/mcp/hostile_server.py``). A job names only operator-defined servers; the tool list
is stored once and re-read from the store; every call is one stored exchange, its result
gated as untrusted data and citable by a note; every way a server misbehaves is a typed
error result, never a failed activity.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from activities import store_activities
from activities.mcp.calls import reservation_id
from activities.mcp.grants import grants_refusal
from activities.mcp.listing import ensure_tool_list, listing_id, tool_definitions
from activities.runtime import ActivityRuntime, principal_of, scope_of
from activities.tool_call import exchange_id, run_tool_call
from contracts.activity_messages import JobRef, StoreJobSpecInput, ToolApproval, ToolCallInput
from contracts.errors import JobSpecError
from contracts.job_spec import JobSpec
from contracts.mcp_servers import McpGrantRefused, arguments_sha256, parse_mcp_servers
from contracts.signing import sign
from tests.mcp.servers import fixture_repo, server_table, servers
from tests.workflows.conftest import LOCAL
from tests.workflows.jobkit import reviewer_key, roots_for

ASYNC = pytest.mark.asyncio(loop_scope="session")
HTTP_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "http_server.py"

GRANTS = [{"server": "time", "tools": ["get_current_time"]},
          {"server": "git", "tools": ["git_log", "git_commit"]},
          {"server": "hostile", "tools": ["facts", "huge", "inject", "leak", "hang", "crash",
                                          "garbage", "badjson", "count"]}]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return fixture_repo(tmp_path / "repo")


@pytest.fixture
async def mcp_runtime(store_url: str, tmp_path: Path, repo: Path) -> Any:
    rt = ActivityRuntime(store_url, locations=LOCAL, roots=roots_for(tmp_path),
                         mcp_servers=servers(tmp_path, repo), mcp_environ={})
    try:
        yield rt
    finally:
        await rt.close()


async def _job(runtime: ActivityRuntime, spec: JobSpec) -> JobRef:
    ref = await store_activities.store_job_spec(
        runtime, StoreJobSpecInput(spec=spec))
    return JobRef(job_id=spec.job_id, principal_id=spec.principal.principal_id,
                  tenant=spec.scope.tenant, project=spec.scope.project, spec=ref)


async def _call(runtime: ActivityRuntime, job: JobRef, call_id: str, name: str,
                arguments: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    result = await run_tool_call(runtime, ToolCallInput(job=job, call_id=call_id,
                                                        tool_name=name, turn=1,
                                                        arguments=arguments))
    store = await runtime.store()
    spec = await runtime.spec_of(job)
    _, raw = await store.get("tool_record", exchange_id(spec.job_id, call_id),
                             principal=principal_of(spec))
    return result, json.loads(raw)


def test_a_spec_cannot_define_a_server(make_spec: Callable[..., JobSpec]) -> None:
    for bad in ({"server": "time", "tools": ["x"], "command": "/bin/sh"},
                {"server": "time", "tools": ["x"], "url": "http://169.254.169.254/"}):
        with pytest.raises(JobSpecError, match=r"cannot give (command|url)"):
            make_spec(tools=[bad])


@ASYNC
async def test_an_undefined_server_or_tool_is_refused_at_submit(
        mcp_runtime: ActivityRuntime, make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec(tools=[{"server": "nope", "tools": ["x"]}])
    refusal = grants_refusal(spec, mcp_runtime.mcp_servers)
    assert refusal is not None and refusal.refusal is not None
    assert "'nope' is not defined" in refusal.refusal and "\n" not in refusal.refusal
    with pytest.raises(McpGrantRefused, match="not defined"):
        await _job(mcp_runtime, spec)
    # the operator lists git's tools: one not listed is refused too
    spec = make_spec(tools=[{"server": "git", "tools": ["git_push"]}])
    with pytest.raises(McpGrantRefused, match="offers no tool 'git_push'"):
        await _job(mcp_runtime, spec)
    assert grants_refusal(make_spec(tools=GRANTS), mcp_runtime.mcp_servers) is None
    # a worker whose operator defined no server refuses every grant
    assert grants_refusal(make_spec(tools=GRANTS[:1]), None) is not None


@ASYNC
async def test_the_tool_list_is_stored_once_and_offered_from_the_store(
        mcp_runtime: ActivityRuntime, make_spec: Callable[..., JobSpec],
        tmp_path: Path, repo: Path) -> None:
    spec = make_spec(tools=GRANTS)
    await _job(mcp_runtime, spec)
    store = await mcp_runtime.store()
    assert await tool_definitions(store, spec) == ()  # nothing listed yet
    listing = await ensure_tool_list(mcp_runtime, spec)
    assert listing is not None and listing["servers"]["time"]["tools"][0]["name"] == \
        "get_current_time"
    offered = await tool_definitions(store, spec)
    names = [d.name for d in offered]
    assert sorted(names) == ["mcp__git__git_commit", "mcp__git__git_log",
                     *sorted(f"mcp__hostile__{t}" for t in GRANTS[2]["tools"]),
                     "mcp__time__get_current_time"]
    git_log = next(d for d in offered if d.name == "mcp__git__git_log")
    assert git_log.parameters["required"] == ["repo_path"]
    assert "effect: read;" in git_log.description
    assert "effect: write;" in next(d for d in offered
                                    if d.name == "mcp__git__git_commit").description
    # the servers go away: re-assembly still offers the very same tools, from the store
    mcp_runtime.mcp_servers = parse_mcp_servers({"servers": {}})
    assert await tool_definitions(store, spec) == offered
    assert await ensure_tool_list(mcp_runtime, spec) == listing
    history = await store.history("tool_record", listing_id(spec.job_id),
                                  principal=principal_of(spec))
    assert len(history) == 1


@ASYNC
async def test_a_call_is_one_stored_exchange_and_a_note_can_cite_it(
        mcp_runtime: ActivityRuntime, make_spec: Callable[..., JobSpec], repo: Path) -> None:
    spec = make_spec(tools=GRANTS)
    job = await _job(mcp_runtime, spec)
    result, body = await _call(mcp_runtime, job, "t0001-1", "mcp__git__git_log",
                               {"repo_path": str(repo)})
    assert result.status == "success", body
    content = json.loads(body["result"]["content"])
    assert content["source"] == "mcp__git__git_log" and content["path"] == "result"
    number = next(i for i, line in enumerate(content["lines"], start=1)
                  if "exponential backoff" in line)
    assert "exponential backoff" not in result.model_dump_json()  # a reference only
    # a retry of the same call id runs nothing and returns the same stored exchange
    again, _ = await _call(mcp_runtime, job, "t0001-1", "mcp__git__git_log",
                           {"repo_path": str(repo)})
    assert again == result
    store = await mcp_runtime.store()
    assert len(await store.history("tool_record", exchange_id(spec.job_id, "t0001-1"),
                                   principal=principal_of(spec))) == 1
    citation = {"call_id": "t0001-1", "source": "mcp__git__git_log",
                "revision": content["revision"], "path": "result",
                "start_line": number, "end_line": number}
    noted, _ = await _call(mcp_runtime, job, "t0001-2", "note", {
        "topic": "retries", "claim": "the client backs off", "citations": [citation]})
    assert noted.status == "success" and noted.note_topic == "retries"
    for wrong in ({"start_line": len(content["lines"]) + 5,
                   "end_line": len(content["lines"]) + 5},
                  {"revision": "0" * 64}, {"source": "mcp__time__get_current_time"}):
        refused, body = await _call(mcp_runtime, job, f"t0001-{3 + len(wrong)}-{next(iter(wrong))}",
                                    "note", {"topic": "retries", "claim": "made up",
                                             "citations": [{**citation, **wrong}]})
        assert refused.rejection == "citation_mismatch", body
    # the server refuses a path outside its repository: the tool's own error, typed
    refused, body = await _call(mcp_runtime, job, "t0001-9", "mcp__git__git_log",
                                {"repo_path": "/etc"})
    assert refused.rejection == "tool_reported_error", body
    # mcp-server-time too
    timed, body = await _call(mcp_runtime, job, "t0001-10", "mcp__time__get_current_time",
                              {"timezone": "Europe/Paris"})
    assert timed.status == "success"
    assert any("Europe/Paris" in line for line in json.loads(body["result"]["content"])["lines"])


@ASYNC
async def test_a_write_tool_never_runs_without_approval(
        mcp_runtime: ActivityRuntime, make_spec: Callable[..., JobSpec], repo: Path) -> None:
    spec = make_spec(tools=GRANTS)
    job = await _job(mcp_runtime, spec)
    refused, body = await _call(mcp_runtime, job, "t0001-1", "mcp__git__git_commit",
                                {"repo_path": str(repo), "message": "x"})
    assert refused.rejection == "approval_required", body
    # a tool not granted, or a name that only looks like one, is refused the same way
    refused, _ = await _call(mcp_runtime, job, "t0001-2", "mcp__git__git_status",
                             {"repo_path": str(repo)})
    assert refused.rejection == "tool_not_granted"
    refused, _ = await _call(mcp_runtime, job, "t0001-3", "mcp__nope__x", {})
    assert refused.rejection == "tool_not_granted"


HOSTILE = {"huge": "tool_output_too_large", "hang": "tool_timeout",
           "crash": "tool_unavailable", "garbage": "tool_protocol_error",
           "badjson": "tool_protocol_error"}


@ASYNC
@pytest.mark.parametrize("tool", sorted(HOSTILE))
async def test_a_hostile_server_is_a_typed_tool_error(
        mcp_runtime: ActivityRuntime, make_spec: Callable[..., JobSpec], tool: str) -> None:
    spec = make_spec(tools=GRANTS)
    job = await _job(mcp_runtime, spec)
    started = time.monotonic()
    result, body = await _call(mcp_runtime, job, "t0001-1", f"mcp__hostile__{tool}", {})
    assert result.status == "error" and result.rejection == HOSTILE[tool], body
    assert time.monotonic() - started < 20  # the deadline holds a hung server (3 s)
    detail = json.loads(body["result"]["content"])["detail"]
    assert "\n" not in detail and len(detail) < 400


@ASYNC
async def test_injection_and_secrets_are_gated(
        mcp_runtime: ActivityRuntime, make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec(tools=GRANTS)
    job = await _job(mcp_runtime, spec)
    result, body = await _call(mcp_runtime, job, "t0001-1", "mcp__hostile__inject", {})
    assert result.status == "success"
    assert json.loads(body["result"]["content"])["instruction_lines"] == [1]
    result, body = await _call(mcp_runtime, job, "t0001-2", "mcp__hostile__leak", {})
    raw = json.dumps(body)
    assert result.status == "success"
    assert "AKIAIOSFODNN7EXAMPLE" not in raw and "ghp_0123456789" not in raw
    assert json.loads(body["result"]["content"])["secrets_redacted"]
    store = await mcp_runtime.store()
    record = await store.head("tool_record", exchange_id(spec.job_id, "t0001-2"),
                              principal=principal_of(spec))
    assert record is not None
    assert str(record.trust) in ("untrusted_external_data", "Trust.UNTRUSTED_EXTERNAL_DATA")


@ASYNC
async def test_a_tool_list_that_changes_mid_job_is_a_typed_error(
        mcp_runtime: ActivityRuntime, make_spec: Callable[..., JobSpec],
        tmp_path: Path) -> None:
    spec = make_spec(tools=GRANTS)
    job = await _job(mcp_runtime, spec)
    ok, _ = await _call(mcp_runtime, job, "t0001-1", "mcp__hostile__facts", {"topic": "x"})
    assert ok.status == "success"
    (tmp_path / "changed").write_text("now", encoding="utf-8")
    changed, body = await _call(mcp_runtime, job, "t0002-1", "mcp__hostile__facts",
                                {"topic": "x"})
    assert changed.rejection == "tool_list_changed", body


@ASYNC
async def test_an_interrupted_call_is_not_run_twice(
        mcp_runtime: ActivityRuntime, make_spec: Callable[..., JobSpec],
        tmp_path: Path) -> None:
    spec = make_spec(tools=GRANTS)
    job = await _job(mcp_runtime, spec)
    store = await mcp_runtime.store()
    # an earlier attempt reserved the call and died before storing its exchange
    await store.put("tool_record", reservation_id(spec.job_id, "t0001-1"), b"{}",
                    principal=principal_of(spec), scope=scope_of(spec), trust="trusted_state",
                    parent_revision=None, media_type="application/json",
                    metadata={"write_id": "t0001-1"})
    result, body = await _call(mcp_runtime, job, "t0001-1", "mcp__hostile__count", {})
    assert result.rejection == "tool_interrupted", body
    assert not (tmp_path / "count.txt").exists()
    result, _ = await _call(mcp_runtime, job, "t0001-2", "mcp__hostile__count", {})
    assert result.status == "success"
    assert (tmp_path / "count.txt").read_text(encoding="utf-8").count("\n") == 1


def test_the_operator_file_is_checked(tmp_path: Path, repo: Path) -> None:
    table = server_table(tmp_path, repo)
    table["servers"]["both"] = {"command": "x", "url": "http://127.0.0.1:1/mcp"}
    with pytest.raises(ValueError, match="exactly one of command"):
        parse_mcp_servers(table)
    with pytest.raises(ValueError, match="not a server name"):
        parse_mcp_servers({"servers": {"a__b": {"command": "x"}}})
    with pytest.raises(ValueError, match="http"):
        parse_mcp_servers({"servers": {"web": {"url": "file:///etc/passwd"}}})


@pytest.fixture
def http_server(tmp_path: Path) -> Any:
    """The streamable-HTTP server (``tests/mcp/http_server.py``) on a free loopback port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(HTTP_SERVER), str(port)],
                            env={**os.environ, "HTTP_MCP_TOKEN": "tok-123"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "no HTTP server"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(10)


@ASYNC
async def test_a_streamable_http_server_gets_its_headers_from_the_workers_variables(
        store_url: str, tmp_path: Path, http_server: str,
        make_spec: Callable[..., JobSpec]) -> None:
    table = parse_mcp_servers({"servers": {"web": {
        "url": http_server, "headers_from_env": {"Authorization": "WEB_MCP_AUTH"}}}})
    spec = make_spec(tools=[{"server": "web", "tools": ["facts"]}])
    for token, want in (("Bearer tok-123", "success"), ("Bearer wrong", "tool_unavailable")):
        rt = ActivityRuntime(store_url, locations=LOCAL, roots=roots_for(tmp_path),
                             mcp_servers=table, mcp_environ={"WEB_MCP_AUTH": token})
        try:
            job = await _job(rt, spec.model_copy(update={"job_id": f"{spec.job_id}-{want}"}))
            result, body = await _call(rt, job, "t0001-1", "mcp__web__facts", {"topic": "x"})
        finally:
            await rt.close()
        assert (result.rejection or result.status) == want, body
        assert token not in json.dumps(body)  # the header's value is never stored


def _approval(spec: JobSpec, call_id: str, arguments: dict[str, Any],
              signer: str = "alice", **other: str) -> ToolApproval:
    fields = {"call_id": call_id, "server": "git", "tool": "git_commit",
              "arguments_sha256": arguments_sha256(arguments), **other}
    unsigned = ToolApproval(**fields)
    return unsigned.model_copy(update={"signature": sign(
        reviewer_key(signer), "tool_approval", spec.job_id, unsigned.signed_body(),
        signer=signer)})


def _commits(repo: Path) -> int:
    out = subprocess.run(["git", "-C", str(repo), "rev-list", "--count", "HEAD"],
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip())


@ASYNC
async def test_a_write_call_runs_once_with_its_signed_approval_and_never_otherwise(
        mcp_runtime: ActivityRuntime, make_spec: Callable[..., JobSpec], repo: Path) -> None:
    spec = make_spec(tools=GRANTS)
    job = await _job(mcp_runtime, spec)
    arguments = {"repo_path": str(repo), "message": "approved commit"}
    (repo / "change.txt").write_text("a change to commit\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(repo), "add", "change.txt"], check=True)

    async def call(call_id: str, args: dict[str, Any], approval: ToolApproval | None) -> Any:
        result = await run_tool_call(mcp_runtime, ToolCallInput(
            job=job, call_id=call_id, tool_name="mcp__git__git_commit", turn=1,
            arguments=args, approval=approval))
        return result.rejection or result.status

    approval = _approval(spec, "t0001-1", arguments)
    # other arguments than the approved ones: refused, nothing committed
    assert await call("t0001-1", {**arguments, "message": "other"}, approval) == \
        "approval_refused"
    assert _commits(repo) == 1
    # a signer the job does not list, or an approval of another tool
    assert await call("t0001-2", arguments, _approval(spec, "t0001-2", arguments,
                                                      signer="mallory")) == "approval_refused"
    assert await call("t0001-3", arguments, _approval(spec, "t0001-3", arguments,
                                                      tool="git_log")) == "approval_refused"
    good = _approval(spec, "t0001-4", arguments)
    assert await call("t0001-4", arguments, good) == "success"
    assert _commits(repo) == 2
    # a retry of the same call returns its stored exchange: still one commit
    assert await call("t0001-4", arguments, good) == "success"
    assert _commits(repo) == 2
    # the same approval presented for another call (its body names t0001-4): refused
    assert await call("t0001-5", arguments, good) == "approval_refused"
    # an approval signed for the other call id, replayed: reserved already for t0001-4
    replayed = good.model_copy(update={"call_id": "t0001-6"})
    assert await call("t0001-6", arguments, replayed) == "approval_refused"
    assert _commits(repo) == 2
