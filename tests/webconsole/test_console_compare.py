"""The console's compare page: two sealed research requests item by item, as ``pressroom
explain --diff`` prints them.

Real components: the Temporal dev server, a worker with Pressroom's activities, the SQLite
store, reviewer accounts and the console app over HTTP. A parent job runs to its review;
a fork of one of its turns with a new question runs to its own review; the fork's job page
lists its own turns (from N+1) and links its first turn to the parent's same turn; the
compare page names exactly the items ``explain --diff`` names. A reviewer the jobs do not
list, and a turn no job has, get the console's one 404; an unpublished job's published page
says it has published nothing (the browser test reads a published one).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.runtime import ActivityRuntime
from cli.fork_command import EditFlags, explain_diff, fork_job
from contracts.job_spec import JobSpec
from tests.webconsole.consolekit import (
    PASSWORD,
    http,
    make_accounts,
    open_console,
    review_for,
    sign_in,
)
from tests.workflows.jobkit import loop_notes, running_worker, start_job, wait_status

_ROW = re.compile(r'<tr class="compare-item change-(?P<change>\w+)" data-item="(?P<item>[^"]*)">')


def _rows(page: str) -> dict[str, str]:
    return {html.unescape(m.group("item")): m.group("change") for m in _ROW.finditer(page)}


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_compare_a_fork_s_first_turn_with_its_parent_s(
        client: Client, runtime: ActivityRuntime, task_queue: str, store_url: str,
        tmp_path: Path, make_spec: Callable[..., JobSpec]) -> None:
    accounts = make_accounts(tmp_path / "accounts", "alice", "bob")
    parent = make_spec(review=review_for(accounts, "alice"), research={"checkpoint_every": 1})
    console = await open_console(client, store_url, accounts)
    try:
        async with running_worker(client, runtime, task_queue), http(console) as web, \
                http(console) as bob_web:
            handle = await start_job(client, parent, task_queue)
            status = await wait_status(handle, {"awaiting_review", "blocked", "failed"})
            assert status.status == "awaiting_review", status
            turn = int((await loop_notes(runtime, parent))[0]["call_id"][1:5])
            assert status.research is not None and turn < status.research.turn
            fork_id = f"f-{parent.job_id}"
            await fork_job(client, store_url, parent.job_id, turn=turn, new_id=fork_id,
                           flags=EditFlags(add_sources=[], refresh_sources=[],
                                           drop_sources=[], drop_notes=[],
                                           question="How are retries and resumes handled, "
                                                    "in detail?"),
                           signer="alice", key=accounts.signing_key("alice",
                                                                   PASSWORD["alice"]),
                           task_queue=task_queue)
            forked = await wait_status(client.get_workflow_handle(fork_id),
                                       {"awaiting_review", "blocked", "failed"})
            assert forked.status == "awaiting_review", forked

            await sign_in(web, "alice")
            # the fork's job page lists its own turns, from N+1, and links the first to
            # the parent's same turn
            page = (await web.get(f"/jobs/{fork_id}")).text
            numbers = [int(n) for n in re.findall(r"<strong>Turn (\d+)</strong>", page)]
            assert forked.research is not None
            assert numbers == list(range(turn + 1, forked.research.turn + 1)), numbers
            link = re.search(r'<a class="compare" href="([^"]+)">what the fork changed '
                             rf"against {re.escape(parent.job_id)} turn {turn + 1}</a>", page)
            assert link is not None, page[page.index('id="turns"'):][:2000]

            compared = await web.get(html.unescape(link.group(1)))
            assert compared.status_code == 200, compared.text
            diff = await explain_diff(client, store_url, parent.job_id, turn + 1, fork_id,
                                      turn + 1)
            rows = _rows(compared.text)
            assert rows == {d.item_id: d.change for d in diff.items}
            assert rows.get("job_spec:{job}") == "changed"  # the question edit
            assert f'id="token-delta">{diff.token_delta:+d}<' in compared.text

            # within one job: a turn against the one before it
            parent_page = (await web.get(f"/jobs/{parent.job_id}")).text
            assert f"what changed since turn {turn}" in parent_page
            within = await web.get(f"/jobs/{parent.job_id}/compare",
                                   params={"turn": str(turn + 1)})
            assert within.status_code == 200
            own = await explain_diff(client, store_url, parent.job_id, turn, parent.job_id,
                                     turn + 1)
            assert _rows(within.text) == {d.item_id: d.change for d in own.items}
            assert own.items, "consecutive turns of a research loop differ"

            # a turn no job has, and a turn that is not a number: the one 404
            missing = await web.get(f"/jobs/{fork_id}/compare", params={"turn": "999"})
            assert missing.status_code == 404 and "has no research turn 99" in missing.text
            malformed = await web.get(f"/jobs/{fork_id}/compare", params={"turn": "1'"})
            assert malformed.status_code == 404
            # a job that has published nothing has no published page (it says why)
            unpublished = await web.get(f"/jobs/{fork_id}/published")
            assert unpublished.status_code == 409 and "has published nothing" in unpublished.text
            # bob is listed by neither job: the same 404 as a job that does not exist
            await sign_in(bob_web, "bob")
            for job_id in (fork_id, parent.job_id):
                refused = await bob_web.get(f"/jobs/{job_id}/compare",
                                            params={"turn": str(turn + 1)})
                assert refused.status_code == 404, refused.text
                assert "data-item" not in refused.text
                hidden = await bob_web.get(f"/jobs/{job_id}/published")
                assert hidden.status_code == 404 and "published nothing" not in hidden.text
    finally:
        await console.close()


def test_rows_pattern_reads_the_template() -> None:
    """Guard the guard: the pattern above matches the row the template writes."""
    template = (Path(__file__).resolve().parents[2] / "webconsole" / "templates"
                / "compare.html").read_text(encoding="utf-8")
    assert '<tr class="compare-item change-{{ i.change }}" data-item="{{ i.item_id | shown }}">' \
        in template
    assert _rows('<tr class="compare-item change-left" data-item="a:{job}">') == {
        "a:{job}": "left"}

