"""The ``pressroom`` job commands, run as a user runs them (a separate process each),
against the session's dev server, a real worker and the default SQLite store under a
temporary ``$PRESSROOM_HOME``. Expected failures are one line on stderr, never a traceback.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from activities.runtime import ActivityRuntime
from contracts.job_spec import JobSpec, parse_job_spec
from settings import Settings
from tests.workflows.jobkit import (
    REPO_ROOT,
    job_dict,
    published_files,
    roots_for,
    running_worker,
    write_registry,
)

#: what source-location placeholders stand for here (as a worker started now is told)
LOCAL = Settings.from_env(os.environ).locations

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

CLI = [sys.executable, str(REPO_ROOT / "pressroom.py")]


async def pressroom(home: Path, address: str, *args: str) -> tuple[int, str, str]:
    env = {**os.environ, "PRESSROOM_HOME": str(home), "PRESSROOM_TEMPORAL_ADDRESS": address,
           "COLUMNS": "200"}
    env.pop("PRESSROOM_DEBUG", None)
    proc = await asyncio.create_subprocess_exec(*CLI, *args, env=env, cwd=REPO_ROOT,
                                                stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _one_line_error(rc: int, err: str, needle: str) -> None:
    assert rc == 1
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines and lines[0].startswith("error:") and needle in " ".join(lines)


async def test_cli_run_review_status_explain(
        temporal_env: Any, tmp_path: Path, docs: Path, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    address = temporal_env.client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir()
    job_file = tmp_path / "job.yaml"
    data = job_dict(tmp_path, docs)
    job_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    spec = parse_job_spec(data)
    write_registry(home, "alice")
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**data, "review": {"reviewers": []}}), encoding="utf-8")

    rc, _out, err = await pressroom(home, address, "run", str(bad), "--task-queue", task_queue)
    _one_line_error(rc, err, "field 'review.reviewers'")

    runtime = ActivityRuntime(f"sqlite+aiosqlite:///{home / 'pressroom.db'}", locations=LOCAL,
                              roots=roots_for(tmp_path))
    async with running_worker(temporal_env.client, runtime, task_queue):
        rc, out, err = await pressroom(home, address, "run", str(job_file), "--wait",
                                       "--task-queue", task_queue)
        assert rc == 4, err  # awaiting review (README.md, "Scripting")
        assert "awaiting_review" in out and "no worker is polling" not in out
        rc, _out, err = await pressroom(home, address, "run", str(job_file),
                                        "--task-queue", task_queue)
        _one_line_error(rc, err, "already exists")
        # the research loop, as status, trace and explain --turn show it
        rc, out, err = await pressroom(home, address, "status", spec.job_id)
        assert rc == 4, err
        assert "research turn " in out and "stopped: finished" in out, out
        assert "tokens " in out and "/2000000" in out and "topics with a verified note" in out
        assert " note " in out or " finish " in out  # the last calls
        rc, out, err = await pressroom(home, address, "trace", spec.job_id)
        assert rc == 0, err
        assert "turn 1 " in out and "search" in out and "source=handbook" in out
        assert "success" in out and " chars" in out
        rc, out, err = await pressroom(home, address, "explain", spec.job_id, "--turn", "1")
        assert rc == 0, err
        assert "research turn 1" in out and "(research)" in out and "included" in out
        rc, _out, err = await pressroom(home, address, "explain", spec.job_id, "--turn", "99")
        _one_line_error(rc, err, "no research turn 99")
        rc, _out, err = await pressroom(home, address, "resolve", spec.job_id,
                                        "--token-budget", "0")
        _one_line_error(rc, err, "--token-budget must be a positive token count")
        rc, _out, err = await pressroom(home, address, "approve", spec.job_id, "--as",
                                        "mallory", "--yes")
        _one_line_error(rc, err, "no key for 'mallory'")
        rc, out, err = await pressroom(home, address, "reviewer", "keygen", "mallory")
        assert rc == 0, err
        assert out.strip().splitlines()[-1].startswith("ed25519:")
        assert (home / "keys" / "mallory.key").stat().st_mode & 0o777 == 0o600
        rc, _out, err = await pressroom(home, address, "approve", spec.job_id, "--as",
                                        "mallory", "--yes")
        _one_line_error(rc, err, "reviewer 'mallory' is not allowed")
        rc, out, err = await pressroom(home, address, "approve", spec.job_id, "--as", "alice",
                                       "--yes")
        assert rc == 0, err
        assert "recorded approve" in out
        for _ in range(50):
            rc, out, err = await pressroom(home, address, "status", spec.job_id)
            if "published" in out:
                break
            await asyncio.sleep(0.2)
        assert f"{spec.job_id}: published" in out
        rc, out, err = await pressroom(home, address, "explain", spec.job_id, "--step", "draft")
        assert rc == 0, err
        assert "included" in out and "partitions" in out and "job_spec:" in out
        rc, out, err = await pressroom(home, address, "list")
        assert rc == 0 and spec.job_id in out
    # with no worker on the queue, run says so instead of waiting silently
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({**data, "job_id": spec.job_id + "-b"}), encoding="utf-8")
    rc, out, err = await pressroom(home, address, "run", str(other), "--task-queue",
                                   task_queue + "-idle")
    assert rc == 0, err
    assert "no worker is polling task queue" in out
    # ... and status / approve say that nothing answers, instead of hanging on the query
    # (after the grace period a restarted server gives its workers to re-poll)
    os.environ["PRESSROOM_WORKER_GRACE_SECONDS"] = "1"
    try:
        rc, out, err = await pressroom(home, address, "status", spec.job_id + "-b")
        assert rc == 7, err  # README.md, "Scripting": no worker polls its task queue
        assert "no worker answers on task queue" in out and task_queue + "-idle" in out
        rc, _out, err = await pressroom(home, address, "approve", spec.job_id + "-b", "--as",
                                        "alice", "--yes")
        _one_line_error(rc, err, "no worker answers")
    finally:
        del os.environ["PRESSROOM_WORKER_GRACE_SECONDS"]
    rc, _out, err = await pressroom(home, address, "status", "no-such-job")
    _one_line_error(rc, err, "no job 'no-such-job'")
    rc, _out, err = await pressroom(home, "127.0.0.1:1", "status", spec.job_id)
    _one_line_error(rc, err, "cannot reach Temporal")
    assert len(published_files(spec)) == 1


async def test_pressroom_run_checks_at_the_door_what_a_worker_would_retry_on(
        temporal_env: Any, tmp_path: Path, docs: Path, task_queue: str) -> None:
    """Names the store refuses, blank topic terms and a policy that cannot load
    are one line at ``pressroom run`` — naming the field, never quoting the value — and
    no job starts (before: a reviewer ``ops/alice`` made ``record_review`` retry forever on
    the worker; a blank term failed research on every attempt). Paths outside the roots:
    ``test_path_roots.py``."""
    from client import jobs
    from client.errors import JobNotFound

    address = temporal_env.client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "broken-policy.yaml").write_text("budget: [unclosed\n", encoding="utf-8")
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"review": {"reviewers": ["ops/alice"]}}, "field 'review.reviewers.0.name' (line",
         "path separator"),
        ({"review": {"reviewers": ["alice"], "operators": ["night shift "]}},
         "field 'review.operators.0.name' (line", "leading or trailing whitespace"),
        ({"principal": "team/agent"}, "field 'principal.principal_id' (line", "path separator"),
        ({"scope": {"tenant": "acme", "project": "..", "task": "t1"}},
         "field 'scope.project' (line", "relative path component"),
        ({"topics": [{"name": "retries", "terms": ["retry", "  "]}]},
         "field 'topics.0.terms.1' (line", "must not be blank"),
        ({"policy": "strictest"}, "field 'policy': unknown policy name",
         "shipped: default, strict"),
        ({"policy": "no-such-policy.yaml"}, "policy", "does not exist"),
        ({"policy": "broken-policy.yaml"}, "policy", "not valid YAML"),
    ]

    async def attempt(i: int, change: dict[str, Any], needle: str, reason: str) -> None:
        data = {**job_dict(tmp_path, docs, **change), "job_id": f"door-{i}-{task_queue[-6:]}"}
        job_file = tmp_path / f"door-{i}.yaml"
        job_file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        rc, out, err = await pressroom(home, address, "run", str(job_file),
                                       "--task-queue", task_queue)
        _one_line_error(rc, err, needle)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and reason in lines[0], err
        for value in ("ops/alice", "night shift", "team/agent", "strictest"):
            assert value not in out + err
        with pytest.raises(JobNotFound):
            await jobs.view_job(temporal_env.client, data["job_id"], worker_grace=0)

    await asyncio.gather(*(attempt(i, *case) for i, case in enumerate(cases)))


async def test_the_python_client_checks_the_spec_too(
        temporal_env: Any, make_spec: Callable[..., JobSpec], task_queue: str) -> None:
    """``start_job`` validates the spec again: one changed in code after parsing (which
    ``model_copy`` does not validate) is a ``JobSpecError`` naming the field, not a job."""
    from client import jobs
    from client.errors import JobNotFound
    from contracts.errors import JobSpecError
    from contracts.job_spec import ReviewerSpec, TopicSpec

    spec = make_spec()
    reviewer = spec.review.reviewers[0]
    bad_reviewer = spec.model_copy(update={"review": spec.review.model_copy(update={
        "reviewers": [ReviewerSpec.model_construct(name="ops/alice",
                                                   public_key=reviewer.public_key)]})})
    blank_term = spec.model_copy(update={"topics": [
        TopicSpec.model_construct(name="retries", terms=["retry", " "], blocking=False)]})
    for bad, field in ((bad_reviewer, "review.reviewers.0.name"),
                       (blank_term, "topics.0.terms.1")):
        with pytest.raises(JobSpecError, match=f"field '{field}'") as err:
            await jobs.start_job(temporal_env.client, bad, task_queue=task_queue)
        assert "ops/alice" not in str(err.value) and "\n" not in str(err.value)
        with pytest.raises(JobNotFound):
            await jobs.view_job(temporal_env.client, spec.job_id, worker_grace=0)
