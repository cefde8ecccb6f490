"""The review console through its HTTP interface, against the real dev server, a real
worker with Pressroom's activities, the real SQLite store and real reviewer accounts.

One job is taken from ``awaiting_review`` through a refused stale decision, a request for
changes, the revised draft and its diff, to approval and the publish receipt — every
decision signed with the reviewer's account key and sent through the real Update. Around
it: the refusals (no session, wrong password, missing CSRF token, stale hash, a reviewer the
job does not list, another tenant's job) and the escaping of hostile content (a source
holding ``<script>`` and a file name with a bidi override and TAG characters: every page
shows each invisible character as a marker).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from activities.runtime import ActivityRuntime
from context.invisible import INVISIBLE
from contracts.job_spec import JobSpec
from contracts.pricing import format_usd, load_prices
from tests.waiting import wait_for
from tests.webconsole.consolekit import (
    form_token,
    http,
    make_accounts,
    open_console,
    review_for,
    sign_in,
)
from tests.workflows.jobkit import published_files, running_worker, start_job, wait_status

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

HOSTILE_LINE = "The client retries <script>alert('x')</script> with backoff <img src=x onerror=y>."
#: a bidi override and a word in Unicode TAG characters (both invisible on screen)
TAG_WORD = "".join(chr(0xE0000 + ord(c)) for c in "ok")
BIDI_NAME = f"evil\u202edm{TAG_WORD}.md"


def _unmarked(html: str) -> list[str]:
    """Invisible characters a page shows as they are (each should be a marker)."""
    return [f"U+{ord(c):04X}" for c in html if ord(c) in INVISIBLE]


def _hostile_docs(docs: Path) -> None:
    (docs / BIDI_NAME).write_text(f"# Retry notes\n\n{HOSTILE_LINE}\n", encoding="utf-8")


async def test_review_flow_refusals_and_escaping(
        client: Client, runtime: ActivityRuntime, task_queue: str, store_url: str,
        tmp_path: Path, docs: Path, make_spec: Callable[..., JobSpec]) -> None:
    _hostile_docs(docs)
    # the offline agent priced (docs/configuration.md#cost-in-money), so the page shows
    # what turns cost
    (tmp_path / "prices.yaml").write_text(
        'as_of: "2026-01-01"\nmodels: {extractive: {extractive-v1: {input: 10, '
        'cached_input: 1, cache_write: 12.5, output: 30}}}\n', encoding="utf-8")
    runtime.prices = load_prices(tmp_path / "prices.yaml")
    accounts = make_accounts(tmp_path / "accounts", "alice", "bob")
    spec = make_spec(review=review_for(accounts, "alice"))
    other = make_spec(scope={"tenant": "globex", "project": "docs", "task": "t2"},
                      review=review_for(accounts, "bob"))
    console = await open_console(client, store_url, accounts)
    try:
        async with running_worker(client, runtime, task_queue), http(console) as web, \
                http(console) as bob_web:
            handle = await start_job(client, spec, task_queue)
            await start_job(client, other, task_queue)
            first = await wait_status(handle, {"awaiting_review"})
            assert first.pending_draft is not None

            # no session: every page sends you to sign in
            assert (await web.get("/")).headers["location"].startswith("/signin")
            # a wrong password is refused and nothing else is said
            page = await web.get("/signin")
            bad = await web.post("/signin", data={"name": "alice", "password": "nope-nope-nope",
                                                  "signin_token": form_token(page.text)})
            assert bad.status_code == 401 and "wrong password" in bad.text.lower()
            # a sign-in form without its cookie's token is refused
            forged = await web.post("/signin", data={"name": "alice",
                                                     "password": "alice-correct-horse",
                                                     "signin_token": "made-up"})
            assert forged.status_code == 400
            await sign_in(web, "alice")

            # the jobs page (visibility is eventually consistent: wait for the row)
            async def listed(path: str) -> str | None:
                text = (await web.get(path)).text
                return text if spec.job_id in text else None
            jobs_html = await wait_for(lambda: listed("/?status=mine"), 30,
                                       "the job on alice's 'awaiting my review' list")
            assert "awaiting review" in jobs_html
            assert other.job_id not in jobs_html
            assert spec.job_id not in (await web.get("/?tenant=globex")).text
            # a filter value no visibility query can carry is a plain refusal, not a crash
            quoted = await web.get("/", params={"tenant": "acme' OR 'x'='x"})
            assert quoted.status_code == 200 and 'id="filter-problem"' in quoted.text
            assert spec.job_id not in quoted.text
            rows = await web.get("/jobs/rows")
            assert rows.status_code == 200 and "<html" not in rows.text

            job_page = await web.get(f"/jobs/{spec.job_id}")
            assert job_page.status_code == 200
            for expected in ("awaiting review", "Timeline", "plan", "draft", "Review the draft"):
                assert expected in job_page.text, expected
            # every sealed step is listed (from the store's columns, bodies unread), and
            # each link opens its manifest
            sealed_steps = re.findall(rf'href="/jobs/{spec.job_id}/manifests/([^"]+)">'
                                      r'((?:plan|research|draft)-\d+)</a> \((\w+), sealed ',
                                      job_page.text)
            assert [step for _id, step, _status in sealed_steps][:2] == ["plan-1", "research-2"]
            assert {status for _id, _step, status in sealed_steps} == {"ready"}
            assert first.manifest_ids[-1] in [manifest_id for manifest_id, _s, _t in sealed_steps]
            # the research turns, each with its tool calls and what their results held
            turns = job_page.text[job_page.text.index('id="turns"'):
                                  job_page.text.index('id="manifests"')]
            assert first.research is not None
            assert turns.count('<details class="turn"') == first.research.turn
            # each turn's cost, and the job's (the priced turns together)
            costs = re.findall(r"out [\d,]+ tokens · \$(\d+\.\d{6}) ·", turns)
            assert len(costs) == first.research.turn and all(float(c) > 0 for c in costs)
            assert first.research.cost_micro_usd > 0
            assert (f'<dd id="job-cost">{format_usd(first.research.cost_micro_usd)}'
                    in job_page.text)
            # each call in one line saying what it found (its id and size in the tooltip)
            calls = re.findall(r'<li class="call" title="call (t\d{4}-\d+) · [^"]*· (\d+) '
                               r'chars"><span class="found">([^<]*)</span></li>', turns)
            assert calls and calls[0][0] == "t0001-1"
            found = [line for _c, _n, line in calls]
            assert any(re.fullmatch(r"search &#39;\w+&#39; → \d+ hits? in \d+ files?", line)
                       for line in found), found
            assert any(line.startswith("note on ") for line in found), found
            assert any(line.startswith("finish: ") for line in found), found

            # another tenant's job, and a job that does not list alice: no such job
            assert (await web.get(f"/jobs/{other.job_id}")).status_code == 404
            assert (await web.get(f"/jobs/{other.job_id}/review")).status_code == 404

            review = await web.get(f"/jobs/{spec.job_id}/review")
            assert review.status_code == 200
            html = review.text
            assert 'class="cite"' in html and 'class="excerpt"' in html
            assert first.pending_draft.content_hash in html
            # hostile content is text: escaped, and the bidi override made visible
            assert "<script>alert" not in html and "<img src=x" not in html
            assert "&lt;script&gt;alert(" in html
            assert "⟨U+202E⟩" in html
            assert "⟨U+E006F⟩" in html and "⟨U+E006B⟩" in html  # the TAG characters too
            assert _unmarked(html) == [] and _unmarked(job_page.text) == []

            manifest_link = f"/jobs/{spec.job_id}/manifests/"
            start = html.index(manifest_link)
            manifest_url = html[start:html.index('"', start)]
            manifest = await web.get(manifest_url)
            assert manifest.status_code == 200
            for expected in ("What the model saw", "Tokens per partition", "Included, by zone",
                             "Kept out", "The exact request", "matches its seal"):
                assert expected in manifest.text, expected
            assert "<script>alert" not in manifest.text
            assert _unmarked(manifest.text) == []

            token = form_token(html)
            decision = {"draft_revision": str(first.pending_draft.revision),
                        "draft_hash": first.pending_draft.content_hash,
                        "destination": spec.destination, "password": "alice-correct-horse"}
            url = f"/jobs/{spec.job_id}/review"
            # refusals: no CSRF token, wrong password, a stale draft hash
            no_csrf = await web.post(url, data={**decision, "decision": "approve"})
            assert no_csrf.status_code == 403
            wrong = await web.post(url, data={**decision, "decision": "approve",
                                              "csrf_token": token, "password": "not-hers-at-all"})
            assert wrong.status_code == 403 and "wrong password" in wrong.text
            stale = await web.post(url, data={**decision, "decision": "approve",
                                              "csrf_token": token,
                                              "draft_hash": "sha256:" + "0" * 64})
            assert stale.status_code == 409 and "stale decision" in stale.text
            assert not published_files(spec)

            # bob is not listed: he cannot see the job, let alone decide on it
            await sign_in(bob_web, "bob")
            assert spec.job_id not in (await bob_web.get("/")).text
            assert (await bob_web.get(f"/jobs/{spec.job_id}/review")).status_code == 404
            bob_post = await bob_web.post(url, data={
                **decision, "decision": "approve", "password": "bob-battery-staple",
                "csrf_token": form_token((await bob_web.get("/")).text)})
            assert bob_post.status_code == 404

            changes = await web.post(url, data={**decision, "decision": "request_changes",
                                                "csrf_token": token,
                                                "comments": "Say what the maximum delay is."})
            assert changes.status_code == 303, changes.text
            revised = await _next_draft(handle, first)
            assert revised.pending_draft is not None
            second = await web.get(url)
            assert "Changes since r" in second.text and 'id="diff"' in second.text

            approve = await web.post(url, data={
                **decision, "decision": "approve", "csrf_token": token,
                "draft_revision": str(revised.pending_draft.revision),
                "draft_hash": revised.pending_draft.content_hash})
            assert approve.status_code == 303, approve.text
            done = await wait_status(handle, {"published"})
            assert done.receipt is not None
            final = await web.get(f"/jobs/{spec.job_id}")
            assert 'id="receipt"' in final.text and "Published" in final.text
            assert len(published_files(spec)) == 1

            events = await console.audit_events(spec)
            actions = [(e.actor, e.action, e.outcome) for e in events]
            assert ("alice", "decision", "request_changes") in actions
            assert ("alice", "decision", "approve") in actions
            assert sum(1 for a in actions if a[1] == "decision_refused") >= 3
            assert ("alice", "view_draft", "ok") in actions
    finally:
        await console.close()


async def _next_draft(handle: Any, first: Any) -> Any:
    async def revised() -> Any:
        st = await wait_status(handle, {"awaiting_review"})
        return st if st.pending_draft and st.pending_draft.revision != \
            first.pending_draft.revision else None
    return await wait_for(revised, 120, "the revised draft")
