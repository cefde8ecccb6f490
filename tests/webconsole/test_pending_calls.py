"""The job page's tool calls waiting for a reviewer (docs/mcp.md): each waiting
``effect: write`` call is shown with its tool, server, turn, its arguments as JSON and the
sha256 an approval binds, and the ``approve-call`` commands that act on it — all through
the console's real template environment, so a hostile argument is shown as text, never
markup."""

from __future__ import annotations

from contracts.mcp_servers import arguments_sha256
from contracts.workflow_messages import JobStatus, PendingToolApproval
from webconsole.app import templates
from webconsole.pages.job import pending_calls

HOSTILE = {"message": "<script>alert(1)</script> fix retries", "paths": ["a.py"]}


def _status(*approvals: PendingToolApproval) -> JobStatus:
    return JobStatus(job_id="j1", stage="research", status="running", blocked_reason=None,
                     pending_draft=None, manifest_ids=[], revision_round=0,
                     destination="/tmp/out", reviewers=["alice"], tenant="acme",
                     project="docs", pending_tool_approvals=list(approvals))


def test_a_waiting_call_shows_its_arguments_as_text_and_the_commands() -> None:
    waiting = PendingToolApproval(call_id="t0003-1", tool_name="mcp__git__git_commit",
                                  server="git", tool="git_commit", arguments=HOSTILE,
                                  arguments_sha256=arguments_sha256(HOSTILE), turn=3)
    calls = pending_calls(_status(waiting))
    assert [c.call_id for c in calls] == ["t0003-1"]
    assert '"message": "<script>alert(1)</script> fix retries"' in calls[0].arguments_text
    html = templates().env.get_template("job_pending_calls.html").render(
        pending_calls=calls, job_id="j1")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "git_commit" in html and "research turn 3" in html
    assert arguments_sha256(HOSTILE) in html
    assert "pressroom approve-call j1 t0003-1</code>" in html
    assert "pressroom approve-call j1 t0003-1 --reject --reason TEXT" in html


def test_no_section_without_a_waiting_call() -> None:
    assert pending_calls(None) == [] and pending_calls(_status()) == []
    html = templates().env.get_template("job_pending_calls.html").render(
        pending_calls=[], job_id="j1")
    assert html.strip() == ""
