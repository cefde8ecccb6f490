"""``pressroom watch JOB``: the live view follows a running job and ends with
``status``'s exit code. The real ``pressroom`` process under a pseudo-terminal (rich Live)
and on a pipe (plain lines), against the session's dev server and a real worker; the
job is started before any worker polls, so the watch is up before the first turn."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from activities.runtime import ActivityRuntime
from cli.commands import EXIT_AWAITING_REVIEW
from cli.watch import render
from client import jobs
from contracts.job_spec import JobSpec
from contracts.workflow_messages import JobStatus, ResearchProgress, ToolCallSummary
from tests.waiting import wait_for
from tests.workflows.conftest import LOCAL
from tests.workflows.jobkit import REPO_ROOT, job_dict, roots_for, running_worker, start_job
from tests.workflows.test_cli import CLI

TURN = re.compile(r"research turn (\d+) of (\d+)")


def _env(home: Path, address: str) -> dict[str, str]:
    env = {**os.environ, "PRESSROOM_HOME": str(home), "PRESSROOM_TEMPORAL_ADDRESS": address,
           "COLUMNS": "200", "PRESSROOM_WORKER_GRACE_SECONDS": "1"}
    env.pop("PRESSROOM_DEBUG", None)
    return env


async def _watch_until_started(proc: subprocess.Popen[bytes], read: Callable[[], bytes],
                               out: list[bytes]) -> None:
    """Wait until the watch shows the job (it waits for a worker)."""
    async def shown() -> bool:
        out.append(read())
        return b"no worker" in b"".join(out)
    await wait_for(shown, 60, "the watch shows the job waiting for a worker", interval=0.1)


async def _run_watch(client: Any, runtime: ActivityRuntime, task_queue: str, spec: JobSpec,
                     tmp_path: Path, *, tty: bool) -> tuple[int, str]:
    address = client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    await start_job(client, spec, task_queue)
    if tty:
        leader, follower = pty.openpty()
        proc = subprocess.Popen([*CLI, "watch", spec.job_id], env=_env(home, address),
                                cwd=REPO_ROOT, stdin=follower, stdout=follower,
                                stderr=follower)
        os.close(follower)
        os.set_blocking(leader, False)
    else:
        proc = subprocess.Popen([*CLI, "watch", spec.job_id], env=_env(home, address),
                                cwd=REPO_ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        assert proc.stdout is not None
        leader = proc.stdout.fileno()
        os.set_blocking(leader, False)

    def read() -> bytes:
        try:
            return os.read(leader, 65536)
        except (BlockingIOError, OSError):
            return b""

    out: list[bytes] = []
    try:
        await _watch_until_started(proc, read, out)
        async with running_worker(client, runtime, task_queue):
            async def ended() -> bool:
                out.append(read())
                return proc.poll() is not None
            await wait_for(ended, 180, "the watch to end", interval=0.1)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (chunk := read()):
            out.append(chunk)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if tty:
            os.close(leader)
    return proc.returncode, b"".join(out).decode(errors="replace")


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_watch_on_a_terminal_shows_the_turn_counter_advance(
        client: Any, runtime: ActivityRuntime, task_queue: str, tmp_path: Path,
        make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec()
    rc, text = await _run_watch(client, runtime, task_queue, spec, tmp_path, tty=True)
    assert rc == EXIT_AWAITING_REVIEW, text
    assert "\x1b[" in text  # drawn by rich Live, not printed as lines
    turns = [int(m.group(1)) for m in TURN.finditer(text)]
    assert len(set(turns)) >= 2 and turns == sorted(turns), turns
    assert {int(m.group(2)) for m in TURN.finditer(text)} == {spec.research.max_turns}
    assert f"pressroom approve {spec.job_id}" in text
    # this worker has no price for the offline model: once a turn has called it, the
    # cost reads "not priced", not $0 (before the first call it is $0, and true)
    costs = re.findall(r"cost (not priced|\$\d+\.\d+)", text)
    assert costs and costs[-1] == "not priced", costs


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_watch_on_a_pipe_prints_plain_lines(
        client: Any, runtime: ActivityRuntime, task_queue: str, tmp_path: Path,
        make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec()
    rc, text = await _run_watch(client, runtime, task_queue, spec, tmp_path, tty=False)
    assert rc == EXIT_AWAITING_REVIEW, text
    assert "\x1b[" not in text
    turns = [int(m.group(1)) for m in TURN.finditer(text)]
    assert turns and turns == sorted(turns), text
    assert text.rstrip().splitlines()[-1].strip().startswith("pressroom approve")


def _view(status: str, reason: str | None = None, unpriced: int = 0) -> jobs.JobView:
    research = ResearchProgress(turn=7, round_start_turn=0, tokens_used=1200, token_budget=5000,
                                cost_micro_usd=1500 if not unpriced else 0,
                                unpriced_calls=unpriced, cost_budget_micro_usd=10_000,
                                last_calls=[ToolCallSummary(turn=7, call_id="c1",
                                                            tool_name="read_file",
                                                            status="ok", result_chars=812)])
    live = JobStatus(job_id="j", status=status, stage="research",
                     blocked_reason=reason, pending_draft=None, manifest_ids=[],
                     revision_round=0, destination="d", reviewers=[], tenant="t",
                     project="p", research=research)
    return jobs.JobView(job_id="j", execution="RUNNING", live=live)


def test_render_shows_turn_budgets_calls_and_the_resolve_actions() -> None:
    lines = render(_view("blocked", "budget_exhausted: tokens 5000 of 5000"), 40)
    text = "\n".join(lines)
    assert "research turn 7 of 40" in text
    assert "tokens 1200 / 5000" in text
    assert "read_file" in text and "812 chars" in text
    assert "reason: budget_exhausted" in text
    assert "pressroom resolve j --token-budget N / --cost-budget USD" in text
    operator = "\n".join(render(_view("needs_operator", "needs_operator: boom"), 40))
    assert "pressroom resolve j --abandon" in operator and "--token-budget" not in operator
    running = "\n".join(render(_view("running"), None))
    assert "research turn 7\n" in running + "\n" and "resolve" not in running
    assert "cost $0.001500 / $0.010000" in text
    # a model the worker has no price for costs "not priced", never $0
    unpriced = "\n".join(render(_view("running", unpriced=7), None))
    assert "cost not priced / $0.010000" in unpriced and "$0.000000" not in unpriced


async def _run_wait_on_a_terminal(client: Any, task_queue: str, tmp_path: Path, docs: Path,
                                  *flags: str) -> tuple[int, str, bytes]:
    """``pressroom run JOB --wait [flags]`` with stdin and stderr on a pseudo-terminal
    (stdout too, unless ``--json``: then a pipe, as a script reads it) and a worker
    running; its exit code, what the terminal showed, and stdout when piped."""
    address = client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir()
    data = job_dict(tmp_path, docs)
    job_file = tmp_path / "job.yaml"
    job_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    runtime = ActivityRuntime(f"sqlite+aiosqlite:///{home / 'pressroom.db'}",
                              locations=LOCAL, roots=roots_for(tmp_path))
    leader, follower = pty.openpty()
    piped = "--json" in flags
    out: list[bytes] = []
    async with running_worker(client, runtime, task_queue):
        proc = subprocess.Popen([*CLI, "run", str(job_file), "--wait", "--task-queue",
                                 task_queue, *flags], env=_env(home, address), cwd=REPO_ROOT,
                                stdin=follower, stderr=follower,
                                stdout=subprocess.PIPE if piped else follower)
        os.close(follower)
        os.set_blocking(leader, False)
        try:
            async def ended() -> bool:
                try:
                    out.append(os.read(leader, 65536))
                except (BlockingIOError, OSError):
                    pass
                return proc.poll() is not None
            await wait_for(ended, 180, "run --wait to end", interval=0.1)
            stdout = proc.stdout.read() if proc.stdout is not None else b""
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            with contextlib.suppress(OSError):
                while chunk := os.read(leader, 65536):
                    out.append(chunk)
            os.close(leader)
            if proc.stdout is not None:
                proc.stdout.close()
    return proc.returncode, b"".join(out).decode(errors="replace"), stdout


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_run_wait_on_a_terminal_shows_the_live_view(
        client: Any, task_queue: str, tmp_path: Path, docs: Path) -> None:
    rc, text, _ = await _run_wait_on_a_terminal(client, task_queue, tmp_path, docs)
    assert rc == EXIT_AWAITING_REVIEW, text
    assert "\x1b[" in text and TURN.search(text), text
    assert "draft ready" in text


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_run_wait_json_on_a_terminal_still_reports_every_stage(
        client: Any, task_queue: str, tmp_path: Path, docs: Path) -> None:
    """With ``--json`` the report is the point: stderr on a terminal must not swap the
    stage follower for the live view, whose report would list no stages."""
    rc, text, stdout = await _run_wait_on_a_terminal(client, task_queue, tmp_path, docs,
                                                     "--json")
    assert rc == EXIT_AWAITING_REVIEW, text
    report = json.loads(stdout)
    stages = list(dict.fromkeys(step["stage"] for step in report["stages"]))
    assert stages == ["start", "plan", "research", "draft", "review"], report["stages"]
    assert report["job"]["status"] == "awaiting_review"
    assert not TURN.search(text), text  # stage lines on the terminal, not the live view
    assert "started job" in text
