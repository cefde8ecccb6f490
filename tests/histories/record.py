"""Record the histories of the job's main paths into ``tests/histories/*.json``.

Run ``.venv/bin/python -m tests.histories.record`` after an intentional, versioned change
to the workflow; ``test_replay.py`` replays every recorded history against the current
``ResearchJobWorkflow`` so an accidental non-deterministic change fails the build.

Paths: approve (happy), request changes → revise → approve, reject, review timeout →
expired, blocked → resolve → approve — recorded before the research loop — and the loop's
own: approve, one call a turn long enough for the research log to fold (the default
layout) → approve, request changes → research again → revise → approve, and a token budget
exhausted → accept what was gathered → approve, and a cost budget exhausted (the
``cost-budget`` patch; the offline agent priced by ``TEST_PRICES``) → a signed
``--cost-budget`` raise → research on → approve; and the signed commands': an unsigned
resolve signal dropped then a signed resolution → approve, and a signed cancel; and the
bounded retries' (``needs-operator`` and ``continue-as-new-after-resolve`` patches): a
publish that fails permanently → needs_operator → a signed retry → published, a draft that
fails → needs_operator → abandoned, a decision that cannot be recorded → refused → another
reviewer approves, and a block resolved again and again until the job continues as new
(the first run is recorded); and the ``search-attributes`` patch's: a job that blocks, is
resolved (signed) and approved, upserting its search attributes at every change; and a
fork's (docs/architecture.md#forking-a-job): a parent researched to its review, forked at
research turn 1 with a changed question (signed, ``cli.fork_command.fork_job``), the fork's
``fork_state`` and research from turn 2, its own review approved and published (the
fork's history is recorded, not the parent's). Each runs
for real (dev server, worker, SQLite store, document sources, extractive provider) in a
temporary directory; the failures come from the test hook ``PRESSROOM_TEST_FAIL_AT``
(activities/fail_hook.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from activities.fail_hook import FAIL_ENV
from activities.runtime import ActivityRuntime
from client import jobs
from client.errors import ReviewRejected
from contracts.job_spec import JobSpec, parse_job_spec
from contracts.pricing import load_prices
from contracts.workflow_messages import ResolveInput
from settings import Settings
from tests.waiting import wait_for
from tests.workflows.jobkit import (
    job_dict,
    resolve,
    review,
    reviewer_key,
    roots_for,
    wait_status,
)
from worker import build_worker
from workflows.research_job import ResearchJobWorkflow
from workflows.temporal_config import DATA_CONVERTER, temporal_binary
from workflows.visibility import SEARCH_ATTRIBUTES

#: what source-location placeholders stand for here (as a worker started now is told)
LOCAL = Settings.from_env(os.environ).locations

HERE = Path(__file__).resolve().parent

#: the offline agent priced like a mid-range model, so a cost budget can run out
TEST_PRICES = """\
as_of: "2026-01-01"
models:
  extractive:
    extractive-v1: {input: 10.0, cached_input: 1.0, cache_write: 12.5, output: 30.0,
                    source: "test table"}
"""

#: a scenario drives the job; it returns the handle whose history is recorded when that is
#: not the job it was given (a fork's)
Scenario = Callable[[Client, WorkflowHandle[Any, Any], JobSpec],
                    Awaitable[WorkflowHandle[Any, Any] | None]]


@dataclass
class _Recording:
    """What a scenario that starts another job needs: the store and the worker's queue."""

    store_url: str = ""
    task_queue: str = ""


_RECORDING = _Recording()


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


async def _cost_then_raise(client: Client, handle: WorkflowHandle[Any, Any],
                           spec: JobSpec) -> None:
    st = await wait_status(handle, {"blocked"})
    assert st.blocked_reason and "cost budget used" in st.blocked_reason, st
    await resolve(client, spec.job_id,
                  ResolveInput(action="raise_budget", cost_budget_micro_usd=100_000_000))
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


@contextlib.contextmanager
def _failing(entry: str) -> Iterator[None]:
    os.environ[FAIL_ENV] = entry  # the worker runs in this process
    try:
        yield
    finally:
        os.environ.pop(FAIL_ENV, None)


async def _needs_operator(handle: WorkflowHandle[Any, Any]) -> None:
    """Until the job needs an operator and no step is in flight (every failed one waits)."""
    async def parked() -> bool:
        status = await handle.query(ResearchJobWorkflow.status)
        return status.status == "needs_operator" and not (
            await handle.describe()).raw_description.pending_activities

    await wait_for(parked, 120, "the job needing an operator")


async def _publish_fails_then_retry(client: Client, handle: WorkflowHandle[Any, Any],
                                    spec: JobSpec) -> None:
    await wait_status(handle, {"awaiting_review"})
    with _failing("publish:ReadOnlyFileSystem"):
        await review(client, spec.job_id, "approve", reviewer="alice")
        await _needs_operator(handle)
    await resolve(client, spec.job_id, ResolveInput(action="retry"), signer="ops")


async def _draft_fails_then_abandon(client: Client, handle: WorkflowHandle[Any, Any],
                                    spec: JobSpec) -> None:
    with _failing("draft:NoSpaceLeft"):
        await _needs_operator(handle)
        await resolve(client, spec.job_id, ResolveInput(action="abandon"), signer="ops")


async def _review_not_recorded(client: Client, handle: WorkflowHandle[Any, Any],
                               spec: JobSpec) -> None:
    await wait_status(handle, {"awaiting_review"})
    with _failing("record_review:ValidationError"):
        try:
            await review(client, spec.job_id, "approve", reviewer="alice")
        except ReviewRejected:
            pass
        else:
            raise AssertionError("a decision that could not be recorded was accepted")
    await review(client, spec.job_id, "approve", reviewer="bob")


