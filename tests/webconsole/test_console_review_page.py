"""A review page a reviewer decides in, in a real headless Chromium 1400 px wide against
the real dev server, a real worker process and the real store: the decision bar stays on
screen with its summary, citations carry short labels (the full citation in their
tooltip), excerpt cards fit their border and open their context, topic headings read as
words, the jobs list shows each question, the manifest page shows exact token numbers and
each item's content on demand (and no Python repr), the job page says what each call
found, and a comment anchored to one claim goes with "request changes" quoting that claim
and reaches the next research turn's request.
Every page is saved under ``reports/console/`` (kept by CI as an artifact)."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from temporalio.testing import WorkflowEnvironment

import artifacts
from activities.runtime import principal_of
from contracts.job_spec import JobSpec
from settings import Settings
from tests.waiting import wait_for
from tests.webconsole.browser import screenshot, wait_visible
from tests.webconsole.consolekit import PASSWORD, make_accounts, review_for
from tests.webconsole.test_console_live import sign_in_browser
from tests.workflows.jobkit import start_job, start_worker_process, wait_status
from webconsole.config import ConsoleConfig
from webconsole.server import LiveConsole
from workflows.research_job import ResearchJobWorkflow

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

def _address(env: WorkflowEnvironment) -> str:
    return str(env.client.service_client.config.target_host)


async def test_a_review_page_a_reviewer_decides_in(
        temporal_env: WorkflowEnvironment, task_queue: str, store_url: str, tmp_path: Path,
        make_spec: Callable[..., JobSpec], chrome: Any,
        serve_asgi: Callable[[Any], str]) -> None:
    client = temporal_env.client
    settings = Settings(home=tmp_path / "home", database_url=store_url,
                        temporal_address=_address(temporal_env))
    accounts = make_accounts(settings.console_accounts_dir, "alice")
    spec = make_spec(review=review_for(accounts, "alice"))
    worker = start_worker_process({}, _address(temporal_env), task_queue, store_url,
                                  tmp_path / "worker.log")
    try:
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"awaiting_review"}, timeout=180)
        base = serve_asgi(LiveConsole(settings, ConsoleConfig(secret=secrets.token_bytes(32),
                                                              refresh_seconds=1)))
        browser = chrome
        browser.set_window_size(1400, 1000)
        sign_in_browser(browser, base, "alice")

        # B5: the jobs list shows each job's question
        row = f'tr[data-job="{spec.job_id}"]'
        assert spec.question in wait_visible(browser, f"{row} .question", timeout=30).text
        screenshot(browser, "review-page-01-jobs")

        # B7: the job page groups each turn's calls and says what each found, one line each
        browser.get(f"{base}/jobs/{spec.job_id}")
        wait_visible(browser, "#turns")
        found = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#turns ul.calls li")]
        assert any(re.fullmatch(r"search '\w+' → \d+ hits? in \d+ files?", f) for f in found), found
        assert any(re.fullmatch(r"read \S+\.md L\d+-\d+ \(of \d+\)", f) for f in found), found
        assert len(browser.find_elements(By.CSS_SELECTOR, "#turns details.turn")) >= 2
        browser.execute_script("document.getElementById('turns').scrollIntoView()")
        screenshot(browser, "review-page-02-job-turns")

        browser.get(f"{base}/jobs/{spec.job_id}/review")
        wait_visible(browser, "#draft")
        # no page-wide horizontal scroll at 1400 px
        assert browser.execute_script(
            "return document.documentElement.scrollWidth <= window.innerWidth")

        # B1: a sticky decision bar with the summary, on screen at the top and the bottom
        bar = wait_visible(browser, "#decision-bar")
        assert re.fullmatch(r"4 claims", browser.find_element(By.ID, "sum-claims").text)
        assert "from 2 files in 1 source" in browser.find_element(By.ID, "sum-sources").text
        assert browser.find_element(By.ID, "sum-missing").text == "no topic missing"
        assert browser.find_element(By.ID, "sum-flags").text == "0 security flags"
        assert browser.find_element(By.ID, "sum-cost").text.startswith("cost ")

        def on_screen(element: Any) -> bool:
            return bool(browser.execute_script(
                "const r = arguments[0].getBoundingClientRect();"
                "return r.top >= 0 && r.bottom <= window.innerHeight && r.height > 0;",
                element))

        assert on_screen(bar) and on_screen(browser.find_element(By.ID, "approve"))
        screenshot(browser, "review-page-03-top")
        browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
        assert browser.execute_script("return window.scrollY") > 0
        assert on_screen(bar) and on_screen(browser.find_element(By.ID, "approve"))
        screenshot(browser, "review-page-04-bottom")
        browser.execute_script("window.scrollTo(0, 0)")

        # B4: topic headings read as words
        headings = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "#draft h3")]
        assert "Retries" in headings and "Resume" in headings, headings
        assert "retries" not in headings

        # B2: short citation labels, the whole citation in the tooltip
        links = browser.find_elements(By.CSS_SELECTOR, "#draft a.cite")
        assert links
        for link in links:
            assert re.fullmatch(r"handbook \S+\.md L\d+(-\d+)?", link.text), link.text
            title = link.get_attribute("title") or ""
            assert title.startswith("handbook:") and re.search(r"#L\d+-L\d+$", title), title
            label = link.text.split()
            assert title.startswith(f"{label[0]}:{label[1]}#L{label[2][1:].split('-')[0]}-")

        # B3: excerpt cards fit their border, say where they are from once, open context
        cards = browser.find_elements(By.CSS_SELECTOR, "#evidence .excerpt")
        assert len(cards) == 4
        for card in cards:
            assert browser.execute_script(
                "const c = arguments[0]; return [c, ...c.querySelectorAll('pre, code, p')]"
                ".every(e => e.scrollWidth <= e.clientWidth + 1 || e.clientWidth === 0);",
                card), card.get_attribute("id")
            code = card.find_element(By.CSS_SELECTOR, "code.pinned")
            pinned = code.text
            assert re.fullmatch(r"handbook@sha256:[0-9a-f]{12}…:\S+\.md", pinned), pinned
            assert re.fullmatch(r"handbook@sha256:[0-9a-f]{64}:\S+\.md",
                                code.get_attribute("title") or "")
            assert card.text.count(pinned) == 1 and card.text.count("handbook@") == 1
        first = cards[0]
        links[0].click()
        first = browser.find_element(By.CSS_SELECTOR, f"#{links[0].get_attribute('data-excerpt')}")
        assert on_screen(first.find_element(By.TAG_NAME, "h3"))  # not under the sticky bar
        first.find_element(By.CSS_SELECTOR, "details.context summary").click()
        context = wait_visible(browser, "details.context[open] pre")
        assert context.find_elements(By.CSS_SELECTOR, ".hit")
        assert context.find_elements(By.CSS_SELECTOR, ".around")
        screenshot(browser, "review-page-05-excerpt-context")
        whole = first.find_element(By.CSS_SELECTOR, ".whole-file a")
        assert "revision=sha256%3A" in (whole.get_attribute("href") or "")
        cited_text = first.find_element(By.CSS_SELECTOR, "pre.cited").text.split(None, 1)[1]
        whole.click()
        lines = wait_visible(browser, "#file-lines")
        assert cited_text.strip() in lines.find_element(By.CSS_SELECTOR, ".hit").text
        screenshot(browser, "review-page-06-whole-file")
        # a path the job never read (or outside the source) shows nothing, reads nothing
        browser.get(f"{base}/jobs/{spec.job_id}/file?source=handbook&path=../../etc/passwd"
                    "&revision=x")
        wait_visible(browser, "#file-none")

        # B6: the manifest page: exact numbers beside the bars, content on demand, no repr
        browser.get(f"{base}/jobs/{spec.job_id}/review")
        browser.find_element(By.ID, "draft-manifest").click()
        wait_visible(browser, "#partitions")
        rows = browser.find_elements(By.CSS_SELECTOR, "#partitions tr.partition")
        used = {}
        for r in rows:
            number = r.find_element(By.CSS_SELECTOR, "td.tokens").text
            assert re.fullmatch(r"\d{1,3}(,\d{3})*", number), number
            value = int(r.find_element(By.TAG_NAME, "progress").get_attribute("value") or 0)
            assert value == int(number.replace(",", ""))
            used[r.get_attribute("data-partition")] = value
        assert 0 in used.values() and any(v > 0 for v in used.values()), used
        text = browser.find_element(By.TAG_NAME, "main").text
        for raw in ("None", "{'", "'}", "[]", "True", "False"):
            assert raw not in text, raw
        item = browser.find_element(By.CSS_SELECTOR, "#included details.item-content")
        item.find_element(By.TAG_NAME, "summary").click()
        assert wait_visible(browser, "#included details.item-content[open] pre").text.strip()
        data_items = [d for d in browser.find_elements(By.CSS_SELECTOR,
                                                       "#included details.item-content")
                      if "note:" in d.text]
        assert data_items
        data_items[0].find_element(By.TAG_NAME, "summary").click()
        assert data_items[0].find_element(By.TAG_NAME, "pre").text.strip()
        screenshot(browser, "review-page-07-manifest")
        text = browser.find_element(By.TAG_NAME, "main").text
        assert "None" not in text and "{'" not in text

        # B8: a comment anchored to one claim goes with "request changes" as that claim's
        # request, the claim quoted from the draft itself
        browser.get(f"{base}/jobs/{spec.job_id}/review")
        wait_visible(browser, "#claim-comments summary").click()
        claim_two = browser.find_element(By.ID, "claim-2").text
        box = wait_visible(browser, "#claim-comment-2")
        box.send_keys("Say what the maximum delay is.")
        screenshot(browser, "review-page-08-claim-comment")
        browser.find_element(By.ID, "decision-password").send_keys(PASSWORD["alice"])
        browser.find_element(By.ID, "request-changes").click()
        assert "request changes" in wait_visible(browser, "#decided").text
        store = await artifacts.open_store(store_url)
        try:
            _, decision = await store.get("review_decision", f"{spec.job_id}.review",
                                     principal=principal_of(spec))
        finally:
            await store.close()
        comments = json.loads(decision)["comments"]
        assert len(comments) == 1, comments
        assert comments[0].startswith("On claim 2 (“")
        assert comments[0].endswith("”): Say what the maximum delay is.")
        quoted = comments[0].split("“", 1)[1].rsplit("”", 1)[0]
        assert quoted.startswith(claim_two.split(" — ")[0])  # the claim's own sentence
        assert "handbook:retries.md#L4-L4" in quoted  # with its whole citation

        # ... and reaches the agent: the next research turn's sealed request holds the
        # claim's request (as reviewer data, never as task text)
        async def asked_again() -> bool:
            status = await handle.query(ResearchJobWorkflow.status)
            store = await artifacts.open_store(store_url)
            try:
                for manifest_id in status.manifest_ids:
                    body = await store.get_manifest(manifest_id, principal=principal_of(spec))
                    if body["stage"] == "research" and "Say what the maximum delay is." in \
                            body["serialized_request"]["canonical_json"]:
                        return True
            finally:
                await store.close()
            return False

        await wait_for(asked_again, 120, "the claim's request in a research turn's request")
    finally:
        worker.terminate()
        worker.wait(30)
