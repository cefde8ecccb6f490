"""Operator-set roots for every path a job names, and errors that never echo a file, through
the real ``pressroom`` CLI and real workers on the session's Temporal dev server.

Each attack is tried where it comes in: at submit (``pressroom run``, a separate process)
and — with the spec started directly through the client, around the CLI's check — on the
worker, which must refuse it again with its own roots (docs/architecture.md#paths-a-job-names).
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from activities.research_tools import run_source_tool
from activities.runtime import ActivityRuntime, principal_of
from client import jobs
from client.errors import JobNotFound
from contracts.job_spec import JobSpec, parse_job_spec
from contracts.path_safety import PathRoots
from contracts.workflow_messages import ResolveInput
from settings import Settings
from tests.secret_files import leaked, write_secret_files
from tests.waiting import wait_for
from tests.workflows.jobkit import (
    REPO_ROOT,
    job_dict,
    loop_tool_history,
    resolve,
    roots_env,
    roots_for,
    running_worker,
    start_job,
    start_worker_process,
    wait_status,
)

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

CLI = [sys.executable, str(REPO_ROOT / "pressroom.py")]
LOCAL = Settings.from_env(os.environ).locations
#: a value only this process's environment holds: /proc/self/environ would show it
MARKER_NAME = "PRESSROOM_PATH_TEST_MARKER"


async def pressroom(home: Path, address: str, *args: str,
                    **env: str) -> tuple[int, str, str]:
    full = {**os.environ, "PRESSROOM_HOME": str(home), "PRESSROOM_TEMPORAL_ADDRESS": address,
            "COLUMNS": "200", **env}
    full.pop("PRESSROOM_DEBUG", None)
    for name in ("PRESSROOM_SOURCE_ROOTS", "PRESSROOM_PUBLISH_ROOTS"):
        if name not in env:
            full.pop(name, None)
    proc = await asyncio.create_subprocess_exec(*CLI, *args, env=full, cwd=REPO_ROOT,
                                                stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def one_line_error(rc: int, err: str, *needles: str) -> str:
    assert rc == 1, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


async def approve(client: Any, job_id: str) -> None:
    """A listed reviewer's approval, as the review tests make one (``jobkit.review``)."""
    from tests.workflows.jobkit import review

    await review(client, job_id, "approve", reviewer="alice")


async def never_started(client: Any, job_id: str) -> None:
    with pytest.raises(JobNotFound):
        await jobs.view_job(client, job_id, worker_grace=0)


async def wait_ended(client: Any, job_id: str, timeout: float = 120.0) -> jobs.JobView:
    """The job's view once it ended. A refused path is permanent: the step gets one
    attempt and the job waits for an operator (``needs_operator: <reason>``); this
    operator abandons it (signed, as the listed reviewer ``alice``), so it ends ``failed``
    with that reason."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        view = await jobs.view_job(client, job_id, worker_grace=5)
        if view.live is not None and view.live.status == "needs_operator":
            await resolve(client, job_id, ResolveInput(action="abandon"), signer="alice")
        elif view.execution != "RUNNING" or asyncio.get_running_loop().time() > deadline:
            return view
        await asyncio.sleep(0.25)


def write_job(folder: Path, data: dict[str, Any], name: str = "job.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside every root of the test (another temporary folder)."""
    folder = tmp_path_factory.mktemp("outside")
    (folder / "secret.md").write_text("# Retries\n\nthe api key is hunter2 (retry)\n",
                                      encoding="utf-8")
    return folder


