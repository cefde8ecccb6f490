"""``pressroom run --wait`` and ``status`` when no worker polls: a worker outage is waited
through (a line on stderr when it starts, another when a worker polls again) until
``--timeout``, and "no worker" has an exit code of its own (7, README.md "Scripting"),
never 0 as if the job were fine. A status query that goes to a worker killed a moment ago
while another one polls is answered by the live one, not reported as "no worker".

The real ``pressroom`` process against the session's dev server; the worker that comes
later is a real one with Pressroom's activities (in this process, or a separate process
that is SIGKILLed).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from activities.runtime import ActivityRuntime
from cli.commands import EXIT_AWAITING_REVIEW, EXIT_NO_WORKER
from client import jobs
from contracts.job_spec import parse_job_spec
from tests.waiting import wait_for
from tests.workflows.conftest import LOCAL
from tests.workflows.jobkit import (
    REPO_ROOT,
    job_dict,
    roots_for,
    running_worker,
    start_job,
    start_worker_process,
    wait_status,
)
from tests.workflows.test_cli import CLI, pressroom

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


def _env(home: Path, address: str) -> dict[str, str]:
    env = {**os.environ, "PRESSROOM_HOME": str(home), "PRESSROOM_TEMPORAL_ADDRESS": address,
           "COLUMNS": "200", "PRESSROOM_WORKER_GRACE_SECONDS": "1"}
    env.pop("PRESSROOM_DEBUG", None)
    return env


async def _until_line(stream: asyncio.StreamReader, needle: str, seen: list[str],
                      deadline: float) -> None:
    """Read ``stream`` line by line into ``seen`` until one holds ``needle``."""
    async def line() -> bool:
        raw = await asyncio.wait_for(stream.readline(), deadline)
        if not raw:
            raise AssertionError(f"stream ended before {needle!r}: {''.join(seen)}")
        seen.append(raw.decode())
        return needle in seen[-1]

    await wait_for(line, deadline, f"a line with {needle!r}", interval=0)


async def test_run_wait_waits_through_an_outage_until_a_worker_comes(
        temporal_env: Any, tmp_path: Path, docs: Path, task_queue: str) -> None:
    client = temporal_env.client
    address = client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir()
    data = job_dict(tmp_path, docs)
    job_file = tmp_path / "job.yaml"
    job_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    proc = await asyncio.create_subprocess_exec(
        *CLI, "run", str(job_file), "--wait", "--timeout", "300", "--task-queue", task_queue,
        env=_env(home, address), cwd=REPO_ROOT, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    try:
        assert proc.stderr is not None and proc.stdout is not None
        err: list[str] = []
        await _until_line(proc.stderr, f"no worker is polling task queue {task_queue!r}; "
                          "waiting for one", err, 60)
        assert proc.returncode is None  # still waiting, not done with exit 0
        runtime = ActivityRuntime(f"sqlite+aiosqlite:///{home / 'pressroom.db'}",
                                  locations=LOCAL, roots=roots_for(tmp_path))
        async with running_worker(client, runtime, task_queue):
            await _until_line(proc.stderr, f"a worker is polling task queue {task_queue!r} "
                              "again", err, 60)
            out = (await asyncio.wait_for(proc.stdout.read(), 120)).decode()
            rc = await asyncio.wait_for(proc.wait(), 30)
            err.append((await proc.stderr.read()).decode())
            assert rc == EXIT_AWAITING_REVIEW, (out, "".join(err))
            assert "awaiting_review" in out
            await client.get_workflow_handle(data["job_id"]).terminate("test over")
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_run_wait_with_no_worker_ever_ends_no_worker_at_its_timeout(
        temporal_env: Any, tmp_path: Path, docs: Path, task_queue: str) -> None:
    client = temporal_env.client
    address = client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir()
    data = job_dict(tmp_path, docs)
    job_file = tmp_path / "job.yaml"
    job_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    os.environ["PRESSROOM_WORKER_GRACE_SECONDS"] = "1"
    try:
        t0 = time.monotonic()
        rc, out, err = await pressroom(home, address, "run", str(job_file), "--wait",
                                       "--timeout", "4", "--task-queue", task_queue)
        took = time.monotonic() - t0
        assert rc == EXIT_NO_WORKER, (out, err)
        assert took >= 4, took
        assert f"no worker is polling task queue {task_queue!r}" in err
        assert f"no worker polled task queue {task_queue!r} within --timeout 4s" in out
        rc, out, err = await pressroom(home, address, "status", data["job_id"], "--json")
        assert rc == EXIT_NO_WORKER, err
        rc, _out, err = await pressroom(home, address, "run", str(job_file), "--timeout", "4")
        assert rc == 2 and "--wait" in err  # a usage error: --timeout is --wait's
    finally:
        del os.environ["PRESSROOM_WORKER_GRACE_SECONDS"]
    await client.get_workflow_handle(data["job_id"]).terminate("test over")


async def _pollers(client: Client, task_queue: str) -> set[str]:
    resp = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
        namespace=client.namespace, task_queue=TaskQueue(name=task_queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW))
    return {p.identity for p in resp.pollers}


async def test_status_right_after_a_sigkill_is_answered_by_the_live_worker(
        temporal_env: Any, tmp_path: Path, docs: Path, task_queue: str) -> None:
    """The job's workflow is cached on worker A (its sticky queue) when A is SIGKILLed; B
    polls the same queue. The status query is answered (through B), not "no worker"."""
    client = temporal_env.client
    address = client.service_client.config.target_host
    store_url = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    env = {"PRESSROOM_SOURCE_ROOTS": str(tmp_path), "PRESSROOM_PUBLISH_ROOTS": str(tmp_path)}
    spec = parse_job_spec(job_dict(tmp_path, docs))
    a = start_worker_process(env, address, task_queue, store_url, tmp_path / "a.log",
                             ["--identity", "worker-a"])
    b = None
    try:
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"awaiting_review"})
        b = start_worker_process(env, address, task_queue, store_url, tmp_path / "b.log",
                                 ["--identity", "worker-b"])
        await wait_for(lambda: _has(client, task_queue, "worker-b"), 60, "worker B polling")
        await handle.query("status")  # the workflow is warm on A's sticky queue
        a.send_signal(signal.SIGKILL)
        a.wait()
        t0 = time.monotonic()
        view = await jobs.view_job(client, spec.job_id, worker_grace=1)
        took = time.monotonic() - t0
        assert view.no_worker is None, view.summary
        print(f"status after the SIGKILL answered in {took:.1f}s")
        assert view.live is not None and view.live.status == "awaiting_review"
        await handle.terminate("test over")
    finally:
        for proc in (a, b):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


async def _has(client: Client, task_queue: str, identity: str) -> bool:
    return any(identity in p for p in await _pollers(client, task_queue))
