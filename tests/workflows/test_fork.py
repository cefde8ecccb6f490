"""``pressroom fork``: a job started from another job's state after research turn N.

Real components: the Temporal dev server, a worker with Pressroom's activities, the SQLite
store and the offline research agent. A parent runs to its review; forks of one of its
turns are started through the CLI's own client code (``cli.fork_command``), each with
kinds of edits; one runs through its own review to publication while the parent's store
records stay byte for byte what they were. A fork of a tampered state, an unsigned fork
and a fork signed by someone the parent does not list are refused in one line. The
parent's workflow history and store rows are compared before and after the forks, and it
then publishes on its own review with its receipt untouched by the refused forks.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter
from temporalio.client import WorkflowFailureError

from activities.runtime import ActivityRuntime, principal_of
from cli.fork_command import EditFlags, ForkNotStarted, explain_diff, fork_job
from contracts.fork import fork_spec
from contracts.job_spec import JobSpec
from contracts.lineage import ForkLineage
from contracts.source_specs import SourceSpec
from tests.workflows.jobkit import (
    loop_notes,
    loop_tool_history,
    published_files,
    review,
    reviewer_key,
    running_worker,
    start_job,
    wait_status,
)

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


def _rows(db: Path, job_id: str) -> dict[str, list[Any]]:
    """Every store row of ``job_id``: artifact revisions, manifests, checkpoints, receipts."""
    con = sqlite3.connect(db)
    try:
        out: dict[str, list[Any]] = {}
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
            key = next((c for c in ("artifact_id", "run_id", "receipt_key") if c in cols), None)
            if key is None:
                continue
            out[table] = sorted(
                tuple(map(str, row)) for row in con.execute(
                    f"SELECT * FROM {table} WHERE {key} LIKE ?", (f"{job_id}%",)))
        return out
    finally:
        con.close()


def _flags(**kw: Any) -> EditFlags:
    base: dict[str, Any] = dict(add_sources=[], refresh_sources=[], drop_sources=[],
                                drop_notes=[])
    base.update(kw)
    return EditFlags(**base)


async def test_fork_edits_review_publish_and_refusals(
        client: Any, runtime: ActivityRuntime, task_queue: str, tmp_path: Path,
        store_url: str, make_spec: Callable[..., JobSpec]) -> None:
    parent = make_spec(research={"checkpoint_every": 1})
    db = Path(store_url.split("///", 1)[1])
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, parent, task_queue)
        status = await wait_status(handle, {"awaiting_review", "blocked", "failed"})
        assert status.status == "awaiting_review", status
        notes = await loop_notes(runtime, parent)
        first_note = notes[0]
        turn = int(first_note["call_id"][1:5])
        assert turn < (status.research.turn if status.research else 0)
        before = _rows(db, parent.job_id)
        # compared as parsed JSON: a protobuf map (search attributes) prints in any order
        history_before = json.loads((await handle.fetch_history()).to_json())

        # a fork with a question, a budget and a dropped note runs to its own publication
        fork_id = f"f1-{parent.job_id}"
        forked = await fork_job(
            client, store_url, parent.job_id, turn=turn, new_id=fork_id,
            flags=_flags(question="How are retries "
                         "and resumes handled, in detail?", token_budget=3_000_000),
            signer="alice", key=reviewer_key("alice"), task_queue=task_queue)
        assert forked.research is not None and forked.research.turn >= turn
        fork_handle = client.get_workflow_handle(fork_id)
        fstatus = await wait_status(fork_handle, {"awaiting_review", "blocked", "failed"})
        assert fstatus.status == "awaiting_review", fstatus
        assert fstatus.research is not None and fstatus.research.turn > turn
        assert fstatus.pending_draft is not None
        await review(client, fork_id, "approve")
        done = await wait_status(fork_handle, {"published", "failed"})
        assert done.status == "published", done
        assert any(fork_id in p.name for p in published_files(parent)) or done.receipt

        # the fork's manifests mark the items that came from the parent
        store = await runtime.store()
        summaries = await store.manifest_summaries(fork_id, principal=principal_of(parent))
        first = await store.get_manifest(str(summaries[0]["manifest_id"]),
                                         principal=principal_of(parent))
        inherited = first["inherited"]
        assert inherited["inherited_from"] == f"{parent.job_id}@turn {turn}"
        assert inherited["tool_calls"] and inherited["items"]
        # explain --diff between the parent's turn N+1 and the fork's: the question edit
        diff = await explain_diff(client, store_url, parent.job_id, turn + 1, fork_id, turn + 1)
        changed = {d.item_id for d in diff.items}
        assert "job_spec:{job}" in changed  # each job's own id reads {job}
        # the parent is never written
        assert _rows(db, parent.job_id) == before
        parent_now = await wait_status(handle, {"awaiting_review"})
        assert parent_now.pending_draft == status.pending_draft

        # source edits and a plan file: the fork holds its copied state
        plan = tmp_path / "plan.md"
        plan.write_text("1. read the resume docs again\n", encoding="utf-8")
        more = tmp_path / "more"
        more.mkdir()
        (more / "extra.md").write_text(
            "# Extra\n\nRetries back off: each retry waits longer than the last.\n"
            "A download can resume where it stopped.\n", encoding="utf-8")
        added: Any = TypeAdapter(SourceSpec).validate_python(
            {"kind": "document", "name": "extra", "path": str(more)})
        f2 = await fork_job(
            client, store_url, parent.job_id, turn=turn, new_id=f"f2-{parent.job_id}",
            flags=_flags(add_sources=[added], refresh_sources=["handbook"], plan_file=plan,
                         cost_budget="5", drop_notes=[first_note["item_id"]]),
            signer="alice", key=reviewer_key("alice"), task_queue=task_queue)
        assert f2.stage == "research"
        f3 = await fork_job(
            client, store_url, parent.job_id, turn=turn, new_id=f"f3-{parent.job_id}",
            flags=_flags(add_sources=[added], drop_sources=["handbook"]),
            signer="bob", key=reviewer_key("bob"), task_queue=task_queue)
        assert f3.stage == "research"
        # the dropped source leaves the fork's history whole: its reads and searches, and
        # every note citing it; the fork researches on without it to its own review
        parent_history = await loop_tool_history(runtime, parent)
        assert any(c["arguments"].get("source") == "handbook" for c in parent_history["calls"])
        f3_status = await wait_status(client.get_workflow_handle(f"f3-{parent.job_id}"),
                                      {"awaiting_review", "blocked", "failed"})
        assert f3_status.status == "awaiting_review", f3_status
        f3_spec = parent.model_copy(update={"job_id": f"f3-{parent.job_id}"})
        f3_history = await loop_tool_history(runtime, f3_spec)
        assert f3_history["calls"] and not [
            c for c in f3_history["calls"] if c["arguments"].get("source") == "handbook"
            or any(cite.get("source") == "handbook"
                   for cite in c["arguments"].get("citations", []))]
        assert not [n for n in await loop_notes(runtime, f3_spec)
                    if n["source_name"] == "handbook"]

        # three forks later the parent's history and store rows are what they were, and
        # it publishes on its own review; its receipt stays as written through the
        # refused forks below
        assert _rows(db, parent.job_id) == before
        assert json.loads((await handle.fetch_history()).to_json()) == history_before
        await review(client, parent.job_id, "approve")
        assert (await wait_status(handle, {"published", "failed"})).status == "published"
        receipt = _rows(db, parent.job_id)["receipts"]
        assert receipt

        # refused: signed by someone the parent does not list
        with pytest.raises(ForkNotStarted, match="not a listed signer"):
            await fork_job(client, store_url, parent.job_id, turn=turn,
                           new_id=f"x1-{parent.job_id}", flags=_flags(), signer="mallory",
                           key=reviewer_key("mallory"), task_queue=task_queue)
        # refused: unsigned (started around the CLI)
        lineage = ForkLineage(parent_job=parent.job_id, parent_run_id="r", turn=turn,
                              state_hash="sha256:" + "0" * 64, new_job=f"x2-{parent.job_id}")
        unsigned_handle = await start_job(client, fork_spec(parent, lineage), task_queue)
        with pytest.raises(WorkflowFailureError) as refused:
            await unsigned_handle.result()
        assert "not signed" in str(getattr(refused.value.cause, "message", refused.value))
        assert not any(_rows(db, f"x2-{parent.job_id}").values())

        # refused: the parent's state was tampered with after it was recorded
        con = sqlite3.connect(db)
        try:
            con.execute("UPDATE checkpoints SET body = replace(body, 'turn', 'TURN') "
                        "WHERE run_id = ?", (parent.job_id,))
            con.commit()
        finally:
            con.close()
        with pytest.raises(ForkNotStarted, match="cannot be verified"):
            await fork_job(client, store_url, parent.job_id, turn=turn,
                           new_id=f"x3-{parent.job_id}", flags=_flags(), signer="alice",
                           key=reviewer_key("alice"), task_queue=task_queue)
        assert _rows(db, parent.job_id)["receipts"] == receipt
    assert json.dumps(before, sort_keys=True)
