"""A git source inside a larger repository, through the real ``pressroom run`` and a real
worker on the session's Temporal dev server (SECURITY.md §3, ``contracts.git_safety``).

Tenant A's root is ``outer/tenantA``; its job names ``outer/tenantA/notes``, a folder of
the repository ``outer`` that also holds ``tenantB/``. Before, ``pressroom run`` resolved
``ref: main`` through ``outer`` and started the job, and a spec started directly passed the
worker's check and read ``outer``'s whole tree.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from activities.runtime import ActivityRuntime
from client import jobs
from contracts.job_spec import parse_job_spec
from tests.sources.test_git_confinement import SECRET_LINE, new_repo
from tests.waiting import wait_for
from tests.workflows.jobkit import (
    job_dict,
    roots_env,
    roots_for,
    running_worker,
    start_job,
    start_worker_process,
)
from tests.workflows.test_path_roots import (
    LOCAL,
    never_started,
    one_line_error,
    pressroom,
    wait_ended,
    write_job,
)

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


def tenant_a_job(outer: Path, source: dict[str, Any]) -> dict[str, Any]:
    tenant_a = outer / "tenantA"
    return {**job_dict(tenant_a, tenant_a / "notes"), "sources": [source],
            "topics": [{"name": "salary", "terms": ["salary"]}],
            "job_id": f"git-roots-{uuid.uuid4().hex[:8]}"}


async def test_pressroom_run_refuses_a_folder_inside_a_larger_repository(
        temporal_env: Any, tmp_path: Path, task_queue: str) -> None:
    """The submit check is the worker's (a real worker process whose root is tenant A's
    folder, asked by ``pressroom run``: workflows/path_check.py)."""
    client = temporal_env.client
    address = client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir()
    outer = tmp_path / "outer"
    sha = new_repo(outer, {"tenantA/notes/plan.md": "tenant A salary plan\n",
                           "tenantB/payroll.md": SECRET_LINE + "\n"})
    notes = str(outer / "tenantA" / "notes")
    worker = start_worker_process({"PRESSROOM_HOME": str(home), **roots_env(outer / "tenantA")},
                                  address, task_queue,
                                  f"sqlite+aiosqlite:///{home / 'pressroom.db'}",
                                  tmp_path / "worker.log")
    try:
        await wait_for(lambda: jobs.has_pollers(client, task_queue), 60, "the worker polling")
        for source in ({"kind": "git", "name": "notes", "repo": notes, "ref": "main"},
                       {"kind": "git", "name": "notes", "repo": notes, "commit": sha}):
            data = tenant_a_job(outer, source)
            job_file = write_job(outer / "tenantA", data)
            rc, out, err = await pressroom(home, address, "run", str(job_file),
                                           "--task-queue", task_queue)
            one_line_error(rc, err, "source 'notes' repository", "tenantA/notes",
                           "is not a git repository of its own")
            assert "pinned" not in out and "91000" not in out + err
            await never_started(client, data["job_id"])
    finally:
        worker.terminate()
        worker.wait(30)


async def test_the_worker_refuses_it_when_started_around_the_cli(
        client: Any, task_queue: str, tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    sha = new_repo(outer, {"tenantA/notes/plan.md": "tenant A salary plan\n",
                           "tenantB/payroll.md": SECRET_LINE + "\n"})
    runtime = ActivityRuntime(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}", locations=LOCAL,
                              roots=roots_for(outer / "tenantA"))
    spec = parse_job_spec(tenant_a_job(outer, {"kind": "git", "name": "notes", "commit": sha,
                                               "repo": str(outer / "tenantA" / "notes")}))
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        view = await wait_ended(client, spec.job_id)
        history = (await handle.fetch_history()).to_json()
    assert view.execution == "FAILED", view.summary
    assert "is not a git repository of its own" in view.summary, view.summary
    assert "91000" not in history and "payroll" not in history