async def test_pressroom_run_refuses_every_path_outside_its_roots(
        temporal_env: Any, tmp_path: Path, docs: Path, outside: Path, task_queue: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: each of these started a job that read (or wrote) the path. The roots are
    those of the real worker process polling the job's task queue, which ``run`` asks
    (workflows/path_check.py)."""
    client = temporal_env.client
    address = client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv(MARKER_NAME, f"marker-{uuid.uuid4().hex}")
    worker = start_worker_process({"PRESSROOM_HOME": str(home), **roots_env(tmp_path)},
                                  address, task_queue,
                                  f"sqlite+aiosqlite:///{home / 'pressroom.db'}",
                                  tmp_path / "worker.log")
    try:
        await wait_for(lambda: jobs.has_pollers(client, task_queue), 60, "the worker polling")
        await _refused_at_submit(client, address, home, tmp_path, docs, outside, task_queue)
    finally:
        worker.terminate()
        worker.wait(30)


async def _refused_at_submit(client: Any, address: str, home: Path, tmp_path: Path,
                             docs: Path, outside: Path, task_queue: str) -> None:
    (tmp_path / "linked").symlink_to(outside, target_is_directory=True)
    os.mkfifo(tmp_path / "pipe.md")
    cases: list[tuple[dict[str, Any], tuple[str, ...]]] = [
        ({"sources": [{"kind": "document", "name": "env", "path": "/proc/self/environ"}],
          "topics": [{"name": "db", "terms": ["DATABASE_URL", MARKER_NAME]}]},
         ("source 'env' path /proc/self/environ", "/proc")),
        ({"destination": "../../etc"}, ("destination", "outside the publish roots")),
        ({"destination": "linked/articles"}, ("destination", "outside the publish roots")),
        ({"sources": [{"kind": "document", "name": "p", "path": "pipe.md"}]},
         ("source 'p' path", "FIFO")),
        ({"sources": [{"kind": "web_page", "name": "w", "path": "linked/secret.md",
                       "url": "https://x.test/"}]}, ("outside the source roots",)),
        ({"workspace": str(outside)}, ("workspace", "outside the source roots")),
        ({"policy": str(outside / "secret.md")}, ("policy", "outside the source roots")),
    ]
    for i, (change, needles) in enumerate(cases):
        data = {**job_dict(tmp_path, docs), **change, "job_id": f"roots-{i}-{uuid.uuid4().hex[:6]}"}
        job_file = write_job(tmp_path, data, f"job-{i}.yaml")
        rc, out, err = await pressroom(home, address, "run", str(job_file), "--task-queue",
                                       task_queue)
        one_line_error(rc, err, *needles)
        assert os.environ[MARKER_NAME] not in out + err
        await never_started(client, data["job_id"])
    assert list(outside.iterdir()) == [outside / "secret.md"]


async def test_pressroom_run_never_quotes_a_secret_bearing_policy_or_spec(
        temporal_env: Any, tmp_path: Path, docs: Path) -> None:
    """A policy path at a credentials file (JSON, INI, YAML) and a job spec holding secrets
    in bad fields: one line naming the file and field, no secret (before: the YAML error or
    the validation message quoted them)."""
    client = temporal_env.client
    address = client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir()
    secrets = write_secret_files(tmp_path / "creds")
    for kind, path in secrets.items():
        data = {**job_dict(tmp_path, docs), "policy": str(path),
                "job_id": f"policy-{kind}-{uuid.uuid4().hex[:6]}"}
        rc, out, err = await pressroom(home, address, "run", str(write_job(tmp_path, data)))
        line = one_line_error(rc, err, "policy", str(path))
        assert leaked(out + err) == [], line
        await never_started(client, data["job_id"])
    # the job spec itself holding secrets where values are checked
    from tests.secret_files import ACCESS_KEY, SECRET_KEY, TOKEN

    data = job_dict(tmp_path, docs)
    data["review"] = {"reviewers": ["alice"], "timeout": ACCESS_KEY}
    data["sources"] = [{"kind": TOKEN, "name": "x", "path": str(docs)}]
    data[SECRET_KEY] = "surprise"
    rc, out, err = await pressroom(home, address, "run", str(write_job(tmp_path, data)))
    one_line_error(rc, err, "invalid job spec", "field 'review.timeout' (line")
    assert leaked(out + err) == []


async def test_the_worker_refuses_what_submit_would_have(
        client: Any, task_queue: str, tmp_path: Path, docs: Path, outside: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Specs started directly through the client, around ``pressroom run``'s check: the
    worker's own roots refuse them in the first activity, non-retryably, and nothing of
    the path reaches the job's status or its history."""
    marker = f"marker-{uuid.uuid4().hex}"
    monkeypatch.setenv(MARKER_NAME, marker)  # the worker runs in this process
    root = tmp_path / "root"
    root.mkdir()
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text("# Retries\n\nretry with backoff\n", encoding="utf-8")
    os.mkfifo(root / "pipe.md")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    runtime = ActivityRuntime(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}", locations=LOCAL,
                              roots=roots_for(root))
    cases: list[tuple[dict[str, Any], str]] = [
        ({"sources": [{"kind": "document", "name": "env", "path": "/proc/self/environ"}],
          "topics": [{"name": "env", "terms": [MARKER_NAME, "DATABASE_URL"]}]}, "/proc"),
        ({"sources": [{"kind": "document", "name": "p", "path": str(root / "pipe.md")}]},
         "FIFO"),
        ({"destination": str(root / ".." / ".." / "etc")}, "outside the publish roots"),
        ({"destination": str(root / "linked" / "articles")}, "outside the publish roots"),
        ({"workspace": str(outside)}, "outside the source roots"),
        # the fixture's docs are outside this worker's one root
        ({"sources": [{"kind": "document", "name": "d", "path": str(docs)}]},
         "outside the source roots"),
    ]
    async with running_worker(client, runtime, task_queue):
        for change, needle in cases:
            spec = parse_job_spec({**job_dict(root, root / "docs"), **change})
            handle = await start_job(client, spec, task_queue)
            view = await wait_ended(client, spec.job_id)
            assert view.execution == "FAILED", view.summary
            assert needle in view.summary, view.summary
            history = (await handle.fetch_history()).to_json()
            assert marker not in history and marker not in view.summary
            assert "hunter2" not in history
    assert list(outside.iterdir()) == [outside / "secret.md"]
    assert not (root / "articles").exists()


