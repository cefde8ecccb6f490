"""The live job page: ``/jobs/{id}/events`` (server-sent events) and the script that writes
each state into the page, in a real headless Chromium against the real dev server and a
real worker process.

The worker is paused before its first ``decide`` (the crash tests' pause hook,
``activities.runtime``), so the page is loaded while the job is at turn 0; the pause is
released and the page's turn counter must advance — with no reload (a marker set on the
page's ``window`` survives) — until the job awaits review and the stream says so. The
stream itself is checked over HTTP: signed in and visibility-checked like the job page.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By
from temporalio.testing import WorkflowEnvironment

from contracts.job_spec import JobSpec
from settings import Settings
from tests.waiting import wait_for
from tests.webconsole.browser import screenshot, wait_visible
from tests.webconsole.consolekit import (
    PASSWORD,
    http,
    make_accounts,
    open_console,
    pressroom_web,
    review_for,
    sign_in,
)
from tests.workflows.jobkit import start_job, start_worker_process, wait_status
from webconsole.backend import LIVE_STREAM_SECONDS
from webconsole.config import ConsoleConfig
from webconsole.server import SHUTDOWN_GRACE_SECONDS, LiveConsole

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


def _address(env: WorkflowEnvironment) -> str:
    return str(env.client.service_client.config.target_host)


def sign_in_browser(browser: Any, base: str, name: str) -> None:
    browser.get(base + "/")
    wait_visible(browser, "#signin-form")
    browser.find_element(By.ID, "name").send_keys(name)
    browser.find_element(By.ID, "password").send_keys(PASSWORD[name])
    browser.find_element(By.ID, "signin-submit").click()
    assert wait_visible(browser, "#signed-in-as").text == name


async def test_the_job_page_follows_a_running_job_without_a_reload(
        temporal_env: WorkflowEnvironment, task_queue: str, store_url: str, tmp_path: Path,
        make_spec: Callable[..., JobSpec], chrome: Any,
        serve_asgi: Callable[[Any], str]) -> None:
    client = temporal_env.client
    settings = Settings(home=tmp_path / "home", database_url=store_url,
                        temporal_address=_address(temporal_env))
    accounts = make_accounts(settings.console_accounts_dir, "alice")
    spec = make_spec(review=review_for(accounts, "alice"))
    markers = tmp_path / "markers"
    worker = start_worker_process({"PRESSROOM_TEST_PAUSE_AT": "decide",
                                   "PRESSROOM_TEST_PAUSE_DIR": str(markers)},
                                  _address(temporal_env), task_queue, store_url,
                                  tmp_path / "worker.log")
    try:
        handle = await start_job(client, spec, task_queue)
        await wait_for(lambda: (markers / "decide.reached").exists(), 120,
                       "the worker paused before its first decide")
        base = serve_asgi(LiveConsole(settings, ConsoleConfig(secret=secrets.token_bytes(32),
                                                              refresh_seconds=1)))
        browser = chrome
        browser.set_window_size(1400, 1000)
        sign_in_browser(browser, base, "alice")
        browser.get(f"{base}/jobs/{spec.job_id}")
        assert wait_visible(browser, "#job-turn").text == "0"
        assert wait_visible(browser, "#job-status").text == "running"
        assert browser.find_element(By.ID, "job-turn-limit").text == str(spec.research.max_turns)
        # the stream is open (the script marks each state it wrote) before the release
        await wait_for(lambda: browser.find_element(By.ID, "live").get_attribute(
            "data-updated"), 30, "the first live state written into the page")
        browser.execute_script("window.pressroomNoReload = 'still here';")
        screenshot(browser, "live-01-turn-0")
        (markers / "decide.release").write_text("go", encoding="utf-8")

        def turn() -> int:
            return int(browser.find_element(By.ID, "job-turn").text or 0)

        await wait_for(lambda: turn() >= 1, 120, "the turn counter to advance")
        assert browser.execute_script("return window.pressroomNoReload") == "still here"
        assert browser.find_elements(By.CSS_SELECTOR, "#last-calls li")
        screenshot(browser, "live-02-turn-advanced")
        await wait_status(handle, {"awaiting_review"}, timeout=180)
        wait_visible(browser, "#live-ended", timeout=60)
        assert browser.find_element(By.ID, "job-status").text == "awaiting review"
        assert turn() >= 1 and "research turn" not in browser.find_element(
            By.ID, "live-summary").text
        assert browser.execute_script("return window.pressroomNoReload") == "still here"
        assert not browser.find_elements(By.CSS_SELECTOR, "meta[http-equiv=refresh]")
        screenshot(browser, "live-03-awaiting-review")
        browser.get("about:blank")  # no stream left open when the server stops
    finally:
        worker.terminate()
        worker.wait(30)


async def test_the_event_stream_is_signed_in_and_visibility_checked(
        temporal_env: WorkflowEnvironment, task_queue: str, store_url: str, tmp_path: Path,
        make_spec: Callable[..., JobSpec]) -> None:
    client = temporal_env.client
    accounts = make_accounts(tmp_path / "accounts", "alice", "bob")
    spec = make_spec(review=review_for(accounts, "alice"))
    worker = start_worker_process({}, _address(temporal_env), task_queue, store_url,
                                  tmp_path / "worker.log")
    console = await open_console(client, store_url, accounts)
    try:
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"awaiting_review"}, timeout=180)
        async with http(console) as anonymous, http(console) as alice, http(console) as bob:
            events = f"/jobs/{spec.job_id}/events"
            refused = await anonymous.get(events)
            assert refused.status_code == 303
            assert refused.headers["location"].startswith("/signin")
            await sign_in(bob, "bob")
            hidden = await bob.get(events)  # a job that does not list bob: no such job
            assert hidden.status_code == 404
            assert "text/event-stream" not in hidden.headers.get("content-type", "")
            assert (await bob.get("/jobs/no-such-job/events")).status_code == 404
            await sign_in(alice, "alice")
            stream = await alice.get(events)  # the job awaits review: one state, then end
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            assert "script-src 'self'" in stream.headers["content-security-policy"]
            body = stream.text
            assert "event: status" in body and '"status": "awaiting_review"' in body
            assert body.rstrip().endswith('data: {"status": "awaiting_review"}')
    finally:
        await console.close()
        worker.terminate()
        worker.wait(30)


async def test_an_open_event_stream_does_not_hold_a_shutdown(
        temporal_env: WorkflowEnvironment, task_queue: str, store_url: str, tmp_path: Path,
        make_spec: Callable[..., JobSpec]) -> None:
    """``pressroom web`` with a live page's stream open (the job paused, so the stream
    waits) stops on SIGTERM within its grace period, not when the stream would end."""
    home = tmp_path / "home"
    accounts = make_accounts(Settings(home=home).console_accounts_dir, "alice")
    spec = make_spec(review=review_for(accounts, "alice"))
    markers = tmp_path / "markers"
    worker = start_worker_process({"PRESSROOM_TEST_PAUSE_AT": "decide",
                                   "PRESSROOM_TEST_PAUSE_DIR": str(markers)},
                                  _address(temporal_env), task_queue, store_url,
                                  tmp_path / "worker.log")
    try:
        await start_job(temporal_env.client, spec, task_queue)
        await wait_for(lambda: (markers / "decide.reached").exists(), 120,
                       "the worker paused before its first decide")
        async with pressroom_web(home, _address(temporal_env)) as web, \
                httpx.AsyncClient(base_url=web.url, timeout=60,
                                  follow_redirects=False) as browser:
            await sign_in(browser, "alice")
            async with browser.stream("GET", f"/jobs/{spec.job_id}/events") as stream:
                assert stream.status_code == 200
                lines = stream.aiter_lines()
                while "event: status" not in (await anext(lines)):
                    pass
                os.kill(web.pid, signal.SIGTERM)
                stopped = time.monotonic()

                def gone() -> bool:
                    try:
                        os.kill(web.pid, 0)
                    except ProcessLookupError:
                        return True
                    return Path(f"/proc/{web.pid}/stat").read_text().split(") ")[1][0] == "Z"
                await wait_for(gone, 5 + SHUTDOWN_GRACE_SECONDS,
                               "pressroom web to stop with a stream open")
                assert time.monotonic() - stopped < LIVE_STREAM_SECONDS
    finally:
        worker.terminate()
        worker.wait(30)
