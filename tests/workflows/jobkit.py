"""Helpers for the durable-job tests: job specs, starting jobs, polling, worker processes."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from activities.runtime import ActivityRuntime, principal_of
from client import jobs
from contracts.job_spec import JobSpec
from contracts.path_safety import PathRoots
from contracts.signing import key_file_name, private_key_pem, public_key_text
from contracts.workflow_messages import JobStatus, ResolveInput, ReviewResult
from settings import Settings
from worker import build_worker
from workflows.research_job import ResearchJobWorkflow

REPO_ROOT = Path(__file__).resolve().parents[2]


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
    if isinstance(job.get("review"), dict):
        job["review"] = pinned_review(job["review"])
    return job


def reviewer_key(name: str) -> Ed25519PrivateKey:
    """A deterministic Ed25519 key per test reviewer name (tests only: never a real key)."""
    seed = hashlib.sha256(f"pressroom-test-reviewer:{name}".encode()).digest()
    return Ed25519PrivateKey.from_private_bytes(seed)


def reviewer_entry(name: str) -> dict[str, str]:
    return {"name": name, "public_key": public_key_text(reviewer_key(name))}


def pinned_review(review: dict[str, Any]) -> dict[str, Any]:
    """``review`` with every name-only reviewer/operator pinned to its test key, as
    ``pressroom run`` pins names from the operator's registry."""
    out = dict(review)
    for field in ("reviewers", "operators"):
        if isinstance(out.get(field), list):
            out[field] = [reviewer_entry(p) if isinstance(p, str) else p for p in out[field]]
    return out


def write_registry(home: Path, *names: str) -> None:
    """Register the test keys of ``names`` in ``home``'s reviewer registry and keys folder,
    as ``pressroom reviewer keygen NAME --register`` would have."""
    (home / "reviewers").mkdir(parents=True, exist_ok=True)
    (home / "keys").mkdir(mode=0o700, parents=True, exist_ok=True)
    for name in names:
        (home / "reviewers" / f"{key_file_name(name)}.pub").write_text(
            public_key_text(reviewer_key(name)) + "\n", encoding="ascii")
        key_path = home / "keys" / f"{key_file_name(name)}.key"
        key_path.write_bytes(private_key_pem(reviewer_key(name)))
        key_path.chmod(0o600)


async def resolve(client: Client, job_id: str, resolution: ResolveInput, *,
                  signer: str = "alice", key: Ed25519PrivateKey | None = None) -> None:
    """A resolution signed by a test reviewer (or operator)."""
    await jobs.resolve_job(client, job_id, resolution, signer=signer,
                           key=key or reviewer_key(signer))


async def review(client: Client, job_id: str, decision: jobs.Decision, *,
                 reviewer: str = "alice", comments: list[str] | None = None,
                 key: Ed25519PrivateKey | None = None, draft_revision: int | None = None,
                 draft_hash: str | None = None, destination: str | None = None,
                 worker_grace: float = 10.0) -> ReviewResult:
    """A test reviewer's signed decision. The test plays a reviewer who looked at the
    pending draft, so what it did not name is taken from the job's status."""
    view = await jobs.view_job(client, job_id, worker_grace=worker_grace)
    pending = view.live.pending_draft if view.live is not None else None
    return await jobs.review_job(
        client, job_id, decision, reviewer=reviewer, comments=comments,
        key=key or reviewer_key(reviewer),
        draft_revision=draft_revision if draft_revision is not None else (
            pending.revision if pending else 0),
        draft_hash=draft_hash or (pending.content_hash if pending else "sha256:none"),
        destination=destination or (view.live.destination if view.live else ""),
        worker_grace=worker_grace)


@contextlib.asynccontextmanager
async def running_worker(client: Client, runtime: ActivityRuntime,
                         task_queue: str) -> AsyncIterator[None]:
    async with build_worker(client, runtime, task_queue=task_queue):
        try:
            yield
        finally:
            await runtime.close()


async def start_job(client: Client, spec: JobSpec, task_queue: str) -> WorkflowHandle[Any, Any]:
    """Start through the same client code the CLI uses (id reuse refused)."""
    return await jobs.start_job(client, spec, task_queue=task_queue)


