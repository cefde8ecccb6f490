"""Replay the recorded main-path histories against today's ``ResearchJobWorkflow``.

A non-deterministic change to the workflow (a new activity in the middle, a reordered
step, a timer that was not there) makes replay fail here, in CI, before it can wedge a
running job. ``record.py`` re-records the histories after an intentional, versioned change.
The last test proves the replayer really catches such a change.
"""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from contracts.workflow_messages import JobResult, ResearchJobInput
from workflows.research_job import ResearchJobWorkflow
from workflows.temporal_config import (
    DATA_CONVERTER,
    WORKFLOW_FAILURE_EXCEPTION_TYPES,
    WORKFLOW_RUNNER,
    WORKFLOW_TYPE,
)

HERE = Path(__file__).resolve().parent
HISTORIES = sorted(HERE.glob("*.json"))
EXPECTED = {"approve", "revise_then_approve", "reject", "review_timeout",
            "blocked_then_resolved", "loop_approve", "loop_revise_then_approve",
            "loop_budget_then_accept", "loop_cost_budget_then_raise", "loop_signed_resolve",
            "loop_signed_cancel",
            "loop_needs_operator_retry", "loop_needs_operator_abandon",
            "loop_review_not_recorded", "loop_rollover_after_resolve",
            "loop_search_attributes", "loop_research_log_approve", "loop_fork_approve"}


def _history(path: Path) -> WorkflowHistory:
    data = json.loads(path.read_text(encoding="utf-8"))
    return WorkflowHistory.from_json(f"replay-{path.stem}", data)


def _replayer(*workflows: type) -> Replayer:
    return Replayer(workflows=list(workflows), data_converter=DATA_CONVERTER,
                    workflow_runner=WORKFLOW_RUNNER,
                    workflow_failure_exception_types=list(WORKFLOW_FAILURE_EXCEPTION_TYPES))


def test_every_main_path_is_recorded() -> None:
    assert {p.stem for p in HISTORIES} == EXPECTED


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_history_replays_deterministically(path: Path) -> None:
    result = await _replayer(ResearchJobWorkflow).replay_workflow(_history(path))
    assert result.replay_failure is None


def _activities(path: Path) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
            for e in data["events"] if "activityTaskScheduledEventAttributes" in e]


def test_the_fork_history_is_a_fork_through_review_to_publication() -> None:
    """``loop_fork_approve`` is a forked job's own history: it starts from its parent's
    state (``fork_state``, no plan of its own), researches from there, and is reviewed and
    published; its start input carries the signed lineage with the question edit."""
    path = HERE / "loop_fork_approve.json"
    names = _activities(path)
    assert names[0] == "fork_state" and "write_plan" not in names
    assert "decide" in names and "record_turn" in names and "draft" in names
    assert names.index("publish") > names.index("draft")
    started = json.loads(path.read_text(encoding="utf-8"))["events"][0]
    payload = started["workflowExecutionStartedEventAttributes"]["input"]["payloads"][0]
    spec = json.loads(base64.b64decode(payload["data"]))["spec"]
    assert spec["lineage"]["turn"] == 1 and spec["lineage"]["edits"]["question"]
    assert spec["lineage"]["signature"]["signer"] == "alice"


@workflow.defn(name=WORKFLOW_TYPE, sandboxed=False)  # this test module does file I/O at import
class _ReorderedWorkflow:
    """Stands for a careless edit: it writes the plan before storing the job spec."""

    @workflow.run
    async def run(self, inp: ResearchJobInput) -> JobResult:
        await workflow.execute_activity("write_plan", inp.spec,
                                        start_to_close_timeout=timedelta(seconds=5))
        raise AssertionError("unreachable in replay")


async def test_replay_catches_a_nondeterministic_change() -> None:
    path = HERE / "approve.json"
    result = await _replayer(_ReorderedWorkflow).replay_workflow(
        _history(path), raise_on_replay_failure=False)
    assert result.replay_failure is not None
    assert "Nondeterminism" in type(result.replay_failure).__name__ or \
        "nondetermin" in str(result.replay_failure).lower()
