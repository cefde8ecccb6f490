"""Record the histories of the job's main paths into ``tests/histories/*.json``.

Run ``.venv/bin/python -m tests.histories.record`` after an intentional, versioned change
to the workflow; ``test_replay.py`` replays every recorded history against the current
``ResearchJobWorkflow`` so an accidental non-deterministic change fails the build.

Paths: approve (happy), request changes → revise → approve, reject, review timeout →
expired, blocked → resolve → approve — recorded before the research loop — and the loop's
own: approve, request changes → research again → revise → approve, and a token budget
exhausted → accept what was gathered → approve; and the signed commands': an unsigned
resolve signal dropped then a signed resolution → approve, and a signed cancel. Each runs
for real (dev server, worker, SQLite store, document sources, extractive provider) in a
temporary directory.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from activities.runtime import ActivityRuntime
from contracts.job_spec import JobSpec, parse_job_spec
from contracts.workflow_messages import ResolveInput
from settings import Settings
from tests.workflows.jobkit import (
    job_dict,
    resolve,
    review,
    reviewer_key,
    roots_for,
    wait_status,
)
from worker import build_worker
from workflows import client as jobs
from workflows.research_job import ResearchJobWorkflow
from workflows.temporal_config import DATA_CONVERTER, temporal_binary

#: what source-location placeholders stand for here (as a worker started now is told)
LOCAL = Settings.from_env(os.environ).locations

HERE = Path(__file__).resolve().parent

Scenario = Callable[[Client, WorkflowHandle[Any, Any], JobSpec], Awaitable[None]]


async def _approve(client: Client, handle: WorkflowHandle[Any, Any], spec: JobSpec) -> None:
    await wait_status(handle, {"awaiting_review"})
    await review(client, spec.job_id, "approve", reviewer="alice")


async def _revise(client: Client, handle: WorkflowHandle[Any, Any], spec: JobSpec) -> None:
    await wait_status(handle, {"awaiting_review"})
    await review(client, spec.job_id, "request_changes", reviewer="alice",
                          comments=["cover the maximum delay"])
    await _approve(client, handle, spec)


async def _reject(client: Client, handle: WorkflowHandle[Any, Any], spec: JobSpec) -> None:
    await wait_status(handle, {"awaiting_review"})
    await review(client, spec.job_id, "reject", reviewer="bob")


async def _expire(client: Client, handle: WorkflowHandle[Any, Any], spec: JobSpec) -> None:
    return None


async def _blocked(client: Client, handle: WorkflowHandle[Any, Any], spec: JobSpec) -> None:
    await wait_status(handle, {"blocked"})
    await resolve(client, spec.job_id,
                      ResolveInput(action="raise_budget", context_limit=32000))
    await _approve(client, handle, spec)


async def _budget_then_accept(client: Client, handle: WorkflowHandle[Any, Any],
                              spec: JobSpec) -> None:
    st = await wait_status(handle, {"blocked"})
    assert st.blocked_reason and st.blocked_reason.startswith("budget_exhausted"), st
    await resolve(client, spec.job_id, ResolveInput(action="accept_gathered"))
    await _approve(client, handle, spec)


async def _signed_resolve(client: Client, handle: WorkflowHandle[Any, Any],
                          spec: JobSpec) -> None:
    """An unsigned resolve signal (dropped and counted under the ``signed-commands`` patch),
    then the operator's signed ``resolve_blocked`` Update, then an approval."""
    await wait_status(handle, {"blocked"})
    raise_limit = ResolveInput(action="raise_budget", context_limit=32000)
    await handle.signal(ResearchJobWorkflow.resolve, raise_limit)
    await resolve(client, spec.job_id, raise_limit, signer="ops")
    await _approve(client, handle, spec)


async def _signed_cancel(client: Client, handle: WorkflowHandle[Any, Any],
                         spec: JobSpec) -> None:
    await wait_status(handle, {"awaiting_review"})
    await jobs.cancel_job(client, spec.job_id, signer="ops", key=reviewer_key("ops"),
                          reason="superseded")


#: the first five were recorded before the research loop (they replay the one-shot
#: acquisition behind the ``research-loop`` patch); ``loop_*`` run the loop
ACQUIRE_ERA = {"approve", "revise_then_approve", "reject", "review_timeout",
               "blocked_then_resolved"}
SCENARIOS: dict[str, tuple[dict[str, Any], Scenario]] = {
    "approve": ({}, _approve),
    "revise_then_approve": ({}, _revise),
    "reject": ({}, _reject),
    "review_timeout": ({"review": {"reviewers": ["alice"], "timeout": "2s"}}, _expire),
    "blocked_then_resolved": ({"model": {"context_limit": 5000}}, _blocked),
    "loop_approve": ({}, _approve),
    "loop_revise_then_approve": ({}, _revise),
    "loop_budget_then_accept": ({"research": {"token_budget": 5000}}, _budget_then_accept),
    "loop_signed_resolve": ({"model": {"context_limit": 5000}, "review": {
        "reviewers": ["alice"], "operators": ["ops"], "timeout": "10m"}}, _signed_resolve),
    "loop_signed_cancel": ({"review": {"reviewers": ["alice"], "operators": ["ops"],
                                       "timeout": "10m"}}, _signed_cancel),
}


def _docs(root: Path) -> Path:
    d = root / "docs"
    d.mkdir()
    (d / "retries.md").write_text("# Retries\n\nThe client retries with exponential backoff.\n",
                                  encoding="utf-8")
    (d / "resume.md").write_text("# Resume\n\nA download can resume from its offset.\n",
                                 encoding="utf-8")
    return d


async def record(out_dir: Path = HERE, only: set[str] | None = None) -> list[Path]:
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=str(temporal_binary()),
                                                data_converter=DATA_CONVERTER,
                                                dev_server_log_level="error")
    written = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            docs = _docs(root)
            runtime = ActivityRuntime(f"sqlite+aiosqlite:///{root / 'store.db'}", locations=LOCAL,
                                      roots=roots_for(root))
            queue = f"record-{uuid.uuid4().hex[:8]}"
            async with build_worker(env.client, runtime, task_queue=queue):
                for name, (overrides, scenario) in SCENARIOS.items():
                    if only and name not in only:
                        continue
                    data = job_dict(root, docs, job_id=f"history-{name.replace('_', '-')}",
                                    **overrides)
                    spec = parse_job_spec(data)
                    handle = await jobs.start_job(env.client, spec, task_queue=queue)
                    await scenario(env.client, handle, spec)
                    await handle.result()
                    history = await handle.fetch_history()
                    path = out_dir / f"{name}.json"
                    path.write_text(json.dumps(json.loads(history.to_json()), indent=1) + "\n",
                                    encoding="utf-8")
                    written.append(path)
            await runtime.close()
    finally:
        await env.shutdown()
    return written


if __name__ == "__main__":
    import sys

    # ``python -m tests.histories.record loop_approve ...`` re-records only those; the
    # acquisition-era histories cannot be re-recorded (today's code runs the loop there)
    names = set(sys.argv[1:]) or set(SCENARIOS) - ACQUIRE_ERA
    for p in asyncio.run(record(only=names)):
        print(p)
