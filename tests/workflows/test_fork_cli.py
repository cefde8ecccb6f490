"""``pressroom fork`` and ``pressroom explain --diff`` run as a user runs them (a separate
process each), against the session's dev server, a real worker in this process and the
default SQLite store under a temporary ``$PRESSROOM_HOME``; and a fork whose signature is
older than a signature may be refused by the workflow.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError

import artifacts
from activities.runtime import ActivityRuntime
from contracts.fork import fork_spec
from contracts.fork_reader import parent_state
from contracts.job_spec import JobSpec
from contracts.lineage import ForkEdits, ForkLineage
from contracts.pricing import load_prices
from contracts.signing import sign
from contracts.workflow_messages import MAX_RESOLVE_AGE
from settings import Settings
from tests.workflows.jobkit import (
    loop_notes,
    reviewer_key,
    roots_for,
    running_worker,
    start_job,
    wait_status,
    write_registry,
)
from tests.workflows.test_cli import LOCAL, pressroom

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

#: the offline agent priced, so each turn's reply records a cost
PRICES = """\
as_of: "2026-01-01"
models:
  extractive:
    extractive-v1: {input: 10.0, cached_input: 1.0, cache_write: 12.5, output: 30.0,
                    source: "test table"}
"""
#: the changed question of the fork
QUESTION = "How does a stopped download resume, and from which offset?"


def _usage_error(rc: int, err: str, needle: str) -> None:
    assert rc == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err and needle in lines[0], err


def _ids(report: dict[str, Any], change: str) -> set[str]:
    return {i["item_id"] for i in report["items"] if i["change"] == change}


async def test_fork_command_and_explain_diff_name_exactly_the_edits(
        temporal_env: Any, tmp_path: Path, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    """A parent researched to its review is forked through ``pressroom fork`` (signed
    with alice's key from ``$PRESSROOM_HOME/keys``) at turn N with one edit of each kind
    that changes what the model sees: a dropped note, an added source and a changed
    question. ``explain --diff PARENT --turn N+1 FORK --turn N+1`` then compares the two
    requests made from the same state (the parent's after turn N): the parent's own next
    turn and the fork's first turn — a fork goes on numbering its turns from N+1, so its
    first turn is N+1, not 1; the parent's turn N itself was made before turn N's results
    and would differ by them too.

    Each side's own job id reads ``{job}`` in item ids, so the same item of both jobs
    pairs up. What entered, left or changed is then exactly what the edits changed:

    * ``step:research`` (changed) — the step item states the question;
    * ``job_spec:{job}`` (changed) — the spec the model reads states the question and
      lists the sources: the added source is visible to the model there (its documents
      become items only once the agent searches or reads it, in the fork's later turns);
    * ``tool-result:<the dropped note's call>`` (left) — the fork's copied tool history no
      longer holds the note call the dropped note was made by;

    plus the one part that necessarily changes: the checkpoint. A fork's copy of its
    parent's checkpoint is the fork's first (``{job}-cp-0001-research``) while the
    parent's is numbered by its own count (a checkpoint a turn here), and it states the
    fork's question as its goal: one changed row under the fork's id, naming the
    parent's (the current state under a newer number, context/manifest_diff.py). There
    is no step-counter item to change: the step item is per stage, not per step (every
    turn renders the same heading, for the prompt cache), and the two requests are both
    turn N+1.
    """
    address = temporal_env.client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir()
    write_registry(home, "alice")
    store_url = f"sqlite+aiosqlite:///{home / 'pressroom.db'}"
    prices = tmp_path / "prices.yaml"
    prices.write_text(PRICES, encoding="utf-8")
    runtime = ActivityRuntime(store_url, locations=LOCAL, roots=roots_for(tmp_path),
                              prices=load_prices(prices))
    parent = make_spec(research={"checkpoint_every": 1})
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "offsets.md").write_text(
        "# Offsets\n\nThe resume offset is the byte count already written to disk.\n",
        encoding="utf-8")
    try:
        async with running_worker(temporal_env.client, runtime, task_queue):
            handle = await start_job(temporal_env.client, parent, task_queue)
            status = await wait_status(handle, {"awaiting_review", "blocked", "failed"})
            assert status.status == "awaiting_review", status
            note = (await loop_notes(runtime, parent))[0]
            turn = int(note["call_id"][1:5])
            assert status.research is not None and turn < status.research.turn
            fork_id = f"{parent.job_id}-fork"
            source = json.dumps({"kind": "document", "name": "extra", "path": str(extra)})

            rc, out, err = await pressroom(
                home, address, "fork", parent.job_id, "--at-turn", str(turn), "--as",
                fork_id, "--signer", "alice", "--drop-note", note["item_id"],
                "--add-source", source, "--question", QUESTION, "--task-queue", task_queue)
            assert rc == 0, err
            assert f"forked {parent.job_id} at turn {turn} as {fork_id}: research" in out, out
            # it says how to follow the fork and the comparison run below
            assert f"pressroom watch {fork_id}" in out, out
            assert (f"pressroom explain --diff {parent.job_id} --turn {turn + 1} {fork_id} "
                    f"--turn {turn + 1}") in out, out
            fork = temporal_env.client.get_workflow_handle(fork_id)
            # the fork researches on from turn N+1 (with a note dropped it may block for
            # evidence later: only its first turn is compared here)
            fstatus = await wait_status(fork, {"awaiting_review", "blocked", "failed"})
            assert fstatus.status != "failed" and fstatus.research is not None, fstatus
            assert fstatus.research.turn > turn, fstatus

            # a fork id is never reused: one line, exit 1
            rc, _out, err = await pressroom(
                home, address, "fork", parent.job_id, "--at-turn", str(turn), "--as",
                fork_id, "--signer", "alice", "--task-queue", task_queue)
            assert rc == 1 and len([ln for ln in err.splitlines() if ln.strip()]) == 1, err

            rc, out, err = await pressroom(
                home, address, "explain", "--diff", parent.job_id, "--turn", str(turn + 1),
                fork_id, "--turn", str(turn + 1), "--json")
            assert rc == 0, err
            report = json.loads(out)
            assert report["a"]["job_id"] == parent.job_id and report["b"]["job_id"] == fork_id
            assert report["token_delta"] == report["b"]["tokens"] - report["a"]["tokens"]
            changed, entered, left = (_ids(report, "changed"), _ids(report, "entered"),
                                      _ids(report, "left"))
            listing = json.dumps(report["items"], indent=1)
            checkpoints = {i for i in changed | entered | left if i.startswith("checkpoint:")}
            assert checkpoints == {"checkpoint:{job}-cp-0001-research"}, listing
            state = next(i for i in report["items"] if i["item_id"] in checkpoints)
            assert state["change"] == "changed", listing
            assert state["detail"].startswith(
                f"the current state, was checkpoint:{{job}}-cp-{turn + 1:04d}-research;"), listing
            assert changed - checkpoints == {"step:research", "job_spec:{job}"}, listing
            assert entered - checkpoints == set(), listing
            assert left - checkpoints == {f"tool-result:{note['call_id']}"}, listing
            by_id = {i["item_id"]: i for i in report["items"]}
            assert "not in the tool history (note)" in \
                by_id[f"tool-result:{note['call_id']}"]["decided_by"], listing
            assert by_id["job_spec:{job}"]["token_delta"] > 0, listing  # a source more
            # the worker priced the offline model: each turn's cost, from its stored reply
            cost_a, cost_b = report["a"]["cost_micro_usd"], report["b"]["cost_micro_usd"]
            assert isinstance(cost_a, int) and isinstance(cost_b, int), report
            assert report["cost_delta_micro_usd"] == cost_b - cost_a
            rc, text, err = await pressroom(
                home, address, "explain", "--diff", parent.job_id, "--turn", str(turn + 1),
                fork_id, "--turn", str(turn + 1))
            assert rc == 0, err
            assert f"{parent.job_id} turn {turn + 1} → {fork_id} turn {turn + 1}" in text
            assert "job_spec:{job}" in text and "tokens " in text
            assert f"cost {cost_a} → {cost_b} micro-USD" in text, text

            # a wrong count of turns is a usage error: one line, exit 2
            rc, _out, err = await pressroom(home, address, "explain", "--diff", parent.job_id,
                                            "--turn", str(turn), fork_id)
            _usage_error(rc, err, "exactly two --turn (got 1)")
            rc, _out, err = await pressroom(home, address, "explain", parent.job_id,
                                            "--turn", "1", "--turn", "2")
            _usage_error(rc, err, "one --turn (got 2)")
            # explain JOB --turn N as before
            rc, out, err = await pressroom(home, address, "explain", parent.job_id,
                                           "--turn", str(turn))
            assert rc == 0 and f"research turn {turn}" in out and "inherited" not in out, err

            # plain explain of the fork: its inherited items and tool calls, marked
            rc, out, err = await pressroom(home, address, "explain", fork_id,
                                           "--turn", str(turn + 1))
            assert rc == 0, err
            label = f"{parent.job_id}@turn {turn}"
            assert "inherited from" in out and f"inherited tool calls from {label}: t0001-" \
                in out, out
            rc, out, err = await pressroom(home, address, "explain", fork_id,
                                           "--turn", str(turn + 1), "--json")
            assert rc == 0, err
            inherited = json.loads(out)["inherited"]
            kinds = {e["kind"] for e in inherited}
            assert kinds == {"item", "tool_call"}, inherited
            assert all(e["inherited_from"] == label for e in inherited), inherited
            assert all(int(e["item_id"][1:5]) <= turn for e in inherited
                       if e["kind"] == "tool_call"), inherited
    finally:
        await runtime.close()


async def test_a_fork_signed_too_long_ago_is_refused(
        client: Any, runtime: ActivityRuntime, task_queue: str, store_url: str,
        make_spec: Callable[..., JobSpec]) -> None:
    """A fork whose signature is older than ``MAX_RESOLVE_AGE`` is refused by the fork's
    workflow before anything is written: the fork fails with one line, the store holds
    nothing of it."""
    parent = make_spec()
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, parent, task_queue)
        status = await wait_status(handle, {"awaiting_review", "blocked", "failed"})
        assert status.status == "awaiting_review", status
        principal = artifacts.Principal(principal_id="pressroom-cli",
                                        tenant=parent.scope.tenant,
                                        project=parent.scope.project)
        store = await runtime.store()
        state = await parent_state(store, parent.job_id, principal, 1)
        desc = await handle.describe()
        new_id = f"{parent.job_id}-late"
        lineage = ForkLineage(parent_job=parent.job_id, parent_run_id=desc.run_id or "",
                              turn=1, state_hash=state.state_hash(), new_job=new_id,
                              edits=ForkEdits(question=QUESTION))
        old = datetime.now(UTC) - MAX_RESOLVE_AGE - timedelta(minutes=5)
        signed = lineage.model_copy(update={"signature": sign(
            reviewer_key("alice"), "fork", parent.job_id, lineage.signed_body(),
            signer="alice", now=old)})
        late = await start_job(client, fork_spec(state.spec, signed), task_queue)
        with pytest.raises(WorkflowFailureError) as refused:
            await late.result()
        message = str(getattr(refused.value.cause, "message", refused.value))
        assert "more than 1:00:00 ago; sign a new one" in message and "\n" not in message
        assert await store.head("job_spec", new_id, principal=principal) is None


def test_settings_store_is_the_home_database(tmp_path: Path) -> None:
    """The CLI test's store is the one ``pressroom`` opens under ``$PRESSROOM_HOME``."""
    settings = Settings.from_env({"PRESSROOM_HOME": str(tmp_path)})
    assert settings.store_url.endswith(str(tmp_path / "pressroom.db"))
