"""A whole job over a source holding double-quoted secrets publishes none of them.

Real dev server, real worker and activities, real SQLite store, a real document folder and
the offline research agent (which quotes what the sealed request shows it verbatim, as a
model restating a value would): the topics' terms lead it to search, read and note the
very lines that hold ``DB_PASSWORD = "…"``, ``api_key = "…"`` and ``password: "…"``. Every
``read`` result is stored as JSON, so only the gate's scan of the decoded strings keeps the
values out of the requests — and so out of the notes' claims, the draft and the published
article. (A note's evidence record keeps the cited source line as the stored result showed
it, like the tool record itself: it reaches a request only through the same gate.)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from activities.runtime import ActivityRuntime, principal_of
from contracts.job_spec import JobSpec
from tests.workflows.jobkit import (
    loop_tool_history,
    published_files,
    review,
    running_worker,
    start_job,
    wait_status,
)
from tests.workflows.test_secret_redaction import CONFIG, QUOTED

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


async def test_a_job_reading_quoted_secrets_publishes_none_of_them(
        client: Any, runtime: ActivityRuntime, task_queue: str, tmp_path: Path,
        docs: Path, make_spec: Callable[..., JobSpec]) -> None:
    (docs / "config.md").write_text(
        CONFIG + "\nThe database settings above are loaded at start-up.\n", encoding="utf-8")
    spec = make_spec(
        question="How is the database configured?",
        topics=[{"name": "database", "terms": ["db_password"]},
                {"name": "keys", "terms": ["api_key"]},
                {"name": "login", "terms": ["password:"]}],
        review={"reviewers": ["alice"], "timeout": "10m"})
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        status = await wait_status(handle, {"awaiting_review", "blocked", "failed"})
        assert status.status == "awaiting_review", status
        tools = await loop_tool_history(runtime, spec)
        reads = [r for c, r in zip(tools["calls"], tools["results"], strict=True)
                 if c["tool_name"] == "read" and r["status"] == "success"]
        # the agent did read the secret lines: the stored results hold the values
        assert reads and all(v in json.dumps(reads) for v in QUOTED.values())
        tools = await loop_tool_history(runtime, spec)
        claims = [c["arguments"] for c in tools["calls"] if c["tool_name"] == "note"]
        assert claims  # the agent noted what it read
        await review(client, spec.job_id, "approve", reviewer="alice")
        result = await handle.result()
    assert result.status == "published", result
    [article] = published_files(spec)
    text = article.read_text(encoding="utf-8")
    assert "config.md" in text  # the article does cite the file
    store = await runtime.store()
    _rec, draft = await store.get("article_draft", f"{spec.job_id}.draft",
                                  principal=principal_of(spec))
    for value in QUOTED.values():
        assert value not in text
        assert value not in json.dumps(claims)
        assert value not in draft.decode()
    for manifest_id in status.manifest_ids:
        manifest = await store.get_manifest(manifest_id, principal=principal_of(spec))
        assert not any(v in json.dumps(manifest) for v in QUOTED.values())
