"""The review console in a real headless browser (Debian's ``chromium`` driven by
Selenium through ``chromium-driver``), against the real dev server, a real worker process,
the real SQLite store and real reviewer accounts.

A reviewer signs in, opens the job awaiting review, follows a citation to its excerpt,
opens what the model saw, requests changes, sees the revised draft and its diff, approves,
and sees the publish receipt. Each page is saved as a screenshot under
``reports/console/`` (not committed) after its key elements are checked visible.

The console runs as ``pressroom web`` runs it (``webconsole.server.LiveConsole`` under
uvicorn, dependencies opened in the server's own loop); the worker is a separate process,
so the browser's blocking calls never stall the job.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from temporalio.testing import WorkflowEnvironment

from contracts.job_spec import JobSpec
from settings import Settings
from tests.waiting import wait_for
from tests.webconsole.browser import screenshot, wait_visible
from tests.webconsole.consolekit import PASSWORD, make_accounts, review_for
from tests.workflows.jobkit import published_files, start_job, start_worker_process, wait_status
from webconsole.config import ConsoleConfig
from webconsole.server import LiveConsole

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


def _address(env: WorkflowEnvironment) -> str:
    return str(env.client.service_client.config.target_host)


async def test_sign_in_review_request_changes_approve_in_a_browser(
        temporal_env: WorkflowEnvironment, task_queue: str, store_url: str, tmp_path: Path,
        docs: Path, make_spec: Callable[..., JobSpec], chrome: Any,
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
        first = await wait_status(handle, {"awaiting_review"})
        assert first.pending_draft is not None
        base = serve_asgi(LiveConsole(settings, ConsoleConfig(secret=secrets.token_bytes(32),
                                                              refresh_seconds=1)))
        browser = chrome

        # sign in
        browser.get(base + "/")
        wait_visible(browser, "#signin-form")
        screenshot(browser, "01-sign-in")
        browser.find_element(By.ID, "name").send_keys("alice")
        browser.find_element(By.ID, "password").send_keys(PASSWORD["alice"])
        browser.find_element(By.ID, "signin-submit").click()
        assert wait_visible(browser, "#signed-in-as").text == "alice"

        # the jobs page refreshes itself until the job is listed (visibility lags)
        row = f'tr[data-job="{spec.job_id}"]'
        wait_visible(browser, row, timeout=30)
        assert "awaiting review" in browser.find_element(By.CSS_SELECTOR, row).text
        screenshot(browser, "02-jobs")

        # the job page
        browser.find_element(By.CSS_SELECTOR, f"{row} td a").click()
        assert spec.job_id in wait_visible(browser, "#job-title").text
        assert wait_visible(browser, "#job-status").text == "awaiting review"
        wait_visible(browser, "#timeline")
        screenshot(browser, "03-job")
        # what changed between two research turns' requests
        browser.find_element(By.CSS_SELECTOR, "#turns a.compare").click()
        assert wait_visible(browser, "#change-counts").text.endswith("changed")
        wait_visible(browser, "#compare-items")
        screenshot(browser, "03-job-turn-compare")
        browser.back()
        wait_visible(browser, "#timeline")

        # the draft, a citation followed to its excerpt
        browser.find_element(By.ID, "open-review").click()
        wait_visible(browser, "#draft")
        assert wait_visible(browser, "#draft-revision").text == f"r{first.pending_draft.revision}"
        citation = wait_visible(browser, "#draft a.cite")
        anchor = citation.get_attribute("data-excerpt")
        assert anchor
        citation.click()
        assert browser.current_url.endswith("#" + anchor)
        excerpt = wait_visible(browser, f"#{anchor}")
        assert excerpt.find_element(By.TAG_NAME, "pre").text.strip()
        screenshot(browser, "04-review-citation")
        # the excerpt's whole file at its pinned revision, as the job's reads returned it
        excerpt.find_element(By.CSS_SELECTOR, ".whole-file a").click()
        assert wait_visible(browser, "#file-lines span.hit").text.strip()
        screenshot(browser, "04-whole-file")
        browser.back()
        wait_visible(browser, "#draft")

        # what the model saw
        browser.find_element(By.ID, "draft-manifest").click()
        wait_visible(browser, "#partitions")
        wait_visible(browser, "#request-verified")
        browser.find_element(By.CSS_SELECTOR, "#request-details summary").click()
        assert "messages" in wait_visible(browser, "#request-details pre").text
        screenshot(browser, "05-what-the-model-saw")
        browser.back()

        # request changes
        wait_visible(browser, "#decision-form")
        browser.find_element(By.ID, "comments").send_keys("Say what the maximum delay is.")
        browser.find_element(By.ID, "decision-password").send_keys(PASSWORD["alice"])
        browser.find_element(By.ID, "request-changes").click()
        assert "request changes" in wait_visible(browser, "#decided").text

        async def revised() -> Any:
            st = await wait_status(handle, {"awaiting_review"})
            assert st.pending_draft is not None
            assert first.pending_draft is not None
            return st if st.pending_draft.revision != first.pending_draft.revision else None
        second = await wait_for(revised, 120, "the revised draft")

        # the revised draft and its diff
        browser.get(f"{base}/jobs/{spec.job_id}/review")
        assert wait_visible(browser, "#draft-revision").text == \
            f"r{second.pending_draft.revision}"
        diff = wait_visible(browser, "#diff")
        assert diff.find_elements(By.CSS_SELECTOR, "tr.add, tr.del")
        screenshot(browser, "06-revised-draft-diff")

        # approve; the receipt
        browser.find_element(By.ID, "decision-password").send_keys(PASSWORD["alice"])
        browser.find_element(By.ID, "approve").click()
        wait_visible(browser, "#decided")
        await wait_status(handle, {"published"})
        browser.refresh()
        receipt = wait_visible(browser, "#receipt")
        assert "Published" in receipt.text
        assert wait_visible(browser, "#job-status").text == "published"
        screenshot(browser, "07-published-receipt")
        assert len(published_files(spec)) == 1
        # an ended job answers no status query: its research figures come from its turns
        assert second.research is not None
        assert wait_visible(browser, "#job-turn").text == str(second.research.turn)
        assert wait_visible(browser, "#job-tokens").text != "—"

        # the published article and the signed decision behind it
        browser.find_element(By.ID, "published-link").click()
        assert "alice" in wait_visible(browser, "#signature-holds").text
        assert wait_visible(browser, "#published-revision").text == \
            f"r{second.pending_draft.revision}"
        assert wait_visible(browser, "#decision-reviewer").text == "alice"
        cited = wait_visible(browser, "#article a.cite")
        assert wait_visible(browser, f"#{cited.get_attribute('data-excerpt')}")
        screenshot(browser, "08-published-article")
    finally:
        worker.terminate()
        worker.wait(30)