async def _rollover_after_resolve(client: Client, handle: WorkflowHandle[Any, Any],
                                  spec: JobSpec) -> None:
    await wait_status(handle, {"blocked"})
    first_run = (await handle.describe()).run_id
    latest = client.get_workflow_handle(spec.job_id)
    for _ in range(10):
        await resolve(client, spec.job_id, ResolveInput(action="retry"), signer="ops")
        await wait_status(latest, {"blocked"})
        if (await latest.describe()).run_id != first_run:
            break
    else:
        raise AssertionError("the job never continued as new")
    await resolve(client, spec.job_id, ResolveInput(action="raise_budget", context_limit=32000),
                  signer="ops")
    await wait_status(latest, {"awaiting_review"})
    await review(client, spec.job_id, "approve", reviewer="alice")


async def _visible_blocked_then_approve(client: Client, handle: WorkflowHandle[Any, Any],
                                        spec: JobSpec) -> None:
    await wait_status(handle, {"blocked"})
    await resolve(client, spec.job_id, ResolveInput(action="raise_budget", context_limit=32000),
                  signer="ops")
    await _approve(client, handle, spec)


async def _fork_then_approve(client: Client, handle: WorkflowHandle[Any, Any],
                             spec: JobSpec) -> WorkflowHandle[Any, Any]:
    """The parent to its review; a signed fork of its turn 1 with a new question; the
    fork's review approved and published; the parent rejected (it ends too)."""
    from cli.fork_command import EditFlags, fork_job

    await wait_status(handle, {"awaiting_review"})
    fork_id = f"{spec.job_id}-fork"
    await fork_job(client, _RECORDING.store_url, spec.job_id, turn=1, new_id=fork_id,
                   flags=EditFlags(add_sources=[], refresh_sources=[], drop_sources=[],
                                   drop_notes=[], question="How does the client retry, and "
                                   "how does a download resume after it stops?"),
                   signer="alice", key=reviewer_key("alice"), task_queue=_RECORDING.task_queue)
    forked = client.get_workflow_handle(fork_id)
    await wait_status(forked, {"awaiting_review"})
    await review(client, fork_id, "approve", reviewer="alice")
    await review(client, spec.job_id, "reject", reviewer="bob")
    return forked


_OPS = {"reviewers": ["alice", "bob"], "operators": ["ops"], "timeout": "10m"}
#: scenarios whose first run is recorded (it continued as new where the patch says)
FIRST_RUN = {"loop_rollover_after_resolve"}

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
    # one call a turn: long enough for the research log to fold (every 10 turns)
    "loop_research_log_approve": ({"research": {"max_calls_per_turn": 1}, "topics": [
        {"name": "retries", "terms": ["retry", "backoff", "exponential", "client"]},
        {"name": "resume", "terms": ["resume", "offset", "download"]}]}, _approve),
    "loop_revise_then_approve": ({}, _revise),
    "loop_budget_then_accept": ({"research": {"token_budget": 5000}}, _budget_then_accept),
    "loop_cost_budget_then_raise": ({"research": {"cost_budget_usd": "0.05"}},
                                    _cost_then_raise),
    "loop_signed_resolve": ({"model": {"context_limit": 5000}, "review": {
        "reviewers": ["alice"], "operators": ["ops"], "timeout": "10m"}}, _signed_resolve),
    "loop_signed_cancel": ({"review": {"reviewers": ["alice"], "operators": ["ops"],
                                       "timeout": "10m"}}, _signed_cancel),
    "loop_needs_operator_retry": ({"review": _OPS}, _publish_fails_then_retry),
    "loop_needs_operator_abandon": ({"review": _OPS}, _draft_fails_then_abandon),
    "loop_review_not_recorded": ({"review": _OPS}, _review_not_recorded),
    "loop_rollover_after_resolve": ({"review": _OPS, "model": {"context_limit": 5000},
                                     "runtime": {"heartbeat_timeout": "3s",
                                                 "activity_timeout": "2m",
                                                 "continue_as_new_events": 50}},
                                    _rollover_after_resolve),
    "loop_search_attributes": ({"review": _OPS, "model": {"context_limit": 5000}},
                               _visible_blocked_then_approve),
    "loop_fork_approve": ({"review": _OPS}, _fork_then_approve),
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
                                                dev_server_log_level="error",
                                                search_attributes=SEARCH_ATTRIBUTES)
    written = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            docs = _docs(root)
            (root / "prices.yaml").write_text(TEST_PRICES, encoding="utf-8")
            runtime = ActivityRuntime(f"sqlite+aiosqlite:///{root / 'store.db'}", locations=LOCAL,
                                      roots=roots_for(root),
                                      prices=load_prices(root / "prices.yaml"))
            queue = f"record-{uuid.uuid4().hex[:8]}"
            _RECORDING.store_url = f"sqlite+aiosqlite:///{root / 'store.db'}"
            _RECORDING.task_queue = queue
            async with build_worker(env.client, runtime, task_queue=queue):
                for name, (overrides, scenario) in SCENARIOS.items():
                    if only and name not in only:
                        continue
                    data = job_dict(root, docs, job_id=f"history-{name.replace('_', '-')}",
                                    **overrides)
                    spec = parse_job_spec(data)
                    handle = await jobs.start_job(env.client, spec, task_queue=queue)
                    handle = await scenario(env.client, handle, spec) or handle
                    with contextlib.suppress(WorkflowFailureError):  # an abandoned job fails
                        await handle.result()
                    if name in FIRST_RUN:  # the run that continued as new, not the last
                        handle = env.client.get_workflow_handle(
                            spec.job_id, run_id=handle.first_execution_run_id)
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
