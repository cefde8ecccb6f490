"""Benchmark of the durable job on the embedded Temporal dev server; prints JSON.

Measures, with the offline extractive provider over the bundled example job
(two pinned git repositories, a document folder, a saved web page, a workspace plan.md):

* one job: wall time from start to published, and time per stage (from history
  timestamps: a stage runs from its ``assemble_context`` being scheduled to its checkpoint
  completing; ``review_wait`` is the time until the auto-approval arrived);
* N concurrent jobs (default 50): wall time and jobs/s, each approved as soon as it waits;
* the same workflow with every activity (context assembly, store, the research turn's
  model and tools, draft, publish) replaced by a no-op that returns a fixed reference —
  bare Temporal — in the same process and server, and the ratio of the two walls (target <= 1.5x);
* history bytes per job;
* CPU seconds of each concurrent run, split between this process (client and worker), the
  dev server and the worker's context-assembly helper processes (Linux ``/proc``).

Run: ``.venv/bin/python bench/jobs.py [--jobs 50] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.worker import Worker

from bench.devserver import start_quiet_dev_server
from cli.embedded import EXAMPLE_JOB, _build_fixtures, with_examples
from client import jobs
from contracts.activity_messages import (
    ArtifactRef,
    AssembleContextInput,
    CheckpointInput,
    CheckpointResult,
    ContextRef,
    DecideInput,
    DecideResult,
    DraftInput,
    DraftResult,
    PlanInput,
    PlannedCall,
    PublishInput,
    PublishResult,
    RecordReviewInput,
    RecordTurnInput,
    RecordTurnResult,
    StoreJobSpecInput,
    ToolCallInput,
    ToolCallResult,
)
from contracts.job_spec import JobSpec, ReviewerSpec, load_job_spec
from contracts.path_safety import PathRoots
from contracts.signing import generate_private_key, public_key_text
from settings import Settings
from worker import build_runtime, build_worker, default_helper_processes
from workflows.research_job import ResearchJobWorkflow
from workflows.temporal_config import (
    WORKFLOW_FAILURE_EXCEPTION_TYPES,
    WORKFLOW_RUNNER,
)

_CLOSED = frozenset(getattr(EventType, f"EVENT_TYPE_WORKFLOW_EXECUTION_{end}") for end in (
    "COMPLETED", "FAILED", "TIMED_OUT", "CANCELED", "TERMINATED", "CONTINUED_AS_NEW"))
_REF = ArtifactRef(kind="article_draft", artifact_id="noop", revision=1,
                   content_hash="sha256:" + "0" * 64)


def noop_activities(topics: list[str], turns: list[int]) -> list[Any]:
    """Same names and types as Pressroom's activities; each returns a fixed reference. The
    research turn's model asks for one ``search`` a turn until the last of ``turns[0]``
    turns (set from the real example job's turns), then for one note per topic and
    ``finish``; every call succeeds. So the no-op job has the real job's shape: the same
    stages and as many research turns."""

    @activity.defn(name="store_job_spec")
    async def store_job_spec(inp: StoreJobSpecInput) -> ArtifactRef:
        return _REF

    @activity.defn(name="assemble_context")
    async def assemble_context(inp: AssembleContextInput) -> ContextRef:
        return ContextRef(manifest_id=f"noop-{inp.step_id}", step_id=inp.step_id,
                          stage=inp.stage, status="ready", input_hash=_REF.content_hash)

    @activity.defn(name="write_plan")
    async def write_plan(inp: PlanInput) -> ArtifactRef:
        return _REF

    @activity.defn(name="decide")
    async def decide(inp: DecideInput) -> DecideResult:
        if inp.turn < turns[0]:
            return DecideResult(decision=_REF, calls=[PlannedCall(
                call_id=f"t{inp.turn:04d}-1", tool_name="search")])
        calls = [PlannedCall(call_id=f"t{inp.turn:04d}-{n}", tool_name="note",
                             arguments={"topic": topic})
                 for n, topic in enumerate(topics, start=1)]
        calls.append(PlannedCall(call_id=f"t{inp.turn:04d}-0", tool_name="finish"))
        return DecideResult(decision=_REF, calls=calls)

    @activity.defn(name="run_tool")
    async def run_tool(inp: ToolCallInput) -> ToolCallResult:
        return ToolCallResult(call_id=inp.call_id, status="success", exchange=_REF,
                              result_hash=_REF.content_hash, result_chars=0,
                              note_topic=inp.arguments.get("topic"))

    @activity.defn(name="record_turn")
    async def record_turn(inp: RecordTurnInput) -> RecordTurnResult:
        return RecordTurnResult(tool_records=_REF)

    @activity.defn(name="draft")
    async def draft(inp: DraftInput) -> DraftResult:
        return DraftResult(draft=_REF, summary="noop draft")

    @activity.defn(name="record_review")
    async def record_review(inp: RecordReviewInput) -> ArtifactRef:
        return _REF.model_copy(update={"kind": "review_decision"})

    @activity.defn(name="write_checkpoint")
    async def write_checkpoint(inp: CheckpointInput) -> CheckpointResult:
        return CheckpointResult(checkpoint_id=inp.checkpoint_id, content_hash=_REF.content_hash)

    @activity.defn(name="publish")
    async def publish(inp: PublishInput) -> PublishResult:
        return PublishResult(receipt_key="noop", destination="noop",
                             location="noop", content_hash=_REF.content_hash,
                             review_decision_id="noop", published_at="1970-01-01T00:00:00Z")

    return [store_job_spec, assemble_context, write_plan, decide, run_tool, record_turn, draft,
            record_review, write_checkpoint, publish]


async def wait_for_review(handle: Any) -> None:
    """Return once the job waits for a review, by long-polling its history on the server.

    The review wait starts the workflow's first timer, so the probe follows the history
    until a ``TimerStarted`` event and then asks the status once. A status query is a
    workflow activation on the worker under test, and polling one per job every few
    hundred ms made the probe a load that grew with the wall time it measured (the slower
    run paid more); a history long-poll is answered by the server alone.
    """
    async for event in handle.fetch_history_events(wait_new_event=True):
        if event.event_type == EventType.EVENT_TYPE_TIMER_STARTED:
            st = await handle.query(ResearchJobWorkflow.status)
            if st.status == "awaiting_review" and st.pending_draft is not None:
                return
            if st.status not in ("running", "blocked"):
                raise RuntimeError(f"{st.job_id} ended up {st.status}: {st.blocked_reason}")
        elif event.event_type in _CLOSED:
            break
    st = await handle.query(ResearchJobWorkflow.status)
    raise RuntimeError(f"{st.job_id} closed without waiting for review: {st.status}")


async def run_one(client: Client, spec: JobSpec, queue: str,
                  with_history: bool = True) -> dict[str, Any]:
    """Start, approve as soon as it waits, return wall (and history) figures.

    The concurrent runs skip the history: fetching and encoding it is the probe's work,
    not the job's, and it would sit inside the timed window.
    """
    t0 = time.perf_counter()
    handle = await jobs.start_job(client, spec, task_queue=queue)
    await wait_for_review(handle)
    status = await handle.query(ResearchJobWorkflow.status)
    assert status.pending_draft is not None
    await jobs.review_job(client, spec.job_id, "approve", reviewer=BENCH_REVIEWER,
                          key=BENCH_KEY, draft_revision=status.pending_draft.revision,
                          draft_hash=status.pending_draft.content_hash,
                          destination=status.destination)
    result = await handle.result()
    wall = time.perf_counter() - t0
    if result.status != "published":
        raise RuntimeError(f"{spec.job_id}: {result.status}")
    turns = status.research.turn if status.research is not None else 0
    if not with_history:
        return {"wall_s": wall, "research_turns": turns}
    history = await handle.fetch_history()
    return {"wall_s": wall, "research_turns": turns, "history": history,
            "history_bytes": len(history.to_json().encode("utf-8"))}


def stage_times(history: Any) -> dict[str, float]:
    """Seconds per stage from event timestamps (see module docstring)."""
    scheduled: dict[int, tuple[str, str | None, datetime]] = {}
    stages: dict[str, float] = {}
    current: tuple[str, datetime] | None = None
    last_checkpoint_done: datetime | None = None
    review_asked: datetime | None = None
    for e in history.events:
        ts = e.event_time.ToDatetime()
        if e.HasField("activity_task_scheduled_event_attributes"):
            a = e.activity_task_scheduled_event_attributes
            stage = None
            if a.activity_type.name == "assemble_context":
                stage = json.loads(a.input.payloads[0].data)["stage"]
            scheduled[e.event_id] = (a.activity_type.name, stage, ts)
        elif e.HasField("activity_task_completed_event_attributes"):
            name, stage, when = scheduled[e.activity_task_completed_event_attributes
                                          .scheduled_event_id]
            if stage is not None:
                if review_asked is None and stage in ("publish", "revise") \
                        and last_checkpoint_done is not None:
                    stages["review_wait"] = (when - last_checkpoint_done).total_seconds()
                current = (stage, when)
            if name == "write_checkpoint" and current is not None:
                key = current[0]
                stages[key] = stages.get(key, 0.0) + (ts - current[1]).total_seconds()
                last_checkpoint_done = ts
            if name == "store_job_spec":
                stages["start"] = (ts - when).total_seconds()
    return {k: round(v, 4) for k, v in stages.items()}


#: the benchmark plays the reviewer: one in-memory key, listed as the only reviewer
BENCH_REVIEWER = "bench-reviewer"
BENCH_KEY = generate_private_key()


def with_bench_reviewer(spec: JobSpec) -> JobSpec:
    reviewer = ReviewerSpec(name=BENCH_REVIEWER, public_key=public_key_text(BENCH_KEY))
    return spec.model_copy(update={"review": spec.review.model_copy(
        update={"reviewers": [reviewer], "operators": []})})


def make_specs(base: JobSpec, n: int, home: Path, tag: str) -> list[JobSpec]:
    return [base.model_copy(update={"job_id": f"bench-{tag}-{uuid.uuid4().hex[:8]}-{i:03d}",
                                    "destination": str(home / "published" / tag)})
            for i in range(n)]


def cpu_seconds() -> dict[str, float]:
    """CPU used so far by this process, the dev server and the worker's helper processes
    (Linux ``/proc``; children of this process, told apart by their command line)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {"bench_process": time.process_time(), "dev_server": 0.0, "helpers": 0.0}
    me = str(os.getpid())
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            if fields[1] != me:
                continue
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        role = "dev_server" if b"start-dev" in cmd else "helpers" if b"spawn_main" in cmd \
            else None
        if role:
            out[role] += (int(fields[11]) + int(fields[12])) / tick
    return out


async def many(client: Client, specs: list[JobSpec], queue: str) -> dict[str, Any]:
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    runs = await asyncio.gather(*(run_one(client, s, queue, with_history=False) for s in specs))
    wall = time.perf_counter() - t0
    cpu1 = cpu_seconds()
    walls = sorted(r["wall_s"] for r in runs)
    return {"jobs": len(specs), "wall_s": round(wall, 3),
            "jobs_per_s": round(len(specs) / wall, 2),
            "job_wall_p50_s": round(walls[len(walls) // 2], 3),
            "job_wall_max_s": round(walls[-1], 3),
            "cpu_s": {k: round(cpu1[k] - cpu0[k], 2) for k in cpu0}}


async def with_worker_processes(client: Client, base: JobSpec, home: Path, n_jobs: int,
                                n_procs: int, store_url: str) -> dict[str, Any]:
    """The same concurrent run served by ``n_procs`` separate ``worker.py`` processes."""
    queue = f"bench-procs-{uuid.uuid4().hex[:6]}"
    address = client.service_client.config.target_host
    root = Path(__file__).resolve().parents[1]
    # the example's workspace is under examples/: a root of these workers too
    procs = [subprocess.Popen([sys.executable, str(root / "worker.py"), "--address", address,
                               "--task-queue", queue, "--store-url", store_url,
                               "--source-root", str(root / "examples")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(n_procs)]
    try:
        await run_one(client, make_specs(base, 1, home, "pwarm")[0], queue)
        result = await many(client, make_specs(base, n_jobs, home, "procs"), queue)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(30)
    return {"worker_processes": n_procs, **result}


async def main(n_jobs: int, max_activities: int = 100, store_url: str | None = None,
               worker_processes: int = 0, helper_processes: int | None = None) -> dict[str, Any]:
    helpers = (default_helper_processes(Settings.from_env(os.environ))
               if helper_processes is None else helper_processes)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        os.environ["PRESSROOM_HOME"] = str(home)
        os.environ["PRESSROOM_FIXTURES"] = str(home / "fixtures")
        from rich.console import Console

        _build_fixtures(Console(file=open(os.devnull, "w")), Settings.from_env(os.environ))
        # the example job's research loop; the no-op worker runs the same workflow with
        # one turn of notes (its figures are bare Temporal's), and the loop's own cost per
        # turn is measured by bench/research_loop.py
        base = with_bench_reviewer(load_job_spec(EXAMPLE_JOB))
        turns = [1]  # the no-op job's research turns: the real job's, once it has run
        env = await start_quiet_dev_server()
        settings = with_examples(Settings.from_env(os.environ))  # the example's workspace
        runtime = build_runtime(store_url or f"sqlite+aiosqlite:///{home / 'store.db'}",
                                locations=settings.locations, roots=PathRoots.of(settings),
                                helper_processes=helpers)
        real_q, noop_q = f"bench-real-{uuid.uuid4().hex[:6]}", f"bench-noop-{uuid.uuid4().hex[:6]}"
        try:
            async with build_worker(env.client, runtime, task_queue=real_q,
                                    max_concurrent_activities=max_activities), Worker(
                    env.client, task_queue=noop_q, workflows=[ResearchJobWorkflow],
                    activities=noop_activities([t.name for t in base.topics], turns),
                    workflow_runner=WORKFLOW_RUNNER,
                    workflow_failure_exception_types=list(WORKFLOW_FAILURE_EXCEPTION_TYPES),
                    max_concurrent_activities=100):
                # one warm-up job per worker: each loads its workflow sandbox on first use;
                # the real one also says how many research turns the no-op job takes
                warm = await run_one(env.client, make_specs(base, 1, home, "warm")[0], real_q)
                turns[0] = warm["research_turns"]
                await run_one(env.client, make_specs(base, 1, home, "noopwarm")[0], noop_q)
                one = await run_one(env.client, make_specs(base, 1, home, "one")[0], real_q)
                noop_one = await run_one(env.client, make_specs(base, 1, home, "noop1")[0],
                                         noop_q)
                real = await many(env.client, make_specs(base, n_jobs, home, "real"), real_q)
                bare = await many(env.client, make_specs(base, n_jobs, home, "noop"), noop_q)
            procs = None
            if worker_processes:
                procs = await with_worker_processes(
                    env.client, base, home, n_jobs, worker_processes,
                    store_url or f"sqlite+aiosqlite:///{home / 'store.db'}")
        finally:
            await runtime.close()
            await env.shutdown()
    return {
        "benchmark": "durable_jobs",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "max_concurrent_activities": max_activities,
        "helper_processes": helpers,
        "store": "postgresql" if store_url and store_url.startswith("postgres") else "sqlite",
        "job": "examples/job.yaml (2 git repos, 1 doc folder, 1 web page, plan.md), extractive",
        "one_job": {"wall_s": round(one["wall_s"], 3), "stages_s": stage_times(one["history"]),
                    "history_bytes": one["history_bytes"],
                    "history_events": len(one["history"].events)},
        "one_job_noop_baseline": {"wall_s": round(noop_one["wall_s"], 3),
                                  "history_bytes": noop_one["history_bytes"]},
        "concurrent": {"pressroom": real, "noop_baseline": bare,
                       "ratio_wall": round(real["wall_s"] / bare["wall_s"], 2),
                       "target_ratio": 1.5,
                       **({"pressroom_worker_processes": procs,
                           "ratio_wall_worker_processes":
                               round(procs["wall_s"] / bare["wall_s"], 2)} if procs else {})},
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="5 concurrent jobs")
    parser.add_argument("--max-activities", type=int, default=100,
                        help="max concurrent activities of the Pressroom worker")
    parser.add_argument("--worker-processes", type=int, default=0,
                        help="also run the concurrent jobs on N separate worker processes")
    parser.add_argument("--helper-processes", type=int, default=None,
                        help="context-assembly helper processes of the Pressroom worker "
                             "(default: what `pressroom worker` uses on this machine)")
    parser.add_argument("--store-url", default=None,
                        help="artifact store URL (default: SQLite in a temp dir); a "
                             "PostgreSQL database must be migrated and empty")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(5 if args.quick else args.jobs, args.max_activities,
                                      args.store_url, args.worker_processes,
                                      args.helper_processes)), indent=2))
