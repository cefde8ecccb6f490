"""Reviewer keys through the real ``pressroom`` CLI: keygen, registry pinning at submit,
signed approve / resolve / cancel, and the attacks a user at the command line can try
(another reviewer's name, a foreign key, a key file others can read, a name the registry
does not know). Each command is its own process against the session's dev server and a
real worker (see ``test_cli.py``); nothing is faked.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from activities.runtime import ActivityRuntime
from client import jobs
from tests.workflows.conftest import LOCAL
from tests.workflows.jobkit import job_dict, published_files, roots_for, running_worker
from tests.workflows.test_cli import _one_line_error, pressroom

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


async def _status_until(home: Path, address: str, job_id: str, want: str) -> str:
    out = ""
    for _ in range(100):
        _rc, out, _err = await pressroom(home, address, "status", job_id)
        if want in out:
            return out
        await asyncio.sleep(0.2)
    raise AssertionError(f"{job_id} never reached {want!r}: {out}")


async def test_keygen_registry_pinning_and_signed_cli_decisions(
        temporal_env: Any, tmp_path: Path, docs: Path, task_queue: str) -> None:
    address = temporal_env.client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir()
    for name in ("Alice", "ops", "mallory"):
        rc, out, err = await pressroom(home, address, "reviewer", "keygen", name,
                                       *(["--register"] if name != "mallory" else []))
        assert rc == 0, err
        public = out.strip().splitlines()[-1]
        assert public.startswith("ed25519:")
        key_file = home / "keys" / f"{name.lower()}.key"
        assert key_file.stat().st_mode & 0o777 == 0o600
        assert public not in key_file.read_text()  # the printed half is not the secret half
    rc, _out, err = await pressroom(home, address, "reviewer", "keygen", "alice")
    _one_line_error(rc, err, "already exists; not overwriting")

    data = job_dict(tmp_path, docs)
    data["review"] = {"reviewers": ["alice"], "operators": ["ops"], "timeout": "10m"}
    job_file = tmp_path / "job.yaml"
    job_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    job_id = data["job_id"]
    # a name the registry does not know is refused at submit, before anything starts
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text(yaml.safe_dump({**data, "job_id": job_id + "-u",
                                       "review": {"reviewers": ["nobody"]}}), encoding="utf-8")
    rc, _out, err = await pressroom(home, address, "run", str(unknown), "--task-queue",
                                    task_queue)
    _one_line_error(rc, err, "no public key for ['nobody']")

    runtime = ActivityRuntime(f"sqlite+aiosqlite:///{home / 'pressroom.db'}", locations=LOCAL,
                              roots=roots_for(tmp_path))
    async with running_worker(temporal_env.client, runtime, task_queue):
        rc, out, err = await pressroom(home, address, "run", str(job_file), "--wait",
                                       "--task-queue", task_queue)
        assert rc == 4, err  # awaiting review
        assert "reviewer alice: pinned ed25519:" in out and "awaiting_review" in out
        spec = await jobs.job_spec_of(temporal_env.client, job_id)
        registered = (home / "reviewers" / "alice.pub").read_text().strip()
        assert spec.review.reviewers[0].public_key == registered
        # alice's name with mallory's key
        rc, _out, err = await pressroom(home, address, "approve", job_id, "--as", "alice",
                                        "--key", str(home / "keys" / "mallory.key"), "--yes")
        _one_line_error(rc, err, "signing key is not the one listed for 'alice'")
        # a key file others can read is refused before anything is signed
        (home / "keys" / "alice.key").chmod(0o644)
        rc, _out, err = await pressroom(home, address, "approve", job_id, "--as", "alice",
                                        "--yes")
        _one_line_error(rc, err, "readable by others")
        (home / "keys" / "alice.key").chmod(0o600)
        # the job's own principal, case-variant, with its own fresh key
        rc, _out, err = await pressroom(home, address, "reviewer", "keygen", "AGENT-WRITER")
        assert rc == 0, err
        rc, _out, err = await pressroom(home, address, "approve", job_id, "--as",
                                        "AGENT-WRITER", "--yes")
        _one_line_error(rc, err, "can never review its own draft")
        # a script naming a draft it did not see
        rc, _out, err = await pressroom(home, address, "approve", job_id, "--as", "alice",
                                        "--draft-hash", "sha256:" + "0" * 64, "--yes")
        _one_line_error(rc, err, "nothing sent")
        # the resolve of a job that is not blocked, and a cancel by a stranger
        rc, _out, err = await pressroom(home, address, "resolve", job_id, "--as", "ops",
                                        "--budget", "9000")
        _one_line_error(rc, err, "not blocked")
        rc, _out, err = await pressroom(home, address, "cancel", job_id, "--as", "mallory")
        _one_line_error(rc, err, "not a listed signer")
        # the operator cancels: the job ends cancelled, nothing is published
        rc, out, err = await pressroom(home, address, "cancel", job_id, "--as", "ops",
                                       "--reason", "superseded by a newer job")
        assert rc == 0, err
        assert "cancelled by ops" in out
        await _status_until(home, address, job_id, "cancelled")
    assert published_files(spec) == []


async def test_cli_approve_signs_what_it_showed_and_publishes(
        temporal_env: Any, tmp_path: Path, docs: Path, task_queue: str) -> None:
    address = temporal_env.client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir()
    rc, out, err = await pressroom(home, address, "reviewer", "keygen", "alice")
    assert rc == 0, err
    public = out.strip().splitlines()[-1]
    data = job_dict(tmp_path, docs)
    data["review"] = {"reviewers": [{"name": "alice", "public_key": public}]}
    job_file = tmp_path / "job.yaml"
    job_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    runtime = ActivityRuntime(f"sqlite+aiosqlite:///{home / 'pressroom.db'}", locations=LOCAL,
                              roots=roots_for(tmp_path))
    async with running_worker(temporal_env.client, runtime, task_queue):
        rc, out, err = await pressroom(home, address, "run", str(job_file), "--wait",
                                       "--task-queue", task_queue)
        assert rc == 4, err  # awaiting review
        view = await jobs.view_job(temporal_env.client, data["job_id"])
        assert view.live is not None and view.live.pending_draft is not None
        rc, out, err = await pressroom(home, address, "approve", data["job_id"], "--as",
                                       "alice", "--draft-hash",
                                       view.live.pending_draft.content_hash, "--yes")
        assert rc == 0, err
        assert "recorded approve" in out
        await _status_until(home, address, data["job_id"], "published")
    spec = await jobs.job_spec_of(temporal_env.client, data["job_id"])
    assert len(published_files(spec)) == 1
