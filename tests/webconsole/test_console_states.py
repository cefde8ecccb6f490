"""The jobs page, the job page and the review page for a job in each state a reviewer meets
besides ``running``/``awaiting_review`` (test_console_http.py): blocked with a reason,
needs_operator, published, rejected, cancelled and failed (abandoned).

Real dev server, one real worker with Pressroom's activities, the real SQLite store and
reviewer accounts; every decision and command is signed with the account's own key (the
one the spec pins). ``needs_operator`` comes from the test hook ``PRESSROOM_TEST_FAIL_AT``
(activities/fail_hook.py), set only until that job has parked, so the other jobs — started
after — run clean and concurrently. Waiting is on observable conditions with deadlines.
"""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client, WorkflowFailureError

from activities.fail_hook import FAIL_ENV
from activities.runtime import ActivityRuntime
from client import jobs
from contracts.job_spec import JobSpec
from contracts.workflow_messages import ResolveInput
from tests.waiting import wait_for
from tests.webconsole.consolekit import (
    PASSWORD,
    http,
    make_accounts,
    open_console,
    review_for,
    sign_in,
)
from tests.workflows.jobkit import (
    published_files,
    resolve,
    review,
    running_worker,
    start_job,
    wait_status,
)
from tests.workflows.test_needs_operator import wait_parked
from webconsole.pages.job import ADD_SOURCE_HINT

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

#: a blocking topic no source covers: the research stage blocks naming it
BLOCKING_TOPICS = [
    {"name": "retries", "terms": ["retry", "backoff"]},
    {"name": "quotas", "terms": ["quota"], "blocking": True},
]
_BADGE = re.compile(r'<span class="badge status-([a-z_]+)"[^>]*>([^<]*)</span>')
_RESOLVE = re.compile(r"<code>pressroom resolve ([^<]+)</code>")
_REASON = re.compile(r'<span class="reason"[^>]*>· ([^<]*)</span>')


def row_of(html: str, job_id: str) -> str | None:
    """The jobs table row of ``job_id``, or ``None`` when the page does not list it."""
    m = re.search(rf'<tr class="job [^"]*" data-job="{re.escape(job_id)}">(.*?)</tr>', html,
                  re.S)
    return m.group(1) if m else None


def badge(html: str) -> tuple[str, str]:
    """(css status, shown text) of the first status badge in ``html``."""
    m = _BADGE.search(html)
    assert m is not None, "no status badge"
    return m.group(1), m.group(2).strip()


def job_badge(html: str) -> tuple[str, str]:
    m = re.search(r'<span class="badge status-([a-z_]+)" id="job-status">([^<]*)</span>', html)
    assert m is not None, "no status badge on the job page"
    return m.group(1), m.group(2).strip()


def section(html: str, section_id: str) -> str | None:
    m = re.search(rf'<section[^>]* id="{section_id}">(.*?)</section>', html, re.S)
    return m.group(1) if m else None


async def listed_as(web: httpx.AsyncClient, job_id: str, status: str) -> str:
    """Wait until the jobs page lists ``job_id`` with ``status`` (visibility lags)."""
    async def row() -> str | None:
        found = row_of((await web.get("/")).text, job_id)
        return found if found is not None and badge(found)[0] == status else None
    return await wait_for(row, 30, f"{job_id} listed as {status}")


def reason_of(row: str) -> str | None:
    """The reason code shown next to a jobs row's status badge, if any."""
    m = _REASON.search(row)
    return m.group(1).strip() if m else None


async def no_draft(web: httpx.AsyncClient, job_id: str) -> None:
    """The review page of a job with no draft waiting: a 409 with one plain sentence."""
    page = await web.get(f"/jobs/{job_id}/review")
    assert page.status_code == 409, page.text
    m = re.search(r'<p class="refusal" role="alert" id="error-message">([^<]*)</p>', page.text)
    assert m is not None, page.text
    assert "has no draft waiting for review" in m.group(1), m.group(1)
    assert "Traceback" not in page.text and 'id="decision-form"' not in page.text


