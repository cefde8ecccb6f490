"""A newcomer's first job, as they would run it: ``pressroom init`` writes the spec,
``pressroom check`` accepts it, ``pressroom run --wait`` takes it to review on the dev
server (a real worker, the offline provider, the default SQLite store under a temporary
``$PRESSROOM_HOME``), ``pressroom approve`` publishes it. Each command is its own process.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from activities.runtime import ActivityRuntime
from contracts.job_spec import load_job_spec
from settings import Settings
from tests.waiting import wait_for
from tests.workflows.jobkit import (
    REPO_ROOT,
    published_files,
    roots_env,
    roots_for,
    running_worker,
    write_registry,
)

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

LOCAL = Settings.from_env(os.environ).locations
CLI = [sys.executable, str(REPO_ROOT / "pressroom.py")]


async def pressroom(home: Path, address: str, cwd: Path, *args: str,
                    env: dict[str, str] | None = None) -> tuple[int, str, str]:
    full = {**os.environ, "PRESSROOM_HOME": str(home), "PRESSROOM_TEMPORAL_ADDRESS": address,
            "COLUMNS": "200", **(env or {})}
    full.pop("PRESSROOM_DEBUG", None)
    proc = await asyncio.create_subprocess_exec(*CLI, *args, env=full, cwd=cwd,
                                                stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 180)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_init_check_run_publish(temporal_env: Any, tmp_path: Path, docs: Path,
                                      task_queue: str) -> None:
    address = temporal_env.client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir()
    write_registry(home, "alice")
    roots = roots_env(tmp_path)
    rc, out, err = await pressroom(
        home, address, tmp_path, "init",
        "--question", "How does the client handle retries and resume?",
        "--docs", "docs", "--reviewer", "alice", "--output", "job.yaml",
        "--destination", str(tmp_path / "published"), env=roots)
    assert rc == 0, err
    job_file = tmp_path / "job.yaml"
    spec = load_job_spec(job_file)
    rc, out, err = await pressroom(home, address, tmp_path, "check", "job.yaml", env=roots)
    assert rc == 0 and out.strip() == "job.yaml: ok", (out, err)

    runtime = ActivityRuntime(f"sqlite+aiosqlite:///{home / 'pressroom.db'}", locations=LOCAL,
                              roots=roots_for(tmp_path))
    async with running_worker(temporal_env.client, runtime, task_queue):
        rc, out, err = await pressroom(home, address, tmp_path, "run", "job.yaml", "--wait",
                                       "--task-queue", task_queue, env=roots)
        assert rc == 4, (out, err)  # awaiting review (README.md, "Scripting")
        assert "reviewer alice: pinned" in out, out
        rc, out, err = await pressroom(home, address, tmp_path, "approve", spec.job_id,
                                       "--as", "alice", "--yes", env=roots)
        assert rc == 0, err

        async def published() -> bool:
            code, text, _ = await pressroom(home, address, tmp_path, "status", spec.job_id)
            return code == 0 and "published" in text

        await wait_for(published, 120, "the job published")
    files = published_files(spec)
    assert [f.name for f in files if f.suffix == ".md"] == [f"{spec.job_id}.md"]
    article = files[[f.suffix for f in files].index(".md")].read_text(encoding="utf-8")
    assert article.strip()
    assert yaml.safe_load(job_file.read_text(encoding="utf-8"))["topics"][0]["name"] == "client"
