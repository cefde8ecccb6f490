"""CPU-bound activity bodies in helper processes (``activities.offload``): a job whose
assemblies and extractive draft all run in a helper, failures keeping their type across the
process boundary, a dead helper costing one retried attempt (not the worker), helpers
dying with a SIGKILLed worker and leaving Ctrl-C to their worker, and only CPU-bound
providers drafting there.

Real dev server, real spawned helper processes, real SQLite store; the extractive provider.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.exceptions import ApplicationError

from activities import context_activity
from activities import decide as decide_module
from activities import draft as draft_module
from activities.runtime import ActivityRuntime, principal_of
from contracts.activity_messages import (
    ArtifactRef,
    AssembleContextInput,
    ContextRef,
    JobRef,
    StepState,
)
from contracts.failures import classify
from contracts.job_spec import JobSpec
from settings import Settings
from tests.waiting import signal_ignored, wait_for
from tests.workflows.jobkit import (
    alive,
    children,
    cmdline,
    published_files,
    review,
    roots_for,
    running_worker,
    start_job,
    wait_status,
)
from worker import build_helper_pool, build_runtime

#: what source-location placeholders stand for here (as a worker started now is told)
LOCAL = Settings.from_env(os.environ).locations

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


@pytest_asyncio.fixture(loop_scope="session")
async def helper_runtime(store_url: str, tmp_path: Path) -> AsyncIterator[ActivityRuntime]:
    rt = build_runtime(store_url, locations=LOCAL, roots=roots_for(tmp_path),
                       helper_processes=1)
    try:
        yield rt
    finally:
        await rt.close()


async def test_job_assembles_in_a_helper_and_publishes(
        client: Any, helper_runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    def not_here(*_: Any) -> Any:
        raise AssertionError("a CPU-bound activity body ran in the worker process")

    # Only this process is patched: the job can publish only if every step assembled, and
    # the extractive provider drafted, in the helper.
    monkeypatch.setattr(context_activity, "assemble_context", not_here)
    monkeypatch.setattr(draft_module, "draft", not_here)
    monkeypatch.setattr(decide_module, "decide", not_here)
    spec = make_spec()
    async with running_worker(client, helper_runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"awaiting_review"})
        await review(client, spec.job_id, "approve", reviewer="alice")
        result = await handle.result()
    assert result.status == "published"
    assert len(published_files(spec)) == 1
    rt = ActivityRuntime(helper_runtime.store_url, locations=LOCAL)
    try:
        store = await rt.store()
        manifests = [await store.get_manifest(m, principal=principal_of(spec))
                     for m in result.manifest_ids]
    finally:
        await rt.close()
    # written by the helper, read and verified (seal re-hashed) by this process's store
    stages = [m["stage"] for m in manifests]
    assert stages[0] == "plan" and stages[-2:] == ["draft", "publish"]
    assert set(stages[1:-2]) == {"research"} and len(stages) >= 6  # several research turns
    assert all(m["status"] == "ready" and m["serialized_request"]["hash"] for m in manifests)


def _bad_input(spec: JobSpec) -> AssembleContextInput:
    """A step naming a job spec revision that was never stored."""
    ref = ArtifactRef(kind="job_spec", artifact_id=f"{spec.job_id}.spec", revision=7,
                      content_hash="sha256:" + "0" * 64)
    job = JobRef(job_id=spec.job_id, spec=ref, principal_id=spec.principal.principal_id,
                 tenant=spec.scope.tenant, project=spec.scope.project)
    return AssembleContextInput(job=job, step_id="s-1", stage="plan",
                                as_of="2026-01-01T00:00:00+00:00", state=StepState(job_spec=ref))


async def test_a_failure_in_a_helper_keeps_its_type(
        store_url: str, make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec()
    inp = _bad_input(spec)
    here = ActivityRuntime(store_url, locations=LOCAL)
    try:
        with pytest.raises(Exception) as local:
            await context_activity.assemble_context(here, inp)
    finally:
        await here.close()
    pool = build_helper_pool(store_url, 1, locations=LOCAL)
    try:
        with pytest.raises(ApplicationError) as remote:
            await pool.run("assemble_context", inp, ContextRef)
    finally:
        await asyncio.to_thread(pool.close)
    # as the worker's interceptor would report it in-process: a permanent error is marked
    # non-retryable (contracts/failures.py), under its own type name, its message once
    classified = classify(local.value)
    assert remote.value.type == type(local.value).__name__
    assert str(local.value) in remote.value.message
    assert not remote.value.message.startswith(f"{remote.value.type}:")
    assert remote.value.non_retryable == bool(
        getattr(classified or local.value, "non_retryable", False))


async def test_only_allow_listed_activities_run_in_a_helper(store_url: str) -> None:
    pool = build_helper_pool(store_url, 1, locations=LOCAL)
    try:
        with pytest.raises(ValueError, match="cannot run in a helper"):
            await pool.run("research", ContextRef(manifest_id="m", step_id="s", stage="plan",
                                                 status="ready"), ContextRef)
    finally:
        await asyncio.to_thread(pool.close)
    with pytest.raises(ValueError, match="at least 1"):
        build_helper_pool(store_url, 0, locations=LOCAL)


async def test_a_killed_helper_fails_one_attempt_then_a_fresh_one_serves(
        store_url: str, make_spec: Callable[..., JobSpec]) -> None:
    inp = _bad_input(make_spec())
    pool = build_helper_pool(store_url, 1, locations=LOCAL)
    try:
        with pytest.raises(ApplicationError):  # the helper is up and answering
            await pool.run("assemble_context", inp, ContextRef)
        [helper] = {p for p in children(os.getpid()) if "spawn_main" in cmdline(p)}
        os.kill(helper, signal.SIGKILL)
        with pytest.raises(ApplicationError) as died:
            await pool.run("assemble_context", inp, ContextRef)
        assert died.value.type == "HelperProcessDied" and not died.value.non_retryable
        with pytest.raises(ApplicationError) as again:  # a fresh helper answers
            await pool.run("assemble_context", inp, ContextRef)
        assert again.value.type != "HelperProcessDied"
    finally:
        await asyncio.to_thread(pool.close)


async def test_helpers_die_with_a_sigkilled_worker(tmp_path: Path) -> None:
    """A worker process holding a pool is SIGKILLed: its helpers exit too (no orphan keeps
    running an activity the server already handed to another worker)."""
    script = tmp_path / "holder.py"
    script.write_text(
        "import sys, time\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
        "if __name__ == '__main__':\n"
        # imported under the guard: a spawned helper re-runs this module as __mp_main__,
        # and must reach its initializer without the worker's imports (as under `pressroom worker`)
        "    from worker import build_helper_pool\n"
        f"    pool = build_helper_pool('sqlite+aiosqlite:///{tmp_path / 's.db'}', 2,\n"
        "                             locations={})\n"
        "    print('ready', flush=True)\n"
        "    time.sleep(600)\n", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        deadline = time.monotonic() + 60
        helpers: set[int] = set()
        while time.monotonic() < deadline:
            helpers = {p for p in children(proc.pid) if "spawn_main" in cmdline(p)}
            if len(helpers) == 2:
                break
            await asyncio.sleep(0.1)
        assert len(helpers) == 2, helpers
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(alive(p) for p in helpers):
            await asyncio.sleep(0.1)
        assert not any(alive(p) for p in helpers)
    finally:
        if proc.poll() is None:
            proc.kill()



async def test_ctrl_c_leaves_helpers_to_their_worker(tmp_path: Path) -> None:
    """Ctrl-C signals the whole process group; the worker closes its helpers itself, and
    no helper dies on its own or prints a KeyboardInterrupt traceback."""
    script = tmp_path / "holder.py"
    script.write_text(
        "import signal, sys, time\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
        "if __name__ == '__main__':\n"
        # imported under the guard: a spawned helper re-runs this module as __mp_main__,
        # and must reach its initializer without the worker's imports (as under `pressroom worker`)
        "    from worker import build_helper_pool\n"
        f"    pool = build_helper_pool('sqlite+aiosqlite:///{tmp_path / 's.db'}', 1,\n"
        "                             locations={})\n"
        "    def stop(*_):\n"
        "        pool.close()\n"
        "        print('closed', flush=True)\n"
        "        sys.exit(0)\n"
        "    signal.signal(signal.SIGINT, stop)\n"
        "    print('ready', flush=True)\n"
        "    time.sleep(600)\n", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        helpers = await wait_for(
            lambda: {p for p in children(proc.pid) if "spawn_main" in cmdline(p)}, 60,
            "a helper process started")
        # the helper's initializer ignores SIGINT first thing (activities.offload): until
        # then a Ctrl-C would kill it mid-bootstrap with a KeyboardInterrupt traceback
        await wait_for(lambda: all(signal_ignored(p, signal.SIGINT) for p in helpers), 60,
                       "the helper process ignores SIGINT (its initializer ran)")
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and b"closed" in out
    assert b"Traceback" not in err and b"KeyboardInterrupt" not in err, err.decode()[-2000:]


async def test_only_a_cpu_bound_provider_drafts_in_a_helper() -> None:
    """A remote model's draft waits seconds on the network; in a helper, which runs one
    call at a time, it would hold every other job's assembly."""
    from activities.providers import PROVIDERS

    assert {name for name, cls in PROVIDERS.items() if getattr(cls, "cpu_bound", False)} \
        == {"extractive"}
