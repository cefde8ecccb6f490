"""``pressroom dev``: the embedded server (persistent ``$PRESSROOM_HOME/temporal.db``) plus a
worker in one command, which runs a job and shuts both down cleanly on Ctrl-C (SIGINT).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from temporalio.client import Client

from client import jobs
from client.devserver import free_port, port_free
from contracts.job_spec import JobSpec
from contracts.workflow_messages import JobResult
from tests.workflows.jobkit import REPO_ROOT, published_files, review, roots_env
from workflows.research_job import ResearchJobWorkflow
from workflows.temporal_config import DATA_CONVERTER

pytestmark = [pytest.mark.temporal, pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]


async def test_dev_runs_a_job_and_stops_cleanly(tmp_path: Path,
                                                make_spec: Callable[..., JobSpec]) -> None:
    home = tmp_path / "home"
    port = free_port()
    env = {**os.environ, "PRESSROOM_HOME": str(home), "PRESSROOM_TASK_QUEUE": "dev-test",
           **roots_env(tmp_path)}  # the job's files live under tmp_path
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(REPO_ROOT / "pressroom.py"), "dev", "--port", str(port),
        "--headless", env=env, cwd=REPO_ROOT, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT)
    try:
        client = None
        for _ in range(150):
            try:
                client = await jobs_client(f"127.0.0.1:{port}")
                await client.count_workflows()
                break
            except Exception:
                await asyncio.sleep(0.2)
        assert client is not None, "pressroom dev never answered"
        assert (home / "temporal.db").exists()
        spec = make_spec()
        handle = await jobs.start_job(client, spec, task_queue="dev-test")
        for _ in range(300):
            st = await handle.query(ResearchJobWorkflow.status)
            if st.status == "awaiting_review":
                break
            await asyncio.sleep(0.2)
        await review(client, spec.job_id, "approve", reviewer="alice")
        result = await client.get_workflow_handle(spec.job_id, result_type=JobResult).result()
        assert result.status == "published"
        assert len(published_files(spec)) == 1
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, out.decode()
    assert "stopped" in out.decode()
    assert port_free(port)  # the server went away with the command


async def jobs_client(address: str) -> Client:
    return await Client.connect(address, data_converter=DATA_CONVERTER)
