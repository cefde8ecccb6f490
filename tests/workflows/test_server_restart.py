"""Server restart: a job waiting for review survives the Temporal server going away.

This test starts its own dev server (the same ``temporal`` binary, ``server start-dev
--db-filename``) over a persistent SQLite file, stops it while the job waits for review,
starts it again on the same file and port, approves, and the job publishes. The worker is
a separate process that stays up across the restart and reconnects by itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from client import jobs
from client.devserver import DevServer, free_port
from contracts.job_spec import JobSpec
from contracts.workflow_messages import JobResult
from tests.workflows.jobkit import (
    published_files,
    review,
    start_job,
    start_worker_process,
    wait_status,
)

pytestmark = [pytest.mark.temporal, pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]


async def test_job_survives_server_restart(tmp_path: Path, store_url: str, task_queue: str,
                                           make_spec: Callable[..., JobSpec]) -> None:
    db = tmp_path / "temporal.db"
    server = DevServer(db, port=free_port(), headless=True, log_path=tmp_path / "server.log")
    spec = make_spec()
    server.start()
    worker = None
    try:
        client = await server.wait_ready()
        worker = start_worker_process({}, server.address, task_queue, store_url,
                                      tmp_path / "worker.log")
        handle = await start_job(client, spec, task_queue)
        before = await wait_status(handle, {"awaiting_review"})

        server.stop()
        assert db.exists() and db.stat().st_size > 0
        server.start()
        client = await server.wait_ready()

        view = await jobs.view_job(client, spec.job_id)  # same job, same pending draft
        assert view.live is not None and view.live.status == "awaiting_review"
        assert view.live.pending_draft == before.pending_draft
        await review(client, spec.job_id, "approve", reviewer="alice")
        result = await client.get_workflow_handle(spec.job_id, result_type=JobResult).result()
    finally:
        if worker is not None:
            worker.kill()
            worker.wait(10)
        server.stop()
        for log in (tmp_path / "worker.log", tmp_path / "server.log"):  # shown on failure
            if log.exists():
                print(log.name, log.read_text(encoding="utf-8", errors="replace")[-3000:])
    assert result.status == "published" and result.receipt is not None
    assert [f.name for f in published_files(spec)] == [f"{spec.job_id}.md"]
