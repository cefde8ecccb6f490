"""Tenants bound to their own roots, and a worker that accepts only registered reviewers,
through real workers on the session's Temporal dev server (SECURITY.md, "No read outside
the roots" and "No publish without a verified, bound approval").

Two tenants' folders lie under one shared root, as they would on one volume: before tenant
roots could be bound, a job of either tenant could name the other's folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from activities.runtime import ActivityRuntime
from client import jobs
from contracts.job_spec import parse_job_spec
from contracts.path_safety import PathRoots
from contracts.signing import public_key_text
from settings import Settings
from tests.waiting import wait_for
from tests.workflows.jobkit import (
    job_dict,
    reviewer_key,
    roots_env,
    running_worker,
    start_job,
    start_worker_process,
    wait_status,
    write_registry,
)
from tests.workflows.test_path_roots import (
    LOCAL,
    approve,
    never_started,
    one_line_error,
    pressroom,
    wait_ended,
    write_job,
)

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


def two_tenants(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """Folders of tenants ``alpha`` and ``beta`` under one shared root, each with its
    documents and its publish folder, and the environment that binds them."""
    shared = tmp_path / "shared"
    folders = []
    for tenant, text in (("alpha", "retry with backoff, alpha's own notes"),
                         ("beta", "beta's confidential retry plan: codename heron")):
        folder = shared / tenant
        (folder / "docs").mkdir(parents=True)
        (folder / "published").mkdir()
        (folder / "docs" / "retries.md").write_text(f"# Retries\n\n{text} (resume)\n",
                                                    encoding="utf-8")
        folders.append(folder)
    env = {"PRESSROOM_TENANT_SOURCE_ROOTS": f"alpha={folders[0]};beta={folders[1]}",
           "PRESSROOM_TENANT_PUBLISH_ROOTS": (f"alpha={folders[0] / 'published'};"
                                              f"beta={folders[1] / 'published'}")}
    return folders[0], folders[1], env


def alpha_job(alpha: Path, docs: Path, destination: Path, **extra: Any) -> dict[str, Any]:
    job = job_dict(alpha, docs, destination=str(destination),
                   scope={"tenant": "alpha", "project": "docs", "task": "t1"}, **extra)
    return job


async def test_a_tenant_s_job_reads_and_publishes_only_inside_its_own_roots(
        client: Any, task_queue: str, tmp_path: Path) -> None:
    """A real worker process bound to two tenants (``PRESSROOM_TENANT_*_ROOTS``), both
    folders inside its shared source root: alpha's job naming beta's documents, or
    publishing into beta's folder, fails its first activity with one line naming the path
    and both tenants; a job of a tenant bound to nothing is refused; alpha's job over its
    own folder is published there. Before: every one of them ran, and alpha's draft quoted
    beta's documents."""
    alpha, beta, env = two_tenants(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    store_url = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    address = client.service_client.config.target_host
    log = tmp_path / "worker.log"
    worker = start_worker_process({**roots_env(), "PRESSROOM_HOME": str(home), **env},
                                  address, task_queue, store_url, log)
    try:
        cases: list[tuple[dict[str, Any], tuple[str, ...]]] = [
            (alpha_job(alpha, beta / "docs", alpha / "published"),
             (f"source 'handbook' path {beta / 'docs'}", "outside tenant 'alpha'",
              "tenant 'beta'")),
            (alpha_job(alpha, alpha / "docs", beta / "published"),
             (f"destination {beta / 'published'}", "outside tenant 'alpha'",
              "tenant 'beta'")),
            ({**alpha_job(alpha, alpha / "docs", alpha / "published"),
              "scope": {"tenant": "gamma", "project": "docs", "task": "t1"}},
             ("outside tenant 'gamma'", "(none)", "tenant 'alpha'")),
        ]
        for data, needles in cases:
            spec = parse_job_spec(data)
            handle = await start_job(client, spec, task_queue)
            view = await wait_ended(client, spec.job_id)
            assert view.execution == "FAILED", view.summary
            for needle in needles:
                assert needle in view.summary, view.summary
            assert "heron" not in (await handle.fetch_history()).to_json()
        assert list((beta / "published").iterdir()) == []
        spec = parse_job_spec(alpha_job(alpha, alpha / "docs", alpha / "published"))
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"awaiting_review"})
        await approve(client, spec.job_id)
        result = await handle.result()
        assert result.status == "published", result
        article = alpha / "published" / spec.job_id / f"{spec.job_id}.md"
        assert article.is_file() and "heron" not in article.read_text(encoding="utf-8")
    finally:
        worker.terminate()
        worker.wait(30)


