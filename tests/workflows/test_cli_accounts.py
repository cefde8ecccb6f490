"""A review-console account signs CLI commands: ``--as NAME`` with no key file unlocks
the account's stored key with its password (``--password-stdin`` here; a terminal asks),
so an operator who only has an account can end a blocked or stranded job and cancel one,
and a reviewer can approve, from the command line.

Each command is its own ``pressroom`` process against the session's dev server and a real
worker; the accounts are made with the real ``pressroom reviewer add`` and pinned by the
real ``pressroom run``. Nothing is faked.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from activities.runtime import ActivityRuntime
from client import jobs
from tests.workflows.conftest import LOCAL
from tests.workflows.jobkit import REPO_ROOT, job_dict, published_files, roots_for, running_worker
from tests.workflows.test_cli import CLI, _one_line_error
from tests.workflows.test_cli_signing import _status_until

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

PASSWORDS = {"alice": "correct horse battery", "ops": "operator staple 2026"}
BLOCKING_TOPICS = [
    {"name": "retries", "terms": ["retry", "backoff"]},
    {"name": "quotas", "terms": ["quota"], "blocking": True},
]


async def pressroom_in(home: Path, address: str, stdin: str, *args: str
                       ) -> tuple[int, str, str]:
    """``pressroom ARGS`` with ``stdin`` as its standard input."""
    env = {**os.environ, "PRESSROOM_HOME": str(home), "PRESSROOM_TEMPORAL_ADDRESS": address,
           "COLUMNS": "200"}
    env.pop("PRESSROOM_DEBUG", None)
    env.pop("PRESSROOM_REVIEWER_KEY", None)
    proc = await asyncio.create_subprocess_exec(*CLI, *args, env=env, cwd=REPO_ROOT,
                                                stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_console_accounts_sign_resolve_cancel_and_approve_from_the_cli(
        temporal_env: Any, tmp_path: Path, docs: Path, task_queue: str) -> None:
    address = temporal_env.client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir()
    for name, password in PASSWORDS.items():
        rc, _out, err = await pressroom_in(home, address, password + "\n", "reviewer", "add",
                                           name, "--password-stdin")
        assert rc == 0, err
    assert not (home / "keys").exists() or not any((home / "keys").iterdir())

    def job_file(name: str, operators: tuple[str, ...] = ("ops",), **overrides: Any
                 ) -> tuple[Path, str]:
        data = job_dict(tmp_path, docs, **overrides)
        data["review"] = {"reviewers": ["alice"], "operators": list(operators),
                          "timeout": "10m"}
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        return path, str(data["job_id"])

    blocked_file, blocked = job_file("blocked", topics=BLOCKING_TOPICS)
    review_file, in_review = job_file("review")
    cancel_file, to_cancel = job_file("cancel", operators=("ops", "alice"))
    runtime = ActivityRuntime(f"sqlite+aiosqlite:///{home / 'pressroom.db'}", locations=LOCAL,
                              roots=roots_for(tmp_path))
    async with running_worker(temporal_env.client, runtime, task_queue):
        for path, want in ((blocked_file, 3), (review_file, 4), (cancel_file, 4)):
            rc, out, err = await pressroom_in(home, address, "", "run", str(path), "--wait",
                                              "--task-queue", task_queue)
            assert rc == want, (rc, out, err)
            if path == cancel_file:  # a reviewer who is also an operator is pinned once
                assert out.count("alice: pinned") == 1, out
                assert "reviewer and operator alice: pinned ed25519:" in out, out
            else:
                assert "reviewer alice: pinned ed25519:" in out, out

        # no key file and no password: one line naming both ways to sign, never `keygen`
        rc, _out, err = await pressroom_in(home, address, "", "resolve", blocked, "--as",
                                           "ops", "--abandon")
        _one_line_error(rc, err, "--password-stdin")
        assert "keygen" not in err
        # a wrong password unlocks nothing and sends nothing
        rc, _out, err = await pressroom_in(home, address, "not the password\n", "resolve",
                                           blocked, "--as", "ops", "--abandon",
                                           "--password-stdin")
        _one_line_error(rc, err, "does not unlock the signing key of 'ops'")
        assert "not the password" not in err
        await _status_until(home, address, blocked, "blocked")
        # alice's password does not make alice's key sign as ops
        rc, _out, err = await pressroom_in(home, address, PASSWORDS["alice"] + "\n",
                                           "resolve", blocked, "--as", "ops", "--abandon",
                                           "--password-stdin")
        _one_line_error(rc, err, "does not unlock")

        # the operator's account ends the blocked job
        rc, out, err = await pressroom_in(home, address, PASSWORDS["ops"] + "\n", "resolve",
                                          blocked, "--as", "ops", "--abandon",
                                          "--password-stdin")
        assert rc == 0, err
        assert "sent abandon" in out
        await _status_until(home, address, blocked, "failed")
        # ... and cancels another
        rc, out, err = await pressroom_in(home, address, PASSWORDS["ops"] + "\n", "cancel",
                                          to_cancel, "--as", "ops", "--password-stdin",
                                          "--reason", "superseded")
        assert rc == 0, err
        assert "cancelled by ops" in out
        await _status_until(home, address, to_cancel, "cancelled")
        # an operator is no reviewer: refused before the draft is shown, said once
        rc, out, err = await pressroom_in(home, address, PASSWORDS["ops"] + "\n", "approve",
                                          in_review, "--as", "ops", "--password-stdin",
                                          "--yes")
        _one_line_error(rc, err, "reviewer 'ops' is not allowed")
        assert err.count("review refused") == 1, err
        assert "draft r1" not in out, out
        # the reviewer's account approves; the job publishes
        view = await jobs.view_job(temporal_env.client, in_review)
        assert view.live is not None and view.live.pending_draft is not None
        rc, out, err = await pressroom_in(home, address, PASSWORDS["alice"] + "\n", "approve",
                                          in_review, "--as", "alice", "--password-stdin",
                                          "--yes")
        assert rc == 0, err
        assert "recorded approve" in out
        await _status_until(home, address, in_review, "published")
    for job_id in (blocked, to_cancel, in_review):
        spec = await jobs.job_spec_of(temporal_env.client, job_id)
        assert len(published_files(spec)) == (1 if job_id == in_review else 0), job_id