async def test_a_link_out_of_a_document_folder_never_reaches_the_job(
        client: Any, runtime: ActivityRuntime, task_queue: str, tmp_path: Path, docs: Path,
        outside: Path) -> None:
    """A document folder holding a link to a secret outside the roots: the research tools
    leave it out and say why (a listing's exclusions), and the secret is in no tool result,
    draft, manifest or history (before: the link was followed and the secret became
    evidence)."""
    (docs / "linked.md").symlink_to(outside / "secret.md")
    spec = parse_job_spec(job_dict(tmp_path, docs))
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        st = await wait_status(handle, {"awaiting_review"})
        history = (await handle.fetch_history()).to_json()
        tools = await loop_tool_history(runtime, spec)
    assert tools["results"] and not any("hunter2" in r["content"] for r in tools["results"])
    assert "hunter2" not in history
    # what the agent would be told if it listed the folder or searched for the secret
    roots = runtime.roots_for(spec)
    listed = await run_source_tool("list", {"source": "handbook"}, spec.sources, LOCAL,
                                   roots=roots)
    assert {"path": "linked.md", "reason": "symbolic link to a path outside the source "
            "roots; not followed"} in listed["excluded"], listed
    assert "linked.md" not in listed["entries"]
    found = await run_source_tool("search", {"source": "handbook", "query": "hunter2"},
                                  spec.sources, LOCAL, roots=roots)
    assert found["hit_count"] == 0
    store = await runtime.store()
    principal = principal_of(spec)
    assert st.pending_draft is not None
    _rec, draft = await store.get("article_draft", st.pending_draft.artifact_id,
                                  principal=principal, revision=st.pending_draft.revision)
    assert b"hunter2" not in draft
    for manifest_id in st.manifest_ids:
        manifest = await store.get_manifest(manifest_id, principal=principal)
        assert all("hunter2" not in str(e) for e in manifest["included"])