async def test_pressroom_run_refuses_another_tenant_s_folder_at_submit(
        temporal_env: Any, tmp_path: Path, task_queue: str) -> None:
    """``pressroom run`` asks a worker bound to the tenants (a real process, its shared
    root holding both tenants' folders) and refuses alpha's job naming beta's folder
    before anything starts, in one line naming the folder and both tenants (before: the
    job started)."""
    alpha, beta, env = two_tenants(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    client = temporal_env.client
    address = client.service_client.config.target_host
    data = alpha_job(alpha, beta / "docs", alpha / "published")
    job = write_job(alpha, data)
    # the shared root holds both tenants' folders: without the bindings the job started
    shared = str(alpha.parent)
    worker = start_worker_process(
        {**roots_env(), "PRESSROOM_HOME": str(home), **env,
         "PRESSROOM_SOURCE_ROOTS": shared, "PRESSROOM_PUBLISH_ROOTS": shared},
        address, task_queue, f"sqlite+aiosqlite:///{tmp_path / 'store.db'}",
        tmp_path / "worker.log")
    try:
        await wait_for(lambda: jobs.has_pollers(client, task_queue), 60, "the worker polling")
        rc, _out, err = await pressroom(home, address, "run", str(job), "--task-queue",
                                        task_queue)
        one_line_error(rc, err, str(beta / "docs"), "tenant 'alpha'", "tenant 'beta'")
        await never_started(client, data["job_id"])
    finally:
        worker.terminate()
        worker.wait(30)


@pytest.mark.asyncio(loop_scope="session")
async def test_no_binding_keeps_the_shared_roots(tmp_path: Path) -> None:
    """Without a binding a job's roots are the worker's, whatever its tenant (as before)."""
    roots = PathRoots.of(Settings(home=tmp_path), sources=(tmp_path,), publish=(tmp_path,))
    assert roots.for_tenant("anyone") is roots


async def test_registered_reviewers_only_refuses_a_key_the_registry_does_not_hold(
        client: Any, task_queue: str, tmp_path: Path, docs: Path) -> None:
    """A worker with ``registered_reviewers_only``: a spec pinning a reviewer key of the
    job author's own choosing (``mallory``, not registered) fails at start with one line
    naming the reviewer and the registry; one whose registered reviewer's entry is taken
    out of the registry after start is never published. A spec of registered reviewers
    runs and publishes. Before: the first job reached review with the author's own key."""
    home = tmp_path / "home"
    write_registry(home, "alice", "bob")
    runtime = ActivityRuntime(
        f"sqlite+aiosqlite:///{tmp_path / 'store.db'}",
        locations={**LOCAL, "PRESSROOM_HOME": str(home)},
        roots=PathRoots.of(Settings(home=home), sources=(tmp_path,), publish=(tmp_path,)),
        registered_reviewers_only=True)
    async with running_worker(client, runtime, task_queue):
        spec = parse_job_spec(job_dict(tmp_path, docs,
                                       review={"reviewers": ["alice", "mallory"],
                                               "timeout": "10m"}))
        handle = await start_job(client, spec, task_queue)
        view = await wait_ended(client, spec.job_id)
        assert view.execution == "FAILED", view.summary
        assert "reviewer 'mallory' is not in the reviewer registry" in view.summary
        assert "--registered-reviewers-only" in view.summary
        # alice listed with a key that is not her registered one
        forged = {"name": "alice", "public_key": public_key_text(reviewer_key("mallory"))}
        spec = parse_job_spec(job_dict(tmp_path, docs, review={"reviewers": [forged, "bob"],
                                                               "timeout": "10m"}))
        handle = await start_job(client, spec, task_queue)
        st = await wait_status(handle, {"needs_operator"})
        assert "reviewer 'alice' is pinned to a key other than" in (st.blocked_reason or ""), st
        await handle.terminate("test over")  # its listed alice cannot sign an abandon
        # registered at start, removed before publishing
        spec = parse_job_spec(job_dict(tmp_path, docs))
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"awaiting_review"})
        (home / "reviewers" / "alice.pub").unlink()
        await approve(client, spec.job_id)
        st = await wait_status(handle, {"needs_operator"})
        assert "not in the reviewer registry" in (st.blocked_reason or ""), st
        assert not (tmp_path / "published" / spec.job_id).exists()
        write_registry(home, "alice")
        spec = parse_job_spec(job_dict(tmp_path, docs))
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"awaiting_review"})
        await approve(client, spec.job_id)
        assert (await handle.result()).status == "published"



async def test_the_worker_flags_bind_tenants_and_refuse_a_malformed_binding(
        tmp_path: Path) -> None:
    """``pressroom worker`` and ``worker.py`` take the bindings as flags; a value that is
    not ``TENANT=DIR`` stops them before they connect, naming it."""
    import asyncio
    import sys

    from tests.webconsole.test_accounts import _cli
    from tests.workflows.jobkit import REPO_ROOT

    rc, out, err = await _cli(tmp_path, "worker", "--tenant-source-root", "acme")
    assert rc == 2 and "not TENANT=DIR[:DIR...]: 'acme'" in out + err, (out, err)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(REPO_ROOT / "worker.py"), "--tenant-publish-root", "acme=rel",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _out, raw = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 2
    assert "--tenant-source-root/--tenant-publish-root: not an absolute path: 'rel'" in (
        raw.decode())
