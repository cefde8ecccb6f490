"""``pressroom web`` as it starts, over real HTTP: what only the real server shows.

The console runs as its own process (``consolekit.pressroom_web``: the CLI command, its own
uvicorn, a fresh ``PRESSROOM_HOME``, the session's dev server) and is reached through a
socket, so the peer address is the one uvicorn reports and a blocked event loop is a
blocked server:

* a forwarding header from a local process does not make it the trusted proxy
  (SECURITY.md section 8, "Identity");
* password checks run off the event loop: ``/healthz`` answers while a wrong password's
  argon2 verification is still running (SECURITY.md section 8, "Guessing").
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from argon2 import PasswordHasher

from settings import Settings
from tests.waiting import wait_for
from tests.webconsole.consolekit import PASSWORD, form_token, pressroom_web
from webconsole.accounts import ReviewerAccounts
from webconsole.sessions import SESSION_COOKIE

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


def _address(temporal_env: Any) -> str:
    return str(temporal_env.client.service_client.config.target_host)


def _accounts(home: Path, hasher: PasswordHasher | None = None) -> ReviewerAccounts:
    accounts = ReviewerAccounts(Settings(home=home).console_accounts_dir, hasher=hasher)
    accounts.add("alice", PASSWORD["alice"])
    return accounts


async def test_a_forwarded_for_header_does_not_make_a_local_process_the_proxy(
        temporal_env: Any, tmp_path: Path) -> None:
    home = tmp_path / "home"
    _accounts(home)
    async with pressroom_web(home, _address(temporal_env), "--proxy-header",
                             "X-Forwarded-User", "--trusted-proxy", "10.0.0.5") as web, \
            httpx.AsyncClient(base_url=web.url, timeout=30, follow_redirects=False) as local:
        # the claim a local process makes: "I am the proxy at 10.0.0.5, this is alice"
        for forwarded in ({"X-Forwarded-For": "10.0.0.5"},
                          {"X-Forwarded-For": "203.0.113.7, 10.0.0.5"},
                          {"X-Forwarded-For": "10.0.0.5", "X-Forwarded-Proto": "https"},
                          {"Forwarded": "for=10.0.0.5"}, {"X-Real-IP": "10.0.0.5"}):
            page = await local.get("/", headers={"X-Forwarded-User": "alice", **forwarded})
            assert page.status_code == 303, (forwarded, page.status_code, page.text[:300])
            assert page.headers["location"].startswith("/signin"), forwarded
            assert SESSION_COOKIE not in page.headers.get("set-cookie", ""), forwarded
        # the server itself works: the same local process signs in with alice's password
        form = await local.get("/signin")
        done = await local.post("/signin", data={"name": "alice", "password": PASSWORD["alice"],
                                                 "signin_token": form_token(form.text)})
        assert done.status_code == 303 and SESSION_COOKIE in done.cookies, done.text


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` (all its threads), from ``/proc``."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / 100.0  # clock ticks (USER_HZ = 100)


async def test_healthz_answers_while_a_password_is_being_checked(
        temporal_env: Any, tmp_path: Path) -> None:
    """alice's hash is made with a deliberately slow argon2 (verification follows the costs
    stored in the hash: about a second here, instead of the default's quarter second), so a
    wrong password keeps argon2 busy long enough to ask ``/healthz`` meanwhile. The test
    waits until the console has spent CPU on the check (argon2 is running), then asks:
    the answer must come while the sign-in is still unanswered — an order, not a time."""
    home = tmp_path / "home"
    _accounts(home, PasswordHasher(time_cost=20, memory_cost=65536, parallelism=1))
    async with pressroom_web(home, _address(temporal_env)) as web, \
            httpx.AsyncClient(base_url=web.url, timeout=60, follow_redirects=False) as browser, \
            httpx.AsyncClient(base_url=web.url, timeout=60) as monitor:
        form = await browser.get("/signin")
        before = _cpu_seconds(web.pid)
        answered: dict[str, float] = {}

        async def wrong_password() -> httpx.Response:
            response = await browser.post("/signin", data={
                "name": "alice", "password": "not-alices-password",
                "signin_token": form_token(form.text)})
            answered["signin"] = time.monotonic()
            return response

        signin = asyncio.create_task(wrong_password())
        await wait_for(lambda: _cpu_seconds(web.pid) - before >= 0.3 or signin.done(), 30,
                       "the console spending CPU on the password check", interval=0.02)
        assert not signin.done(), "the sign-in was answered before argon2 could be observed"
        health = await asyncio.wait_for(monitor.get("/healthz"), 30)
        answered["healthz"] = time.monotonic()
        assert health.status_code == 200
        refused = await asyncio.wait_for(signin, 60)
        assert refused.status_code == 401, refused.text
        assert answered["healthz"] < answered["signin"], \
            "/healthz waited for the password check: argon2 ran on the event loop"