async def test_publish_goes_to_the_job_s_own_folder_0644_and_leaves_readme_alone(
        client: Any, task_queue: str, tmp_path: Path, docs: Path) -> None:
    """Job id ``README`` beside a ``README.md``: the article goes to
    ``<destination>/README/README.md`` with mode 0644, the README is untouched, and the
    receipt and ``pressroom status`` name the path (before: ``<destination>/README.md`` was
    replaced, mode 0600)."""
    site = tmp_path / "site"
    site.mkdir()
    readme = site / "README.md"
    readme.write_text("# The site's own README\n", encoding="utf-8")
    runtime = ActivityRuntime(f"sqlite+aiosqlite:///{tmp_path / 'home' / 'pressroom.db'}",
                              locations=LOCAL, roots=roots_for(tmp_path))
    spec = parse_job_spec({**job_dict(tmp_path, docs), "job_id": "README",
                           "destination": str(site)})
    old_umask = os.umask(0o077)  # a worker whose umask used to make it 0600 anyway
    try:
        async with running_worker(client, runtime, task_queue):
            handle = await start_job(client, spec, task_queue)
            await wait_status(handle, {"awaiting_review"})
            await approve(client, spec.job_id)
            result = await handle.result()
    finally:
        os.umask(old_umask)
    assert result.status == "published" and result.receipt is not None
    article = site / "README" / "README.md"
    assert result.receipt.location == str(article)
    assert readme.read_text(encoding="utf-8") == "# The site's own README\n"
    assert sorted(p.name for p in site.iterdir()) == ["README", "README.md"]
    assert [p.name for p in article.parent.iterdir()] == ["README.md"]
    assert article.read_text(encoding="utf-8").startswith("<!-- pressroom job=README ")
    assert stat.S_IMODE(article.stat().st_mode) == 0o644
    rc, out, err = await pressroom(tmp_path / "home", client.service_client.config.target_host,
                                   "status", "README")
    assert rc == 0, err
    assert f"published {article}" in out


async def test_a_destination_turned_into_a_link_before_publish_is_refused(
        client: Any, task_queue: str, tmp_path: Path, docs: Path, outside: Path) -> None:
    """The destination passed every check at start; by the time the reviewer approves it is
    a symbolic link out of the publish roots. Publishing refuses, non-retryably, and writes
    nothing there."""
    root = tmp_path / "root"
    (root / "out").mkdir(parents=True)
    # sources from the docs fixture and the root; publishing only into the root
    roots = PathRoots.of(Settings.from_env(os.environ), sources=(root, docs), publish=(root,))
    runtime = ActivityRuntime(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}", locations=LOCAL,
                              roots=roots)
    spec = parse_job_spec({**job_dict(root, docs), "destination": str(root / "out")})
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"awaiting_review"})
        (root / "out").rmdir()
        (root / "out").symlink_to(outside, target_is_directory=True)
        await approve(client, spec.job_id)
        view = await wait_ended(client, spec.job_id)
    assert view.execution == "FAILED", view.summary
    assert "outside the publish roots" in view.summary, view.summary
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]


async def test_a_real_worker_never_echoes_a_secret_bearing_policy(
        temporal_env: Any, tmp_path: Path, docs: Path, task_queue: str) -> None:
    """Specs whose policy is a credentials file, started around the CLI's check on a real
    worker process (``python worker.py``, helper process included): the jobs fail at their
    first assembly naming the file, and no secret is in a status line, the workflow's
    history or the worker's log."""
    client = temporal_env.client
    address = client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir()
    log = tmp_path / "worker.log"
    secrets = write_secret_files(tmp_path / "creds")
    store_url = f"sqlite+aiosqlite:///{home / 'pressroom.db'}"
    worker = start_worker_process({"PRESSROOM_HOME": str(home), **roots_env(tmp_path)},
                                  address, task_queue, store_url, log)
    specs: list[JobSpec] = []
    try:
        for kind in ("json", "ini", "yaml", "bad-yaml"):
            spec = parse_job_spec({**job_dict(tmp_path, docs), "policy": str(secrets[kind]),
                                   "job_id": f"secret-policy-{kind}-{uuid.uuid4().hex[:6]}"})
            await start_job(client, spec, task_queue)
            specs.append(spec)
        for spec in specs:
            view = await wait_ended(client, spec.job_id)
            assert view.execution == "FAILED", view.summary
            assert "policy" in view.summary and spec.policy in view.summary, view.summary
            assert leaked(view.summary) == [], view.summary
            history = (await client.get_workflow_handle(spec.job_id).fetch_history()).to_json()
            assert leaked(history) == []
            rc, out, err = await pressroom(home, address, "status", spec.job_id)
            assert rc == 5, err  # failed (README.md, "Scripting")
            assert "failed:" in out and leaked(out + err) == []
    finally:
        worker.terminate()
        worker.wait(30)
    text = log.read_text(encoding="utf-8", errors="replace")
    assert "policy" in text  # the failures were logged ...
    assert leaked(text) == []  # ... without a secret
