"""No job is stranded by roots its submitter could not see: ``pressroom run`` asks a worker on
the job's task queue to check the spec with that worker's own roots
(``workflows.path_check``) and refuses at submit what the worker would refuse, naming the
folder and the flag that would allow it; with no worker answering it starts the job and
says the paths are checked when one picks it up. A job that reached ``needs_operator``
for a path outside the roots anyway (started around ``run``) says which flag would allow
it, and its operator's console account ends it from the CLI.

Real components only: ``pressroom dev`` as a subprocess (its embedded server and worker,
the roots from its flags), the ``pressroom`` CLI as processes, a real worker process
(``worker.py``) on the session's dev server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.client import Client

from client import jobs
from client.devserver import free_port
from client.errors import JobNotFound
from contracts.job_spec import parse_job_spec
from pressroom import app
from settings import Settings
from tests.cli_hints import Hint, check_hint
from tests.waiting import wait_for
from tests.workflows.jobkit import (
    REPO_ROOT,
    job_dict,
    reviewer_entry,
    roots_env,
    start_job,
    start_worker_process,
)
from tests.workflows.test_cli_accounts import pressroom_in
from workflows.path_check import CHECK_ID_PREFIX, CHECK_WORKFLOW_TYPE
from workflows.temporal_config import DATA_CONVERTER

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

CLI = [sys.executable, str(REPO_ROOT / "pressroom.py")]
_BACKTICKED = re.compile(r"`(pressroom [^`]+)`")


def _project(folder: Path) -> tuple[Path, dict[str, Any]]:
    """A new user's job: a folder of their own holding the notes it reads and the folder it
    publishes to, and the job file beside them."""
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "retries.md").write_text(
        "# Retries\n\nThe client retries failed requests with exponential backoff.\n",
        encoding="utf-8")
    (folder / "notes" / "resume.md").write_text(
        "# Resume\n\nA stopped download can resume from the last byte received.\n",
        encoding="utf-8")
    data = job_dict(folder, folder / "notes", destination=str(folder / "articles"))
    job_file = folder / "job.yaml"
    job_file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return job_file, data


def _env(home: Path, address: str) -> dict[str, str]:
    env = {**os.environ, "PRESSROOM_HOME": str(home), "PRESSROOM_TEMPORAL_ADDRESS": address,
           "COLUMNS": "200"}
    for name in ("PRESSROOM_DEBUG", "PRESSROOM_SOURCE_ROOTS", "PRESSROOM_PUBLISH_ROOTS",
                 "PRESSROOM_TASK_QUEUE"):
        env.pop(name, None)
    return env


async def _cli(home: Path, address: str, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(*CLI, *args, env=_env(home, address),
                                                cwd=REPO_ROOT, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 180)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@contextlib.asynccontextmanager
async def _dev(home: Path, port: int, task_queue: str, *flags: str) -> AsyncIterator[Client]:
    """``pressroom dev FLAGS`` as a process, as the README shows it; yields a client once
    its worker polls ``task_queue``, and stops it with Ctrl-C (SIGINT) after."""
    proc = await asyncio.create_subprocess_exec(
        *CLI, "dev", "--port", str(port), "--headless", "--task-queue", task_queue, *flags,
        env=_env(home, f"127.0.0.1:{port}"), cwd=REPO_ROOT,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        holder: list[Client] = []

        async def polled() -> bool:
            try:
                if not holder:
                    holder.append(await Client.connect(f"127.0.0.1:{port}",
                                                       data_converter=DATA_CONVERTER))
                return await jobs.has_pollers(holder[0], task_queue)
            except Exception:
                assert proc.returncode is None, "pressroom dev exited"
                return False

        await wait_for(polled, 90, "pressroom dev's worker polling its task queue")
        yield holder[0]
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(proc.wait(), 60)
            except TimeoutError:
                proc.kill()
                await proc.wait()


def _hints(line: str) -> list[str]:
    """The commands a line shows (backticked), each checked against the real CLI parser."""
    found = _BACKTICKED.findall(line)
    for text in found:
        problem = check_hint(Hint(where="run's refusal", text=text, in_prose=False), app)
        assert problem is None, problem
    return found


@pytest.mark.slow
async def test_run_refuses_at_submit_what_the_dev_worker_would_strand(tmp_path: Path) -> None:
    """``pressroom dev --source-root X`` and a job file in another folder: ``run`` refuses
    it at once — one line naming the job's paths and the ``dev`` / ``worker`` flags with
    the job's folder, never the worker's roots — and starts nothing, not even a list row
    for the check; ``dev`` started with the flags the line names runs the same job.
    Before: the job started and ended ``needs_operator: store_job_spec failed (a permanent
    error): PathOutsideRoots`` (exit 6)."""
    home, other, project = tmp_path / "home", tmp_path / "other", tmp_path / "project"
    other.mkdir()
    job_file, data = _project(project)
    port, queue = free_port(), f"dev-roots-{uuid.uuid4().hex[:8]}"
    address = f"127.0.0.1:{port}"
    async with _dev(home, port, queue, "--source-root", str(other),
                    "--publish-root", str(other)) as client:
        rc, out, err = await _cli(home, address, "run", str(job_file), "--wait",
                                  "--task-queue", queue)
        assert rc == 1, (out, err)
        assert "Traceback" not in err
        [line] = [ln for ln in err.splitlines() if ln.strip()]
        assert line.startswith("error:"), line
        assert f"source 'handbook' path {project / 'notes'}" in line, line
        assert f"destination {project / 'articles'}" in line, line
        assert f"task queue {queue!r}" in line, line
        dev_hint, worker_hint = _hints(line)
        assert dev_hint == (f"pressroom dev --source-root {project} "
                            f"--publish-root {project / 'articles'}"), line
        assert worker_hint == dev_hint.replace("pressroom dev", "pressroom worker", 1)
        assert str(other) not in line and str(home) not in line  # the worker's roots
        with pytest.raises(JobNotFound):
            await jobs.view_job(client, data["job_id"], worker_grace=0)
        # the check ran as a workflow of its own, which no job list shows
        checks = [w async for w in client.list_workflows(
            f"WorkflowType = '{CHECK_WORKFLOW_TYPE}'")]
        assert checks and all(w.id.startswith(CHECK_ID_PREFIX) for w in checks)
        rc, out, err = await _cli(home, address, "list", "--json")
        assert rc == 0, err
        assert json.loads(out) == [], out
    # the same job, with the folders the refusal named given to dev: it runs
    flags = shlex.split(dev_hint)[2:]
    async with _dev(home, port, queue, *flags) as client:
        rc, out, err = await _cli(home, address, "run", str(job_file), "--wait",
                                  "--task-queue", queue)
        assert rc == 4, (out, err)  # awaiting review (README.md, "Scripting")
        assert "awaiting_review" in out
        await client.get_workflow_handle(data["job_id"]).terminate("test over")


async def test_with_no_worker_run_starts_the_job_and_says_when_paths_are_checked(
        temporal_env: Any, tmp_path: Path, task_queue: str) -> None:
    """Nobody polls the job's task queue: ``run`` invents no roots (it used to add the job
    file's folder to its own and call that a check) — it starts the job and says, on one
    line, that the paths are checked when a worker picks it up."""
    client = temporal_env.client
    address = client.service_client.config.target_host
    job_file, data = _project(tmp_path / "project")
    rc, out, err = await _cli(tmp_path / "home", address, "run", str(job_file),
                              "--task-queue", task_queue)
    assert rc == 0, (out, err)
    assert f"started job {data['job_id']}" in out, out
    [line] = [ln for ln in out.splitlines() if "no worker" in ln]
    assert f"no worker is polling task queue {task_queue!r} yet" in line, out
    assert "the job's paths will be checked against its roots when a worker picks it up" \
        in line, out
    _hints(line)
    view = await jobs.view_job(client, data["job_id"], worker_grace=0)
    assert view.execution == "RUNNING"
    await client.get_workflow_handle(data["job_id"]).terminate("test over")


async def test_a_stranded_job_names_the_flag_and_its_operator_ends_it_from_the_cli(
        temporal_env: Any, tmp_path: Path, task_queue: str) -> None:
    """A job started directly through the client (around ``run``'s check) whose paths a
    real worker process's roots refuse: it waits for an operator with a reason that names
    the worker flag and folder that would allow them (before: only the roots and
    ``--source-root`` by name), and the operator — a console account, no key file — ends
    it with ``pressroom resolve JOB --abandon --as ops --password-stdin``."""
    client = temporal_env.client
    address = client.service_client.config.target_host
    home, other = tmp_path / "home", tmp_path / "other"
    home.mkdir()
    other.mkdir()
    password = "operator staple 2026"
    rc, _out, err = await pressroom_in(home, address, password + "\n", "reviewer", "add",
                                       "ops", "--password-stdin")
    assert rc == 0, err
    _job_file, data = _project(tmp_path / "p")  # short paths: the reason is cut at 500
    data["review"] = {"reviewers": [reviewer_entry("alice")], "operators": ["ops"],
                      "timeout": "10m"}
    from cli.reviewer_keys import pin_reviewers

    spec, _pinned = pin_reviewers(parse_job_spec(data),
                                  Settings.from_env({**os.environ, "PRESSROOM_HOME": str(home)}))
    log = tmp_path / "worker.log"
    worker = start_worker_process({"PRESSROOM_HOME": str(home), **roots_env(other)}, address,
                                  task_queue, f"sqlite+aiosqlite:///{home / 'pressroom.db'}",
                                  log)
    try:
        await start_job(client, spec, task_queue)

        async def stranded() -> bool:
            view = await jobs.view_job(client, spec.job_id, worker_grace=10)
            return view.live is not None and view.live.status == "needs_operator"

        await wait_for(stranded, 120, "the job waiting for an operator")
        rc, out, err = await pressroom_in(home, address, "", "status", spec.job_id)
        assert rc == 6, (out, err)  # needs an operator (README.md, "Scripting")
        assert ("store_job_spec failed (a permanent error): PathOutsideRoots: allow with "
                "`pressroom worker") in out, out
        notes, articles = tmp_path / "p" / "notes", tmp_path / "p" / "articles"
        assert (f"`pressroom worker --source-root {notes} --publish-root "
                f"{articles}` (or `pressroom dev` with the same flags)") \
            in " ".join(out.split()), out
        rc, out, err = await pressroom_in(home, address, password + "\n", "resolve",
                                          spec.job_id, "--abandon", "--as", "ops",
                                          "--password-stdin")
        assert rc == 0, (out, err)
        assert "sent abandon" in out

        async def ended() -> bool:
            return (await jobs.view_job(client, spec.job_id, worker_grace=10)).execution \
                == "FAILED"

        await wait_for(ended, 60, "the abandoned job to end failed")
    finally:
        worker.terminate()
        worker.wait(30)
    assert not (tmp_path / "p" / "articles").exists()