async def wait_status(handle: WorkflowHandle[Any, Any], want: set[str],
                      timeout: float = 120.0) -> JobStatus:
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
                         store_url: str, log: Path,
                         args: Sequence[str] = ()) -> subprocess.Popen[bytes]:
    """A real, separate worker process (``python worker.py``) that tests may SIGKILL;
    ``args``: more of its flags (``--identity``, ``--drain-seconds``)."""
    full_env = {**os.environ, **roots_env(), **env}
    return subprocess.Popen(
        [sys.executable, str(REPO_ROOT / "worker.py"), "--address", address,
         "--task-queue", task_queue, "--store-url", store_url, *args],
        env=full_env, cwd=REPO_ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT,
    )


async def store_json(runtime: ActivityRuntime, spec: JobSpec, kind: str, artifact_id: str,
                     revision: int | None = None) -> Any:
    store = await runtime.store()
    _rec, body = await store.get(kind, artifact_id, principal=principal_of(spec),
                                 revision=revision)
    return json.loads(body)


async def update_events(handle: WorkflowHandle[Any, Any]) -> int:
    """Update events in the job's history: a refused Update leaves none."""
    history = await handle.fetch_history()
    kinds = {EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
             EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED}
    return sum(1 for e in history.events if e.event_type in kinds)


async def history_bytes(handle: WorkflowHandle[Any, Any]) -> int:
    history = await handle.fetch_history()
    return len(history.to_json().encode("utf-8"))


def published_files(spec: JobSpec) -> list[Path]:
    """What the job's own folder in its destination holds (``<destination>/<job_id>/``)."""
    folder = Path(spec.destination) / spec.job_id
    return sorted(folder.iterdir()) if folder.exists() else []


def roots_for(*folders: Path) -> PathRoots:
    """A worker's roots here: Pressroom's own folders (as a worker started now is told)
    plus ``folders`` for both sources and publishing (a test's ``tmp_path``)."""
    return PathRoots.of(Settings.from_env(os.environ), sources=folders, publish=folders)


def roots_env(*folders: Path) -> dict[str, str]:
    """The environment that gives a worker process (or ``pressroom``) ``folders`` as its
    source and publish roots; none given: the system's temporary folder, which holds every
    test's ``tmp_path`` (what the worker processes of the crash and cluster tests read)."""
    joined = os.pathsep.join(str(f) for f in folders or (Path(tempfile.gettempdir()),))
    return {"PRESSROOM_SOURCE_ROOTS": joined, "PRESSROOM_PUBLISH_ROOTS": joined}


def _stat(pid: int) -> list[str] | None:
    """Fields of ``/proc/<pid>/stat`` after the command name (state first), if it exists."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) process."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def children(pid: int) -> set[int]:
    """Live processes whose parent is ``pid``."""
    found = set()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        fields = _stat(int(entry))
        if fields is not None and int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(entry))
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


async def loop_tool_history(runtime: ActivityRuntime, spec: JobSpec) -> dict[str, Any]:
    """A research loop's tool history from its chunks (``activities.record_turn``): the
    calls and results in order, and how many revisions were written (one per turn)."""
    store = await runtime.store()
    principal = principal_of(spec)
    calls: list[Any] = []
    results: list[Any] = []
    revisions = 0
    number = 0
    while (head := await store.head("tool_record", f"{spec.job_id}.tools.t{number:04d}",
                                    principal=principal)) is not None:
        _rec, body = await store.get("tool_record", head.artifact_id, principal=principal,
                                     revision=head.revision)
        chunk = json.loads(body)
        calls += chunk["calls"]
        results += chunk["results"]
        revisions += len(await store.history("tool_record", head.artifact_id,
                                             principal=principal))
        number += 1
    return {"calls": calls, "results": results, "revisions": revisions}


async def loop_notes(runtime: ActivityRuntime, spec: JobSpec) -> list[dict[str, Any]]:
    """A research loop's note evidence records, oldest first, from their chunks."""
    store = await runtime.store()
    principal = principal_of(spec)
    records: list[dict[str, Any]] = []
    number = 0
    while (head := await store.head("evidence_pack", f"{spec.job_id}.notes.t{number:04d}",
                                    principal=principal)) is not None:
        _rec, body = await store.get("evidence_pack", head.artifact_id, principal=principal,
                                     revision=head.revision)
        records += json.loads(body)["records"]
        number += 1
    return records