async def test_job_pages_in_every_state(
        client: Client, runtime: ActivityRuntime, task_queue: str, store_url: str,
        tmp_path: Path, make_spec: Callable[..., JobSpec],
        monkeypatch: pytest.MonkeyPatch) -> None:
    accounts = make_accounts(tmp_path / "accounts", "alice", "bob")
    alice_key = accounts.signing_key("alice", PASSWORD["alice"])
    pinned = review_for(accounts, "alice", "bob")
    operator_stuck = make_spec(review=pinned)      # needs_operator, then cancelled
    blocked = make_spec(review=pinned, topics=BLOCKING_TOPICS)  # blocked, then abandoned
    to_publish = make_spec(review=pinned)
    to_reject = make_spec(review=pinned)
    console = await open_console(client, store_url, accounts)
    try:
        async with running_worker(client, runtime, task_queue), http(console) as web:
            await sign_in(web, "alice")

            # needs_operator: the first activity fails for good while the hook is set
            monkeypatch.setenv(FAIL_ENV, "write_plan:ScopeDenied")
            stuck = await start_job(client, operator_stuck, task_queue)
            status, _ = await wait_parked(stuck, "write_plan", more_than=0,
                                          status="needs_operator")
            monkeypatch.delenv(FAIL_ENV)
            reason = status.blocked_reason or ""
            assert reason.startswith("needs_operator: write_plan failed"), reason

            handles = {spec.job_id: await start_job(client, spec, task_queue)
                       for spec in (blocked, to_publish, to_reject)}
            blocked_status, *_ = await asyncio.gather(
                wait_status(handles[blocked.job_id], {"blocked"}),
                wait_status(handles[to_publish.job_id], {"awaiting_review"}),
                wait_status(handles[to_reject.job_id], {"awaiting_review"}))
            assert blocked_status.blocked_reason == (
                "required_evidence_missing (no verified note for: quotas)")
            await asyncio.gather(
                review(client, to_publish.job_id, "approve", reviewer="alice", key=alice_key),
                review(client, to_reject.job_id, "reject", reviewer="alice", key=alice_key,
                       comments=["Not what we asked."]))

            # --- needs_operator ---------------------------------------------------------
            row = await listed_as(web, operator_stuck.job_id, "needs_operator")
            assert badge(row)[1] == "needs operator"
            # the reason code from visibility, next to the badge (never the reason's text)
            assert reason_of(row) == "write_plan:ScopeDenied", row
            assert 'class="review-link"' not in row
            page = await web.get(f"/jobs/{operator_stuck.job_id}")
            assert page.status_code == 200
            assert job_badge(page.text) == ("needs_operator", "needs operator")
            why = section(page.text, "blocked")
            assert why is not None, "no reason section for a job that needs an operator"
            assert "needs_operator: write_plan failed (a permanent error): ScopeDenied" in why
            assert _RESOLVE.findall(why) == [f"{operator_stuck.job_id}",
                                             f"{operator_stuck.job_id} --abandon"]
            assert 'id="open-review"' not in page.text
            await no_draft(web, operator_stuck.job_id)

            # --- blocked with a reason ----------------------------------------------------
            row = await listed_as(web, blocked.job_id, "blocked")
            assert badge(row)[1] == "blocked"
            assert reason_of(row) == "required_evidence_missing", row
            assert "quotas" not in row
            filtered = await web.get("/?status=blocked")
            assert row_of(filtered.text, blocked.job_id) is not None
            assert row_of(filtered.text, operator_stuck.job_id) is None
            page = await web.get(f"/jobs/{blocked.job_id}")
            assert job_badge(page.text) == ("blocked", "blocked")
            assert 'id="job-stage">research</dd>' in page.text
            why = section(page.text, "blocked")
            assert why is not None, "no reason section for a blocked job"
            assert "required_evidence_missing (no verified note for: quotas)" in why
            actions = _RESOLVE.findall(why)
            assert f"{blocked.job_id} {ADD_SOURCE_HINT}" in [html.unescape(a) for a in actions]
            assert actions[-1] == f"{blocked.job_id} --abandon"
            await no_draft(web, blocked.job_id)

            # --- published: the receipt ---------------------------------------------------
            published = await handles[to_publish.job_id].result()
            assert published.status == "published" and published.receipt is not None
            row = await listed_as(web, to_publish.job_id, "published")
            assert badge(row)[1] == "published"
            assert reason_of(row) is None
            page = await web.get(f"/jobs/{to_publish.job_id}")
            assert job_badge(page.text) == ("published", "published")
            receipt = section(page.text, "receipt")
            assert receipt is not None, "no receipt on a published job's page"
            for value in (published.receipt.content_hash, published.receipt.location,
                          published.receipt.review_decision_id):
                assert value in receipt, value
            assert section(page.text, "blocked") is None
            assert "pressroom resolve" not in page.text
            assert len(published_files(to_publish)) == 1
            await no_draft(web, to_publish.job_id)

            # --- rejected ------------------------------------------------------------------
            rejected = await handles[to_reject.job_id].result()
            assert rejected.status == "rejected"
            row = await listed_as(web, to_reject.job_id, "rejected")
            assert badge(row)[1] == "rejected"
            page = await web.get(f"/jobs/{to_reject.job_id}")
            assert job_badge(page.text) == ("rejected", "rejected")
            assert section(page.text, "receipt") is None
            assert "pressroom resolve" not in page.text
            assert rejected.reason == "rejected by reviewer"
            why = section(page.text, "blocked")
            assert why is not None and "rejected by reviewer" in why
            assert published_files(to_reject) == []
            await no_draft(web, to_reject.job_id)

            # --- cancelled (the job that needed an operator) ---------------------------------
            await jobs.cancel_job(client, operator_stuck.job_id, signer="alice", key=alice_key,
                                  reason="not needed any more")
            assert (await stuck.result()).status == "cancelled"
            row = await listed_as(web, operator_stuck.job_id, "cancelled")
            assert badge(row)[1] == "cancelled"
            page = await web.get(f"/jobs/{operator_stuck.job_id}")
            assert job_badge(page.text) == ("cancelled", "cancelled")
            assert "pressroom resolve" not in page.text
            await no_draft(web, operator_stuck.job_id)

            # --- failed (the blocked job, abandoned) -----------------------------------------
            await resolve(client, blocked.job_id, ResolveInput(action="abandon", note="no"),
                          signer="alice", key=alice_key)
            with pytest.raises(WorkflowFailureError):
                await handles[blocked.job_id].result()
            row = await listed_as(web, blocked.job_id, "failed")
            assert badge(row)[1] == "failed"
            page = await web.get(f"/jobs/{blocked.job_id}")
            assert job_badge(page.text) == ("failed", "failed")
            why = section(page.text, "blocked")
            assert why is not None, "no reason on a failed job's page"
            assert "abandoned by alice" in why and "required_evidence_missing" in why
            assert "pressroom resolve" not in page.text  # nothing left to resolve
            await no_draft(web, blocked.job_id)
            assert published_files(blocked) == []
    finally:
        monkeypatch.delenv(FAIL_ENV, raising=False)
        await console.close()

