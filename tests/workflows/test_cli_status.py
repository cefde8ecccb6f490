"""The status line ``pressroom list`` shows per job and the exit code of ``status`` /
``run --wait`` per job state (README.md's table) — pure: no server."""

from __future__ import annotations

import pytest

from cli.commands import exit_code, visible_status
from client.jobs import JobView, VisibleJob
from contracts.workflow_messages import JobResult, JobStatus


@pytest.mark.parametrize(("job", "shown"), [
    (VisibleJob(job_id="j", status="published", execution="COMPLETED"), "published"),
    (VisibleJob(job_id="j", status="awaiting_review"), "awaiting_review"),
    (VisibleJob(job_id="j", status="blocked", reason="budget_exhausted"),
     "blocked: budget_exhausted"),
    (VisibleJob(job_id="j", status="needs_operator", reason="write_plan:ScopeDenied"),
     "needs_operator: write_plan:ScopeDenied"),
    (VisibleJob(job_id="j", status="running", execution="TERMINATED"),
     "terminated (was running)"),
    (VisibleJob(job_id="j", status="rejected", execution="COMPLETED"), "rejected"),
    (VisibleJob(job_id="j", execution="COMPLETED"), "completed"),  # before the attributes
])
def test_list_shows_pressrooms_status(job: VisibleJob, shown: str) -> None:
    assert visible_status(job) == shown


@pytest.mark.parametrize(("status", "code"), [
    ("published", 0), ("rejected", 5), ("expired", 5), ("failed", 5), ("cancelled", 5)])
def test_exit_code_of_an_ended_job(status: str, code: int) -> None:
    result = JobResult(job_id="j", tenant="t", project="p", status=status)
    assert exit_code(JobView(job_id="j", execution="COMPLETED", result=result)) == code


def test_exit_code_of_a_job_stopped_from_outside_or_without_a_worker() -> None:
    assert exit_code(JobView(job_id="j", execution="TERMINATED", failure="terminated: x")) == 5
    assert exit_code(JobView(job_id="j", execution="RUNNING", no_worker="q")) == 7


@pytest.mark.parametrize(("status", "code"), [
    ("running", 0), ("blocked", 3), ("awaiting_review", 4), ("needs_operator", 6)])
def test_exit_code_of_a_running_job(status: str, code: int) -> None:
    live = JobStatus(job_id="j", status=status, stage="research", blocked_reason=None,
                     pending_draft=None, manifest_ids=[], revision_round=0, destination="d",
                     reviewers=[], tenant="t", project="p")
    assert exit_code(JobView(job_id="j", execution="RUNNING", live=live)) == code
