"""``pressroom run`` pins a git source's ``ref`` once, at submit, and the job reads that
commit even after the tag moves (the real CLI process, the session's dev server, a real
worker; see ``test_cli.py``)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from activities.runtime import ActivityRuntime
from client import jobs
from client.errors import JobNotFound
from contracts.source_specs import GitSourceSpec
from tests.workflows.conftest import LOCAL
from tests.workflows.jobkit import (
    job_dict,
    loop_tool_history,
    roots_for,
    running_worker,
    wait_status,
)
from tests.workflows.test_cli import _one_line_error, pressroom
from tests.workflows.test_job_paths import make_repo

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@x.invalid",
           "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@x.invalid"}
    return subprocess.run(["git", "-C", str(repo), "-c", "commit.gpgsign=false",
                           "-c", "tag.gpgsign=false", *args], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


async def test_run_pins_a_ref_at_submit_and_a_moved_tag_changes_nothing(
        temporal_env: Any, tmp_path: Path, docs: Path, task_queue: str) -> None:
    address = temporal_env.client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir()
    repo, pinned = make_repo(tmp_path)
    _git(repo, "tag", "-a", "v2", "-m", "release 2", pinned)
    data = job_dict(tmp_path, docs, sources=[
        {"kind": "git", "name": "client-repo", "repo": str(repo), "ref": "v2"},
        {"kind": "document", "name": "handbook", "path": str(docs)},
    ])
    job_file = tmp_path / "job.yaml"
    job_file.write_text(yaml.safe_dump(data), encoding="utf-8")

    # a ref that names nothing is one line, before anything starts
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**data, "job_id": data["job_id"] + "-bad", "sources": [
        {"kind": "git", "name": "client-repo", "repo": str(repo), "ref": "no-such-tag"}]}),
        encoding="utf-8")
    rc, _out, err = await pressroom(home, address, "run", str(bad), "--task-queue", task_queue)
    _one_line_error(rc, err, "names no tag or branch")
    with pytest.raises(JobNotFound):
        await jobs.job_spec_of(temporal_env.client, data["job_id"] + "-bad")

    # submitted with no worker yet: the spec it started with holds the commit and the ref
    rc, out, err = await pressroom(home, address, "run", str(job_file), "--task-queue",
                                   task_queue)
    assert rc == 0, err
    assert f"pinned client-repo: ref v2 → commit {pinned}" in out, out
    started = await jobs.job_spec_of(temporal_env.client, data["job_id"])
    [source] = [s for s in started.sources if isinstance(s, GitSourceSpec)]
    assert (source.commit, source.ref) == (pinned, "v2")

    # the tag moves before any worker reads the repository
    (repo / "client" / "retry.py").write_text("MOVED retry backoff\n", encoding="utf-8")
    _git(repo, "commit", "-qam", "moved")
    moved = _git(repo, "rev-parse", "HEAD")
    _git(repo, "tag", "-f", "-a", "v2", "-m", "release 2, again", moved)
    assert moved != pinned

    runtime = ActivityRuntime(f"sqlite+aiosqlite:///{home / 'pressroom.db'}", locations=LOCAL,
                              roots=roots_for(tmp_path))
    async with running_worker(temporal_env.client, runtime, task_queue):
        handle = temporal_env.client.get_workflow_handle(started.job_id)
        await wait_status(handle, {"awaiting_review", "blocked"})
        tools = await loop_tool_history(runtime, started)
    # every line the agent was shown of the repository was read at the pinned commit, and
    # nothing the moved tag's commit says reached a result
    revisions = set()
    for call, result in zip(tools["calls"], tools["results"], strict=True):
        if call["arguments"].get("source") != "client-repo" or result["status"] != "success":
            continue
        content = json.loads(result["content"])
        revisions |= {f["revision"] for f in content.get("files", [])}
        if "revision" in content:
            revisions.add(content["revision"])
    assert revisions == {pinned}, revisions
    assert not any("MOVED" in r["content"] for r in tools["results"])
