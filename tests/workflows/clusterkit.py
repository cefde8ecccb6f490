"""Helpers for the cluster test: a throw-away PostgreSQL database for the artifact store, and
``pressroom worker`` processes joined to one task queue, told apart by their Temporal identity.

The database is created next to the one ``PRESSROOM_TEST_POSTGRES_URL`` names (same server,
name = that database + ``_cluster_`` + a uuid suffix) so the store tests, which drop tables in
their own database, never see it; it is dropped ``WITH (FORCE)`` afterwards, even if a killed
worker left connections behind.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url
from temporalio.api.enums.v1 import EventType, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowHandle

from contracts.job_spec import JobSpec
from contracts.workflow_messages import JobResult
from tests.workflows.jobkit import review, roots_env
from workflows.research_job import ResearchJobWorkflow

REPO_ROOT = Path(__file__).resolve().parents[2]
PRESSROOM = Path(sys.executable).parent / "pressroom"  # the console script an operator runs
# settings a worker must not inherit from the developer's shell: the store comes only from
# --store-url, and no crash hook fires unless the test asks for it
_SCRUBBED_ENV = ("PRESSROOM_DATABASE_URL", "PRESSROOM_STORE_URL", "PRESSROOM_TEST_PAUSE_AT",
                 "PRESSROOM_TEST_PAUSE_DIR", "PRESSROOM_TASK_QUEUE", "PRESSROOM_TEMPORAL_ADDRESS")


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@asynccontextmanager
async def fresh_database(server_url: str) -> AsyncIterator[str]:
    """Create an empty database on ``server_url``'s server; yield its URL; drop it after."""
    base = make_url(server_url)
    name = f"{(base.database or 'pressroom')[:40]}_cluster_{uuid.uuid4().hex[:10]}"
    admin = base.set(drivername="postgresql", database="postgres").render_as_string(
        hide_password=False)
    conn = await asyncpg.connect(admin)
    try:
        await conn.execute(f"CREATE DATABASE {_quoted(name)}")
    finally:
        await conn.close()
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(f"DROP DATABASE IF EXISTS {_quoted(name)} WITH (FORCE)")
        finally:
            await conn.close()


def asyncpg_dsn(url: str) -> str:
    """The SQLAlchemy ``postgresql+asyncpg://`` URL as a plain DSN for ``asyncpg.connect``."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def run_cli(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run ``pressroom ARGS`` as a separate process, as an operator would."""
    return await asyncio.to_thread(
        subprocess.run, [str(PRESSROOM), *args], cwd=REPO_ROOT, capture_output=True,
        text=True, timeout=timeout, env={**os.environ, "COLUMNS": "200"})


@dataclass
class WorkerProcess:
    """One ``pressroom worker`` process with its own ``PRESSROOM_HOME`` and log file."""

    name: str
    proc: subprocess.Popen[bytes]
    home: Path
    log: Path

    @property
    def pid_prefix(self) -> str:
        # the Temporal SDK's default identity is "<pid>@<hostname>"; the console script is a
        # Python script, so the Popen pid is the worker's own pid
        return f"{self.proc.pid}@"

    def owns(self, identity: str) -> bool:
        # its name, when it was started with ``--identity`` (``spawn_worker(identity=True)``)
        return identity == self.name or identity.startswith(self.pid_prefix)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def tail(self, chars: int = 3000) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        return f"--- {self.name} (pid {self.proc.pid}, exit {self.proc.poll()}) ---\n" \
               f"{text[-chars:]}"


def spawn_worker(name: str, root: Path, *, address: str, task_queue: str, store_url: str,
                 extra_env: dict[str, str] | None = None,
                 identity: bool = False) -> WorkerProcess:
    """``identity``: the worker calls itself ``name`` in histories (``--identity``)."""
    home = root / name / "home"
    home.mkdir(parents=True)
    log = root / name / "worker.log"
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED_ENV}
    env.update({"PRESSROOM_HOME": str(home), **roots_env(), **(extra_env or {})})
    proc = subprocess.Popen(
        [str(PRESSROOM), "worker", "--address", address, "--task-queue", task_queue,
         "--store-url", store_url, *(["--identity", name] if identity else [])],
        env=env, cwd=REPO_ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT)
    return WorkerProcess(name, proc, home, log)


async def poller_identities(client: Client, task_queue: str) -> set[str]:
    """Identities that recently polled ``task_queue`` for workflow or activity tasks.

    The server answers from the queue's root partition only, so a worker whose pollers all
    landed on other partitions of one task type is missing from that type's list; a worker
    starts its workflow and activity pollers together, so either list shows it is polling.
    """
    found: set[str] = set()
    for kind in (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
        resp = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
            namespace=client.namespace, task_queue=TaskQueue(name=task_queue),
            task_queue_type=kind))
        found |= {p.identity for p in resp.pollers}
    return found


async def wait_polling(client: Client, task_queue: str, workers: Iterable[WorkerProcess],
                       timeout: float = 45.0) -> None:
    """Wait until every worker in ``workers`` polls ``task_queue``."""
    workers = list(workers)
    deadline = asyncio.get_running_loop().time() + timeout
    seen: set[str] = set()
    while asyncio.get_running_loop().time() < deadline:
        for w in workers:
            if w.proc.poll() is not None:
                raise AssertionError(f"worker {w.name} exited with {w.proc.returncode}")
        seen = await poller_identities(client, task_queue)
        if all(any(w.owns(i) for i in seen) for w in workers):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"workers {[w.name for w in workers]} never all polled {task_queue}; "
                         f"pollers seen: {seen}")


@dataclass(frozen=True)
class ActivityRun:
    """One activity execution as the history records it (the attempt that closed it)."""

    name: str
    identity: str
    attempt: int
    last_failure: str


async def activity_runs(handle: WorkflowHandle[Any, Any]) -> list[ActivityRun]:
    """Each ``ActivityTaskStarted`` event of the job: activity name, worker identity, attempt."""
    history = await handle.fetch_history()
    names: dict[int, str] = {}
    runs = []
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            names[event.event_id] = event.activity_task_scheduled_event_attributes \
                .activity_type.name
        elif event.HasField("activity_task_started_event_attributes"):
            attrs = event.activity_task_started_event_attributes
            runs.append(ActivityRun(names[attrs.scheduled_event_id], attrs.identity,
                                    attrs.attempt, attrs.last_failure.message))
    return runs


_CLOSED = {EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
           EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
           EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
           EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT}


async def approve_when_waiting(client: Client, handle: WorkflowHandle[Any, Any],
                               spec: JobSpec) -> JobResult:
    """Approve (as alice) once the job waits for review, and return its result.

    The wait long-polls the history (the review wait starts the workflow's first timer)
    instead of querying the status every few hundred ms: many jobs polled that way would be
    a load of their own on the workers under test (as ``bench/jobs.py`` found).
    """
    async for event in handle.fetch_history_events(wait_new_event=True):
        if event.event_type == EventType.EVENT_TYPE_TIMER_STARTED:
            status = await handle.query(ResearchJobWorkflow.status)
            if status.status == "awaiting_review":
                await review(client, spec.job_id, "approve", reviewer="alice")
                break
        elif event.event_type in _CLOSED:
            break
    result: JobResult = await handle.result()
    return result
